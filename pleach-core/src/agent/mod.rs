//! The agent loop: a model's streamed response is decoded, its tool calls assembled as they
//! arrive, the calls run through the session, the results written back, and the model asked
//! again — until it answers without calling a tool, or a step limit.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`ModelClient`] | sends the conversation and the tool definitions to a model; answers with its streamed response ([`ModelResponse`]: bytes and their [`WireFormat`]) |
//! | [`ReplayClient`] | a client that replays recorded responses, one per step: tests, demos, no key |
//! | `OpenAiChatClient`, `AnthropicClient` | HTTP clients (feature `http`): Chat Completions and any API that copies it (vLLM, llama.cpp's server, Ollama, `OpenRouter`), and Anthropic Messages |
//! | [`Session::run_agent`] | the loop; its [`AgentRun`] streams every event and [`finish`](AgentRun::finish)es with an [`AgentOutcome`] |
//!
//! Per step: the request (the conversation so far, the session's enabled tools) → the response's
//! bytes through [`providers::Decoder`](crate::providers::Decoder) and the provider's stream
//! parser → a [`StreamAssembler`] (`tool.started` when a call is first seen, `tool.delta` per
//! fragment, as they arrive) → when the response ends, the assistant message (text and calls) is
//! written and the calls are run as one turn of the session: batching, safety, limits, and one
//! terminal event and one result message per call, in call order. A call whose stream broke
//! (cut off: 1007; unreadable, duplicate, past the size limit: 1005/1006) never runs and still
//! gets its `tool.failed` and its result message. The next request carries the results.
//!
//! ```rust,standalone_crate
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

#[cfg(feature = "http")]
mod anthropic_client;
#[cfg(feature = "http")]
mod endpoint;
#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "http")]
mod openai_client;

#[cfg(feature = "http")]
pub use anthropic_client::AnthropicClient;
#[cfg(feature = "http")]
pub use endpoint::ModelEndpoint;
#[cfg(feature = "http")]
pub use openai_client::OpenAiChatClient;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use tracing::Instrument;

use tokio_util::sync::CancellationToken;

use crate::assemble::{StreamAssembler, StreamError};
use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, EventStream, ToolEvent};
use crate::providers::anthropic::MessagesStreamParser;
use crate::providers::openai_chat::ChatStreamParser;
use crate::providers::{Decoder, ProviderEvent, StreamParser, StreamProblem};
use crate::session::{Session, SessionHandle, ToolResult};
use crate::tool::UnifiedToolDefinition;

/// A boxed future that can be sent between threads: what [`ModelClient`] and [`ResponseBody`]
/// return, so both stay object-safe.
///
/// ```
/// use pleach_core::agent::BoxFuture;
/// let future: BoxFuture<'static, u32> = Box::pin(async { 7 });
/// # drop(future);
/// ```
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which provider's streaming format a response is in: it picks the stream parser.
///
/// ```
/// use pleach_core::agent::WireFormat;
/// assert_ne!(WireFormat::OpenAiChat, WireFormat::AnthropicMessages);
/// ```
///
/// As data (a model endpoint's, `ModelEndpoint` with the `http` feature) it is `"openai"` or
/// `"anthropic"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI Chat Completions server-sent events (and the APIs that copy them).
    #[serde(rename = "openai")]
    OpenAiChat,
    /// Anthropic Messages server-sent events.
    #[serde(rename = "anthropic")]
    AnthropicMessages,
}

/// What a model is asked in one step: the conversation so far and the tools it may call.
///
/// ```
/// use pleach_core::agent::ModelRequest;
/// use pleach_core::Message;
/// let conversation = [Message::User { content: "hi".into() }];
/// let request = ModelRequest::new(&conversation, &[]);
/// assert_eq!(request.conversation.len(), 1);
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The conversation, oldest first: user messages, assistant messages with their calls, and
    /// one result message per call.
    pub conversation: &'a [Message],
    /// The session's enabled tools, sorted by name.
    pub tools: &'a [UnifiedToolDefinition],
}

impl<'a> ModelRequest<'a> {
    /// A request for `conversation` with `tools`.
    ///
    /// ```
    /// let request = pleach_core::agent::ModelRequest::new(&[], &[]);
    /// assert!(request.tools.is_empty());
    /// ```
    pub fn new(conversation: &'a [Message], tools: &'a [UnifiedToolDefinition]) -> Self {
        ModelRequest {
            conversation,
            tools,
        }
    }
}

