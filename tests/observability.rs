//! Spans through OpenTelemetry (`docs/observability.md`): pleach's `tracing` spans, exported by
//! `tracing-opentelemetry` into `opentelemetry_sdk`'s in-memory exporter. A turn with a good call,
//! an invalid one, one that needs approval and one that times out gives the expected
//! `execute_tool` spans, names and attributes (spelled as the conventions for generative AI spell them), an
//! `await_approval` child with the decision; the agent loop's `invoke_agent` span holds its
//! `chat` spans and the calls; arguments and results are recorded only when opted in.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value as OtelValue};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
use pleach_core::safety::ApprovalRequired;
use pleach_core::{Runtime, SessionOptions, ToolCall, ToolContext, ToolEvent, tool, unified_tool};
use tracing_subscriber::layer::SubscriberExt as _;

/// Adds two integers.
#[tool]
async fn obs_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Sleeps until cancelled.
#[tool]
async fn obs_sleep(ctx: ToolContext) -> i64 {
    ctx.signal.cancelled().await;
    0
}

/// Archives a record (asks first).
#[unified_tool(safety_tier = "standard")]
async fn obs_archive(record: String) -> String {
    format!("archived {record}")
}

/// Spans recorded while `work` runs on this thread.
async fn spans_of<F: Future<Output = ()>>(work: F) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("pleach-tests")));
    let guard = tracing::subscriber::set_default(subscriber);
    work.await;
    drop(guard);
    provider.force_flush().expect("flushed");
    exporter.get_finished_spans().expect("spans")
}

fn attributes(span: &SpanData) -> HashMap<String, OtelValue> {
    span.attributes
        .iter()
        .map(|KeyValue { key, value, .. }| (key.to_string(), value.clone()))
        .collect()
}

fn text(value: Option<&OtelValue>) -> Option<String> {
    value.map(ToString::to_string)
}

fn runtime() -> Runtime {
    Runtime::builder()
        .detector(ApprovalRequired::tools(["obs_archive"]))
        .tool_timeout("obs_sleep", Duration::from_millis(50))
        .cancel_grace(Duration::from_millis(50))
        .build()
        .expect("runtime")
}

