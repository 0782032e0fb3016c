//! A session over a few calls — good, invalid, unknown, panicking — with the event stream printed
//! as NDJSON (one JSON event a line, as `docs/events.md` specifies) and the conversation after.
//!
//! ```text
//! cargo run -p pleach-examples --example session_events
//! ```

use pleach_core::{Runtime, SessionOptions, ToolCall, ToolContext, ToolError, tool};

/// Free-text search over the host corpus.
#[tool]
async fn search_corpus(
    #[arg(description = "What to look for")] query: String,
    #[arg(default = 3, min = 1, max = 10)] limit: u32,
    ctx: ToolContext,
) -> Result<Vec<String>, ToolError> {
    ctx.progress(serde_json::json!({ "searching": query }));
    Ok((1..=limit)
        .map(|i| format!("{query}: result {i}"))
        .collect())
}

/// Divides two numbers (and has a bug).
#[tool]
async fn divide(a: i64, b: i64) -> i64 {
    a / b // panics when b is 0: the runtime turns that into error 1009 for this call alone
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder().build()?;
    let session = runtime.create_session(SessionOptions::enabled(["search_corpus", "divide"]))?;
    session.push_user_message("Find two notes on hedges, and divide 1 by 0 while you're at it.");

    let mut turn = session.run_turn(vec![
        ToolCall::new("call_1", "search_corpus", r#"{"query":"hedges","limit":2}"#),
        ToolCall::new(
            "call_2",
            "search_corpus",
            r#"{"query":"hedges","limit":99}"#,
        ),
        ToolCall::new("call_3", "serch_corpus", r#"{"query":"hedges"}"#),
        ToolCall::new("call_4", "divide", r#"{"a":1,"b":0}"#),
    ]);

    println!("# events (NDJSON)");
    while let Some(event) = turn.events().recv().await {
        print!("{}", event.to_ndjson());
    }
    turn.finish().await;

    println!("\n# conversation");
    for message in session.conversation() {
        println!("{}", serde_json::to_string(&message)?);
    }
    Ok(())
}