/// The bytes of a streamed response, chunk by chunk, split anywhere.
///
/// ```
/// use pleach_core::agent::{BoxFuture, ModelError, ResponseBody};
///
/// struct Once(Option<Vec<u8>>);
/// impl ResponseBody for Once {
///     fn next_chunk(&mut self) -> BoxFuture<'_, Result<Option<Vec<u8>>, ModelError>> {
///         let chunk = self.0.take();
///         Box::pin(async move { Ok(chunk) })
///     }
/// }
/// # drop(Once(None));
/// ```
pub trait ResponseBody: Send {
    /// The next chunk; `Ok(None)` at the end of the response. An error ends the response too:
    /// calls not yet complete fail as incomplete (1007), and the run stops with the error.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::agent::{Chunks, ResponseBody};
    /// let mut body = Chunks::new([b"data: [DONE]\n\n".to_vec()]);
    /// assert_eq!(body.next_chunk().await.unwrap(), Some(b"data: [DONE]\n\n".to_vec()));
    /// assert_eq!(body.next_chunk().await.unwrap(), None);
    /// # }
    /// ```
    fn next_chunk(&mut self) -> BoxFuture<'_, Result<Option<Vec<u8>>, ModelError>>;
}

/// A model's streamed response: its bytes and their format.
///
/// ```
/// use pleach_core::agent::{ModelResponse, WireFormat};
/// let response = ModelResponse::from_bytes(WireFormat::OpenAiChat, b"data: [DONE]\n\n".to_vec());
/// assert_eq!(response.format(), WireFormat::OpenAiChat);
/// ```
pub struct ModelResponse {
    format: WireFormat,
    body: Box<dyn ResponseBody>,
}

impl std::fmt::Debug for ModelResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelResponse")
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl ModelResponse {
    /// A response read from `body`, in `format`.
    ///
    /// ```
    /// use pleach_core::agent::{ModelResponse, WireFormat};
    /// let response = ModelResponse::new(WireFormat::AnthropicMessages, pleach_core::agent::Chunks::new([b"".to_vec()]));
    /// # drop(response);
    /// ```
    pub fn new(format: WireFormat, body: impl ResponseBody + 'static) -> Self {
        ModelResponse {
            format,
            body: Box::new(body),
        }
    }

    /// A response whose body is `bytes`, in one chunk.
    ///
    /// ```
    /// # use pleach_core::agent::{ModelResponse, WireFormat};
    /// let response = ModelResponse::from_bytes(WireFormat::OpenAiChat, Vec::new());
    /// # drop(response);
    /// ```
    pub fn from_bytes(format: WireFormat, bytes: Vec<u8>) -> Self {
        ModelResponse::new(format, Chunks::new([bytes]))
    }

    /// The response's format.
    ///
    /// ```
    /// # use pleach_core::agent::{ModelResponse, WireFormat};
    /// assert_eq!(ModelResponse::from_bytes(WireFormat::AnthropicMessages, Vec::new()).format(), WireFormat::AnthropicMessages);
    /// ```
    pub fn format(&self) -> WireFormat {
        self.format
    }
}

/// A body of chunks already in memory.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::agent::{Chunks, ResponseBody};
/// let mut body = Chunks::new([b"ab".to_vec(), b"c".to_vec()]);
/// assert_eq!(body.next_chunk().await.unwrap(), Some(b"ab".to_vec()));
/// assert_eq!(body.next_chunk().await.unwrap(), Some(b"c".to_vec()));
/// assert_eq!(body.next_chunk().await.unwrap(), None);
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Chunks(VecDeque<Vec<u8>>);

impl Chunks {
    /// A body that yields `chunks` in order.
    ///
    /// ```
    /// let body = pleach_core::agent::Chunks::new([b"data: [DONE]\n\n".to_vec()]);
    /// # drop(body);
    /// ```
    pub fn new(chunks: impl IntoIterator<Item = Vec<u8>>) -> Self {
        Chunks(chunks.into_iter().collect())
    }
}

impl ResponseBody for Chunks {
    fn next_chunk(&mut self) -> BoxFuture<'_, Result<Option<Vec<u8>>, ModelError>> {
        let chunk = self.0.pop_front();
        Box::pin(std::future::ready(Ok(chunk)))
    }
}

/// A model: given the conversation and the tools, its streamed response.
///
/// Object-safe (the loop holds an `Arc<dyn ModelClient>`); write one for another transport, or
/// use [`ReplayClient`] to script a conversation.
///
/// ```
/// use pleach_core::agent::{BoxFuture, ModelClient, ModelError, ModelRequest, ModelResponse, WireFormat};
///
/// /// A model that always answers "ok".
/// struct Ok;
/// impl ModelClient for Ok {
///     fn send<'a>(&'a self, _request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
///         let body = br#"data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#;
///         let mut bytes = body.to_vec();
///         bytes.extend_from_slice(b"\n\n");
///         Box::pin(async move { Result::Ok(ModelResponse::from_bytes(WireFormat::OpenAiChat, bytes)) })
///     }
/// }
/// let _client: std::sync::Arc<dyn ModelClient> = std::sync::Arc::new(Ok);
/// ```
pub trait ModelClient: Send + Sync {
    /// Sends one request; the response streams.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::agent::{ModelClient, ModelRequest, ReplayClient, WireFormat};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]);
    /// let response = client.send(ModelRequest::new(&[], &[])).await.unwrap();
    /// assert_eq!(response.format(), WireFormat::OpenAiChat);
    /// # }
    /// ```
    fn send<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;

