//! [`ReplayClient`]: a model client that replays recorded responses, one per request, for tests
//! and demos that need no key.

use std::sync::{Mutex, PoisonError};

use super::client::{
    BoxFuture, Chunks, ModelClient, ModelError, ModelRequest, ModelResponse, WireFormat,
};
use crate::conversation::Message;

/// A client that replays recorded responses, one per request, in order: for tests and for
/// demos that need no key. It records the conversation of each request.
///
/// ```rust
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::agent::{ModelClient, ModelRequest, ReplayClient, WireFormat};
/// use pleach_core::Message;
///
/// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]).chunk_size(3);
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

    /// Sends each response in chunks of `bytes` (at least 1), as a network would split it
    /// (default: each response in one piece).
    ///
    /// ```
    /// use pleach_core::agent::{ReplayClient, WireFormat};
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]).chunk_size(1);
    /// # drop(client);
    /// ```
    #[must_use]
    pub fn chunk_size(mut self, bytes: usize) -> Self {
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
