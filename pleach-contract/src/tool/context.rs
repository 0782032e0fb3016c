//! [`ToolContext`]: what a tool receives besides its input. It holds no runtime type: progress
//! goes to a [`ProgressSink`] the runtime implements, so the contract compiles alone.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::extensions::{Extensions, Scope, SessionState};

/// Where a call's progress reports go. The runtime implements it for each call it runs (each
/// report becomes a `tool.delta` event, and nothing is delivered once the call has ended); a host
/// that runs tools by hand can implement it to collect them.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use pleach_core::{ProgressSink, ToolContext};
///
/// #[derive(Default)]
/// struct Collect(Mutex<Vec<serde_json::Value>>);
///
/// impl ProgressSink for Collect {
///     fn report(&self, delta: serde_json::Value) -> bool {
///         self.0.lock().unwrap().push(delta);
///         true
///     }
/// }
///
/// let sink = Arc::new(Collect::default());
/// let ctx = ToolContext::new("call_1").with_progress(sink.clone());
/// assert!(ctx.progress(serde_json::json!({ "percent": 50 })));
/// assert_eq!(sink.0.lock().unwrap().len(), 1);
/// ```
pub trait ProgressSink: Send + Sync {
    /// Delivers one report; returns whether it was delivered (`false` once the call has ended).
    fn report(&self, delta: Value) -> bool;
}

/// What a tool receives besides its input. Intentionally minimal, so the contract stays portable
/// across hosts.
///
/// - `tool_call_id` correlates audit and event-log rows with the call;
/// - `signal` is the per-turn cancellation: propagate it into every request and child process.
///   A tool that ignores it keeps burning resources after the user hits stop.
///
/// ```
/// use pleach_core::ToolContext;
///
/// let ctx = ToolContext::new("call_1");
/// assert_eq!(ctx.tool_call_id, "call_1");
/// assert!(!ctx.signal.is_cancelled());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The id of the call, as the model (or the host) issued it.
    pub tool_call_id: String,
    /// Fires when the turn is cancelled or the call times out.
    pub signal: CancellationToken,
    progress: Option<Arc<dyn ProgressSink>>,
    scope: Option<Arc<Scope>>,
}

impl ToolContext {
    /// A context with a fresh, un-cancelled signal.
    ///
    /// ```
    /// let ctx = pleach_core::ToolContext::new("call_7");
    /// ctx.signal.cancel();
    /// assert!(ctx.signal.is_cancelled());
    /// ```
    pub fn new(tool_call_id: impl Into<String>) -> Self {
        ToolContext::with_signal(tool_call_id, CancellationToken::new())
    }

    /// A context whose signal is `signal` (typically a child token of the turn's).
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    /// let turn = CancellationToken::new();
    /// let ctx = pleach_core::ToolContext::with_signal("call_1", turn.child_token());
    /// turn.cancel();
    /// assert!(ctx.signal.is_cancelled());
    /// ```
    pub fn with_signal(tool_call_id: impl Into<String>, signal: CancellationToken) -> Self {
        ToolContext {
            tool_call_id: tool_call_id.into(),
            signal,
            progress: None,
            scope: None,
        }
    }

    /// The same context with `extensions` and `state` in place of the ones a session would give:
    /// for calling a tool by hand (in a test, say) with the configuration and state it reads.
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    ///
    /// let state = SessionState::new();
    /// let ctx = ToolContext::new("c1").with_scope(Extensions::new().with(42_u32), state.clone());
    /// assert_eq!(ctx.get::<u32>(), Some(&42));
    /// *ctx.session_state::<std::sync::Mutex<u8>>().unwrap().lock().unwrap() = 7;
    /// assert_eq!(*state.get::<std::sync::Mutex<u8>>().unwrap().lock().unwrap(), 7);
    /// ```
    #[must_use]
    pub fn with_scope(mut self, extensions: Extensions, state: SessionState) -> Self {
        self.scope = Some(Arc::new(Scope { extensions, state }));
        self
    }

    /// The runtime's value of type `T` (set with
    /// [`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide)), if there is one: how a tool
    /// reads its configuration (a root folder, an allowlist, a client).
    ///
    /// ```
    /// use pleach_core::{ToolContext, extensions::{Extensions, SessionState}};
    ///
    /// struct MaxRows(usize);
    /// let ctx = ToolContext::new("c1");
    /// assert!(ctx.get::<MaxRows>().is_none()); // outside a session: nothing provided
    /// let ctx = ctx.with_scope(Extensions::new().with(MaxRows(50)), SessionState::new());
    /// assert_eq!(ctx.get::<MaxRows>().map(|m| m.0), Some(50));
    /// ```
    pub fn get<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.scope.as_ref()?.extensions.get::<T>()
    }

    /// The session's `T`, created with `T::default()` on first use and shared by every later
    /// call of the same session; `None` for a context made outside a session (and not given a
    /// scope with [`ToolContext::with_scope`]). See [`SessionState`](crate::extensions::SessionState).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// assert!(ToolContext::new("c1").session_state::<u32>().is_none());
    /// ```
    pub fn session_state<T: std::any::Any + Send + Sync + Default>(&self) -> Option<Arc<T>> {
        Some(self.scope.as_ref()?.state.get_or_default::<T>())
    }

    /// A context for code that asked for one where none was provided (it never happens for a
    /// definition that declares it takes one; this keeps that path total).
    pub(crate) fn detached() -> Self {
        ToolContext::new("")
    }

    /// The same context with its progress reports going to `sink` (a session does this for every
    /// call whose tool takes a context; by hand, to collect a tool's reports).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pleach_core::{ProgressSink, ToolContext};
    ///
    /// struct Closed;
    /// impl ProgressSink for Closed {
    ///     fn report(&self, _: serde_json::Value) -> bool { false }
    /// }
    /// let ctx = ToolContext::new("c1").with_progress(Arc::new(Closed));
    /// assert!(!ctx.progress("the call has ended"));
    /// ```
    #[must_use]
    pub fn with_progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// A session's context for one call: its id, signal, progress sink and the session's scope,
    /// shared (no allocation per call).
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn for_call(
        tool_call_id: String,
        signal: CancellationToken,
        progress: Arc<dyn ProgressSink>,
        scope: Arc<Scope>,
    ) -> Self {
        ToolContext {
            tool_call_id,
            signal,
            progress: Some(progress),
            scope: Some(scope),
        }
    }

    /// Reports progress: a `tool.delta` event with `delta` as its payload, on the stream of the
    /// turn running this call. Returns whether it was delivered: `false` outside a session, once
    /// the call has ended (nothing follows a call's terminal event), or when `delta` cannot be
    /// written as JSON.
    ///
    /// ```
    /// use pleach_core::{tool, ToolContext};
    ///
    /// /// Indexes the corpus.
    /// #[tool]
    /// async fn reindex(ctx: ToolContext) -> u32 {
    ///     for done in [25, 50, 75] {
    ///         ctx.progress(serde_json::json!({ "percent": done }));
    ///     }
    ///     100
    /// }
    /// # assert!(!ToolContext::new("c1").progress("outside a session: not delivered"));
    /// ```
    pub fn progress(&self, delta: impl Serialize) -> bool {
        match (&self.progress, serde_json::to_value(delta)) {
            (Some(sink), Ok(delta)) => sink.report(delta),
            _ => false,
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("signal", &self.signal)
            .field("reports_progress", &self.progress.is_some())
            .field("scope", &self.scope)
            .finish()
    }
}