    /// The model asked, for the `chat {model}` span (`gen_ai.request.model`); `None` when the
    /// client does not say.
    ///
    /// ```
    /// use pleach_core::agent::{ModelClient, ReplayClient, WireFormat};
    /// assert_eq!(ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]).model(), None);
    /// ```
    fn model(&self) -> Option<&str> {
        None
    }

    /// The provider, as the conventions for generative AI name it (`openai`, `anthropic`), for the span's
    /// `gen_ai.provider.name`; `None` when the client does not say.
    ///
    /// ```
    /// use pleach_core::agent::{ModelClient, ReplayClient, WireFormat};
    /// assert_eq!(ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]).provider_name(), None);
    /// ```
    fn provider_name(&self) -> Option<&str> {
        None
    }
}

/// Why a model could not be asked, or its response not read to the end. The text never holds an
/// API key.
///
/// ```
/// use pleach_core::agent::ModelError;
/// let error = ModelError::Status { status: 401, body: "invalid x-api-key".into() };
/// assert_eq!(error.to_string(), "the model API answered HTTP 401: invalid x-api-key");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The API answered with an error status; `body` is what it said (cut to 4 KiB).
    #[error("the model API answered HTTP {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The error body, as text.
        body: String,
    },
    /// The API answered 429: too many requests. `retry_after` is its `Retry-After` header in
    /// seconds, when it sent one, so the host can wait that long before it runs the loop again.
    #[error("the model API is rate limiting (HTTP 429{}): {body}", retry_text(.retry_after.as_ref()))]
    RateLimited {
        /// How long the API asked to wait.
        retry_after: Option<std::time::Duration>,
        /// The error body, as text.
        body: String,
    },
    /// The API could not be reached, or the connection broke.
    #[error("the model API could not be reached: {0}")]
    Connection(String),
    /// The API did not answer, or stopped sending, in time.
    #[error("the model API timed out: {0}")]
    Timeout(String),
    /// The response went past the size cap ([`AgentOptions::max_response_bytes`]).
    #[error("the model's response went past {limit} bytes; it was cut off there")]
    TooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
    /// The client is not set up right (a missing model name or key, a tool the provider's
    /// schema profile refuses, a bad base URL).
    #[error("the model client is not set up right: {0}")]
    Config(String),
    /// The API answered with success but no event stream (`Content-Type` other than
    /// `text/event-stream`: a whole JSON answer, an HTML page); `body` is its start (4 KiB).
    #[error(
        "the model API answered `{content_type}`, not an event stream (`text/event-stream`): {body}"
    )]
    NotAStream {
        /// The response's `Content-Type`.
        content_type: String,
        /// The start of the body, as text.
        body: String,
    },
    /// The provider reported an error inside a response it had begun (an Anthropic `error`
    /// event, an OpenAI-style chunk with an `error`): the answer is incomplete.
    #[error("the model API reported an error mid-response: {0}")]
    Provider(String),
    /// A [`ReplayClient`] was asked for more steps than it holds.
    #[error("the replay has {steps} recorded responses; step {asked} has none")]
    ReplayExhausted {
        /// How many responses it holds.
        steps: usize,
        /// The step asked for (1-based).
        asked: usize,
    },
}

fn retry_text(retry_after: Option<&std::time::Duration>) -> String {
    retry_after.map_or_else(String::new, |wait| {
        format!("; retry after {} s", wait.as_secs_f64())
    })
}

/// A client that replays recorded responses, one per request, in order: for tests and for
/// demos that need no key. It records the conversation of each request.
///
/// ```rust,standalone_crate
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::agent::{ModelClient, ModelRequest, ReplayClient, WireFormat};
/// use pleach_core::Message;
///
/// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]).with_chunk_size(3);
/// let conversation = [Message::User { content: "hi".into() }];
/// let response = client.send(ModelRequest::new(&conversation, &[])).await.unwrap();
/// assert_eq!(client.requests()[0], conversation);
/// # drop(response);
/// # }
/// ```
#[derive(Debug)]
pub struct ReplayClient {
    format: WireFormat,
    responses: Vec<Vec<u8>>,
    chunk_size: Option<usize>,
    requests: Mutex<Vec<Vec<Message>>>,
}

