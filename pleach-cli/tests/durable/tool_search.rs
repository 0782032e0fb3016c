//! Native deferral (docs/tool-search.md, "Native deferral") in a durable conversation on the
//! Temporal dev server: a `durable::Worker` whose agent options defer 1,000 tools the provider's
//! way, a scripted model on loopback that searches, then calls the tool the search found, over
//! Anthropic (`defer_loading`, `tool_reference`) and OpenAI Responses (client `tool_search`).
//! Each model step and each call is an activity of its own, so what a step sends is worked out
//! from the conversation Temporal hands the worker, not from anything the worker kept.

use std::path::Path;
use std::process::Command;

use pleach_core::agent::{AgentOptions, ModelEndpoint, WireFormat};
use pleach_core::durable::{DurableStop, Worker};
use pleach_core::search::ToolSearch;
use pleach_core::{
    Message, Runtime, ToolDefinition, ToolError, ToolRegistryBuilder, UnifiedToolDefinition,
};
use pleach_temporal::{ConversationInput, DurableClient};
use serde_json::{Value, json};

use pleach_test_support::http::{LoopbackServer, Reply};

use super::{DevServer, ProcessWorker, outcome, thread_worker_of, worker_process_command};

/// The tool the model finds, among 999 about other things.
const TARGET: &str = "convert_currency";

const QUESTION: &str = "How much is 100 euros in dollars?";

/// `PLEACH_TEST_WORKER_DEFERRED`: a worker process serves [`deferred_worker`].
pub(super) const DEFERRED_ENV: &str = "PLEACH_TEST_WORKER_DEFERRED";

fn tool(name: &str, description: &str) -> UnifiedToolDefinition {
    let answer = format!("{name} done");
    ToolDefinition::builder(name, description)
        .input_schema(json!({"type": "object", "properties": {"amount": {"type": "number"}}}))
        .execute_json(move |_, _| {
            let answer = answer.clone();
            async move { Ok::<_, ToolError>(json!(answer)) }
        })
        .unwrap()
        .into()
}

/// A worker over 999 archive tools and [`TARGET`], all deferred natively, with `get_time` sent
/// on every step and the search tool.
pub(super) fn deferred_worker() -> Worker {
    let mut catalog: Vec<UnifiedToolDefinition> = (0..999)
        .map(|i| {
            tool(
                &format!("archive_shelf_{i}"),
                &format!("Lists the boxes on shelf {i} of the archive."),
            )
        })
        .collect();
    catalog.push(tool(
        TARGET,
        "Converts an amount of money from one currency to another at today's rate.",
    ));
    let search = ToolSearch::new(&catalog);
    let registry = ToolRegistryBuilder::new()
        .register_all(catalog)
        .register(tool("get_time", "The current time."))
        .register(search.definition().unwrap())
        .build()
        .unwrap();
    let runtime = Runtime::builder().registry(registry).build().unwrap();
    Worker::new(runtime).agent_options(AgentOptions::default().tool_search(search.native(true)))
}

fn sse(events: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for event in events {
        let name = event["type"].as_str().unwrap_or("x");
        out.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    out.into_bytes()
}

fn anthropic_call(id: &str, name: &str, arguments: &Value) -> Vec<u8> {
    sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":arguments.to_string()}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}}),
        json!({"type":"message_stop"}),
    ])
}

fn anthropic_answer(text: &str) -> Vec<u8> {
    sse(&[
        json!({"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn"}}),
        json!({"type":"message_stop"}),
    ])
}

/// A Responses stream with one client tool search call, as the API sends it.
fn responses_search(call_id: &str, query: &str) -> Vec<u8> {
    let item = json!({"id":"ts_1","type":"tool_search_call","call_id":call_id,"execution":"client","status":"completed","arguments":{"query":query}});
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    sse(&[
        json!({"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}),
        json!({"type":"response.output_item.added","output_index":0,"item":added}),
        json!({"type":"response.output_item.done","output_index":0,"item":item}),
        json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[item]}}),
    ])
}

/// A Responses stream with one function call.
fn responses_call(call_id: &str, name: &str, arguments: &Value) -> Vec<u8> {
    let arguments = arguments.to_string();
    sse(&[
        json!({"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":call_id,"name":name,"arguments":""}}),
        json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":arguments}),
        json!({"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":arguments}),
        json!({"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":call_id,"name":name,"arguments":arguments,"status":"completed"}}),
        json!({"type":"response.completed","response":{"id":"resp_2","status":"completed"}}),
    ])
}

fn responses_answer(text: &str) -> Vec<u8> {
    sse(&[
        json!({"type":"response.created","response":{"id":"resp_3","status":"in_progress","output":[]}}),
        json!({"type":"response.output_text.delta","item_id":"msg_3","output_index":0,"content_index":0,"delta":text}),
        json!({"type":"response.completed","response":{"id":"resp_3","status":"completed"}}),
    ])
}

