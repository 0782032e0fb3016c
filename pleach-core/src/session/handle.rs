//! [`SessionHandle`]: the agent loop's hold on a session, its state and turn machinery, without
//! owning it.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::shared::Limits;
use super::turn::drive_turn;
use super::{Session, SessionInner, ToolResult};
use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::ToolError;
use crate::event::EventSender;
use crate::tool::UnifiedToolDefinition;

/// The agent loop's hold on a session (`crate::agent`): its state and turn machinery, without
/// owning it (dropping a handle cancels nothing; dropping the [`Session`] still cancels the loop).
#[derive(Debug, Clone)]
pub(crate) struct SessionHandle(Arc<SessionInner>);

impl Session {
    pub(crate) fn handle(&self) -> SessionHandle {
        SessionHandle(self.inner.clone())
    }
}

impl SessionHandle {
    /// The session's token: it fires when the session is dropped.
    pub(crate) fn signal(&self) -> &CancellationToken {
        self.0.signal.token()
    }

    /// The argument limits of the session's runtime.
    pub(crate) fn limits(&self) -> Limits {
        self.0.runtime.config.limits
    }

    /// The session's enabled tools, sorted by name.
    pub(crate) fn tools(&self) -> Vec<UnifiedToolDefinition> {
        self.0.tools.iter().map(|t| t.tool.clone()).collect()
    }

    pub(crate) fn conversation(&self) -> Vec<Message> {
        self.0.log().conversation.clone()
    }

    /// Appends the model's answer (a message that calls no tool).
    pub(crate) fn push_assistant_text(&self, content: String) {
        self.0.log().conversation.push(Message::Assistant {
            content: Some(content),
            tool_calls: Vec::new(),
        });
    }

    /// One model step whose calls were streamed and already announced (`tool.started` went out
    /// as each was first seen): writes the assistant message, runs the calls that may run, fails
    /// the others with their error (`failed`, by index) without running them, and writes one
    /// result per call back in call order. Events go to `sink`, which is closed at the end.
    pub(crate) async fn run_streamed_step(
        &self,
        text: Option<String>,
        calls: Vec<ToolCall>,
        failed: Vec<Option<ToolError>>,
        sink: EventSender,
        signal: CancellationToken,
    ) -> Vec<ToolResult> {
        self.0.log().conversation.push(Message::Assistant {
            content: text,
            tool_calls: calls.clone(),
        });
        drive_turn(self.0.clone(), Arc::new(calls), sink, signal, None, failed).await
    }
}