impl ReplayClient {
    /// A client answering the n-th request with the n-th of `responses` (each the bytes of one
    /// streamed response, in `format`).
    ///
    /// ```
    /// use pleach_core::agent::{ReplayClient, WireFormat};
    /// let client = ReplayClient::new(WireFormat::AnthropicMessages, [b"".to_vec()]);
    /// assert!(client.requests().is_empty());
    /// ```
    pub fn new(
        format: WireFormat,
        responses: impl IntoIterator<Item = impl Into<Vec<u8>>>,
    ) -> Self {
        ReplayClient {
            format,
            responses: responses.into_iter().map(Into::into).collect(),
            chunk_size: None,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Sends each response in chunks of `bytes` (at least 1), as a network would split it.
    ///
    /// ```
    /// use pleach_core::agent::{ReplayClient, WireFormat};
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]).with_chunk_size(1);
    /// # drop(client);
    /// ```
    #[must_use]
    pub fn with_chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = Some(bytes.max(1));
        self
    }

    /// The conversation of every request so far, in order.
    ///
    /// ```
    /// # use pleach_core::agent::{ReplayClient, WireFormat};
    /// assert!(ReplayClient::new(WireFormat::OpenAiChat, [""]).requests().is_empty());
    /// ```
    pub fn requests(&self) -> Vec<Vec<Message>> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl ModelClient for ReplayClient {
    fn send<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        requests.push(request.conversation.to_vec());
        let asked = requests.len();
        drop(requests);
        let outcome = match self.responses.get(asked - 1) {
            Some(bytes) => {
                let chunks: Vec<Vec<u8>> = match self.chunk_size {
                    Some(size) => bytes.chunks(size).map(<[u8]>::to_vec).collect(),
                    None => vec![bytes.clone()],
                };
                Ok(ModelResponse::new(self.format, Chunks::new(chunks)))
            }
            None => Err(ModelError::ReplayExhausted {
                steps: self.responses.len(),
                asked,
            }),
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// How an agent run goes.
///
/// ```
/// use pleach_core::agent::AgentOptions;
/// let options = AgentOptions::default().with_max_steps(3);
/// assert_eq!(options.max_steps, 3);
/// assert_eq!(AgentOptions::default().max_steps, pleach_core::agent::DEFAULT_MAX_STEPS);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentOptions {
    /// How many requests to the model at most (each step is one request and the calls it
    /// makes). Reached with calls still being made, the run stops with
    /// [`StopReason::MaxSteps`].
    pub max_steps: usize,
    /// How many bytes one response may have; past it the response is cut off there (its open
    /// calls fail as incomplete) and the run stops with [`ModelError::TooLarge`].
    pub max_response_bytes: usize,
}

/// The default [`AgentOptions::max_steps`].
///
/// ```
/// assert_eq!(pleach_core::agent::AgentOptions::default().max_steps, pleach_core::agent::DEFAULT_MAX_STEPS);
/// ```
pub const DEFAULT_MAX_STEPS: usize = 16;

/// The default [`AgentOptions::max_response_bytes`]: 32 MiB.
///
/// ```
/// use pleach_core::agent::{AgentOptions, DEFAULT_MAX_RESPONSE_BYTES};
/// assert_eq!(AgentOptions::default().max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES);
/// ```
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_steps: DEFAULT_MAX_STEPS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl AgentOptions {
    /// Sets [`max_steps`](AgentOptions::max_steps).
    ///
    /// ```
    /// assert_eq!(pleach_core::agent::AgentOptions::default().with_max_steps(1).max_steps, 1);
    /// ```
    #[must_use]
    pub fn with_max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }

    /// Sets [`max_response_bytes`](AgentOptions::max_response_bytes).
    ///
    /// ```
    /// let options = pleach_core::agent::AgentOptions::default().with_max_response_bytes(1024);
    /// assert_eq!(options.max_response_bytes, 1024);
    /// ```
    #[must_use]
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }
}

/// Why a run stopped.
///
/// ```
/// use pleach_core::agent::StopReason;
/// assert!(StopReason::Finished.is_finished());
/// assert!(!StopReason::MaxSteps.is_finished());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without calling a tool: [`AgentOutcome::final_text`] is its answer.
    Finished,
    /// [`AgentOptions::max_steps`] requests were made and the model was still calling tools;
    /// the last calls ran and their results are in the conversation.
    MaxSteps,
    /// The run was cancelled ([`AgentRun::cancel`], or the session dropped).
    Cancelled,
    /// The model could not be asked, or its response broke off. Calls that were complete
    /// before the break ran; the others failed.
    Error(ModelError),
}

impl StopReason {
    /// Whether the model finished with an answer.
    ///
    /// ```
    /// assert!(pleach_core::agent::StopReason::Finished.is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        matches!(self, StopReason::Finished)
    }
}

/// What happened in one step: the model's text, its calls' results, and what the stream held
/// that was not a call.
///
/// ```
/// let step = pleach_core::agent::StepReport::default();
/// assert!(step.results.is_empty() && step.skipped_events == 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StepReport {
    /// The model's text in this step, if any.
    pub text: Option<String>,
    /// One result per call, in call order (failed calls included).
    pub results: Vec<ToolResult>,
    /// The provider's finish or stop reason, as it spells it.
    pub finish_reason: Option<String>,
    /// Events of a type the stream parser does not know: skipped, and counted here.
    pub skipped_events: usize,
    /// Problems not tied to one call: unreadable events, errors the provider reported.
    pub stream_errors: Vec<String>,
    /// Stream input that named no call that could be run or failed on its own (a call id seen
    /// twice, fragments for a call never started): no events, no result message, said here.
    pub refused: Vec<String>,
    /// Prompt tokens, as reported.
    pub input_tokens: Option<u64>,
    /// Completion tokens, as reported.
    pub output_tokens: Option<u64>,
}

