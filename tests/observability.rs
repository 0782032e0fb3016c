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

/// The process-wide exporter every span of this binary goes to. Process-wide, not per test:
/// `tracing` caches whether a callsite is wanted, and a subscriber set for one thread only would
/// race with tests on other threads over that cache.
fn exported() -> &'static (SdkTracerProvider, InMemorySpanExporter) {
    static EXPORTED: std::sync::OnceLock<(SdkTracerProvider, InMemorySpanExporter)> =
        std::sync::OnceLock::new();
    EXPORTED.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("pleach-tests")));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        (provider, exporter)
    })
}

/// Every span ended so far, after `work` ran (tests tell theirs apart by call ids and names).
async fn spans_of<F: Future<Output = ()>>(work: F) -> Vec<SpanData> {
    let (provider, exporter) = exported();
    work.await;
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

/// The `execute_tool` spans of the calls `ids`, by call id (each exactly once).
fn call_spans<'a>(spans: &'a [SpanData], ids: &[&str]) -> HashMap<String, &'a SpanData> {
    let calls: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name.starts_with("execute_tool "))
        .filter(|span| {
            text(attributes(span).get("gen_ai.tool.call.id"))
                .is_some_and(|id| ids.contains(&id.as_str()))
        })
        .collect();
    assert_eq!(
        calls.len(),
        ids.len(),
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    calls
        .into_iter()
        .map(|span| {
            let id = text(attributes(span).get("gen_ai.tool.call.id")).expect("a call id");
            (id, span)
        })
        .collect()
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

    let by_id = call_spans(&spans, &["c1", "c2", "c3", "c4"]);
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
        .find(|span| text(attributes(span).get("gen_ai.tool.call.id")).as_deref() == Some("p1"))
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
        .filter(|span| span.span_context.trace_id() == agent.span_context.trace_id())
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
        .find(|span| text(attributes(span).get("gen_ai.tool.call.id")).as_deref() == Some("call_1"))
        .expect("the call's span");
    assert_eq!(tool.parent_span_id, agent.span_context.span_id());
    assert_ne!(tool.parent_span_id, SpanId::INVALID);
    assert_eq!(tool.span_context.trace_id(), agent.span_context.trace_id());
}

/// The value of `key` among `attributes`, as text.
fn attribute<'a>(attributes: impl IntoIterator<Item = &'a KeyValue>, key: &str) -> Option<String> {
    attributes
        .into_iter()
        .find(|pair| pair.key.as_str() == key)
        .map(|pair| pair.value.to_string())
}

#[tokio::test(flavor = "current_thread")]
async fn metrics_count_calls_by_tool_and_outcome_and_backpressure() {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let runtime = Runtime::builder()
        .meter(provider.meter("pleach-tests"))
        .tool_timeout("obs_sleep", Duration::from_millis(100))
        .cancel_grace(Duration::from_millis(50))
        .max_in_flight(1)
        .overload_policy(pleach_core::OverloadPolicy::FailFast)
        .build()
        .unwrap();
    let first = runtime.create_session(SessionOptions::all()).unwrap();
    let second = runtime.create_session(SessionOptions::all()).unwrap();
    let ok = first
        .call(ToolCall::new("m1", "obs_add", r#"{"a": 1, "b": 2}"#))
        .await;
    assert!(ok.outcome.is_ok());
    // While `obs_sleep` holds the only slot, another call is refused (1014).
    let (slept, refused) =
        tokio::join!(first.call(ToolCall::new("m2", "obs_sleep", "{}")), async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            second
                .call(ToolCall::new("m3", "obs_add", r#"{"a": 1, "b": 1}"#))
                .await
        });
    assert_eq!(slept.outcome.unwrap_err().code().as_u16(), 1010);
    assert_eq!(refused.outcome.unwrap_err().code().as_u16(), 1014);
    provider.force_flush().unwrap();

    let metrics = exporter.get_finished_metrics().unwrap();
    let all: Vec<_> = metrics
        .iter()
        .flat_map(opentelemetry_sdk::metrics::data::ResourceMetrics::scope_metrics)
        .flat_map(opentelemetry_sdk::metrics::data::ScopeMetrics::metrics)
        .collect();
    let named = |name: &str| {
        all.iter()
            .rev()
            .find(|metric| metric.name() == name)
            .unwrap_or_else(|| {
                panic!(
                    "{name} among {:?}",
                    all.iter().map(|m| m.name()).collect::<Vec<_>>()
                )
            })
    };
    let AggregatedMetrics::F64(MetricData::Histogram(durations)) =
        named("pleach.tool.call.duration").data()
    else {
        panic!("a histogram of seconds")
    };
    let mut counted: Vec<(String, String, Option<String>, u64)> = durations
        .data_points()
        .map(|point| {
            (
                attribute(point.attributes(), "gen_ai.tool.name").unwrap(),
                attribute(point.attributes(), "pleach.outcome").unwrap(),
                attribute(point.attributes(), "pleach.error.code"),
                point.count(),
            )
        })
        .collect();
    counted.sort();
    assert_eq!(
        counted,
        [
            ("obs_add".into(), "error".into(), Some("1014".into()), 1),
            ("obs_add".into(), "ok".into(), None, 1),
            ("obs_sleep".into(), "error".into(), Some("1010".into()), 1),
        ]
    );
    let AggregatedMetrics::U64(MetricData::Sum(refused)) =
        named("pleach.tool.calls.refused").data()
    else {
        panic!("a count")
    };
    assert_eq!(
        refused
            .data_points()
            .map(opentelemetry_sdk::metrics::data::SumDataPoint::value)
            .sum::<u64>(),
        1
    );
    let AggregatedMetrics::I64(MetricData::Sum(in_flight)) =
        named("pleach.tool.calls.in_flight").data()
    else {
        panic!("an up-down count")
    };
    assert_eq!(
        in_flight
            .data_points()
            .map(opentelemetry_sdk::metrics::data::SumDataPoint::value)
            .sum::<i64>(),
        0,
        "every call ended"
    );
}

/// The MCP semantic conventions' attributes of a remote call's `client` and `server` spans, and
/// the `tools/list` spans of its connection, in one trace.
fn mcp_conventions(spans: &[SpanData], client: &SpanData, server: &SpanData, port: u16) {
    use opentelemetry::trace::SpanKind;

    // The MCP semantic conventions' attributes on both sides.
    let (client_attributes, server_attributes) = (attributes(client), attributes(server));
    let port = port.to_string();
    for (key, expected) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "obs_remote_add"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("server.address", "127.0.0.1"),
        ("server.port", port.as_str()),
    ] {
        assert_eq!(
            text(client_attributes.get(key)).as_deref(),
            Some(expected),
            "client {key}"
        );
    }
    for (key, expected) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "obs_remote_add"),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
    ] {
        assert_eq!(
            text(server_attributes.get(key)).as_deref(),
            Some(expected),
            "server {key}"
        );
    }
    for key in ["jsonrpc.request.id", "mcp.protocol.version"] {
        assert!(server_attributes.contains_key(key), "server {key}");
    }
    // The remote client starts with `initialize`: the server holds its session in memory and
    // names it.
    assert!(
        text(server_attributes.get("mcp.session.id")).is_some_and(|id| !id.is_empty()),
        "server mcp.session.id"
    );
    assert!(client_attributes.contains_key("jsonrpc.request.id"));
    // Listing the server's tools: a `tools/list` span on each side, in one trace.
    let listed = |kind: &SpanKind| {
        spans
            .iter()
            .find(|span| span.name == "tools/list" && span.span_kind == *kind)
            .unwrap_or_else(|| panic!("a {kind:?} tools/list span"))
    };
    let (list_client, list_server) = (listed(&SpanKind::Client), listed(&SpanKind::Server));
    assert_eq!(
        text(attributes(list_server).get("mcp.method.name")).as_deref(),
        Some("tools/list")
    );
    assert_eq!(
        list_server.span_context.trace_id(),
        list_client.span_context.trace_id()
    );
}

