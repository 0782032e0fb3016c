//! The agent loop: a model's streamed response is decoded, its tool calls assembled as they
//! arrive, the calls run through the session, the results written back, and the model asked
//! again — until it answers without calling a tool, or a step limit.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`ModelClient`] | sends the conversation and the tool definitions to a model; answers with its streamed response ([`ModelResponse`]: bytes and their [`WireFormat`]) |
//! | [`ReplayClient`] | a client that replays recorded responses, one per step: tests, demos, no key |
//! | `OpenAiChatClient`, `OpenAiResponsesClient`, `AnthropicClient`, `GeminiClient` | HTTP clients (feature `http`): Chat Completions and any API that copies it (vLLM, llama.cpp's server, Ollama, `OpenRouter`), OpenAI Responses, Anthropic Messages, and Gemini |
//! | [`Session::run_agent`](crate::Session::run_agent) | the loop; its [`AgentRun`] streams every event and [`finish`](AgentRun::finish)es with an [`AgentOutcome`] |
//!
//! Per step: the request (the conversation so far, the session's enabled tools) → the response's
//! bytes through [`providers::Decoder`](crate::providers::Decoder) and the provider's stream
//! parser → a [`StreamAssembler`](crate::assemble::StreamAssembler) (`tool.started` when a call
//! is first seen, `tool.delta` per fragment, as they arrive) → when the response ends, the
//! assistant message (text and calls) is written and the calls are run as one turn of the
//! session: batching, safety, limits, and one terminal event and one result message per call, in
//! call order. A call whose stream broke
//! (cut off: 1007; unreadable, duplicate, past the size limit: 1005/1006) never runs and still
//! gets its `tool.failed` and its result message. The next request carries the results.
//!
//! ```rust
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Arc;
//! use pleach_core::agent::{AgentOptions, ReplayClient, StopReason, WireFormat};
//! use pleach_core::{tool, Message, Runtime, SessionOptions};
//!
//! /// Adds two integers.
//! #[tool]
//! async fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! // Two recorded responses: a call to `add`, then the answer.
//! let client = ReplayClient::new(WireFormat::OpenAiChat, [
//!     concat!(
//!         r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":2,"}}]}}]}"#, "\n\n",
//!         r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"b\":3}"}}]}}]}"#, "\n\n",
//!         r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#, "\n\n",
//!         "data: [DONE]\n\n",
//!     ),
//!     concat!(
//!         r#"data: {"choices":[{"index":0,"delta":{"content":"2 + 3 = 5"},"finish_reason":"stop"}]}"#, "\n\n",
//!         "data: [DONE]\n\n",
//!     ),
//! ]);
//!
//! let session = Runtime::builder().build().unwrap().create_session(SessionOptions::enabled(["add"])).unwrap();
//! session.push_user_message("what is 2 + 3?");
//! let mut run = session.run_agent(Arc::new(client), AgentOptions::default());
//! let mut types = Vec::new();
//! while let Some(event) = run.events().recv().await {
//!     types.push(event.event_type());
//! }
//! assert_eq!(types, ["tool.started", "tool.delta", "tool.delta", "tool.completed"]);
//! let outcome = run.finish().await;
//! assert_eq!(outcome.stop_reason, StopReason::Finished);
//! assert_eq!(outcome.final_text.as_deref(), Some("2 + 3 = 5"));
//! assert!(matches!(&session.conversation()[2], Message::Tool { content, .. } if content == "5"));
//! # }
//! ```
//!
//! `docs/agent.md` is the contract: the loop's steps, how each kind of bad input ends, and the
//! tests that hold the code to it.
//!
//! The files: `client.rs` (the model-client contract and [`ModelError`]), `replay.rs`,
//! `options.rs` (how a run goes and how it ended), `reading.rs` (one response read into a step)
//! and `run.rs` (the loop and [`AgentRun`]); the HTTP clients (`openai_client.rs`,
//! `openai_responses_client.rs`, `anthropic_client.rs`, `gemini_client.rs`, and what they share,
//! `http.rs`; `native_deferral.rs`, deferred tools the provider's way) and `endpoint.rs` beside
//! them.

#[cfg(feature = "http")]
mod anthropic_client;
#[cfg(feature = "http")]
mod endpoint;
#[cfg(feature = "http")]
mod gemini_client;
#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "http")]
mod native_deferral;
#[cfg(feature = "http")]
mod openai_client;
#[cfg(feature = "http")]
mod openai_responses_client;

#[cfg(feature = "http")]
pub use anthropic_client::AnthropicClient;
#[cfg(feature = "http")]
pub use endpoint::ModelEndpoint;
#[cfg(feature = "http")]
pub use gemini_client::GeminiClient;
#[cfg(feature = "http")]
pub use openai_client::OpenAiChatClient;
#[cfg(feature = "http")]
pub use openai_responses_client::OpenAiResponsesClient;

mod client;
mod options;
mod reading;
mod replay;
mod run;

pub use client::{
    BoxFuture, Chunks, ModelClient, ModelError, ModelRequest, ModelResponse, ResponseBody,
    ToolChoice, WireFormat,
};
pub use options::{AgentOptions, AgentOutcome, StepReport, StopReason};
pub(crate) use reading::read_response;
pub use replay::ReplayClient;
pub use run::AgentRun;
pub(crate) use run::{deferred_of, refuse_unloaded, step_tools};