/// How a run ended.
///
/// ```
/// use pleach_core::agent::{AgentOutcome, StopReason};
/// let outcome = AgentOutcome::default();
/// assert_eq!(outcome.stop_reason, StopReason::Finished);
/// assert!(outcome.steps.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// Every step, in order (one per request that was answered).
    pub steps: Vec<StepReport>,
    /// The model's answer, when it finished with one.
    pub final_text: Option<String>,
    /// Why the run stopped.
    pub stop_reason: StopReason,
}

impl Default for AgentOutcome {
    fn default() -> Self {
        AgentOutcome {
            steps: Vec::new(),
            final_text: None,
            stop_reason: StopReason::Finished,
        }
    }
}

/// A running agent loop: its events, its cancellation, and its outcome.
///
/// See the [module docs](self) for a whole run.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
/// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
///
/// let client = ReplayClient::new(WireFormat::OpenAiChat, [concat!(
///     r#"data: {"choices":[{"index":0,"delta":{"content":"Hello!"},"finish_reason":"stop"}]}"#, "\n\n",
///     "data: [DONE]\n\n",
/// )]);
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let session = runtime.create_session(SessionOptions::default()).unwrap();
/// session.push_user_message("hi");
/// let run = session.run_agent(Arc::new(client), AgentOptions::default());
/// assert_eq!(run.finish().await.final_text.as_deref(), Some("Hello!"));
/// # }
/// ```
#[derive(Debug)]
pub struct AgentRun {
    events: EventStream,
    signal: CancellationToken,
    driver: tokio::task::JoinHandle<AgentOutcome>,
}

impl AgentRun {
    /// The run's events, every step's, in order: `tool.started` when a call is first seen,
    /// `tool.delta` per arguments fragment as it arrives, then the calls' safety and terminal
    /// events as they run. The stream ends when the run does.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// // The model calls a tool the session does not have: the call still gets its events.
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, [
    ///     concat!(
    ///         r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"nope","arguments":"{}"}}]}}]}"#, "\n\n",
    ///         r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#, "\n\n",
    ///     ),
    ///     concat!(
    ///         r#"data: {"choices":[{"index":0,"delta":{"content":"Sorry."},"finish_reason":"stop"}]}"#, "\n\n",
    ///     ),
    /// ]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("hi");
    /// let mut run = session.run_agent(Arc::new(client), AgentOptions::default());
    /// let mut types = Vec::new();
    /// while let Some(event) = run.events().recv().await {
    ///     types.push(event.event_type());
    /// }
    /// assert_eq!(types.first(), Some(&"tool.started"));
    /// assert_eq!(types.last(), Some(&"tool.failed"));
    /// # }
    /// ```
    pub fn events(&mut self) -> &mut EventStream {
        &mut self.events
    }

    /// Cancels the run: the model's response stops being read (the connection is dropped),
    /// calls already seen fail with 1011 without running, and running calls are cancelled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, StopReason, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let run = session.run_agent(Arc::new(client), AgentOptions::default());
    /// run.cancel();
    /// assert_eq!(run.finish().await.stop_reason, StopReason::Cancelled);
    /// # }
    /// ```
    pub fn cancel(&self) {
        self.signal.cancel();
    }

    /// The run's cancellation token.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, StopReason, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let run = session.run_agent(Arc::new(client), AgentOptions::default());
    /// let token = run.cancellation_token(); // for a "stop" button elsewhere
    /// token.cancel();
    /// assert_eq!(run.finish().await.stop_reason, StopReason::Cancelled);
    /// # }
    /// ```
    pub fn cancellation_token(&self) -> CancellationToken {
        self.signal.clone()
    }

    /// Waits for the run to end. Read the events first (or drop them): finishing consumes the
    /// run.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, StopReason, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, [concat!(
    ///     r#"data: {"choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":"stop"}]}"#, "\n\n",
    /// )]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("hi");
    /// let outcome = session.run_agent(Arc::new(client), AgentOptions::default()).finish().await;
    /// assert_eq!(outcome.stop_reason, StopReason::Finished);
    /// assert_eq!(outcome.steps.len(), 1);
    /// # }
    /// ```
    pub async fn finish(self) -> AgentOutcome {
        match self.driver.await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::error!(%error, "an agent run's task died");
                AgentOutcome {
                    stop_reason: if error.is_cancelled() {
                        StopReason::Cancelled
                    } else {
                        StopReason::Error(ModelError::Connection(format!(
                            "the agent loop failed: {error}"
                        )))
                    },
                    ..AgentOutcome::default()
                }
            }
        }
    }
}

