// Parameters are the model-facing arguments: `#[arg(description, default, min, max)]` shape each
// property, `Option<T>` is optional, and the fn stays callable as written.
#![deny(warnings)]

use pleach_core::{ToolContext, serde_json::json, tool};

/// Free-text search.
#[tool]
async fn search(
    #[arg(description = "What to look for")] query: String,
    #[arg(default = 10, min = 1, max = 50)] limit: u32,
    #[arg(default = "en")] language: String,
    region: Option<String>,
) -> Vec<String> {
    vec![format!("{query} {limit} {language} {region:?}")]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = pleach_core::tool_registry();
    assert!(registry.has("search"));
    let definition = registry.definition("search").unwrap();
    assert_eq!(definition.name(), "search");
    assert_eq!(definition.description(), "Free-text search.");

    let schema = definition.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["query"]["type"], "string");
    assert_eq!(
        schema["properties"]["query"]["description"],
        "What to look for"
    );
    assert_eq!(schema["properties"]["limit"]["default"], 10);
    assert_eq!(schema["properties"]["limit"]["minimum"], 1);
    assert_eq!(schema["properties"]["limit"]["maximum"], 50);
    assert_eq!(schema["properties"]["language"]["default"], "en");
    assert!(schema["properties"]["region"].is_object());
    // Defaults and `Option` make a property optional; the rest are required.
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(schema["additionalProperties"], false);

    // Defaults fill in; the optional argument is `None`.
    let out = definition
        .call(r#"{"query":"rust"}"#, ToolContext::new("c1"))
        .await;
    assert_eq!(out.unwrap(), json!(["rust 10 en None"]));
    let out = definition
        .call(
            r#"{"query":"rust","limit":3,"region":"eu"}"#,
            ToolContext::new("c2"),
        )
        .await;
    assert_eq!(out.unwrap(), json!(["rust 3 en Some(\"eu\")"]));

    // The range and the closed property set hold before the fn runs.
    let too_many = definition
        .call(r#"{"query":"rust","limit":80}"#, ToolContext::new("c3"))
        .await;
    assert_eq!(too_many.unwrap_err().code().as_u16(), 1001);
    let unknown = definition
        .call(r#"{"query":"rust","page":2}"#, ToolContext::new("c4"))
        .await;
    assert_eq!(unknown.unwrap_err().code().as_u16(), 1001);

    // The fn is still an ordinary fn.
    let direct = search("x".into(), 2, "de".into(), Some("eu".into())).await;
    assert_eq!(direct, ["x 2 de Some(\"eu\")"]);
}
