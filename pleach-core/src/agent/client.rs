//! The model-client contract: what a model is asked ([`ModelRequest`]), what it answers (a
//! [`ModelResponse`]: a [`ResponseBody`] of bytes in a [`WireFormat`]), the [`ModelClient`] trait
//! that asks it, and why asking failed ([`ModelError`]).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use crate::conversation::Message;
use crate::providers::ProviderFormat;
use crate::providers::anthropic::Anthropic;
use crate::providers::gemini::Gemini;
use crate::providers::openai_chat::OpenAiChat;
use crate::providers::openai_responses::OpenAiResponses;
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

/// Which provider's streaming format a response is in: it picks the stream parser, through its
/// [`provider_format`](WireFormat::provider_format).
///
/// ```
/// use pleach_core::agent::WireFormat;
/// assert_ne!(WireFormat::OpenAiChat, WireFormat::AnthropicMessages);
/// ```
///
/// As data (a model endpoint's, `ModelEndpoint` with the `http` feature) it is `"openai"`,
/// `"openai-responses"`, `"anthropic"` or `"gemini"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI Chat Completions server-sent events (and the APIs that copy them).
    #[serde(rename = "openai")]
    OpenAiChat,
    /// Anthropic Messages server-sent events.
    #[serde(rename = "anthropic")]
    AnthropicMessages,
    /// OpenAI Responses server-sent events (`response.output_item.added`, …).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Gemini `streamGenerateContent?alt=sse` server-sent events (Gemini API and Vertex AI).
    #[serde(rename = "gemini")]
    Gemini,
}

impl WireFormat {
    /// The provider format this is: what reads the response's stream (and what the model
    /// clients write requests with).
    ///
    /// ```
    /// use pleach_core::agent::WireFormat;
    /// use pleach_core::providers::{Decoder, ProviderEvent};
    ///
    /// let mut decoder = Decoder::sse(WireFormat::AnthropicMessages.provider_format().stream_parser());
    /// let events = decoder.feed(b"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n");
    /// assert_eq!(events, [ProviderEvent::Text { delta: "Hi".into() }]);
    /// ```
    pub fn provider_format(self) -> &'static dyn ProviderFormat {
        match self {
            WireFormat::OpenAiChat => &OpenAiChat,
            WireFormat::AnthropicMessages => &Anthropic,
            WireFormat::OpenAiResponses => &OpenAiResponses,
            WireFormat::Gemini => &Gemini,
        }
    }
}

/// What a model is asked in one step: the conversation so far, the tools it may call, and the
/// run's request settings ([`ModelRequest::options`]).
///
/// ```
/// use pleach_core::agent::ModelRequest;
/// use pleach_core::Message;
/// let conversation = [Message::User { content: "hi".into() }];
/// let request = ModelRequest::new(&conversation, &[]);
/// assert_eq!(request.conversation.len(), 1);
/// assert_eq!(request.system, None);
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The conversation, oldest first: user messages, assistant messages with their calls, and
    /// one result message per call.
    pub conversation: &'a [Message],
    /// The tools the model is offered, sorted by name.
    pub tools: &'a [UnifiedToolDefinition],
    /// The system prompt ([`AgentOptions::system`](crate::agent::AgentOptions::system)).
    pub system: Option<&'a str>,
    /// The most tokens the response may have ([`AgentOptions::max_tokens`](crate::agent::AgentOptions::max_tokens)).
    pub max_tokens: Option<u32>,
    /// The sampling temperature ([`AgentOptions::temperature`](crate::agent::AgentOptions::temperature)).
    pub temperature: Option<f64>,
    /// Whether and which tool the model must call ([`AgentOptions::tool_choice`](crate::agent::AgentOptions::tool_choice)).
    pub tool_choice: Option<&'a ToolChoice>,
    /// Strict mode for this request's tools, over the client's own setting
    /// ([`AgentOptions::strict`](crate::agent::AgentOptions::strict)).
    pub strict: Option<bool>,
    /// Tools the model loads with a search, for a client that defers them its provider's way
    /// ([`ModelClient::native_deferral`]): sent marked deferred, not in [`tools`](Self::tools).
    /// Empty unless the run defers natively
    /// ([`ToolSearch::native`](crate::search::ToolSearch::native)).
    pub deferred: &'a [UnifiedToolDefinition],
    /// The search tool's name when [`deferred`](Self::deferred) is set: the client writes its
    /// calls and results as its provider's tool search.
    pub search_tool: Option<&'a str>,
}

