//! A session over a few calls — good, invalid, unknown, panicking — with the event stream printed
//! as NDJSON (one JSON event a line, as `docs/events.md` specifies) and the conversation after.
//!
//! Standard output carries the events and nothing else, so it can be piped into any NDJSON reader
//! (`… | jq .type`); the headings and the conversation go to standard error.
//!
//! ```text
//! cargo run -p pleach-examples --example session_events
//! ```

use std::io::Write;

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
    run(&mut std::io::stdout(), &mut std::io::stderr()).await
}

/// Runs one turn, writing its events to `events` as NDJSON and the conversation to `notes`.
async fn run(
    events: &mut impl Write,
    notes: &mut impl Write,
) -> Result<(), Box<dyn std::error::Error>> {
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

    writeln!(notes, "# events (NDJSON, on standard output)")?;
    while let Some(event) = turn.events().recv().await {
        write!(events, "{}", event.to_ndjson())?;
    }
    turn.finish().await;

    writeln!(notes, "# conversation")?;
    for message in session.conversation() {
        writeln!(notes, "{}", serde_json::to_string(&message)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// What `docs/events.md` promises a reader of the stream: every line one JSON event, with its
    /// `type` and camelCase keys, and each call started once and ended once.
    #[tokio::test]
    async fn standard_output_is_the_event_stream_alone_as_ndjson() {
        let (mut events, mut notes) = (Vec::new(), Vec::new());
        super::run(&mut events, &mut notes).await.unwrap();
        let events = String::from_utf8(events).unwrap();
        assert!(events.ends_with('\n'), "{events:?}");
        let lines: Vec<Value> = events
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
            .collect();
        let types: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
        for id in ["call_1", "call_2", "call_3", "call_4"] {
            let of_call: Vec<&Value> = lines
                .iter()
                .filter(|e| e["toolCall"]["id"] == id || e["toolCallId"] == id)
                .collect();
            assert_eq!(of_call[0]["type"], "tool.started", "{id}: {of_call:?}");
            let last = of_call[of_call.len() - 1]["type"].as_str().unwrap();
            assert!(
                matches!(last, "tool.completed" | "tool.failed"),
                "{id}: {of_call:?}"
            );
        }
        assert_eq!(types.len(), 9, "{types:?}");
        let codes: Vec<u64> = lines
            .iter()
            .filter_map(|e| e["error"]["code"].as_u64())
            .collect();
        assert_eq!(codes.len(), 3);
        for code in [1001, 1003, 1009] {
            assert!(codes.contains(&code), "{codes:?}");
        }
        let notes = String::from_utf8(notes).unwrap();
        assert!(notes.contains("# conversation"), "{notes}");
        assert!(notes.contains(r#""role":"tool""#), "{notes}");
    }
}
