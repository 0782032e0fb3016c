//! One call run in the caller's task, without a turn: [`Session::call`], [`Session::dispatch`],
//! `dispatch_with` and `dispatch_reserved` (the same pipeline and error codes, no conversation
//! write-back), and the guard that still ends a call whose dispatch the host dropped.

use tokio_util::sync::CancellationToken;

use super::pipeline::{Dispatched, Terminal};
use super::shared::CallSlot;
use super::{Session, ToolResult};
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, ToolEvent};

impl Session {
    /// Runs one call in the caller's task, without a turn: the same pipeline and error codes,
    /// no events and no conversation write-back. For hosts that dispatch calls themselves.
    ///
    /// ```rust
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{tool, Runtime, SessionOptions, ToolCall};
    ///
    /// /// Squares an integer.
    /// #[tool]
    /// async fn square(n: i64) -> i64 { n * n }
    ///
    /// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::all()).unwrap();
    /// let result = session.call(ToolCall::new("c1", "square", r#"{"n":2}"#)).await;
    /// assert_eq!(result.outcome, Ok(serde_json::json!(4).into()));
    /// # }
    /// ```
    pub async fn call(&self, call: ToolCall) -> ToolResult {
        self.dispatch(call, &EventSender::discard()).await
    }

    /// Runs one call in the caller's task, sending its events (`tool.started`, any
    /// `tool.delta`, then its terminal event) to `events`; no conversation write-back. For hosts
    /// that schedule calls and stream events themselves. A host that drops this future before the
    /// call ends (its own timeout, a `select!`) stops the call there, and it still ends once:
    /// `tool.failed` with 1011, and nothing after it.
    ///
    /// ```rust
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{event, tool, Runtime, SessionOptions, ToolCall};
    ///
    /// /// Adds one to an integer.
    /// #[tool]
    /// async fn increment(n: i64) -> i64 { n + 1 }
    ///
    /// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::all()).unwrap();
    /// let (sender, mut stream) = event::channel();
    /// session.dispatch(ToolCall::new("c1", "increment", r#"{"n":2}"#), &sender).await;
    /// let types: Vec<_> = stream.drain().iter().map(|e| e.event_type()).collect();
    /// assert_eq!(types, ["tool.started", "tool.completed"]);
    /// # }
    /// ```
    pub async fn dispatch(&self, call: ToolCall, events: &EventSender) -> ToolResult {
        // The session's token stands for the turn: it fires only when the session is dropped,
        // which cannot happen while it is borrowed here, so a call run in place need not look at
        // it (a call that waits gets its own token in `run`).
        self.dispatch_with(call, events, self.inner.signal.token(), None)
            .await
    }

    /// [`dispatch`](Session::dispatch) under a signal of the host's own (cancelling it cancels
    /// the call as cancelling a turn does: the tool's signal, its grace, then 1011) and, for a
    /// call whose approval the user already gave ([`Session::accept_decision`]), the decision.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub async fn dispatch_with(
        &self,
        call: ToolCall,
        events: &EventSender,
        signal: &CancellationToken,
        approved: Option<crate::safety::Action>,
    ) -> ToolResult {
        self.dispatch_reserved(call, events, signal, approved, None)
            .await
    }

    /// [`dispatch_with`](Session::dispatch_with) for a call that runs in `slot` when one is
    /// given: a slot of this session's runtime taken ahead of the call
    /// ([`Runtime::try_reserve_call`](crate::Runtime::try_reserve_call)), so the call takes no
    /// other and is never refused for capacity (1014). A slot of another runtime is given back,
    /// and the call takes one of its own as any call does.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub async fn dispatch_reserved(
        &self,
        call: ToolCall,
        events: &EventSender,
        signal: &CancellationToken,
        approved: Option<crate::safety::Action>,
        slot: Option<CallSlot>,
    ) -> ToolResult {
        // A call carrying its slot goes the whole way: the place-run takes a slot of its own. One
        // that runs in place sends its `tool.started` with its terminal event, under one lock.
        let call = if approved.is_none() && slot.is_none() {
            match self
                .inner
                .dispatch_now(call, events, None, None, Terminal::AfterStarted)
            {
                // Run in place: no safety stage, so the call ran as the model issued it.
                Ok(dispatched) => return self.ended(dispatched, None),
                Err(call) => call,
            }
        } else {
            call
        };
        // Built only when someone listens (`Session::call` dispatches into a sender that drops
        // everything).
        if events.is_connected() {
            events.send(ToolEvent::Started {
                tool_call: call.clone(),
            });
        }
        // A user's edit (an approval interrupt) may replace the call; a failure counts against
        // the call as the model issued it.
        let issued = call.clone();
        // Declared before the pipeline's future, so dropped after it (and its progress gate)
        // should the host drop this future mid-call.
        let unfinished = Unfinished {
            call: &issued,
            events,
        };
        let dispatched = self
            .inner
            .dispatch(call, events, signal, approved, slot)
            .await;
        std::mem::forget(unfinished);
        self.ended(dispatched, Some(&issued))
    }

    /// What the caller gets of a call that ended, its failure counted first when it counts
    /// (against `issued`, the call as the model issued it, when a user's edit may have replaced
    /// it).
    #[inline]
    fn ended(&self, dispatched: Dispatched, issued: Option<&ToolCall>) -> ToolResult {
        if dispatched.counts {
            let issued = issued.unwrap_or(&dispatched.call);
            self.inner.record_failures([self.inner.failure_key(issued)]);
        }
        ToolResult {
            tool_call: dispatched.call,
            outcome: dispatched.outcome,
        }
    }
}

/// A call [`Session::dispatch`] has started and not ended. Should the host drop the dispatch
/// mid-call (a `select!`, a timeout of its own), the call still ends, once: its `tool.started`
/// went out, so its terminal event follows, 1011 (cancelled: the host stopped it). The
/// pipeline's future, dropped first, has closed the call's progress by then, so nothing follows.
/// Forgotten when the call ends, having sent its own terminal event.
struct Unfinished<'a> {
    call: &'a ToolCall,
    events: &'a EventSender,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        let error = if std::thread::panicking() {
            // Tool panics end as 1009 inside the pipeline: this is pleach's own.
            ToolError::new(ErrorCode::ToolPanicked, "the call failed inside pleach")
                .with_detail("the call's pipeline panicked")
        } else {
            ToolError::new(
                ErrorCode::Cancelled,
                "the call was cancelled before it finished",
            )
            .with_detail("the host dropped `Session::dispatch` before the call ended")
        };
        crate::session::call_events::send_terminal(self.events, self.call, None, &Err(error));
    }
}