impl Session {
    /// Runs the agent loop on this session's conversation: asks `client`, runs the calls its
    /// response makes, writes everything back, and asks again, until the model answers without
    /// calling a tool or `options.max_steps` requests were made. Push the user's message first.
    /// Returns at once; read the [`AgentRun`]'s events, then `finish` it.
    ///
    /// Every call seen ends in exactly one `tool.completed` or `tool.failed` and exactly one
    /// result message, whatever became of the stream; a streamed call runs only when its
    /// provider said it was complete. Pending approval interrupts are answered with
    /// [`Session::resolve`] as in any turn. See the [module docs](crate::agent).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the loop runs as a Tokio task).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, [concat!(
    ///     r#"data: {"choices":[{"index":0,"delta":{"content":"Paris."},"finish_reason":"stop"}]}"#, "\n\n",
    /// )]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("The capital of France?");
    /// let outcome = session.run_agent(Arc::new(client), AgentOptions::default().with_max_steps(4)).finish().await;
    /// assert_eq!(outcome.final_text.as_deref(), Some("Paris."));
    /// assert!(matches!(&session.conversation()[1], Message::Assistant { content: Some(text), .. } if text == "Paris."));
    /// # }
    /// ```
    pub fn run_agent(&self, client: Arc<dyn ModelClient>, options: AgentOptions) -> AgentRun {
        let handle = self.handle();
        let signal = handle.signal().child_token();
        let (sink, events) = crate::event::channel();
        let span = tracing::info_span!(
            target: "pleach::agent",
            "invoke_agent",
            otel.name = "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = client.provider_name(),
            gen_ai.request.model = client.model(),
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            pleach.agent.steps = tracing::field::Empty,
            pleach.agent.stop_reason = tracing::field::Empty,
        );
        let driver =
            tokio::spawn(drive(handle, client, options, sink, signal.clone()).instrument(span));
        AgentRun {
            events,
            signal,
            driver,
        }
    }
}

async fn drive(
    session: SessionHandle,
    client: Arc<dyn ModelClient>,
    options: AgentOptions,
    sink: EventSender,
    signal: CancellationToken,
) -> AgentOutcome {
    let tools = session.tools();
    let mut outcome = AgentOutcome::default();
    let stop = loop {
        if outcome.steps.len() >= options.max_steps {
            break StopReason::MaxSteps;
        }
        let conversation = session.conversation();
        let chat = chat_span(client.as_ref());
        let sent = tokio::select! {
            biased;
            () = signal.cancelled() => break StopReason::Cancelled,
            sent = client.send(ModelRequest::new(&conversation, &tools)).instrument(chat.clone()) => sent,
        };
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                chat.record("error.type", "model_error");
                chat.record("otel.status_code", "ERROR");
                chat.record("otel.status_description", tracing::field::display(&error));
                break StopReason::Error(error);
            }
        };
        let (step, broke) = read_response(response, &session, options, &sink, &signal)
            .instrument(chat.clone())
            .await;
        record_usage(&chat, &step.report);
        drop(chat);
        let Step {
            text,
            calls,
            failed,
            mut report,
        } = step;
        if calls.is_empty() {
            let answered = broke.is_none() && !signal.is_cancelled();
            if let Some(text) = text.as_ref().filter(|_| answered) {
                session.push_assistant_text(text.clone());
            }
            outcome.steps.push(report);
            if signal.is_cancelled() {
                break StopReason::Cancelled;
            }
            if let Some(error) = broke {
                break StopReason::Error(error);
            }
            outcome.final_text = text;
            break StopReason::Finished;
        }
        report.results = run_calls(&session, text, calls, failed, &sink, &signal).await;
        outcome.steps.push(report);
        if signal.is_cancelled() {
            break StopReason::Cancelled;
        }
        if let Some(error) = broke {
            break StopReason::Error(error);
        }
    };
    let span = tracing::Span::current();
    if !span.is_disabled() {
        let sum = |tokens: fn(&StepReport) -> Option<u64>| {
            outcome.steps.iter().filter_map(tokens).reduce(|a, b| a + b)
        };
        if let Some(tokens) = sum(|step| step.input_tokens) {
            span.record("gen_ai.usage.input_tokens", tokens);
        }
        if let Some(tokens) = sum(|step| step.output_tokens) {
            span.record("gen_ai.usage.output_tokens", tokens);
        }
        span.record("pleach.agent.steps", outcome.steps.len());
        span.record("pleach.agent.stop_reason", tracing::field::debug(&stop));
    }
    outcome.stop_reason = stop;
    outcome
}

/// The span of one model request: `chat {model}`, after the conventions for generative AI.
fn chat_span(client: &dyn ModelClient) -> tracing::Span {
    tracing::info_span!(
        target: "pleach::agent",
        "chat",
        otel.name = %format_args!("chat {}", client.model().unwrap_or("model")),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = client.provider_name(),
        gen_ai.request.model = client.model(),
        gen_ai.response.finish_reasons = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    )
}

