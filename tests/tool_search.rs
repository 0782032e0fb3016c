//! Deferred tools in the agent loop (docs/tool-search.md): a session with 1,000 deferred tools,
//! a scripted model on loopback that searches, loads and calls a tool it was not sent at first,
//! over the OpenAI Chat and Anthropic wire shapes, and deferred natively over Anthropic
//! (`defer_loading`, `tool_reference`) and OpenAI Responses (client `tool_search`); and the
//! refusal (1021) of a deferred tool called before a search loaded it; and the same in a durable
//! conversation's `durable::Worker`, pleach's way and natively.

use std::sync::Arc;

use pleach_core::agent::{
    AgentOptions, AnthropicClient, ModelClient, OpenAiChatClient, OpenAiResponsesClient, StopReason,
};
use pleach_core::search::ToolSearch;
use pleach_core::{
    ErrorCode, Runtime, Session, SessionOptions, ToolDefinition, ToolError, ToolEvent,
    ToolRegistryBuilder, UnifiedToolDefinition,
};
use pleach_test_support::http::{LoopbackServer, Recorded, Reply};
use serde_json::{Value, json};

use crate::agent::{anthropic_answer, openai_answer, responses_answer, run, sse};

/// The tool the model finds: the 1,000th, among 999 about other things.
const TARGET: &str = "convert_currency";

/// The nouns of the made-up catalog, each its own.
const NOUNS: &str = "invoice ticket user group project task comment label milestone repository branch commit \
    release package build deployment server volume snapshot network firewall certificate \
    domain record mailbox message thread channel meeting calendar event reminder note document \
    folder file image video playlist song album artist podcast episode book author library \
    course lesson student teacher grade exam patient doctor appointment prescription claim \
    policy customer lead deal quote order shipment warehouse product supplier coupon cart \
    review survey form report dashboard metric alert incident runbook schedule shift employee \
    payroll expense budget account ledger asset contract vendor license device sensor vehicle \
    route trip hotel flight booking recipe ingredient menu table room desk badge visitor \
    parcel locker printer scanner";

/// 1,000 tools: 999 of a made-up catalog (each its own noun and verb) and the one to find.
fn catalog() -> Vec<UnifiedToolDefinition> {
    const VERBS: [&str; 9] = [
        "list", "create", "delete", "update", "archive", "export", "import", "share", "count",
    ];
    let mut tools: Vec<UnifiedToolDefinition> = VERBS
        .iter()
        .flat_map(|verb| NOUNS.split_whitespace().map(move |noun| (verb, noun)))
        .map(|(verb, noun)| {
            tool(
                &format!("{verb}_{noun}"),
                &format!("{verb}s one {noun} or more, by id."),
            )
        })
        .collect();
    tools.push(tool(
        TARGET,
        "Converts an amount of money from one currency to another at today's rate.",
    ));
    assert_eq!(tools.len(), 1_000);
    tools
}

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

/// A session with the catalog deferred, the search tool, and `always_on` sent on every step.
fn deferred_session() -> (Session, ToolSearch) {
    let (runtime, search) = deferred_runtime();
    let session = runtime.create_session(SessionOptions::all()).unwrap();
    session.push_user_message(QUESTION);
    (session, search)
}

/// What the user asks.
const QUESTION: &str = "How much is 100 euros in dollars?";

/// A runtime with the catalog, `get_time` and the search tool, and the search deferring the
/// catalog.
fn deferred_runtime() -> (Runtime, ToolSearch) {
    let catalog = catalog();
    let search = ToolSearch::new(&catalog);
    let always_on = tool("get_time", "The current time.");
    let registry = ToolRegistryBuilder::new()
        .register_all(catalog)
        .register(always_on)
        .register(search.definition().unwrap())
        .build()
        .unwrap();
    let runtime = Runtime::builder().registry(registry).build().unwrap();
    (runtime, search)
}

/// The names of the tools a recorded request sent, in either wire shape.
fn sent_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().or(tool["name"].as_str()))
        .map(str::to_owned)
        .collect()
}

