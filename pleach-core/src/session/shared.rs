//! What a runtime shares with every session it makes: the checked registry, the configuration
//! ([`Limits`], timeouts, batching, what is recorded), safety, and the runtime-wide slots
//! ([`OverloadPolicy`]). [`crate::runtime`] builds it and re-exports the public settings; sessions
//! read it through their `Arc<RuntimeInner>`. It lives on the session's side so that the runtime
//! reaches sessions and never the reverse (ARCHITECTURE.md, "Module graph").

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::batch::{BatchingConfig, BatchingStrategy, Slots};
use crate::defaults;
use crate::extensions::{Extensions, PersistedKind};
use crate::registry::ToolRegistry;
use crate::safety::FabricationDetector;

/// Limits on a call's arguments, enforced before they are parsed into a value, and on its result.
/// Read them as fields; set them with the setter of the same name.
///
/// ```
/// let limits = pleach_core::Limits::default().max_argument_depth(8);
/// assert_eq!(limits.max_argument_bytes, 1024 * 1024);
/// assert_eq!(limits.max_argument_depth, 8);
/// assert_eq!(limits.max_result_bytes, 8 * 1024 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The longest arguments text accepted, in bytes (default [`defaults::MAX_ARGUMENT_BYTES`],
    /// 1 MiB).
    pub max_argument_bytes: usize,
    /// The deepest nesting of arrays and objects accepted (default
    /// [`defaults::MAX_ARGUMENT_DEPTH`], 64).
    pub max_argument_depth: usize,
    /// The largest result a model may receive, in bytes (default
    /// [`defaults::MAX_RESULT_BYTES`], 8 MiB; a tool's own cap:
    /// [`RuntimeBuilder::tool_result_cap`](crate::RuntimeBuilder::tool_result_cap)). The
    /// structured value counts as its JSON text, a content block as its bytes. Over it, text
    /// blocks are cut (a line at the cut says how much was dropped and to ask for less), a medium
    /// fails the call with 1019 and a structured value with 1002, rather than flood the
    /// conversation and the model's context. JSON is counted without writing the text: exactly,
    /// except that a fractional number counts as 24 bytes and a string's escapes are not counted.
    pub max_result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_argument_bytes: defaults::MAX_ARGUMENT_BYTES,
            max_argument_depth: defaults::MAX_ARGUMENT_DEPTH,
            max_result_bytes: defaults::MAX_RESULT_BYTES,
        }
    }
}

impl Limits {
    /// Sets the longest arguments text accepted, in bytes (default
    /// [`defaults::MAX_ARGUMENT_BYTES`], 1 MiB): a longer one fails before it is parsed.
    ///
    /// ```
    /// let limits = pleach_core::Limits::default().max_argument_bytes(4096);
    /// assert_eq!(limits.max_argument_bytes, 4096);
    /// ```
    #[must_use]
    pub fn max_argument_bytes(mut self, bytes: usize) -> Self {
        self.max_argument_bytes = bytes;
        self
    }

    /// Sets the deepest nesting of arrays and objects accepted in arguments (default
    /// [`defaults::MAX_ARGUMENT_DEPTH`], 64).
    ///
    /// ```
    /// let limits = pleach_core::Limits::default().max_argument_depth(8);
    /// assert_eq!(limits.max_argument_depth, 8);
    /// ```
    #[must_use]
    pub fn max_argument_depth(mut self, depth: usize) -> Self {
        self.max_argument_depth = depth;
        self
    }

    /// Sets the largest result a model may receive, in bytes (default
    /// [`defaults::MAX_RESULT_BYTES`], 8 MiB); the field's doc says what is cut and what is refused.
    ///
    /// ```
    /// let limits = pleach_core::Limits::default().max_result_bytes(1024);
    /// assert_eq!(limits.max_result_bytes, 1024);
    /// ```
    #[must_use]
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }
}

/// What a call does when the runtime already runs
/// [`RuntimeBuilder::max_in_flight`](crate::RuntimeBuilder::max_in_flight) calls.
///
/// ```
/// use pleach_core::{OverloadPolicy, Runtime};
/// let runtime = Runtime::builder().max_in_flight(64).overload_policy(OverloadPolicy::FailFast).build();
/// # let _ = runtime;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OverloadPolicy {
    /// Wait for a slot. Cancellation and the call's timeout still apply to the wait: a call
    /// still waiting when its turn is cancelled fails with 1011, and one that waited its whole
    /// timeout with 1010 (then it never ran; a call that gets its slot has its whole timeout to
    /// run).
    #[default]
    Wait,
    /// Fail at once with 1014 (`Overloaded`, recoverable): the model or the host retries later.
    FailFast,
}