/// A loopback model serving `replies`, one per step in either wire shape: a request whose
/// conversation holds `n` model turns (Anthropic's assistant messages, Responses' call items)
/// gets reply `n`, so a step Temporal retries gets the same reply again.
async fn scripted_model(replies: Vec<Vec<u8>>) -> LoopbackServer {
    LoopbackServer::start(move |request, _| {
        let request: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let turns = |list: &str, is_turn: fn(&Value) -> bool| {
            request[list]
                .as_array()
                .map(|items| items.iter().filter(|item| is_turn(item)).count())
        };
        let step = turns("messages", |message| message["role"] == "assistant")
            .or_else(|| {
                turns("input", |item| {
                    matches!(
                        item["type"].as_str(),
                        Some("tool_search_call" | "function_call")
                    )
                })
            })
            .unwrap_or(0);
        match replies.get(step) {
            Some(body) => Reply::with(200, &[("content-type", "text/event-stream")], body),
            None => Reply::json(500, "{}"),
        }
    })
    .await
}

/// Runs the conversation on `queue` to its end against `model` (`format`), and checks that it
/// searched, loaded and ran [`TARGET`] and finished. The requests the model received, retries
/// left out.
async fn run_and_check(
    target: &str,
    queue: &str,
    model: &LoopbackServer,
    endpoint: ModelEndpoint,
) -> Vec<Value> {
    let client = DurableClient::connect(target).await.unwrap();
    let input = ConversationInput::new(
        vec![Message::User {
            content: QUESTION.into(),
        }],
        endpoint,
    );
    let id = client.start(queue, None, input).await.unwrap();
    let outcome = outcome(&client, &id).await;
    let events = client.events(&id, 0).await.unwrap();
    assert_eq!(outcome.stop, DurableStop::Finished, "{events:?}");
    assert_eq!(outcome.final_text.as_deref(), Some("About 108 dollars."));
    let names: Vec<&str> = outcome
        .results
        .iter()
        .map(|result| result.tool_call.name())
        .collect();
    assert_eq!(names, ["search_tools", TARGET]);
    assert!(
        outcome.results.iter().all(|result| result.outcome.is_ok()),
        "{:?}",
        outcome.results
    );
    let loads: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "tools.loaded")
        .collect();
    assert_eq!(loads.len(), 1, "{events:?}");
    assert_eq!(loads[0]["tools"][0], TARGET);
    let mut requests: Vec<Value> = model
        .requests()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap_or(Value::Null))
        .collect();
    requests.dedup();
    assert_eq!(requests.len(), 3, "{requests:?}");
    requests
}

/// A worker process serving [`deferred_worker`] with an Anthropic key in its environment (the
/// model client is made from the endpoint there, and reads its key from there).
fn anthropic_worker(target: &str, queue: &str, dir: &Path) -> ProcessWorker {
    let log = dir.join("worker.log");
    let mut command: Command = worker_process_command(target, queue, &log);
    command
        .env(DEFERRED_ENV, "1")
        .env("ANTHROPIC_API_KEY", "test-key");
    ProcessWorker(command.spawn().unwrap(), Some(log))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_worker_defers_natively_over_anthropic_on_temporal() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = scripted_model(vec![
        anthropic_call(
            "call_1",
            "search_tools",
            &json!({"query": "convert currency euros to dollars"}),
        ),
        anthropic_call("call_2", TARGET, &json!({"amount": 100})),
        anthropic_answer("About 108 dollars."),
    ])
    .await;
    let mut worker = anthropic_worker(&server.target(), "deferred-anthropic", dir.path());
    let endpoint = ModelEndpoint::new(
        WireFormat::AnthropicMessages,
        model.url(""),
        "claude-sonnet-4-5",
    );
    let requests = run_and_check(&server.target(), "deferred-anthropic", &model, endpoint).await;
    assert!(worker.ended().is_none(), "the worker died");
    // Every step sends the same tools: `get_time`, the search tool, and the 1,000 deferred.
    for request in &requests {
        let tools = request["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1_002);
        let deferred = tools
            .iter()
            .filter(|tool| tool["defer_loading"] == true)
            .count();
        assert_eq!(deferred, 1_000);
    }
    // The search's result, sent back: a reference to the tool found, first.
    let result = &requests[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(
        result["content"][0],
        json!({"type": "tool_reference", "tool_name": TARGET})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_worker_defers_natively_over_openai_responses_on_temporal() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let model = scripted_model(vec![
        responses_search("call_1", "convert currency euros to dollars"),
        responses_call("call_2", TARGET, &json!({"amount": 100})),
        responses_answer("About 108 dollars."),
    ])
    .await;
    let _worker = thread_worker_of(&server.target(), "deferred-responses", deferred_worker);
    let endpoint = ModelEndpoint::new(WireFormat::OpenAiResponses, model.url("/v1"), "gpt-5.4");
    let requests = run_and_check(&server.target(), "deferred-responses", &model, endpoint).await;
    // Every step: `get_time` and the search as a client `tool_search`; no deferred tool.
    for request in &requests {
        let tools = request["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2, "{tools:?}");
        assert_eq!(tools[1]["type"], "tool_search");
    }
    // The search's output carries the definitions found, deferred, best first.
    let output = &requests[1]["input"][2];
    assert_eq!(output["type"], "tool_search_output");
    assert_eq!(output["tools"][0]["name"], TARGET);
    assert_eq!(output["tools"][0]["defer_loading"], true);
    // From the step after the search the tool found is callable: the call ran (above) and its
    // result went back.
    let call_output = requests[2]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .cloned();
    assert_eq!(
        call_output.map(|item| item["call_id"].clone()),
        Some(json!("call_2"))
    );
}
