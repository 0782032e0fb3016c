//! Content blocks as a tool's result, in every shape the macros take without an attribute: one
//! block, several, blocks beside a typed value (its schema kept and checked), each also inside
//! a `Result`.
use pleach_core::content::{Block, ContentBlock, ToolOutput};
use pleach_core::serde::Serialize;
use pleach_core::{
    ErrorCode, ToolContext, ToolError, schemars::JsonSchema, serde_json::json, tool,
};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Takes a screenshot.
#[tool]
async fn screenshot() -> ContentBlock {
    ContentBlock::image(PNG, "image/png")
}

/// Takes two.
#[tool]
async fn two_shots() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("before"),
        ContentBlock::image(PNG, "image/png"),
    ]
}

#[derive(Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
struct Chart {
    points: u32,
}

/// Draws a chart of `points` points.
#[tool]
async fn chart(points: u32) -> ToolOutput<Chart> {
    ToolOutput::new(Chart { points }).block(ContentBlock::image(PNG, "image/png"))
}

/// Reads a file, or fails.
#[tool]
async fn read(fail: bool) -> Result<Vec<ContentBlock>, std::io::Error> {
    if fail {
        return Err(std::io::Error::other("no such file"));
    }
    Ok(vec![ContentBlock::file(
        &b"%PDF-1.7"[..],
        "application/pdf",
    )])
}

/// Counts to seven, and says so: the structured part keeps its type's schema.
#[tool]
async fn counted() -> Result<ToolOutput<u32>, ToolError> {
    Ok(ToolOutput::new(7).block(ContentBlock::text("seven")))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let ctx = || ToolContext::new("c");

    let out = screenshot::definition().call("{}", ctx()).await.unwrap();
    assert_eq!(out.structured, None);
    assert!(matches!(&out.content[0].block, Block::Image(media) if media.data == PNG));
    assert!(screenshot::definition().output_schema().is_none());

    let out = two_shots::definition().call("{}", ctx()).await.unwrap();
    assert_eq!(out.content.len(), 2);
    assert_eq!(out.content[0].as_text(), Some("before"));

    let out = chart::definition()
        .call(r#"{"points":3}"#, ctx())
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({ "points": 3 })));
    assert_eq!(out.content[0].kind(), "image");
    let schema = chart::definition().output_schema().cloned().unwrap();
    assert_eq!(schema["properties"]["points"]["type"], "integer");

    let out = read::definition()
        .call(r#"{"fail":false}"#, ctx())
        .await
        .unwrap();
    assert_eq!(out.content[0].mime_type(), Some("application/pdf"));
    let err = read::definition()
        .call(r#"{"fail":true}"#, ctx())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ToolFailed);

    let out = counted::definition().call("{}", ctx()).await.unwrap();
    assert_eq!(out.structured, Some(json!(7)));
    assert_eq!(
        counted::definition().output_schema().unwrap()["type"],
        "integer"
    );
}
