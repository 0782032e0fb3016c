//! A loopback model API: OpenAI-compatible streamed replies, one per step of the conversation;
//! what the recorded fixtures and hand-written steps say.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

pub(crate) struct ModelServer {
    pub(crate) base: String,
    requests: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ModelServer {
    /// Serves `replies` (SSE bodies), one per step: a request whose conversation holds `n`
    /// assistant messages gets reply `n`, so a step asked again (an activity retried after its
    /// worker went silent) gets the same reply, as from a model at temperature 0. A request past
    /// the last reply gets a 500.
    pub(crate) async fn start(replies: Vec<Vec<u8>>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let mut stream = BufReader::new(stream);
                let Some(body) = read_request(&mut stream).await else {
                    continue;
                };
                let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let step = request["messages"].as_array().map_or(0, |messages| {
                    messages
                        .iter()
                        .filter(|message| message["role"] == "assistant")
                        .count()
                });
                recorded
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(request);
                let response = match replies.get(step) {
                    Some(body) => {
                        let mut head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        head.extend(body.iter().copied());
                        head
                    }
                    None => {
                        b"HTTP/1.1 500 Error\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
                            .to_vec()
                    }
                };
                let stream = stream.get_mut();
                let _ = stream.write_all(&response).await;
                let _ = stream.shutdown().await;
            }
        });
        ModelServer {
            base,
            requests,
            task,
        }
    }

    /// The request bodies received so far, retries included.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn read_request(stream: &mut BufReader<tokio::net::TcpStream>) -> Option<Vec<u8>> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut length = 0;
    loop {
        line.clear();
        stream.read_line(&mut line).await.ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// A recorded stream from the repository's fixtures.
pub(crate) fn fixture(folder: &str, file: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/provider-streams")
        .join(folder)
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A step calling `calls` (`(id, name, arguments)`), each streamed in two fragments.
pub(crate) fn calls(calls: &[(&str, &str, Value)]) -> Vec<u8> {
    let mut out = String::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let text = arguments.to_string();
        let (head, tail) = text.split_at(text.len() / 2);
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
pub(crate) fn answer(text: &str) -> Vec<u8> {
    let chunk = json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":"stop"}]});
    format!("data: {chunk}\n\ndata: [DONE]\n\n").into_bytes()
}