/// Adds two integers, served over MCP to this binary's own remote-tools client.
#[tool]
async fn obs_remote_add(a: i64, b: i64) -> i64 {
    a + b
}

/// A remote MCP call carries the caller's trace context in `_meta` (`traceparent`): the server's
/// `tools/call` span is in the caller's trace, its parent the client's span, marked remote.
/// Without the propagation the server's span, in tasks of its own, would start a trace of its
/// own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_mcp_call_joins_the_callers_trace() {
    use opentelemetry::trace::SpanKind;
    use pleach_mcp::McpServer;
    use pleach_mcp::http::{HttpOptions, HttpServer};
    use pleach_mcp::remote::McpRemote;

    let mut address = None;
    let spans = spans_of(async {
        let served = Runtime::builder().build().unwrap();
        let http = HttpServer::new(
            McpServer::new(served).unwrap(),
            HttpOptions::new(([127, 0, 0, 1], 0).into()),
        )
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let bound = listener.local_addr().unwrap();
        address = Some(bound);
        tokio::spawn(async move { http.serve(listener, std::future::pending()).await });

        let remote = McpRemote::http(format!("http://{bound}/mcp"))
            .prefix("far")
            .connect()
            .await
            .unwrap();
        let runtime = Runtime::builder()
            .registry(pleach_core::ToolRegistryBuilder::new().build().unwrap())
            .plugin(remote.plugin())
            .build()
            .unwrap();
        let session = runtime.create_session(SessionOptions::all()).unwrap();
        let outcome = session
            .call(ToolCall::new(
                "r1",
                "far__obs_remote_add",
                r#"{"a": 2, "b": 3}"#,
            ))
            .await
            .outcome;
        // A number is text in MCP (`structuredContent` is for objects).
        assert_eq!(outcome.unwrap(), serde_json::json!("5"));
    })
    .await;
    let named = |kind: &SpanKind| {
        spans
            .iter()
            .find(|span| span.name == "tools/call obs_remote_add" && span.span_kind == *kind)
            .unwrap_or_else(|| {
                panic!(
                    "a {kind:?} span: {:?}",
                    spans.iter().map(|s| &s.name).collect::<Vec<_>>()
                )
            })
    };
    let address = address.expect("the server listened");
    let client = named(&SpanKind::Client);
    let server = named(&SpanKind::Server);
    assert_eq!(
        server.span_context.trace_id(),
        client.span_context.trace_id()
    );
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert!(server.parent_span_is_remote);
    mcp_conventions(&spans, client, server, address.port());
    // The caller's own call span is the client span's parent.
    let caller = spans
        .iter()
        .find(|span| text(attributes(span).get("gen_ai.tool.call.id")).as_deref() == Some("r1"))
        .expect("the caller's execute_tool span");
    assert_eq!(client.parent_span_id, caller.span_context.span_id());
}