fn openai_call(id: &str, name: &str, arguments: &Value) -> Vec<u8> {
    pleach_test_support::model::calls(&[(id, name, arguments.clone())])
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

/// The scripted conversation on one wire shape: search, call the tool found, answer.
async fn searches_loads_and_calls(
    call: fn(&str, &str, &Value) -> Vec<u8>,
    answer: fn(&str) -> Vec<u8>,
    client: impl FnOnce(&LoopbackServer) -> Arc<dyn ModelClient>,
) {
    let (session, search) = deferred_session();
    let server = LoopbackServer::replying(vec![
        Reply::sse(call(
            "c1",
            "search_tools",
            &json!({"query": "convert currency euros to dollars"}),
        )),
        Reply::sse(call("c2", TARGET, &json!({"amount": 100}))),
        Reply::sse(answer("About 108 dollars.")),
    ])
    .await;
    let options = AgentOptions::default().tool_search(search);
    let (events, outcome) = run(&session, client(&server), options).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished, "{events:?}");

    let requests: Vec<Value> = server.requests().iter().map(Recorded::json).collect();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        sent_names(&requests[0]),
        ["get_time", "search_tools"],
        "only the always-on tools and the search tool at first"
    );
    let second = sent_names(&requests[1]);
    assert!(
        second.iter().any(|name| name == TARGET),
        "the found tool is sent next: {second:?}"
    );
    assert!(
        second.len() <= 2 + pleach_core::search::DEFAULT_LIMIT,
        "{second:?}"
    );

    let loaded: Vec<&Vec<String>> = events
        .iter()
        .filter_map(|event| match event {
            ToolEvent::ToolsLoaded {
                tool_call_id,
                tools,
            } if &**tool_call_id == "c1" => Some(tools),
            _ => None,
        })
        .collect();
    assert_eq!(loaded.len(), 1, "{events:?}");
    assert!(loaded[0].iter().any(|name| name == TARGET));
    let completed: Vec<(&str, &Value)> = events
        .iter()
        .filter_map(|event| match event {
            ToolEvent::Completed {
                tool_call, result, ..
            } => Some((tool_call.name(), result)),
            _ => None,
        })
        .collect();
    assert_eq!(completed[0].0, "search_tools");
    assert_eq!(
        completed[0].1["tools"][0]["name"], TARGET,
        "the best match first"
    );
    assert_eq!(completed[1], (TARGET, &json!("convert_currency done")));
}

#[tokio::test]
async fn over_openai_chat_the_model_searches_loads_and_calls_a_deferred_tool() {
    searches_loads_and_calls(openai_call, openai_answer, |server| {
        Arc::new(OpenAiChatClient::new(server.url("/v1"), "gpt-4o", Some("k".into())).unwrap())
    })
    .await;
}

#[tokio::test]
async fn over_anthropic_the_model_searches_loads_and_calls_a_deferred_tool() {
    searches_loads_and_calls(anthropic_call, anthropic_answer, |server| {
        Arc::new(AnthropicClient::new(server.url(""), "claude-sonnet-4", "k").unwrap())
    })
    .await;
}

#[tokio::test]
async fn a_deferred_tool_called_before_a_search_fails_with_1021_naming_the_search_tool() {
    let (session, search) = deferred_session();
    let server = LoopbackServer::replying(vec![
        Reply::sse(openai_call("c1", TARGET, &json!({"amount": 100}))),
        Reply::sse(openai_answer("I could not.")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "gpt-4o", Some("k".into())).unwrap();
    let (events, outcome) = run(
        &session,
        Arc::new(client),
        AgentOptions::default().tool_search(search),
    )
    .await;
    assert_eq!(outcome.stop_reason, StopReason::Finished);
    let error = events
        .iter()
        .find_map(|event| match event {
            ToolEvent::Failed { error, .. } => Some(error),
            _ => None,
        })
        .expect("the call failed");
    assert_eq!(error.code(), ErrorCode::ToolNotLoaded);
    assert!(
        error.message().contains("`search_tools`"),
        "{}",
        error.message()
    );
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ToolEvent::Completed { .. })),
        "it never ran"
    );
    // The tool is still not sent: nothing loaded it.
    let second = server.requests()[1].json();
    assert!(!sent_names(&second).iter().any(|name| name == TARGET));
}

/// A natively deferred run of the 1,000-tool session against a loopback model giving `replies`:
/// its events, once it finished, and the requests the model received.
async fn native_run(
    replies: [Vec<u8>; 3],
    client: impl FnOnce(&LoopbackServer) -> Arc<dyn ModelClient>,
) -> (Vec<ToolEvent>, Vec<Value>) {
    let (session, search) = deferred_session();
    let server = LoopbackServer::replying(replies.into_iter().map(Reply::sse).collect()).await;
    let options = AgentOptions::default().tool_search(search.native(true));
    let (events, outcome) = run(&session, client(&server), options).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished, "{events:?}");
    let requests: Vec<Value> = server.requests().iter().map(Recorded::json).collect();
    assert_eq!(requests.len(), 3);
    (events, requests)
}