#[tokio::test(flavor = "current_thread")]
async fn a_turn_gives_one_execute_tool_span_per_call_with_the_conventions_attributes() {
    let spans = spans_of(async {
        let runtime = runtime();
        let session = runtime.create_session(SessionOptions::all()).unwrap();
        let mut turn = session.run_turn(vec![
            ToolCall::new("c1", "obs_add", r#"{"a": 2, "b": 3}"#),
            ToolCall::new("c2", "obs_add", r#"{"a": "two", "b": 3}"#),
            ToolCall::new("c3", "obs_archive", r#"{"record": "r-7"}"#),
            ToolCall::new("c4", "obs_sleep", "{}"),
        ]);
        while let Some(event) = turn.events().recv().await {
            if let ToolEvent::InterruptRequested { interrupt } = &event {
                session.resolve(interrupt.accept()).unwrap();
            }
        }
        let results = turn.finish().await;
        assert_eq!(results.len(), 4);
    })
    .await;

    let calls: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name.starts_with("execute_tool "))
        .collect();
    let by_id: HashMap<String, &SpanData> = calls
        .iter()
        .map(|span| {
            let id = text(attributes(span).get("gen_ai.tool.call.id")).expect("a call id");
            (id, *span)
        })
        .collect();
    assert_eq!(
        calls.len(),
        4,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );

    let good = attributes(by_id["c1"]);
    assert_eq!(by_id["c1"].name, "execute_tool obs_add");
    assert_eq!(
        text(good.get("gen_ai.operation.name")).as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        text(good.get("gen_ai.tool.name")).as_deref(),
        Some("obs_add")
    );
    assert_eq!(
        text(good.get("gen_ai.tool.type")).as_deref(),
        Some("function")
    );
    assert!(!good.contains_key("error.type"));
    assert!(!matches!(by_id["c1"].status, Status::Error { .. }));
    // Nothing about the payloads without the host's opt-in.
    assert!(!good.contains_key("gen_ai.tool.call.arguments"));
    assert!(!good.contains_key("gen_ai.tool.call.result"));

    let invalid = attributes(by_id["c2"]);
    assert_eq!(
        text(invalid.get("pleach.error.code")).as_deref(),
        Some("1001")
    );
    assert_eq!(
        text(invalid.get("error.type")).as_deref(),
        Some("InputInvalid")
    );
    assert!(matches!(by_id["c2"].status, Status::Error { .. }));

    let approved = by_id["c3"];
    assert!(!attributes(approved).contains_key("error.type"));
    let waited: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == "await_approval")
        .collect();
    assert_eq!(waited.len(), 1);
    assert_eq!(waited[0].parent_span_id, approved.span_context.span_id());
    assert_eq!(
        text(attributes(waited[0]).get("pleach.approval.decision")).as_deref(),
        Some("accept")
    );

    let timed_out = attributes(by_id["c4"]);
    assert_eq!(
        text(timed_out.get("pleach.error.code")).as_deref(),
        Some("1010")
    );
    assert_eq!(
        text(timed_out.get("error.type")).as_deref(),
        Some("TimedOut")
    );

    // The phases as span events of the good call.
    let events: Vec<String> = by_id["c1"]
        .events
        .iter()
        .map(|e| e.name.to_string())
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e.contains("tool started") || e.contains("tool ran")),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e.contains("result valid")),
        "{events:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn payloads_are_recorded_only_when_opted_in_and_capped() {
    let spans = spans_of(async {
        let runtime = Runtime::builder().trace_payloads(10).build().unwrap();
        let session = runtime.create_session(SessionOptions::all()).unwrap();
        let outcome = session
            .call(ToolCall::new(
                "p1",
                "obs_add",
                r#"{"a": 20000, "b": 30000}"#,
            ))
            .await
            .outcome;
        assert_eq!(outcome.unwrap(), serde_json::json!(50000));
    })
    .await;
    let span = spans
        .iter()
        .find(|span| span.name == "execute_tool obs_add")
        .expect("the call's span");
    let attributes = attributes(span);
    assert_eq!(
        text(attributes.get("gen_ai.tool.call.arguments")).as_deref(),
        Some(r#"{"a": 2000…"#)
    );
    assert_eq!(
        text(attributes.get("gen_ai.tool.call.result")).as_deref(),
        Some("50000")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_agent_loop_is_an_invoke_agent_span_over_its_chat_spans_and_calls() {
    let call = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"obs_add","arguments":"{\"a\":1,\"b\":2}"}}]},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":11,"completion_tokens":7}}"#,
        "\n\ndata: [DONE]\n\n"
    );
    let answer = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"content":"3"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":1}}"#,
        "\n\ndata: [DONE]\n\n"
    );
    let spans = spans_of(async {
        let runtime = Runtime::builder().build().unwrap();
        let session = runtime.create_session(SessionOptions::all()).unwrap();
        session.push_user_message("1+2?");
        let client = Arc::new(ReplayClient::new(WireFormat::OpenAiChat, [call, answer]));
        let outcome = session
            .run_agent(client, AgentOptions::default())
            .finish()
            .await;
        assert_eq!(outcome.final_text.as_deref(), Some("3"));
    })
    .await;
    let agent = spans
        .iter()
        .find(|span| span.name == "invoke_agent")
        .expect("an invoke_agent span");
    let agent_attributes = attributes(agent);
    assert_eq!(
        text(agent_attributes.get("gen_ai.operation.name")).as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        text(agent_attributes.get("gen_ai.usage.input_tokens")).as_deref(),
        Some("31")
    );
    assert_eq!(
        text(agent_attributes.get("gen_ai.usage.output_tokens")).as_deref(),
        Some("8")
    );
    let chats: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.parent_span_id, agent.span_context.span_id());
        assert_eq!(
            text(attributes(chat).get("gen_ai.operation.name")).as_deref(),
            Some("chat")
        );
    }
    assert_eq!(
        text(attributes(chats[0]).get("gen_ai.usage.input_tokens")).as_deref(),
        Some("11")
    );
    let tool = spans
        .iter()
        .find(|span| span.name == "execute_tool obs_add")
        .expect("the call's span");
    assert_eq!(tool.parent_span_id, agent.span_context.span_id());
    assert_ne!(tool.parent_span_id, SpanId::INVALID);
    assert_eq!(tool.span_context.trace_id(), agent.span_context.trace_id());
}
