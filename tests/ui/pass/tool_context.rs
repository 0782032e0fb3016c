//! A `ToolContext` parameter is injected by the runtime, carries the call's id and cancellation
//! signal, and is not in the schema.
#![deny(warnings)]

use pleach_core::{CancellationToken, ToolContext, serde_json::json, tool};

/// Reports how the call was made.
#[tool]
async fn inspect(ctx: ToolContext, label: String) -> String {
    format!(
        "{label} {} cancelled={}",
        ctx.tool_call_id,
        ctx.signal.is_cancelled()
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let definition = inspect::definition();
    let schema = definition.input_schema();
    assert_eq!(schema["properties"].as_object().unwrap().len(), 1);
    assert_eq!(schema["required"], json!(["label"]));

    let out = definition
        .call(r#"{"label":"a"}"#, ToolContext::new("call_1"))
        .await;
    assert_eq!(out.unwrap(), json!("a call_1 cancelled=false"));

    let turn = CancellationToken::new();
    turn.cancel();
    let ctx = ToolContext::with_signal("call_2", turn.child_token());
    let out = definition.call(r#"{"label":"b"}"#, ctx).await;
    assert_eq!(out.unwrap(), json!("b call_2 cancelled=true"));

    assert_eq!(
        inspect(ToolContext::new("call_3"), "c".into()).await,
        "c call_3 cancelled=false"
    );
}
