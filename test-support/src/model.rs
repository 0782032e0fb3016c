//! [`ModelServer`]: a scripted model behind an OpenAI-compatible Chat Completions endpoint, and
//! the streamed replies it serves ([`calls`], [`answer`], [`fixture`]).

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::http::{LoopbackServer, Reply};

/// A loopback model API: OpenAI-compatible streamed replies, one per step of the conversation.
pub struct ModelServer {
    /// The API's base URL, up to `/v1`.
    pub base: String,
    server: LoopbackServer,
}

impl ModelServer {
    /// Serves `replies` (SSE bodies), one per step: a request whose conversation holds `n`
    /// assistant messages gets reply `n`, so a step asked again (an activity retried after its
    /// worker went silent) gets the same reply, as from a model at temperature 0. A request past
    /// the last reply gets a 500.
    pub async fn start(replies: Vec<Vec<u8>>) -> ModelServer {
        let server = LoopbackServer::start(move |request, _| {
            let request: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let step = request["messages"].as_array().map_or(0, |messages| {
                messages
                    .iter()
                    .filter(|message| message["role"] == "assistant")
                    .count()
            });
            match replies.get(step) {
                Some(body) => Reply::with(200, &[("content-type", "text/event-stream")], body),
                None => Reply::json(500, "{}"),
            }
        })
        .await;
        ModelServer {
            base: server.url("/v1"),
            server,
        }
    }

    /// The request bodies received so far, retries included (`null` for a body that is not
    /// JSON).
    pub fn requests(&self) -> Vec<Value> {
        self.server
            .requests()
            .iter()
            .map(|request| serde_json::from_slice(&request.body).unwrap_or(Value::Null))
            .collect()
    }
}

/// A recorded stream from the repository's fixtures (`tests/fixtures/provider-streams/FOLDER/FILE`).
///
/// # Panics
///
/// When the file cannot be read.
pub fn fixture(folder: &str, file: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/provider-streams")
        .join(folder)
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A step calling `calls` (`(id, name, arguments)`), each streamed in two fragments.
pub fn calls(calls: &[(&str, &str, Value)]) -> Vec<u8> {
    let mut out = String::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let text = arguments.to_string();
        let (head, tail) = text.split_at(text.floor_char_boundary(text.len() / 2));
        let first = json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": head}}
        ]}}]});
        let second = json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index": index, "function": {"arguments": tail}}
        ]}}]});
        let _ = write!(out, "data: {first}\n\ndata: {second}\n\n");
    }
    out.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    out.into_bytes()
}

/// A final answer.
pub fn answer(text: &str) -> Vec<u8> {
    let chunk = json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":"stop"}]});
    format!("data: {chunk}\n\ndata: [DONE]\n\n").into_bytes()
}
