//! One `#[input]` parameter is the whole input: a struct deriving `Deserialize` and `JsonSchema`
//! through pleach-core's re-exports, so the user's crate depends on pleach-core alone.
#![deny(warnings)]

use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Deserialize;
use pleach_core::{ToolContext, serde_json::json, tool};

/// A search over the corpus.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
struct Query {
    /// What to look for.
    text: String,
    /// How many results, at most.
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 50))]
    limit: u32,
}

fn ten() -> u32 {
    10
}

/// Free-text search.
#[tool]
async fn find(#[input] query: Query, ctx: ToolContext) -> String {
    format!("{} {} {}", query.text, query.limit, ctx.tool_call_id)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let definition = find::definition();
    let schema = definition.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["text"]));
    assert_eq!(
        schema["properties"]["text"]["description"],
        "What to look for."
    );
    assert_eq!(schema["properties"]["limit"]["maximum"], 50);
    // The context is injected, never a property.
    assert!(schema["properties"].get("ctx").is_none());

    let out = definition
        .call(r#"{"text":"rust"}"#, ToolContext::new("c1"))
        .await;
    assert_eq!(out.unwrap(), json!("rust 10 c1"));
    let out_of_range = definition
        .call(r#"{"text":"rust","limit":0}"#, ToolContext::new("c2"))
        .await;
    assert_eq!(out_of_range.unwrap_err().code().as_u16(), 1001);

    let direct = find(
        Query {
            text: "x".into(),
            limit: 2,
        },
        ToolContext::new("c3"),
    )
    .await;
    assert_eq!(direct, "x 2 c3");
}