/// A step's token usage and finish reason on its `chat` span.
fn record_usage(span: &tracing::Span, report: &StepReport) {
    if span.is_disabled() {
        return;
    }
    if let Some(tokens) = report.input_tokens {
        span.record("gen_ai.usage.input_tokens", tokens);
    }
    if let Some(tokens) = report.output_tokens {
        span.record("gen_ai.usage.output_tokens", tokens);
    }
    if let Some(reason) = &report.finish_reason {
        span.record("gen_ai.response.finish_reasons", reason.as_str());
    }
}

/// Runs a step's calls as one turn of the session, forwarding its events.
async fn run_calls(
    session: &SessionHandle,
    text: Option<String>,
    calls: Vec<ToolCall>,
    failed: Vec<Option<ToolError>>,
    sink: &EventSender,
    signal: &CancellationToken,
) -> Vec<ToolResult> {
    let (step_sink, mut step_events) = crate::event::channel();
    let turn = session.run_streamed_step(text, calls, failed, step_sink, signal.child_token());
    tokio::pin!(turn);
    let results = loop {
        tokio::select! {
            results = &mut turn => break results,
            Some(event) = step_events.recv() => sink.send(event),
        }
    };
    for event in step_events.drain() {
        sink.send(event);
    }
    results
}

/// One step's response, read: the text, the calls in order of first sight with the error of
/// each that must not run, and the report.
pub(crate) struct Step {
    pub(crate) text: Option<String>,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) failed: Vec<Option<ToolError>>,
    pub(crate) report: StepReport,
}

/// Reads a response to its end (or a break, the size cap, cancellation), sending `tool.started`
/// and `tool.delta` as calls and fragments arrive. Returns the step and, if the response broke
/// off, why.
pub(crate) async fn read_response(
    response: ModelResponse,
    session: &SessionHandle,
    options: AgentOptions,
    sink: &EventSender,
    signal: &CancellationToken,
) -> (Step, Option<ModelError>) {
    let ModelResponse { format, mut body } = response;
    let mut reading = Reading {
        decoder: AnyDecoder::new(format),
        assembler: StreamAssembler::with_limits(session.limits()),
        text: String::new(),
        report: StepReport::default(),
        sink,
        provider_error: None,
        calls_under: HashMap::new(),
    };
    let mut received = 0usize;
    let mut broke = None;
    loop {
        let chunk = tokio::select! {
            biased;
            () = signal.cancelled() => break,
            chunk = body.next_chunk() => chunk,
        };
        match chunk {
            Ok(Some(bytes)) => {
                received = received.saturating_add(bytes.len());
                if received > options.max_response_bytes {
                    broke = Some(ModelError::TooLarge {
                        limit: options.max_response_bytes,
                    });
                    break;
                }
                let events = reading.decoder.feed(&bytes);
                reading.apply(events);
            }
            Ok(None) => break,
            Err(error) => {
                broke = Some(error);
                break;
            }
        }
    }
    // The connection goes as soon as the response is over, before any call runs.
    drop(body);
    let cancelled = signal.is_cancelled();
    if !cancelled {
        // Calls still open fail as incomplete; after a cancellation they fail as cancelled.
        let events = reading.decoder.finish();
        reading.apply(events);
    }
    let Reading {
        decoder,
        assembler,
        text,
        mut report,
        provider_error,
        ..
    } = reading;
    // An error the provider reported in a response it had begun breaks it off like a dropped
    // connection: its text is no answer, and the run stops with the error.
    let broke = broke.or(provider_error.map(ModelError::Provider));
    report.skipped_events = decoder.skipped();
    let (calls, failed) = assembler
        .finish()
        .into_iter()
        .map(|streamed| {
            let failure = match streamed.parsed {
                // Cut off by the cancellation, not by the provider.
                Err(error) if cancelled && error.code() == ErrorCode::ArgumentsIncomplete => {
                    Some(cancelled_before_running())
                }
                Err(error) => Some(error),
                Ok(_) if cancelled => Some(cancelled_before_running()),
                Ok(_) => None,
            };
            (streamed.call, failure)
        })
        .unzip();
    let text = (!text.is_empty()).then_some(text);
    report.text.clone_from(&text);
    let step = Step {
        text,
        calls,
        failed,
        report,
    };
    (step, broke)
}

fn cancelled_before_running() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "the run was cancelled before this call could run; it did not run",
    )
}

/// The state of a response being read.
struct Reading<'a> {
    decoder: AnyDecoder,
    assembler: StreamAssembler,
    text: String,
    report: StepReport,
    sink: &'a EventSender,
    /// The first error the provider reported in the stream: the response broke off there.
    provider_error: Option<String>,
    /// Provider keys used again after their call ended (the parsers allow it), with how many
    /// calls each has had: the assembler names each call by its own key, `<key>@<n>` from the
    /// second on, so that the later call is not refused as the earlier one's.
    calls_under: HashMap<String, usize>,
}

