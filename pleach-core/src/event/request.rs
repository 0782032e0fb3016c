//! [`ClientRequest`]: a running tool's request that its host answers (a question to the user, a
//! completion from the client's model), carried by an `elicitation.requested` or
//! `sampling.requested` event.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::error::{ErrorCode, ToolError};

/// A request of a running tool, `Q`, waiting for its host's answer, `A`: what an
/// [`ElicitationRequested`](super::ToolEvent::ElicitationRequested) or
/// [`SamplingRequested`](super::ToolEvent::SamplingRequested) event carries. The host answers
/// once with [`answer`](ClientRequest::answer) (or [`refuse`](ClientRequest::refuse)), within
/// the runtime's approval timeout; [`signal`](ClientRequest::signal) fires when the tool stops
/// waiting (answered, timed out, or its call cancelled), so a host can withdraw the question.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::client::{Elicitation, Elicited};
/// use pleach_core::event::ClientRequest;
///
/// #[pleach_core::input]
/// # #[allow(dead_code)]
/// struct Name { name: String }
///
/// let question = Elicitation::new::<Name>("Your name?").unwrap();
/// let (request, answered) = ClientRequest::new("call_1", question);
/// assert_eq!(request.request().message, "Your name?");
/// assert!(request.answer(Elicited::Accept(serde_json::json!({ "name": "Ann" }))));
/// assert!(!request.answer(Elicited::Decline)); // answered once
/// assert!(matches!(answered.await, Ok(Ok(Elicited::Accept(_)))));
/// # }
/// ```
pub struct ClientRequest<Q, A> {
    tool_call_id: Arc<str>,
    request: Q,
    reply: Mutex<Option<oneshot::Sender<Result<A, ToolError>>>>,
    signal: CancellationToken,
}

/// Where the answer to a [`ClientRequest`] arrives: `Err` when the request was dropped
/// unanswered.
pub type Answered<A> = oneshot::Receiver<Result<A, ToolError>>;

impl<Q, A> ClientRequest<Q, A> {
    /// A request `request` of call `tool_call_id`, and where its answer arrives: what the
    /// runtime makes for a tool's request (a host makes one by hand to test its answering).
    pub fn new(tool_call_id: impl Into<Arc<str>>, request: Q) -> (Arc<Self>, Answered<A>) {
        let (reply, answered) = oneshot::channel();
        let request = Arc::new(ClientRequest {
            tool_call_id: tool_call_id.into(),
            request,
            reply: Mutex::new(Some(reply)),
            signal: CancellationToken::new(),
        });
        (request, answered)
    }

    /// The id of the call that asks.
    ///
    /// ```
    /// use pleach_core::event::ClientRequest;
    /// let (request, _) = ClientRequest::<u8, u8>::new("c9", 1);
    /// assert_eq!(request.tool_call_id(), "c9");
    /// ```
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// What the tool asks.
    ///
    /// ```
    /// use pleach_core::event::ClientRequest;
    /// let (request, _) = ClientRequest::<&str, u8>::new("c1", "how many?");
    /// assert_eq!(*request.request(), "how many?");
    /// ```
    pub fn request(&self) -> &Q {
        &self.request
    }

    /// Gives the tool `answer`; `false` when the request was answered before or the tool no
    /// longer waits.
    ///
    /// ```
    /// use pleach_core::event::ClientRequest;
    /// let (request, answered) = ClientRequest::<u8, u8>::new("c1", 1);
    /// drop(answered); // the tool stopped waiting
    /// assert!(!request.answer(2));
    /// ```
    pub fn answer(&self, answer: A) -> bool {
        self.reply(Ok(answer))
    }

    /// Answers that the host cannot give what the tool asks (the model failed, the user's
    /// client refused): the tool's request fails with 1008 and `reason`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::event::ClientRequest;
    /// let (request, answered) = ClientRequest::<u8, u8>::new("c1", 1);
    /// assert!(request.refuse("the model is down"));
    /// let error = answered.await.unwrap().unwrap_err();
    /// assert_eq!(error.code().as_u16(), 1008);
    /// # }
    /// ```
    pub fn refuse(&self, reason: impl Into<String>) -> bool {
        self.reply(Err(ToolError::new(
            ErrorCode::ToolFailed,
            format!("the client could not answer: {}", reason.into()),
        )))
    }

    fn reply(&self, answer: Result<A, ToolError>) -> bool {
        let reply = self
            .reply
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        reply.is_some_and(|reply| reply.send(answer).is_ok())
    }

    /// Fires when the tool stops waiting: answered, timed out, or its call cancelled or ended.
    ///
    /// ```
    /// use pleach_core::event::ClientRequest;
    /// let (request, _) = ClientRequest::<u8, u8>::new("c1", 1);
    /// assert!(!request.signal().is_cancelled());
    /// ```
    pub fn signal(&self) -> &CancellationToken {
        &self.signal
    }
}

/// Shows the request and the call, not the reply channel.
impl<Q: fmt::Debug, A> fmt::Debug for ClientRequest<Q, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRequest")
            .field("tool_call_id", &self.tool_call_id)
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// Two requests are equal when they are the same request.
impl<Q, A> PartialEq for ClientRequest<Q, A> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}
