//! A tool's own questions (`ToolContext::elicit`, `ToolContext::sample`) to an MCP 2026-07-28
//! client, which takes no requests from the server: the call ends with an input-required result
//! carrying the question, rmcp's client answers it and retries, and the tool runs again with the
//! answer. On a duplex stream (what stdio carries) and over stateless Streamable HTTP
//! (`server/discover`); a retry forged, or carried to another call, is refused.
#![allow(deprecated)] // rmcp marks sampling deprecated (SEP-2577); MCP still has it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use pleach_core::client::{Elicited, SamplingRequest};
use pleach_core::safety::ApprovalRequired;
use pleach_core::{Runtime, ToolContext, ToolError, tool, unified_tool};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService, ServiceError,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::mcp_http::bounded;

/// A booking the user fills in.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Seats {
    /// How many seats.
    #[schemars(range(min = 1, max = 8))]
    seats: u32,
}

/// Whether to pay now.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Payment {
    /// Yes pays now.
    now: bool,
}

/// Asks how many seats to book.
#[tool]
async fn ask_seats(ctx: ToolContext) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Seats>("How many seats?").await? {
        Elicited::Accept(booking) => format!("booked {}", booking.seats),
        Elicited::Decline => "declined".to_owned(),
        Elicited::Cancel => "cancelled".to_owned(),
    })
}

/// Asks how many seats, then whether to pay now: two rounds.
#[tool]
async fn ask_twice(ctx: ToolContext) -> Result<String, ToolError> {
    let Elicited::Accept(booking) = ctx.elicit::<Seats>("How many seats?").await? else {
        return Ok("no booking".to_owned());
    };
    let now = ctx
        .elicit::<Payment>("Pay now?")
        .await?
        .accepted()
        .is_some_and(|payment| payment.now);
    Ok(format!("booked {} (paid: {now})", booking.seats))
}

/// Asks the client's model to name a colour.
#[tool]
async fn ask_model(ctx: ToolContext) -> Result<String, ToolError> {
    let answer = ctx
        .sample(SamplingRequest::new("Name a colour.").max_tokens(5))
        .await?;
    Ok(format!(
        "{} said {}",
        answer.model,
        answer.text().unwrap_or("nothing")
    ))
}

/// How often `ask_to_buy` has started.
static BUY_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Asks whether to buy `item`.
#[tool]
async fn ask_to_buy(ctx: ToolContext, item: String) -> Result<String, ToolError> {
    BUY_RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(match ctx.elicit::<Payment>(format!("Buy {item}?")).await? {
        Elicited::Accept(Payment { now: true }) => format!("bought {item}"),
        _ => format!("kept {item}"),
    })
}

/// Deletes a booking: the user approves the call, then says how many seats to free.
#[unified_tool(safety_tier = "standard")]
async fn ask_after_approval(ctx: ToolContext, id: i64) -> Result<String, ToolError> {
    Ok(
        match ctx.elicit::<Seats>("How many seats to free?").await? {
            Elicited::Accept(freed) => format!("freed {} of booking {id}", freed.seats),
            _ => "nothing freed".to_owned(),
        },
    )
}

/// An MCP 2026-07-28 client that elicits and samples: its user gives the queued answers in
/// order, its model answers "Teal"; it records the questions its user saw.
struct Stateless {
    answers: Mutex<Vec<Value>>,
    asked: Mutex<Vec<String>>,
}

impl Stateless {
    fn answering(answers: &[Value]) -> Stateless {
        Stateless {
            answers: Mutex::new(answers.to_vec()),
            asked: Mutex::new(Vec::new()),
        }
    }
}

impl ClientHandler for Stateless {
    fn get_info(&self) -> ClientConfig {
        let capabilities =
            serde_json::from_value(json!({ "elicitation": { "form": {} }, "sampling": {} }))
                .expect("client capabilities");
        ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("stateless", "1"),
        )
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(crate::mcp::scripted_answer(
            &self.asked,
            &self.answers,
            &request,
        ))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        Ok(crate::client_talk::teal())
    }
}