impl Reading<'_> {
    fn apply(&mut self, events: Vec<ProviderEvent>) {
        for event in events {
            match event {
                ProviderEvent::CallStarted { key, id, name } => {
                    let count = self.calls_under.entry(key.clone()).or_default();
                    *count += 1;
                    let key = self.assembler_key(key);
                    let begun = self.assembler.begin(&key, &id, &name);
                    self.announce(begun);
                }
                ProviderEvent::CallSignature { key, signature } => {
                    let key = self.assembler_key(key);
                    let signed = self.assembler.sign(&key, &signature).map(|()| None);
                    self.announce(signed);
                }
                ProviderEvent::ArgumentsDelta { key, fragment } => {
                    let key = self.assembler_key(key);
                    let pushed = self.assembler.push(&key, fragment);
                    self.announce(pushed);
                }
                ProviderEvent::CallEnded { key } => {
                    let key = self.assembler_key(key);
                    let ended = self.assembler.end(&key).map(|_| None);
                    self.announce(ended);
                }
                ProviderEvent::CallFailed {
                    key,
                    id,
                    name,
                    problem,
                    error,
                } => {
                    let key = self.assembler_key(key);
                    self.call_failed(&key, id, name, problem, error);
                }
                ProviderEvent::Text { delta } => self.text.push_str(&delta),
                ProviderEvent::Finished { reason } => self.report.finish_reason = reason,
                ProviderEvent::Usage {
                    input_tokens,
                    output_tokens,
                } => {
                    self.report.input_tokens = input_tokens.or(self.report.input_tokens);
                    self.report.output_tokens = output_tokens.or(self.report.output_tokens);
                }
                ProviderEvent::StreamError { problem, message } => {
                    if problem == StreamProblem::ProviderError && self.provider_error.is_none() {
                        self.provider_error = Some(message.clone());
                    }
                    self.report.stream_errors.push(message);
                }
            }
        }
    }

    /// The assembler's key for the latest call under the provider's `key`: `key` itself unless
    /// the provider used it again after its call ended.
    fn assembler_key(&self, key: String) -> String {
        match self.calls_under.get(&key) {
            Some(&n) if n > 1 => format!("{key}@{n}"),
            _ => key,
        }
    }

    /// Sends an assembler event; a refusal that fails no call is reported. A call's own failure
    /// shows at the end of the response, with its result.
    fn announce(&mut self, outcome: Result<Option<ToolEvent>, StreamError>) {
        match outcome {
            Ok(Some(event)) => self.sink.send(event),
            Ok(None) | Err(StreamError::CallFailed { .. }) => {}
            Err(refused) => self.report.refused.push(refused.to_string()),
        }
    }

    /// The provider's parser failed a call. A call the assembler has fails there; one it never
    /// saw but whose id and name are known (a start without a usable body) is announced and
    /// failed, so it still gets its terminal event and result; the rest (a second use of an id,
    /// fragments for a call never started) name no call of their own and are reported.
    fn call_failed(
        &mut self,
        key: &str,
        id: Option<String>,
        name: Option<String>,
        problem: StreamProblem,
        error: ToolError,
    ) {
        match self.assembler.fail(key, error.clone()) {
            Ok(()) => return,
            Err(StreamError::UnknownKey { .. }) => {}
            Err(refused) => {
                self.report.refused.push(refused.to_string());
                return;
            }
        }
        match (id, name) {
            (Some(id), Some(name)) if problem != StreamProblem::DuplicateId => {
                match self.assembler.begin(key, &id, &name) {
                    Ok(started) => {
                        if let Some(event) = started {
                            self.sink.send(event);
                        }
                        // The call was just begun under `key`: it is open, so this holds.
                        let _ = self.assembler.fail(key, error);
                    }
                    Err(refused) => self.report.refused.push(refused.to_string()),
                }
            }
            _ => self.report.refused.push(error.message().to_owned()),
        }
    }
}

/// The stream decoder of a format.
enum AnyDecoder {
    Chat(Decoder<ChatStreamParser>),
    Anthropic(Decoder<MessagesStreamParser>),
}

impl AnyDecoder {
    fn new(format: WireFormat) -> Self {
        match format {
            WireFormat::OpenAiChat => AnyDecoder::Chat(Decoder::sse(ChatStreamParser::new())),
            WireFormat::AnthropicMessages => {
                AnyDecoder::Anthropic(Decoder::sse(MessagesStreamParser::new()))
            }
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Vec<ProviderEvent> {
        match self {
            AnyDecoder::Chat(decoder) => decoder.feed(bytes),
            AnyDecoder::Anthropic(decoder) => decoder.feed(bytes),
        }
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        match self {
            AnyDecoder::Chat(decoder) => decoder.finish(),
            AnyDecoder::Anthropic(decoder) => decoder.finish(),
        }
    }

    fn skipped(&self) -> usize {
        match self {
            AnyDecoder::Chat(decoder) => decoder.parser().skipped(),
            AnyDecoder::Anthropic(decoder) => decoder.parser().skipped(),
        }
    }
}
