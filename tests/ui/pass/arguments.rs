//! Parameters are the model-facing arguments: `#[arg(description, default, min, max)]` shape each
//! property, `Option<T>` is optional, and the fn stays callable as written.
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

/// Takes a page of a list.
#[tool]
async fn take_page(#[arg(min = 1, max = 100)] size: usize, offset: isize) -> usize {
    size + offset.unsigned_abs()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `usize` and `isize` take bounds, and their schemas carry the range of the type.
    let page = pleach_core::tool_registry()
        .definition("take_page")
        .unwrap();
    let schema = page.input_schema();
    assert_eq!(schema["properties"]["size"]["maximum"], 100);
    assert_eq!(schema["properties"]["offset"]["minimum"], isize::MIN as i64);
    assert_eq!(schema["properties"]["offset"]["maximum"], isize::MAX as i64);
    let refused = page
        .call(r#"{"size":101,"offset":0}"#, ToolContext::new("p1"))
        .await;
    assert_eq!(refused.unwrap_err().code().as_u16(), 1001);
    let taken = page
        .call(r#"{"size":2,"offset":-3}"#, ToolContext::new("p2"))
        .await;
    assert_eq!(taken.unwrap(), json!(5));

    let registry = pleach_core::tool_registry();
    assert!(registry.contains("search"));
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