#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) limits: Limits,
    pub(crate) default_timeout: Duration,
    pub(crate) tool_timeouts: HashMap<String, Duration>,
    /// Per-tool result caps ([`RuntimeBuilder::tool_result_cap`](crate::RuntimeBuilder::tool_result_cap)).
    pub(crate) result_caps: HashMap<String, usize>,
    /// Tools declared idempotent or not
    /// ([`RuntimeBuilder::idempotent`](crate::RuntimeBuilder::idempotent)).
    pub(crate) idempotent: HashMap<String, bool>,
    pub(crate) cancel_grace: Duration,
    pub(crate) approval_timeout: Duration,
    pub(crate) max_repeated_failures: u32,
    pub(crate) batching: BatchingConfig,
    /// Every tool's batching strategy and per-tool cap: its hint's, else inferred from its
    /// definition, worked out once when the runtime is built (a session is made per MCP request).
    pub(crate) lanes: HashMap<String, (BatchingStrategy, Option<usize>)>,
    /// Payloads on spans and metrics, as the host chose.
    pub(crate) recording: super::telemetry::Recording,
}

/// The safety configuration: detectors, the interrupt key, what counts as provenance.
pub(crate) struct Safety {
    pub(crate) detectors: Vec<Arc<dyn FabricationDetector>>,
    pub(crate) interrupt_key: Option<Vec<u8>>,
    pub(crate) provenance_from_user: bool,
}

impl Safety {
    /// The detectors covering the tool named `name`.
    pub(super) fn detectors_for<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Arc<dyn FabricationDetector>> + 'a {
        self.detectors.iter().filter(move |d| d.covers(name))
    }
}

impl fmt::Debug for Safety {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Safety")
            .field(
                "detectors",
                &self.detectors.iter().map(|d| d.name()).collect::<Vec<_>>(),
            )
            .field(
                "interrupt_key",
                &self.interrupt_key.as_ref().map(|_| "<set>"),
            )
            .field("provenance_from_user", &self.provenance_from_user)
            .finish()
    }
}

#[derive(Debug)]
pub(crate) struct RuntimeInner {
    pub(crate) registry: ToolRegistry,
    pub(crate) extensions: Extensions,
    pub(crate) safety: Safety,
    pub(crate) config: Config,
    /// Slots for running calls, shared by every session: the runtime-wide backpressure.
    pub(crate) in_flight: Slots,
    pub(crate) overload: OverloadPolicy,
    /// The session state a host may save and restore, one kind per key.
    pub(crate) persisted: Vec<PersistedKind>,
    /// Every tool as a session holds it, made by the first session with all of them and shared
    /// by the rest (an MCP server over HTTP makes one a request).
    pub(crate) all_tools: std::sync::OnceLock<Arc<[crate::session::SessionTool]>>,
}

/// One of the runtime's slots for running calls
/// ([`max_in_flight`](crate::RuntimeBuilder::max_in_flight)), taken ahead of its call by
/// [`Runtime::try_reserve_call`](crate::Runtime::try_reserve_call): the call that carries it ([`Session::dispatch_reserved`](crate::session::Session::dispatch_reserved)) runs
/// in it; dropped, it is given back.
#[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
#[derive(Debug)]
pub struct CallSlot {
    runtime: Arc<RuntimeInner>,
}

impl CallSlot {
    /// A slot of `runtime`, if one is free now.
    pub(crate) fn try_take(runtime: &Arc<RuntimeInner>) -> Option<CallSlot> {
        runtime.in_flight.try_claim().then(|| CallSlot {
            runtime: Arc::clone(runtime),
        })
    }

    /// Whether this slot is one of `runtime`'s.
    pub(crate) fn is_of(&self, runtime: &Arc<RuntimeInner>) -> bool {
        Arc::ptr_eq(&self.runtime, runtime)
    }
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        self.runtime.in_flight.release();
    }
}
