//! Content blocks from a tool to the model (`docs/providers.md`, "Content blocks"): a `#[tool]`
//! returning an image, run by the agent loop against a loopback server, reaches the requests pleach
//! sends in each format's documented shape; the other formats' messages and the events carry the
//! same blocks. No network: loopback only.

use std::sync::Arc;

use base64::Engine as _;
use pleach_core::agent::{
    AgentOptions, AnthropicClient, GeminiClient, OpenAiChatClient, OpenAiResponsesClient,
};
use pleach_core::content::{ContentBlock, ToolOutput};
use pleach_core::providers::ProviderFormat;
use pleach_core::providers::gemini::Gemini;
use pleach_core::providers::openai_chat::{OpenAiChat, OpenAiChatTextOnly};
use pleach_core::providers::openai_responses::OpenAiResponses;
use pleach_core::{
    ErrorCode, Limits, Message, Runtime, Session, SessionOptions, ToolCall, ToolEvent, tool,
};
use pleach_test_support::http::{LoopbackServer, Reply};
use serde_json::{Value, json};

use crate::agent::{anthropic_answer, gemini_answer, openai_answer, responses_answer, run, sse};

/// A PNG header for a 1280×720 image, padded to `len` bytes (no pixels are decoded anywhere).
fn png(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend_from_slice(&1280u32.to_be_bytes());
    bytes.extend_from_slice(&720u32.to_be_bytes());
    bytes.resize(len, 7);
    bytes
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Takes a screenshot of the page: its title beside the image.
#[tool]
async fn mm_screenshot(page: String) -> ToolOutput<String> {
    ToolOutput::new(format!("{page}: 2 widgets")).block(ContentBlock::image(png(2048), "image/png"))
}

/// Renders a huge image.
#[tool]
async fn mm_huge() -> ContentBlock {
    ContentBlock::image(png(64 * 1024), "image/png")
}

fn session(limits: Option<Limits>) -> Session {
    let mut builder = Runtime::builder();
    if let Some(limits) = limits {
        builder = builder.limits(limits);
    }
    builder
        .build()
        .unwrap()
        .create_session(SessionOptions::enabled(["mm_screenshot", "mm_huge"]))
        .unwrap()
}

/// An Anthropic stream calling `tool` with `arguments`, then its end.
fn anthropic_call(id: &str, tool: &str, arguments: &str) -> Vec<u8> {
    sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":id,"name":tool,"input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":arguments}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}}),
        json!({"type":"message_stop"}),
    ])
}

fn openai_call(id: &str, tool: &str, arguments: &str) -> Vec<u8> {
    let call =
        json!({"index":0,"id":id,"type":"function","function":{"name":tool,"arguments":arguments}});
    let chunk = json!({"choices":[{"index":0,"delta":{"tool_calls":[call]}}]});
    let end = json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]});
    format!("data: {chunk}\n\ndata: {end}\n\ndata: [DONE]\n\n").into_bytes()
}

#[tokio::test]
async fn an_image_reaches_an_anthropic_request_as_an_image_block() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(anthropic_call(
            "toolu_1",
            "mm_screenshot",
            r#"{"page":"home"}"#,
        )),
        Reply::sse(anthropic_answer("Two widgets.")),
    ])
    .await;
    let client = AnthropicClient::new(server.url(""), "claude-sonnet-4", "k").unwrap();
    let session = session(None);
    let (events, _) = run(&session, Arc::new(client), AgentOptions::default()).await;

    // The event carries the block itself; its wire form the type, MIME type and size alone.
    let completed = events
        .iter()
        .find(|e| e.event_type() == "tool.completed")
        .unwrap();
    let ToolEvent::Completed { content, .. } = completed else {
        unreachable!()
    };
    assert_eq!(content[0].media().unwrap().data.len(), 2048);
    let line: Value = serde_json::from_str(&completed.to_json()).unwrap();
    assert_eq!(line["result"], "home: 2 widgets");
    assert_eq!(
        line["content"],
        json!([{"type":"image","mimeType":"image/png","size":2048}])
    );

    let second = server.requests()[1].json();
    let results = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"][0]["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result in {second}"));
    let result = &results["content"][0];
    assert_eq!(
        *result,
        json!({
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [
                { "type": "text", "text": "\"home: 2 widgets\"" },
                { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": base64(&png(2048)) } }
            ],
            "is_error": false
        })
    );
}