fn runtime() -> Runtime {
    Runtime::builder()
        .detector(ApprovalRequired::tools(["ask_after_approval"]))
        .build()
        .expect("the runtime builds")
}

/// How a 2026-07-28 client starts: `server/discover`, no `initialize`.
fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// A server of this binary's tools on one end of a duplex stream, `handler` the client on the
/// other.
async fn over_duplex(handler: Stateless) -> RunningService<RoleClient, Stateless> {
    let server = McpServer::new(runtime()).expect("every tool can be described to MCP");
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    bounded(handler.serve_with_lifecycle(client_io, discover()))
        .await
        .expect("the discovery succeeds")
}

/// The same over Streamable HTTP on a free loopback port, the client starting with
/// `server/discover`: each request stands alone.
async fn over_http(handler: Stateless) -> RunningService<RoleClient, Stateless> {
    let server = McpServer::new(runtime()).expect("every tool can be described to MCP");
    let http = HttpServer::new(server, HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .expect("options hold");
    let address = crate::mcp_http::serve(http.router()).await;
    crate::mcp_http::connect_with(format!("http://{address}/mcp"), handler, discover()).await
}

fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

/// The text of a call's result, rmcp's client answering its input-required rounds.
async fn text_of(
    client: &RunningService<RoleClient, Stateless>,
    params: CallToolRequestParams,
) -> String {
    let result = bounded(client.call_tool(params))
        .await
        .expect("the call answers");
    serde_json::to_value(&result).expect("serializes")["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn accept(content: &Value) -> Value {
    json!({ "action": "accept", "content": content })
}

/// Every kind of answer, two rounds, sampling and an approval before a question, on whichever
/// transport `connect` makes.
async fn answers_reach_the_tool<F: Future<Output = RunningService<RoleClient, Stateless>>>(
    connect: impl Fn(Stateless) -> F,
    transport: &str,
) {
    // The first question ends the call: no request from the server reaches this client.
    let client = connect(Stateless::answering(&[])).await;
    let first = bounded(client.call_tool_once(call("ask_seats", json!({}))))
        .await
        .expect("the call answers");
    assert!(
        matches!(first, CallToolResponse::InputRequired(_)),
        "{transport}: {first:?}"
    );
    client.cancel().await.expect("the client closes");
    let cases = [
        (accept(&json!({ "seats": 2 })), "booked 2"),
        (json!({ "action": "decline" }), "declined"),
        (json!({ "action": "cancel" }), "cancelled"),
    ];
    for (answer, expected) in cases {
        let client = connect(Stateless::answering(&[answer])).await;
        let text = text_of(&client, call("ask_seats", json!({}))).await;
        assert_eq!(text, expected, "{transport}");
        client.cancel().await.expect("the client closes");
    }
    // An answer that does not fit the form fails the call, as in earlier protocol versions.
    let client = connect(Stateless::answering(&[accept(&json!({ "seats": "many" }))])).await;
    let text = text_of(&client, call("ask_seats", json!({}))).await;
    assert!(text.starts_with("error 1008: "), "{transport}: {text}");
    client.cancel().await.expect("the client closes");

    // Two questions, two rounds: the user sees each once, the tool both answers.
    let client = connect(Stateless::answering(&[
        accept(&json!({ "seats": 3 })),
        accept(&json!({ "now": true })),
    ]))
    .await;
    let text = text_of(&client, call("ask_twice", json!({}))).await;
    assert_eq!(text, "booked 3 (paid: true)", "{transport}");
    let asked = client.service().asked.lock().expect("not poisoned").clone();
    assert_eq!(asked, ["How many seats?", "Pay now?"], "{transport}");
    assert_eq!(
        text_of(&client, call("ask_model", json!({}))).await,
        "client-model said Teal",
        "{transport}"
    );
    client.cancel().await.expect("the client closes");

    // The approval round comes first; the question's retry keeps the approval.
    let client = connect(Stateless::answering(&[
        accept(&json!({ "approve": true })),
        accept(&json!({ "seats": 1 })),
    ]))
    .await;
    let text = text_of(&client, call("ask_after_approval", json!({ "id": 7 }))).await;
    assert_eq!(text, "freed 1 of booking 7", "{transport}");
    let asked = client.service().asked.lock().expect("not poisoned").clone();
    assert_eq!(asked.len(), 2, "{transport}: {asked:?}");
    assert_eq!(asked[1], "How many seats to free?", "{transport}");
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_2026_07_28_client_answers_a_tools_questions_over_a_stream() {
    answers_reach_the_tool(over_duplex, "stream").await;
}

#[tokio::test]
async fn a_2026_07_28_client_answers_a_tools_questions_over_http() {
    answers_reach_the_tool(over_http, "http").await;
}

/// The invalid-params error a retry ends in.
async fn refused(
    client: &RunningService<RoleClient, Stateless>,
    params: CallToolRequestParams,
) -> String {
    match bounded(client.call_tool_once(params)).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(
                error.code,
                rmcp::model::ErrorCode::INVALID_PARAMS,
                "{error:?}"
            );
            error.message.into_owned()
        }
        other => panic!("an invalid-params error, not {other:?}"),
    }
}

#[tokio::test]
async fn a_forged_or_misdirected_retry_is_refused_and_the_tool_runs_again_from_its_start() {
    let client = over_duplex(Stateless::answering(&[])).await;
    let lamp = || call("ask_to_buy", json!({ "item": "lamp" }));
    let started = BUY_RUNS.load(Ordering::SeqCst);
    let first = bounded(client.call_tool_once(lamp()))
        .await
        .expect("the call answers");
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("an input-required result, not {first:?}")
    };
    let request = serde_json::to_value(&asked.input_requests.expect("a question")["question_1"])
        .expect("serializes");
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["message"], "Buy lamp?", "{request}");
    let state = asked.request_state.expect("a sealed state");
    let answers = rmcp::model::InputResponses::from([(
        "question_1".to_owned(),
        accept(&json!({ "now": true })),
    )]);
    let retry = |params: CallToolRequestParams, state: &str| {
        params
            .with_input_responses(answers.clone())
            .with_request_state(state.to_owned())
    };

    let other_arguments = refused(
        &client,
        retry(call("ask_to_buy", json!({ "item": "sofa" })), &state),
    )
    .await;
    assert!(
        other_arguments.contains("another call"),
        "{other_arguments}"
    );
    let other_tool = refused(&client, retry(call("ask_seats", json!({})), &state)).await;
    assert!(other_tool.contains("another call"), "{other_tool}");
    let forged = state.replace("lamp", "sofa");
    let forged = refused(
        &client,
        retry(call("ask_to_buy", json!({ "item": "sofa" })), &forged),
    )
    .await;
    assert!(forged.contains("not one this server sealed"), "{forged}");
    let unanswered = refused(&client, lamp().with_request_state(state.clone())).await;
    assert!(
        unanswered.contains("inputResponses.question_1"),
        "{unanswered}"
    );

    let answered = bounded(client.call_tool_once(retry(lamp(), &state)))
        .await
        .expect("the retry answers");
    let CallToolResponse::Complete(result) = answered else {
        panic!("a result, not {answered:?}")
    };
    let result = serde_json::to_value(&result).expect("serializes");
    assert_eq!(result["content"][0]["text"], "bought lamp", "{result}");
    // The tool ran twice: once to ask, once with the answer.
    assert_eq!(BUY_RUNS.load(Ordering::SeqCst) - started, 2);
    client.cancel().await.expect("the client closes");
}