impl<'a> ModelRequest<'a> {
    /// A request for `conversation` with `tools`, and no request settings.
    ///
    /// ```
    /// let request = pleach_core::agent::ModelRequest::new(&[], &[]);
    /// assert!(request.tools.is_empty());
    /// ```
    pub fn new(conversation: &'a [Message], tools: &'a [UnifiedToolDefinition]) -> Self {
        ModelRequest {
            conversation,
            tools,
            system: None,
            max_tokens: None,
            temperature: None,
            tool_choice: None,
            strict: None,
            deferred: &[],
            search_tool: None,
        }
    }
}

/// Whether and which tool the model must call: the request's `tool_choice`, spelled as each API
/// spells it.
///
/// ```
/// use pleach_core::agent::ToolChoice;
/// assert_eq!("required".parse::<ToolChoice>(), Ok(ToolChoice::Required));
/// assert_eq!("math".parse::<ToolChoice>(), Ok(ToolChoice::Tool("math".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (OpenAI `"auto"`, Anthropic `{"type":"auto"}`, Gemini `AUTO`).
    Auto,
    /// The model must call a tool (OpenAI `"required"`, Anthropic `{"type":"any"}`, Gemini
    /// `ANY`).
    #[doc(alias = "any")]
    Required,
    /// The model must not call a tool (OpenAI `"none"`, Anthropic `{"type":"none"}`, Gemini
    /// `NONE`).
    None,
    /// The model must call this tool (Gemini: `ANY` with this one name allowed).
    Tool(String),
}

impl std::str::FromStr for ToolChoice {
    type Err = std::convert::Infallible;

    /// `auto`, `required`, `none`, or a tool's name.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Tool(name.to_owned()),
        })
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
    pub(super) format: WireFormat,
    pub(super) body: Box<dyn ResponseBody>,
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
/// use [`ReplayClient`](crate::agent::ReplayClient) to script a conversation.
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

    /// Whether this client sends [`ModelRequest::deferred`] its provider's way (Anthropic's
    /// `defer_loading` with `tool_reference` results, OpenAI Responses' client `tool_search`):
    /// the agent loop then defers natively when the run asks
    /// ([`ToolSearch::native`](crate::search::ToolSearch::native)). `false` unless the client
    /// says so: the loop defers pleach's way, which needs nothing of the client.
    ///
    /// ```
    /// use pleach_core::agent::{ModelClient, ReplayClient, WireFormat};
    /// assert!(!ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]).native_deferral());
    /// # #[cfg(feature = "http")]
    /// assert!(pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap().native_deferral());
    /// ```
    fn native_deferral(&self) -> bool {
        false
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
    /// The response went past the size cap
    /// ([`AgentOptions::max_response_bytes`](crate::agent::AgentOptions::max_response_bytes)).
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
    /// The API answered with an event stream that ended holding no answer: no choice, no text,
    /// no call, no finish reason, and no end-of-stream signal (`data: [DONE]`). A server that
    /// fails after it sent its headers does this; read as a stream it would be an empty answer.
    #[error(
        "the model API's event stream ended without an answer: no choice and no end-of-stream signal (`[DONE]`); the server may have failed after it began to answer"
    )]
    EmptyStream,
    /// The provider reported an error inside a response it had begun (an Anthropic `error`
    /// event, an OpenAI-style chunk with an `error`): the answer is incomplete.
    #[error("the model API reported an error mid-response: {0}")]
    Provider(String),
    /// A [`ReplayClient`](crate::agent::ReplayClient) was asked for more steps than it holds.
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