/// The events of a run that say a search loaded `TARGET`, and the tools completed in order.
fn loaded_and_completed(events: &[ToolEvent]) -> (usize, Vec<(String, Value)>) {
    let loads = events
        .iter()
        .filter(|event| {
            matches!(event, ToolEvent::ToolsLoaded { tools, .. } if tools.iter().any(|name| name == TARGET))
        })
        .count();
    let completed = events
        .iter()
        .filter_map(|event| match event {
            ToolEvent::Completed {
                tool_call, result, ..
            } => Some((tool_call.name().to_owned(), result.clone())),
            _ => None,
        })
        .collect();
    (loads, completed)
}

#[tokio::test]
async fn over_anthropic_natively_every_deferred_tool_is_sent_deferred_and_a_search_answers_with_tool_references()
 {
    let replies = [
        anthropic_call(
            "toolu_1",
            "search_tools",
            &json!({"query": "convert currency euros to dollars"}),
        ),
        anthropic_call("toolu_2", TARGET, &json!({"amount": 100})),
        anthropic_answer("About 108 dollars."),
    ];
    let (events, requests) = native_run(replies, |server| {
        Arc::new(AnthropicClient::new(server.url(""), "claude-sonnet-4-5", "k").unwrap())
    })
    .await;
    let (loads, completed) = loaded_and_completed(&events);
    assert_eq!(loads, 1, "{events:?}");
    assert_eq!(completed[0].0, "search_tools");
    assert_eq!(
        completed[1],
        (TARGET.to_owned(), json!("convert_currency done"))
    );

    // Every step sends the same tools: the two always-on ones, then the 1,000 deferred.
    for request in &requests {
        let tools = request["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1_002);
        assert_eq!(sent_names(request)[..2], ["get_time", "search_tools"]);
        assert!(
            tools[..2]
                .iter()
                .all(|tool| tool.get("defer_loading").is_none())
        );
        assert!(tools[2..].iter().all(|tool| tool["defer_loading"] == true));
        assert_eq!(request["tools"], requests[0]["tools"]);
    }
    let target = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == TARGET)
        .unwrap();
    assert_eq!(
        target["input_schema"]["properties"]["amount"]["type"],
        "number"
    );
    // The search's result goes back as Anthropic's tool references, best match first.
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"][0]["type"], "tool_use");
    assert_eq!(messages[1]["content"][0]["name"], "search_tools");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(
        result["content"][0],
        json!({"type": "tool_reference", "tool_name": TARGET})
    );
    let references = result["content"].as_array().unwrap();
    assert!(references.len() <= pleach_core::search::DEFAULT_LIMIT);
    assert!(
        references
            .iter()
            .all(|block| block["type"] == "tool_reference")
    );
    // The found tool's own call and result go back as usual.
    let messages = requests[2]["messages"].as_array().unwrap();
    assert_eq!(messages[3]["content"][0]["name"], TARGET);
    assert_eq!(
        messages[4]["content"][0]["content"],
        "\"convert_currency done\""
    );
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

#[tokio::test]
async fn over_openai_responses_natively_the_search_is_a_client_tool_search_whose_output_carries_the_tools_found()
 {
    let replies = [
        responses_search("call_1", "convert currency euros to dollars"),
        responses_call("call_2", TARGET, &json!({"amount": 100})),
        responses_answer("About 108 dollars."),
    ];
    let (events, requests) = native_run(replies, |server| {
        Arc::new(OpenAiResponsesClient::new(server.url("/v1"), "gpt-5.4", None).unwrap())
    })
    .await;
    let (loads, completed) = loaded_and_completed(&events);
    assert_eq!(loads, 1, "{events:?}");
    assert_eq!(
        completed[0].0, "search_tools",
        "the tool search call ran the search tool"
    );
    assert_eq!(
        completed[1],
        (TARGET.to_owned(), json!("convert_currency done"))
    );

    for request in &requests {
        // The always-on function and the client tool search, the same on every step.
        let tools = request["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2, "{tools:?}");
        assert_eq!(tools[0]["name"], "get_time");
        assert_eq!(tools[1]["type"], "tool_search");
        assert_eq!(tools[1]["execution"], "client");
        assert_eq!(tools[1]["parameters"]["required"], json!(["query"]));
        assert!(
            tools[1]["description"]
                .as_str()
                .unwrap()
                .contains("1000 more tools")
        );
    }
    let input = requests[1]["input"].as_array().unwrap();
    assert_eq!(
        input[1],
        json!({"type": "tool_search_call", "call_id": "call_1", "execution": "client",
               "status": "completed", "arguments": {"query": "convert currency euros to dollars"}})
    );
    let output = &input[2];
    assert_eq!(output["type"], "tool_search_output");
    assert_eq!(output["call_id"], "call_1");
    assert_eq!(output["execution"], "client");
    let found = output["tools"].as_array().unwrap();
    assert!(!found.is_empty() && found.len() <= pleach_core::search::DEFAULT_LIMIT);
    assert_eq!(found[0]["type"], "function");
    assert_eq!(found[0]["name"], TARGET);
    assert_eq!(found[0]["defer_loading"], true);
    assert_eq!(
        found[0]["parameters"]["properties"]["amount"]["type"],
        "number"
    );
    let input = requests[2]["input"].as_array().unwrap();
    assert_eq!(input[3]["type"], "function_call");
    assert_eq!(input[3]["name"], TARGET);
    assert_eq!(input[4]["output"], "\"convert_currency done\"");
}

#[tokio::test]
async fn a_client_without_native_deferral_defers_pleachs_way_when_native_is_asked() {
    let (session, search) = deferred_session();
    let server = LoopbackServer::replying(vec![
        Reply::sse(openai_call(
            "c1",
            "search_tools",
            &json!({"query": "convert currency"}),
        )),
        Reply::sse(openai_answer("Found it.")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "gpt-4o", Some("k".into())).unwrap();
    let options = AgentOptions::default().tool_search(search.native(true));
    let (_, outcome) = run(&session, Arc::new(client), options).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished);
    let requests: Vec<Value> = server.requests().iter().map(Recorded::json).collect();
    assert_eq!(sent_names(&requests[0]), ["get_time", "search_tools"]);
    assert!(sent_names(&requests[1]).iter().any(|name| name == TARGET));
    assert!(
        requests[1]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|tool| tool.get("defer_loading").is_none())
    );
}

/// A durable engine in memory over the 1,000-tool catalog: model steps and calls on a
/// `durable::Worker` whose agent options defer the catalog, the model on loopback.
struct DurableEngine {
    worker: pleach_core::durable::Worker,
    client: Arc<dyn ModelClient>,
    events: std::sync::Mutex<Vec<Value>>,
}

impl pleach_core::durable::Engine for DurableEngine {
    async fn model_step(
        &self,
        conversation: Vec<pleach_core::Message>,
    ) -> Result<pleach_core::durable::ModelStep, pleach_core::durable::StepFailure> {
        let trace = std::collections::BTreeMap::new();
        self.worker
            .model_step(self.client.as_ref(), conversation, &trace)
            .await
    }

    async fn tool_call(
        &self,
        request: pleach_core::durable::CallRequest,
    ) -> pleach_core::durable::CallOutcome {
        self.worker.tool_call(request).await
    }

    async fn decision(
        &self,
        _: &pleach_core::safety::Interrupt,
        _: Option<std::time::Duration>,
    ) -> Option<pleach_core::safety::Decision> {
        None
    }

    fn emit(&self, event: Value) {
        self.events.lock().unwrap().push(event);
    }

    async fn join_all<F: Future>(&self, futures: Vec<F>) -> Vec<F::Output> {
        futures_util::future::join_all(futures).await
    }
}

/// A durable conversation over the deferred catalog (`native` or pleach's way) against a
/// loopback model giving `replies`: the outcome, its events and the requests the model received.
async fn durable_run(
    replies: Vec<Vec<u8>>,
    native: bool,
    client: impl FnOnce(&LoopbackServer) -> Arc<dyn ModelClient>,
) -> (pleach_core::durable::DurableOutcome, Vec<Value>, Vec<Value>) {
    let (runtime, search) = deferred_runtime();
    let server = LoopbackServer::replying(replies.into_iter().map(Reply::sse).collect()).await;
    let engine = DurableEngine {
        worker: pleach_core::durable::Worker::new(runtime)
            .agent_options(AgentOptions::default().tool_search(search.native(native))),
        client: client(&server),
        events: std::sync::Mutex::default(),
    };
    let outcome = pleach_core::durable::run(
        &engine,
        vec![pleach_core::Message::User {
            content: QUESTION.into(),
        }],
        &pleach_core::durable::DurableOptions::default(),
    )
    .await;
    let events = engine.events.into_inner().unwrap();
    let requests: Vec<Value> = server.requests().iter().map(Recorded::json).collect();
    (outcome, events, requests)
}

/// A model's replies in one wire shape: a search, a call of the tool it found, the answer.
fn search_then_call(
    call: fn(&str, &str, &Value) -> Vec<u8>,
    answer: fn(&str) -> Vec<u8>,
) -> Vec<Vec<u8>> {
    vec![
        call(
            "call_1",
            "search_tools",
            &json!({"query": "convert currency euros to dollars"}),
        ),
        call("call_2", TARGET, &json!({"amount": 100})),
        answer("About 108 dollars."),
    ]
}

/// The durable conversation's calls from the `skip`th on searched, loaded (one `tools.loaded`
/// naming `TARGET`) and ran `TARGET`, and it finished.
fn durable_found_and_ran(
    outcome: &pleach_core::durable::DurableOutcome,
    skip: usize,
    events: &[Value],
) {
    assert_eq!(
        outcome.final_text.as_deref(),
        Some("About 108 dollars."),
        "{events:?}"
    );
    let results = &outcome.results[skip..];
    let names: Vec<&str> = results.iter().map(|r| r.tool_call.name()).collect();
    assert_eq!(names, ["search_tools", TARGET]);
    assert!(results.iter().all(|result| result.outcome.is_ok()));
    let loads: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "tools.loaded")
        .collect();
    assert_eq!(loads.len(), 1, "{events:?}");
    assert_eq!(loads[0]["tools"][0], TARGET);
}

#[tokio::test]
async fn a_durable_worker_defers_pleachs_way_and_loads_what_the_conversations_searches_found() {
    let mut replies = vec![openai_call("c0", TARGET, &json!({"amount": 1}))];
    replies.extend(search_then_call(openai_call, openai_answer));
    let (outcome, events, requests) = durable_run(replies, false, |server| {
        Arc::new(OpenAiChatClient::new(server.url("/v1"), "gpt-4o", Some("k".into())).unwrap())
    })
    .await;
    // The guess before any search: refused (1021) without running.
    let first = &outcome.results[0];
    assert_eq!(first.tool_call.name(), TARGET);
    let error = first.outcome.as_ref().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolNotLoaded);
    durable_found_and_ran(&outcome, 1, &events);
    assert_eq!(requests.len(), 4);
    for request in &requests[..2] {
        assert_eq!(sent_names(request), ["get_time", "search_tools"]);
    }
    for request in &requests[2..] {
        assert_eq!(
            sent_names(request),
            ["convert_currency", "get_time", "search_tools"]
        );
    }
}

