//! The host's answers to approval interrupts: [`Session::resolve`] for a turn waiting in this
//! process, [`Session::seal`] and [`Session::resume`] for a decision that comes back later or
//! elsewhere, and `accept_decision` for a caller that kept the interrupt itself.

use std::sync::Arc;

use super::Session;
use super::turn::Turn;
use crate::event::ToolEvent;

impl Session {
    /// Answers a pending approval interrupt (an `interrupt.requested` event of one of this
    /// session's turns): accept runs the call as it is, edit runs it with the new arguments (the
    /// conversation records the edit), reject fails it with 1013 and the user's reason.
    ///
    /// # Errors
    ///
    /// The interrupt is not pending here ([`DecisionError::UnknownInterrupt`](crate::safety::DecisionError::UnknownInterrupt)), the decision was
    /// made for another call ([`DecisionError::FingerprintMismatch`](crate::safety::DecisionError::FingerprintMismatch)), or the edited arguments are
    /// not valid for the tool ([`DecisionError::InvalidEdit`](crate::safety::DecisionError::InvalidEdit)). The interrupt then stays pending.
    ///
    /// ```rust
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{tool, Runtime, SessionOptions, ToolCall, ToolEvent, safety::ProvenanceDetector};
    ///
    /// /// Sends money to an account.
    /// #[tool]
    /// async fn pay(to_account: String, amount: u32) -> String { format!("sent {amount} to {to_account}") }
    ///
    /// let runtime = Runtime::builder()
    ///     .detector(ProvenanceDetector::new().guard("pay", ["/to_account"]))
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::enabled(["pay"])).unwrap();
    /// let mut turn = session.run_turn(vec![ToolCall::new("c1", "pay", r#"{"to_account":"ACC-9","amount":5}"#)]);
    /// while let Some(event) = turn.events().recv().await {
    ///     if let ToolEvent::InterruptRequested { interrupt } = &event {
    ///         // Show `interrupt.findings` and `interrupt.ground_truth` to the user; they fix the account.
    ///         session.resolve(interrupt.edit(r#"{"to_account":"ACC-1","amount":5}"#)).unwrap();
    ///     }
    /// }
    /// let results = turn.finish().await;
    /// assert_eq!(results[0].outcome, Ok(serde_json::json!("sent 5 to ACC-1").into()));
    /// # }
    /// ```
    pub fn resolve(
        &self,
        decision: crate::safety::Decision,
    ) -> Result<(), crate::safety::DecisionError> {
        self.inner.resolve(decision)
    }

    /// Seals a pending interrupt with the runtime's key
    /// ([`RuntimeBuilder::interrupt_key`](crate::RuntimeBuilder::interrupt_key)), so another
    /// process can [`resume`](Session::resume) it.
    ///
    /// # Errors
    ///
    /// [`SealError::NoKey`](crate::safety::SealError::NoKey) when the runtime has no key.
    pub fn seal(
        &self,
        interrupt: &crate::safety::Interrupt,
    ) -> Result<String, crate::safety::SealError> {
        let key = self.inner.runtime.safety.interrupt_key.as_deref();
        key.map(|key| interrupt.seal_with(key))
            .ok_or(crate::safety::SealError::NoKey)
    }

    /// Resumes a sealed interrupt in this session (in this process or another) with the user's
    /// decision: checks the seal with the runtime's key, binds the decision to the sealed call's
    /// fingerprint, then runs the call as a turn of its own (no detector runs again: the user
    /// decided). The result message is appended to the conversation; restore the conversation the
    /// call belongs to first. Each sealed interrupt resumes once per session.
    ///
    /// # Errors
    ///
    /// A seal that does not check out ([`DecisionError::Seal`](crate::safety::DecisionError::Seal)), a decision for another
    /// interrupt or call, an invalid edit, an interrupt already resumed here, or a tool that is
    /// `critical` in this session ([`DecisionError::CriticalTool`](crate::safety::DecisionError::CriticalTool):
    /// no decision overrides a critical tool's halt).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the call runs as a Tokio task).
    pub fn resume(
        &self,
        sealed: &str,
        decision: crate::safety::Decision,
    ) -> Result<Turn, crate::safety::DecisionError> {
        let key = self
            .inner
            .runtime
            .safety
            .interrupt_key
            .as_deref()
            .ok_or(crate::safety::SealError::NoKey)?;
        let interrupt = crate::safety::Interrupt::open_with(sealed, key)?;
        let tool = self.inner.tool(interrupt.tool_call.name());
        self.inner.accept_resumed(&interrupt, &decision, tool)?;
        let call = interrupt.tool_call;
        let resolved = ToolEvent::InterruptResolved {
            tool_call_id: Arc::from(call.id()),
            interrupt_id: interrupt.id,
            action: decision.action.name(),
        };
        Ok(self.start_turn(vec![call], Some((0, decision.action)), Some(resolved)))
    }

    /// Checks the user's decision on an interrupt its caller kept itself (an MCP server's client
    /// carried it sealed between requests; a durable engine keeps it in its history) and marks it
    /// answered; the call then runs by [`dispatch_with`](Session::dispatch_with) with the
    /// decision's action.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn accept_decision(
        &self,
        interrupt: &crate::safety::Interrupt,
        decision: &crate::safety::Decision,
    ) -> Result<(), crate::safety::DecisionError> {
        let tool = self.inner.tool(interrupt.tool_call.name());
        self.inner.accept_resumed(interrupt, decision, tool)
    }
}