#[tokio::test]
async fn an_image_reaches_an_openai_chat_request_in_a_user_message_after_the_tool_message() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(openai_call("call_1", "mm_screenshot", r#"{"page":"home"}"#)),
        Reply::sse(openai_answer("Two widgets.")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "gpt-4o", None).unwrap();
    let session = session(None);
    run(&session, Arc::new(client), AgentOptions::default()).await;

    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    assert_eq!(messages[tool]["tool_call_id"], "call_1");
    assert_eq!(
        messages[tool]["content"],
        "\"home: 2 widgets\"\n[image/png, 2 KB: in the next user message]"
    );
    assert_eq!(
        messages[tool + 1],
        json!({ "role": "user", "content": [
            { "type": "text", "text": "Attached by the tool call `call_1` (mm_screenshot):" },
            { "type": "image_url", "image_url": { "url": format!("data:image/png;base64,{}", base64(&png(2048))) } }
        ] })
    );
    assert_eq!(messages.len(), tool + 2, "nothing after the media message");
}

#[tokio::test]
async fn an_image_reaches_an_openai_responses_request_as_an_input_image() {
    let call = sse(&[
        json!({"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"mm_screenshot","arguments":""}}),
        json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":r#"{"page":"home"}"#}),
        json!({"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":r#"{"page":"home"}"#}),
        json!({"type":"response.completed","response":{"id":"resp_1","status":"completed"}}),
    ]);
    let server = LoopbackServer::replying(vec![
        Reply::sse(call),
        Reply::sse(responses_answer("Two widgets.")),
    ])
    .await;
    let client = OpenAiResponsesClient::new(server.url("/v1"), "gpt-5.1", None).unwrap();
    let session = session(None);
    run(&session, Arc::new(client), AgentOptions::default()).await;

    let second = server.requests()[1].json();
    let input = second["input"].as_array().unwrap();
    let output = input
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .unwrap_or_else(|| panic!("no function_call_output in {second}"));
    assert_eq!(
        *output,
        json!({ "type": "function_call_output", "call_id": "call_1", "output": [
            { "type": "input_text", "text": "\"home: 2 widgets\"" },
            { "type": "input_image", "image_url": format!("data:image/png;base64,{}", base64(&png(2048))) }
        ] })
    );
}

#[tokio::test]
async fn an_image_reaches_a_gemini_request_as_inline_data_in_the_function_response() {
    let chunk = json!({"candidates":[{"content":{"role":"model","parts":[
        {"functionCall":{"id":"fc_1","name":"mm_screenshot","args":{"page":"home"}}}
    ]},"finishReason":"STOP","index":0}],"responseId":"r1"});
    let server = LoopbackServer::replying(vec![
        Reply::sse(format!("data: {chunk}\r\n\r\n")),
        Reply::sse(gemini_answer("Two widgets.")),
    ])
    .await;
    let client = GeminiClient::new(server.url("/v1beta"), "gemini-2.5-flash", "k").unwrap();
    let session = session(None);
    run(&session, Arc::new(client), AgentOptions::default()).await;

    let second = server.requests()[1].json();
    let contents = second["contents"].as_array().unwrap();
    let response = contents
        .iter()
        .flat_map(|content| content["parts"].as_array().into_iter().flatten())
        .find(|part| part.get("functionResponse").is_some())
        .unwrap_or_else(|| panic!("no functionResponse in {second}"));
    assert_eq!(
        *response,
        json!({ "functionResponse": {
            "id": "fc_1",
            "name": "mm_screenshot",
            "response": { "output": "home: 2 widgets" },
            "parts": [{ "inlineData": { "mimeType": "image/png", "data": base64(&png(2048)) } }]
        } })
    );
}

/// A medium's base64 over 64 KiB is sent as a piece of its own (`JsonBody`), not copied into one
/// buffer with the rest: the request still says its length (never chunked), and the bytes are the
/// JSON the API expects.
#[tokio::test]
async fn a_large_image_is_sent_whole_with_its_length() {
    let encoded = base64(&png(64 * 1024));
    assert!(
        encoded.len() > 64 * 1024,
        "the base64 must be a piece of its own"
    );

    let server = LoopbackServer::replying(vec![
        Reply::sse(anthropic_call("toolu_1", "mm_huge", "{}")),
        Reply::sse(anthropic_answer("A huge image.")),
    ])
    .await;
    let client = AnthropicClient::new(server.url(""), "claude-sonnet-4", "k").unwrap();
    run(&session(None), Arc::new(client), AgentOptions::default()).await;
    let anthropic = server.requests()[1].clone();

    let server = LoopbackServer::replying(vec![
        Reply::sse(openai_call("call_1", "mm_huge", "{}")),
        Reply::sse(openai_answer("A huge image.")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "gpt-4o", None).unwrap();
    run(&session(None), Arc::new(client), AgentOptions::default()).await;
    let chat = server.requests()[1].clone();

    for request in [&anthropic, &chat] {
        assert_eq!(request.header("transfer-encoding"), None);
        assert_eq!(
            request.header("content-length"),
            Some(request.body.len().to_string().as_str())
        );
        let body = std::str::from_utf8(&request.body).unwrap();
        assert_eq!(
            body.matches(encoded.as_str()).count(),
            1,
            "{}",
            &body[..200]
        );
    }
    let anthropic = anthropic.json();
    let result = anthropic["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"][0]["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result"));
    assert_eq!(
        result["content"][0]["content"][0]["source"],
        json!({ "type": "base64", "media_type": "image/png", "data": encoded })
    );
    let chat = chat.json();
    let media = chat["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        media["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{encoded}")
    );
}

/// The conversation a session keeps after running the screenshot tool.
async fn screenshot_conversation() -> Vec<Message> {
    let session = session(None);
    let call = ToolCall::new("call_1", "mm_screenshot", r#"{"page":"home"}"#);
    let result = session.call(call.clone()).await;
    vec![
        Message::Assistant {
            content: None,
            tool_calls: vec![call.clone()],
        },
        Message::tool_result(&call, &result.outcome),
    ]
}

#[tokio::test]
async fn the_other_formats_carry_the_image_as_their_apis_document() {
    let conversation = screenshot_conversation().await;
    let data = base64(&png(2048));

    let items = OpenAiResponses.messages(&conversation);
    assert_eq!(
        items[1],
        json!({ "type": "function_call_output", "call_id": "call_1", "output": [
            { "type": "input_text", "text": "\"home: 2 widgets\"" },
            { "type": "input_image", "image_url": format!("data:image/png;base64,{data}") }
        ] })
    );

    let contents = Gemini.messages(&conversation);
    assert_eq!(
        contents[1]["parts"][0],
        json!({ "functionResponse": {
            "id": "call_1",
            "name": "mm_screenshot",
            "response": { "output": "home: 2 widgets" },
            "parts": [{ "inlineData": { "mimeType": "image/png", "data": data } }]
        } })
    );

    // A host whose model reads no images refuses them, with the code, keeping the text.
    let refused = OpenAiChatTextOnly.messages(&conversation);
    assert_eq!(refused.len(), 2, "no user message with media");
    let text = refused[1]["content"].as_str().unwrap();
    assert!(
        text.starts_with("error 1019: the tool returned image/png (2 KB)"),
        "{text}"
    );
    assert!(
        text.ends_with("The result's text: \"home: 2 widgets\""),
        "{text}"
    );
    // The default Chat format sends them.
    assert_eq!(OpenAiChat.messages(&conversation)[2]["role"], "user");
}

#[tokio::test]
async fn a_saved_conversation_keeps_its_images() {
    let conversation = screenshot_conversation().await;
    let text = serde_json::to_string(&conversation).unwrap();
    assert!(
        text.contains(r#""attachments":[{"type":"image","data":""#),
        "{text}"
    );
    let read: Vec<Message> = serde_json::from_str(&text).unwrap();
    assert_eq!(read, conversation);
}

#[tokio::test]
async fn a_medium_over_the_result_cap_is_refused_with_its_code() {
    let session = session(Some(Limits::default().max_result_bytes(16 * 1024)));
    let result = session.call(ToolCall::new("c1", "mm_huge", "{}")).await;
    // A medium cannot be cut: over the cap it is refused, with the cap in the message.
    let error = result.outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ContentRefused);
    assert!(
        error
            .message()
            .contains("image/png 1280×720 64 KB is over the result cap of 16 KB"),
        "{}",
        error.message()
    );
    let fits = session
        .call(ToolCall::new("c2", "mm_screenshot", r#"{"page":"a"}"#))
        .await;
    assert!(fits.outcome.is_ok());
}

#[tokio::test]
async fn a_durable_worker_keeps_blobs_over_its_limit_out_of_history() {
    use pleach_core::durable::{CallOutcome, CallRequest, Worker};
    let runtime = Runtime::builder().build().unwrap();
    let worker = Worker::new(runtime)
        .session_options(SessionOptions::enabled(["mm_huge", "mm_screenshot"]))
        .max_history_content_bytes(16 * 1024);
    let request = |id: &str, name: &str, arguments: &str| {
        CallRequest::new(ToolCall::new(id, name, arguments), Vec::new())
    };

    let outcome = worker.tool_call(request("c1", "mm_huge", "{}")).await;
    let CallOutcome::Finished { result, events } = outcome else {
        panic!("finished: {outcome:?}")
    };
    let error = result.outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ContentRefused);
    assert!(
        error.message().contains("image/png 1280×720 64 KB"),
        "{}",
        error.message()
    );
    assert_eq!(events.last().unwrap()["type"], "tool.failed");
    assert!(events.iter().all(|event| event["type"] != "tool.completed"));
    // What crosses into the history is small, and reads back.
    let text = serde_json::to_string(&result.tool_call).unwrap();
    assert!(text.len() < 1024);

    let outcome = worker
        .tool_call(request("c2", "mm_screenshot", r#"{"page":"a"}"#))
        .await;
    let CallOutcome::Finished { result, .. } = outcome else {
        panic!("finished: {outcome:?}")
    };
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["outcome"]["Content"]["structured"], "a: 2 widgets");
    assert_eq!(json["outcome"]["Content"]["content"][0]["type"], "image");
    let read: pleach_core::ToolResult = serde_json::from_value(json).unwrap();
    assert_eq!(read, result);
}