#[tokio::test]
async fn a_durable_worker_defers_natively_over_anthropic_and_openai_responses() {
    let replies = search_then_call(anthropic_call, anthropic_answer);
    let (outcome, events, requests) = durable_run(replies, true, |server| {
        Arc::new(AnthropicClient::new(server.url(""), "claude-sonnet-4-5", "k").unwrap())
    })
    .await;
    durable_found_and_ran(&outcome, 0, &events);
    for request in &requests {
        let tools = request["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1_002);
        assert!(tools[2..].iter().all(|tool| tool["defer_loading"] == true));
    }
    let result = &requests[1]["messages"][2]["content"][0];
    assert_eq!(
        result["content"][0],
        json!({"type": "tool_reference", "tool_name": TARGET})
    );

    let replies = vec![
        responses_search("call_1", "convert currency euros to dollars"),
        responses_call("call_2", TARGET, &json!({"amount": 100})),
        responses_answer("About 108 dollars."),
    ];
    let (outcome, events, requests) = durable_run(replies, true, |server| {
        Arc::new(OpenAiResponsesClient::new(server.url("/v1"), "gpt-5.4", None).unwrap())
    })
    .await;
    durable_found_and_ran(&outcome, 0, &events);
    for request in &requests {
        let tools = request["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2, "{tools:?}");
        assert_eq!(tools[1]["type"], "tool_search");
    }
    let output = &requests[1]["input"][2];
    assert_eq!(output["type"], "tool_search_output");
    assert_eq!(output["tools"][0]["name"], TARGET);
}
