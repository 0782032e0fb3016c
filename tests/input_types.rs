//! `#[input]` types from a crate whose `Cargo.toml` names `pleach-core` alone
//! (`crates/input-types`): that crate building is the proof that the derives need no `serde` or
//! `schemars` of the user's (this package's own dev-dependencies do not reach it). Here its tool reads nested values through the registry, and its schema
//! says what the types say.

use input_types::file_expense;
use pleach_core::{ErrorCode, ToolContext, tool_registry};
use serde_json::{Value, json};

/// The schema of `$defs/{name}`, where schemars puts each named type.
fn definition_of(schema: &Value, name: &str) -> Value {
    schema["$defs"][name].clone()
}

#[test]
fn the_schema_describes_every_nested_type() {
    let schema = file_expense::definition().input_schema().clone();
    assert_eq!(
        schema["required"],
        json!(["payee", "categories", "amount"]),
        "{schema:#}"
    );
    assert_eq!(
        schema["properties"]["payee"]["description"], "Who is paid.",
        "{schema:#}"
    );

    let payee = definition_of(&schema, "Payee");
    assert_eq!(payee["required"], json!(["name"]), "{payee:#}");
    assert_eq!(
        payee["properties"]["name"]["description"],
        "The payee's name."
    );

    // Undocumented unit variants: an `enum` of strings.
    let category = definition_of(&schema, "Category");
    assert_eq!(
        category["enum"],
        json!(["Food", "Travel", "Lodging", "Other"]),
        "{category:#}"
    );

    // Documented unit variants: a `oneOf` of `const`s, each with its description.
    let priority = definition_of(&schema, "Priority");
    assert_eq!(
        priority["oneOf"],
        json!([
            { "type": "string", "const": "Low", "description": "With the monthly batch." },
            { "type": "string", "const": "High", "description": "Within the week." },
        ]),
        "{priority:#}"
    );

    // Variants with data: one object schema each, with the fields' descriptions.
    let amount = definition_of(&schema, "Amount");
    let split = &amount["oneOf"][1]["properties"]["Split"];
    assert_eq!(
        split["properties"]["people"]["description"], "How many people share it.",
        "{amount:#}"
    );
}

#[tokio::test]
async fn nested_values_arrive_through_the_registry() {
    input_types::link();
    let tool = tool_registry()
        .definition("file_expense")
        .expect("registered");
    let out = tool
        .call(
            r#"{
                "payee": { "name": "Rail Co" },
                "categories": ["Travel", "Food"],
                "priority": "High",
                "amount": { "Split": { "cents": 4200, "people": 3 } }
            }"#,
            ToolContext::new("call_1"),
        )
        .await
        .expect("valid arguments");
    assert_eq!(
        out.value(),
        "Expense { payee: Payee { name: \"Rail Co\", account: None }, categories: [Travel, Food], \
         priority: Some(High), amount: Split { cents: 4200, people: 3 } }"
    );
    let out = tool
        .call(
            r#"{"payee":{"name":"Inn","account":"x-1"},"categories":[],"priority":null,"amount":{"Cents":900}}"#,
            ToolContext::new("call_2"),
        )
        .await
        .expect("valid arguments");
    assert!(
        out.value()
            .as_str()
            .is_some_and(|text| text.contains("priority: None")
                && text.contains("Cents(900)")
                && text.contains("Some(\"x-1\")")),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_wrong_nested_enum_value_names_the_choices() {
    let tool = file_expense::definition();
    let err = tool
        .call(
            r#"{"payee":{"name":"Cafe"},"categories":["Snacks"],"amount":{"Cents":1}}"#,
            ToolContext::new("call_1"),
        )
        .await
        .expect_err("not a category");
    assert_eq!(err.code(), ErrorCode::InputInvalid);
    assert_eq!(
        (err.path(), err.keyword()),
        (Some("/categories/0"), Some("enum"))
    );
    assert!(
        err.message()
            .contains(r#""Snacks" is not one of "Food", "Travel", "Lodging" or "Other""#),
        "{}",
        err.message()
    );

    // An `Option` of documented variants: the two names and `null`.
    let verdict = tool.validate_arguments(
        r#"{"payee":{"name":"Cafe"},"categories":[],"priority":"Urgent","amount":{"Cents":1}}"#,
    );
    let error = &verdict.errors[0];
    assert_eq!(error.path, "/priority", "{verdict:?}");
    assert_eq!(
        error.message, r#""Urgent" is not one of "Low", "High" or null"#,
        "{verdict:?}"
    );
}

#[tokio::test]
async fn an_output_type_is_written_and_described_through_the_re_exports() {
    input_types::link();
    let tool = tool_registry()
        .definition("file_receipt")
        .expect("registered");
    let schema = tool.output_schema().expect("an output schema").clone();
    assert_eq!(
        schema["required"],
        json!(["number", "categories"]),
        "{schema:#}"
    );
    assert_eq!(
        definition_of(&schema, "Category")["enum"],
        json!(["Food", "Travel", "Lodging", "Other"]),
        "{schema:#}"
    );
    let out = tool
        .call(
            r#"{"payee":{"name":"Inn"},"categories":["Lodging"],"amount":{"Cents":900}}"#,
            ToolContext::new("call_1"),
        )
        .await
        .expect("valid arguments");
    assert_eq!(out, json!({ "number": 1, "categories": ["Lodging"] }));
}
