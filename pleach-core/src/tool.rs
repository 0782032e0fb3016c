//! The tool contract: [`ToolDefinition`] (the basic shape), [`UnifiedToolDefinition`] (the
//! registry-level shape), [`ToolContext`], [`ToolCall`], [`define_tool`] and
//! [`create_unified_tool`].
//!
//! ```
//! use pleach_core::{create_unified_tool, define_tool, SafetyTier, ToolError};
//! use serde_json::json;
//!
//! let lookup = define_tool("lookup_order", "Finds an order by id.")
//!     .input_schema(json!({
//!         "type": "object",
//!         "properties": { "id": { "type": "string" } },
//!         "required": ["id"],
//!     }))
//!     .execute_json(|args, _ctx| async move { Ok::<_, ToolError>(json!({ "id": args["id"], "status": "shipped" })) })
//!     .unwrap();
//! assert!(lookup.validate_arguments(r#"{"id":"A-17"}"#).valid);
//! let unified = create_unified_tool(lookup).with_safety_tier(SafetyTier::Standard);
//! assert_eq!(unified.display_name(), "Lookup Order");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::{ErrorCode, ToolError};
use crate::safety::SafetyTier;
use crate::schema::{self, CompiledSchema, ValidationResult};

/// The future a tool's code returns: the result as JSON, or the tool's error.
///
/// ```
/// use pleach_core::{ToolError, ToolFuture};
///
/// let future: ToolFuture = Box::pin(async { Ok::<_, ToolError>(serde_json::json!(1)) });
/// # drop(future);
/// ```
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'static>>;

/// Turns the arguments text into the tool's input and starts its code. Deserialization happens
/// before the future exists, so a typed tool reads the text straight into its input type.
///
/// The context is `None` only for a tool that takes none (`takes_context` false): the runtime then
/// builds no context, token or id for it.
#[derive(Clone)]
pub(crate) enum Invoke {
    /// A `#[tool]` fn's generated entry point: called directly.
    Generated(InvokeFn),
    /// A closure built at run time ([`define_tool`]).
    Closure(Arc<InvokeClosure>),
}

/// A generated entry point.
///
/// The context is taken only when the arguments were read: a refusal leaves it in place, so the
/// arguments can be read again ([`ToolDefinition::start`]).
pub(crate) type InvokeFn = fn(&str, &mut Option<ToolContext>) -> Result<Started, ToolError>;

/// A run-time tool's code.
pub(crate) type InvokeClosure =
    dyn Fn(&str, &mut Option<ToolContext>) -> Result<Started, ToolError> + Send + Sync + 'static;

impl Invoke {
    fn call(&self, arguments: &str, ctx: &mut Option<ToolContext>) -> Result<Started, ToolError> {
        match self {
            Invoke::Generated(invoke) => invoke(arguments, ctx),
            Invoke::Closure(invoke) => invoke(arguments, ctx),
        }
    }
}

/// A tool's code once started: already finished, or a future to drive.
///
/// A `#[tool]` fn whose body cannot suspend (no `.await`, no macro that could hide one) is run to
/// completion where it is started, on the caller's stack: no boxed future, no task. Every other
/// tool hands back its future.
#[doc(hidden)]
pub enum Started {
    /// The code ran to the end while starting.
    Ready(Result<Value, ToolError>),
    /// The code's future, not polled yet.
    Running(ToolFuture),
}

/// The error of a call whose tool was expected to finish where it started and did not: a bug in
/// pleach (the macro's scan trusted a body that suspends), reported instead of a hang.
pub(crate) fn not_finished_in_place() -> ToolError {
    ToolError::new(
        ErrorCode::ToolPanicked,
        "the tool waited where pleach expected it to finish at once; this is a bug in pleach",
    )
    .with_detail("a tool classified as never suspending returned Pending on its first poll")
}

impl Started {
    /// The outcome, awaiting the future if there is one.
    pub(crate) async fn finish(self) -> Result<Value, ToolError> {
        match self {
            Started::Ready(outcome) => outcome,
            Started::Running(future) => future.await,
        }
    }
}

impl fmt::Debug for Started {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Started::Ready(outcome) => f.debug_tuple("Ready").field(outcome).finish(),
            Started::Running(_) => f.write_str("Running(..)"),
        }
    }
}

/// Reads the arguments text into the tool's input without starting it: what the Rust type
/// refuses that the schema allows (`1.0` for an integer, say) shows up here.
pub(crate) type Check = Arc<dyn Fn(&str) -> Result<(), ToolError> + Send + Sync + 'static>;

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
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The id of the call, as the model (or the host) issued it.
    pub tool_call_id: String,
    /// Fires when the turn is cancelled or the call times out.
    pub signal: tokio_util::sync::CancellationToken,
    progress: Option<Arc<CallEvents>>,
    scope: Option<Arc<crate::extensions::Scope>>,
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
    pub fn with_scope(
        mut self,
        extensions: crate::extensions::Extensions,
        state: crate::extensions::SessionState,
    ) -> Self {
        self.scope = Some(Arc::new(crate::extensions::Scope { extensions, state }));
        self
    }

    /// The runtime's value of type `T` (set with
    /// [`RuntimeBuilder::provide`](crate::RuntimeBuilder::provide)), if there is one: how a tool
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

    /// A context whose progress reports go to the call's event stream.
    pub(crate) fn for_call(
        tool_call_id: String,
        signal: CancellationToken,
        events: Arc<CallEvents>,
        scope: Arc<crate::extensions::Scope>,
    ) -> Self {
        ToolContext {
            tool_call_id,
            signal,
            progress: Some(events),
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
            (Some(events), Ok(delta)) => events.delta(delta),
            _ => false,
        }
    }
}

/// The event channel of one call whose tool holds a context (and so can report progress at any
/// time, even from a task it left behind): closed when the call's terminal event is sent, so that
/// nothing follows that event. A call whose tool takes no context cannot send anything itself and
/// needs no such gate: its terminal event goes straight to the sink ([`send_terminal`]).
#[derive(Debug)]
pub(crate) struct CallEvents {
    call: ToolCall,
    sink: crate::event::EventSender,
    open: std::sync::Mutex<bool>,
}

impl CallEvents {
    pub(crate) fn new(call: ToolCall, sink: crate::event::EventSender) -> Self {
        CallEvents {
            call,
            sink,
            open: std::sync::Mutex::new(true),
        }
    }

    fn lock_open(&self) -> std::sync::MutexGuard<'_, bool> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn delta(&self, delta: Value) -> bool {
        let open = self.lock_open();
        if *open {
            self.sink.send(crate::event::ToolEvent::Delta {
                tool_call_id: Arc::from(self.call.id()),
                delta,
            });
        }
        *open
    }

    /// Closes the channel without a terminal event (the call's future was dropped).
    pub(crate) fn close(&self) {
        *self.lock_open() = false;
    }
}

/// Sends a call's terminal event (`tool.completed` or `tool.failed`) to `sink`, through the
/// call's gate when its tool holds a context: atomically with respect to the tool's progress
/// reports, and at most once. The event is built only when someone listens.
/// A call's `tool.completed` or `tool.failed`.
pub(crate) fn terminal_event(
    call: &ToolCall,
    outcome: &Result<Value, ToolError>,
) -> crate::event::ToolEvent {
    match outcome {
        Ok(result) => crate::event::ToolEvent::Completed {
            tool_call: call.clone(),
            result: result.clone(),
        },
        Err(error) => crate::event::ToolEvent::Failed {
            tool_call: call.clone(),
            error: error.clone(),
        },
    }
}

pub(crate) fn send_terminal(
    sink: &crate::event::EventSender,
    call: &ToolCall,
    gate: Option<&CallEvents>,
    outcome: &Result<Value, ToolError>,
) {
    if !sink.is_connected() {
        if let Some(gate) = gate {
            gate.close();
        }
        return;
    }
    let event = || terminal_event(call, outcome);
    match gate {
        Some(gate) => {
            let mut open = gate.lock_open();
            if *open {
                *open = false;
                sink.send(event());
            }
        }
        None => sink.send(event()),
    }
}

/// One call a model issued: its id, the tool's name and the arguments as JSON text, exactly as the
/// provider sent them (the text matters: a duplicate key or a truncated stream is visible only there).
///
/// ```
/// use pleach_core::ToolCall;
/// use serde_json::json;
///
/// let a = ToolCall::new("call_1", "search_corpus", r#"{"query":"rust"}"#);
/// let b = ToolCall::from_value("call_1", "search_corpus", &json!({ "query": "rust" }));
/// assert_eq!(a, b);
/// ```
///
/// A call is one shared allocation holding its texts: cloning it (into an event, a result, the
/// conversation) copies a pointer, not the text.
///
/// A call may also carry the provider's opaque [`signature`](ToolCall::signature) for it (Gemini's
/// `thoughtSignature`), which the provider's message writer sends back with the call.
///
/// A call is 32 bytes (a pointer to its text and where each part ends), which keeps the events,
/// results and messages that hold one small; the price is that an id and a name longer than
/// 4 GiB together (no provider sends one) are cut to fit, at a character boundary.
#[derive(Clone)]
pub struct ToolCall {
    /// `id`, `name`, `arguments` and the signature (empty for none), back to back.
    text: Arc<str>,
    /// Where `id` ends and `name` begins.
    id_end: u32,
    /// Where `name` ends and `arguments` begin.
    name_end: u32,
    /// Where `arguments` end and the signature begins.
    arguments_end: usize,
}

// 32 bytes on 64-bit targets: with eight more, `pleach-bench batch` faulted in fresh pages every
// round (97,000 page faults against 31,000) and took 1.5 times as long (`docs/performance.md`,
// session 6).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<ToolCall>() == 32);

/// The texts of calls being built are joined here first, so a call costs one allocation.
const SCRATCH_KEEP: usize = 16 * 1024;

thread_local! {
    static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl ToolCall {
    /// A call from its id, the tool's name and the arguments text.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1,"b":2}"#);
    /// assert_eq!((call.id(), call.name(), call.arguments()), ("call_1", "add", r#"{"a":1,"b":2}"#));
    /// ```
    pub fn new(id: impl AsRef<str>, name: impl AsRef<str>, arguments: impl AsRef<str>) -> Self {
        ToolCall::joined(id.as_ref(), name.as_ref(), arguments.as_ref(), "")
    }

    /// A call from its texts, `signature` empty for none: one allocation.
    #[inline]
    pub(crate) fn joined(id: &str, name: &str, arguments: &str, signature: &str) -> Self {
        // The id's and name's ends are `u32`s (the call stays 32 bytes): cut what cannot fit.
        let id = cut_to(id, u32::MAX as usize);
        let name = cut_to(name, u32::MAX as usize - id.len());
        let text: Arc<str> = SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut joined) => {
                joined.clear();
                joined.extend([id, name, arguments, signature]);
                let text = Arc::from(joined.as_str());
                // Keep a small buffer for the next call; give a huge one back.
                if joined.capacity() > SCRATCH_KEEP {
                    *joined = String::new();
                }
                text
            }
            // Only reachable from within this closure; join in a fresh buffer then.
            Err(_) => Arc::from([id, name, arguments, signature].concat()),
        });
        let name_end = id.len() + name.len();
        ToolCall {
            text,
            // Both fit: cut above.
            id_end: u32::try_from(id.len()).unwrap_or(u32::MAX),
            name_end: u32::try_from(name_end).unwrap_or(u32::MAX),
            arguments_end: name_end + arguments.len(),
        }
    }

    /// A call whose arguments are a JSON value (a form, a test, a manual call).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::from_value("call_1", "add", &serde_json::json!({ "a": 1, "b": 2 }));
    /// assert_eq!(call.arguments(), r#"{"a":1,"b":2}"#);
    /// ```
    pub fn from_value(id: impl AsRef<str>, name: impl AsRef<str>, arguments: &Value) -> Self {
        ToolCall::new(id, name, arguments.to_string())
    }

    /// The call's id (`tool_calls[].id`).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(call.id(), "call_1");
    /// ```
    pub fn id(&self) -> &str {
        &self.text[..self.id_end as usize]
    }

    /// The tool's name (`tool_calls[].name`).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(call.name(), "add");
    /// ```
    pub fn name(&self) -> &str {
        &self.text[self.id_end as usize..self.name_end as usize]
    }

    /// The arguments as JSON text, exactly as the model sent them.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1}"#);
    /// assert_eq!(call.arguments(), r#"{"a":1}"#);
    /// ```
    pub fn arguments(&self) -> &str {
        &self.text[self.name_end as usize..self.arguments_end]
    }

    /// The provider's opaque signature for this call, if it sent one: Gemini's
    /// `thoughtSignature`, which Gemini 3 requires back on the call's part in the next request
    /// (it refuses a conversation whose calls lack it). The provider parsers attach it, the
    /// message writers send it back; pleach never reads it.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(call.signature(), None);
    /// assert_eq!(call.with_signature("EqUCCq").signature(), Some("EqUCCq"));
    /// ```
    pub fn signature(&self) -> Option<&str> {
        Some(&self.text[self.arguments_end..]).filter(|signature| !signature.is_empty())
    }

    /// The same call carrying the provider's `signature` (see [`signature`](Self::signature));
    /// an empty one removes it.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1}"#).with_signature("sig");
    /// assert_eq!(call.arguments(), r#"{"a":1}"#);
    /// assert_eq!(call.with_signature("").signature(), None);
    /// ```
    #[must_use]
    pub fn with_signature(&self, signature: impl AsRef<str>) -> Self {
        ToolCall::joined(self.id(), self.name(), self.arguments(), signature.as_ref())
    }

    /// The same call with other arguments (an edit a user made before it ran); it keeps its
    /// [`signature`](Self::signature).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1}"#);
    /// assert_eq!(call.with_arguments(r#"{"a":2}"#).arguments(), r#"{"a":2}"#);
    /// ```
    #[must_use]
    pub fn with_arguments(&self, arguments: impl AsRef<str>) -> Self {
        ToolCall::joined(
            self.id(),
            self.name(),
            arguments.as_ref(),
            self.signature().unwrap_or_default(),
        )
    }

    /// Whether `self` and `other` are the very same call (clones of one), not merely equal.
    pub(crate) fn same(&self, other: &ToolCall) -> bool {
        Arc::ptr_eq(&self.text, &other.text)
    }
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (id, name, arguments) = (self.id(), self.name(), self.arguments());
        let mut debug = f.debug_struct("ToolCall");
        debug
            .field("id", &id)
            .field("name", &name)
            .field("arguments", &arguments);
        if let Some(signature) = self.signature() {
            debug.field("signature", &signature);
        }
        debug.finish()
    }
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
            || (self.id() == other.id()
                && self.name() == other.name()
                && self.arguments() == other.arguments()
                && self.signature() == other.signature())
    }
}

impl Eq for ToolCall {}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut_to(text: &str, max: usize) -> &str {
    if text.len() <= max {
        text
    } else {
        &text[..text.floor_char_boundary(max)]
    }
}

/// The stored form: `{"id", "name", "arguments"}`, and `"signature"` when the call has one (so a
/// saved conversation written back later still carries it).
#[derive(Serialize, serde::Deserialize)]
#[serde(rename = "ToolCall")]
struct ToolCallFields<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    signature: Option<Cow<'a, str>>,
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ToolCallFields {
            id: Cow::Borrowed(self.id()),
            name: Cow::Borrowed(self.name()),
            arguments: Cow::Borrowed(self.arguments()),
            signature: self.signature().map(Cow::Borrowed),
        }
        .serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = ToolCallFields::deserialize(deserializer)?;
        Ok(ToolCall::joined(
            &fields.id,
            &fields.name,
            &fields.arguments,
            fields.signature.as_deref().unwrap_or_default(),
        ))
    }
}

/// Where a tool was defined: the `#[tool]` fn, or the `define_tool` call. Duplicate-name errors
/// name both sites.
///
/// ```
/// let def = pleach_core::define_tool("noop", "Does nothing.")
///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::Value::Null) })
///     .unwrap();
/// assert!(def.site().file().ends_with(".rs"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefinitionSite {
    file: Cow<'static, str>,
    line: u32,
    column: u32,
}

impl DefinitionSite {
    /// A site from its parts.
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 1);
    /// assert_eq!(site.to_string(), "src/tools.rs:12:1");
    /// ```
    pub fn new(file: impl Into<Cow<'static, str>>, line: u32, column: u32) -> Self {
        DefinitionSite {
            file: file.into(),
            line,
            column,
        }
    }

    /// The caller's location (for `#[track_caller]` constructors).
    #[track_caller]
    pub(crate) fn caller() -> Self {
        let at = Location::caller();
        DefinitionSite::new(at.file(), at.line(), at.column())
    }

    /// The source file, as `file!()` spells it.
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 1);
    /// assert_eq!(site.file(), "src/tools.rs");
    /// ```
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The 1-based line.
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 1);
    /// assert_eq!(site.line(), 12);
    /// ```
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The 1-based column.
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 5);
    /// assert_eq!(site.column(), 5);
    /// ```
    pub fn column(&self) -> u32 {
        self.column
    }
}

impl fmt::Display for DefinitionSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Why a tool definition was refused.
///
/// ```
/// let err = pleach_core::define_tool("has space", "x")
///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::Value::Null) })
///     .unwrap_err();
/// assert!(err.to_string().contains("`has space`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefinitionError {
    /// The name does not match `^[A-Za-z0-9_-]{1,64}$` (what every provider accepts).
    #[error(
        "tool name `{name}` is invalid: use 1 to 64 ASCII letters, digits, `_` or `-` (defined at {site})"
    )]
    InvalidName {
        /// The refused name.
        name: String,
        /// Where it was defined.
        site: DefinitionSite,
    },
    /// The description is empty; the model reads it to decide when to call the tool.
    #[error(
        "tool `{name}` has an empty description; the model reads it to decide when to call the tool (defined at {site})"
    )]
    EmptyDescription {
        /// The tool.
        name: String,
        /// Where it was defined.
        site: DefinitionSite,
    },
    /// A schema is not a valid JSON Schema, or the input schema does not describe an object.
    #[error("tool `{name}`: the {which} schema is invalid: {reason} (defined at {site})")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// `"input"` or `"output"`.
        which: &'static str,
        /// What is wrong.
        reason: String,
        /// Where it was defined.
        site: DefinitionSite,
    },
}

/// The basic tool shape: name, description, input schema, optional output schema, and the code.
///
/// Built by `#[tool]` (through the fn's handle, `my_tool::definition()`) or at run time by
/// [`define_tool`]. Cloning is cheap (one `Arc`). The schemas are compiled into validators when the
/// definition is built, once.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{define_tool, ToolContext, ToolError};
/// use serde_json::json;
///
/// let echo = define_tool("echo", "Returns its input.")
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "text": { "type": "string" } },
///         "required": ["text"]
///     }))
///     .execute_json(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .unwrap();
///
/// let out = echo.call(r#"{"text":"hi"}"#, ToolContext::new("call_1")).await.unwrap();
/// assert_eq!(out, json!({ "text": "hi" }));
///
/// let err = echo.call(r#"{"text":5}"#, ToolContext::new("call_2")).await.unwrap_err();
/// assert_eq!(err.code().as_u16(), 1001);
/// assert_eq!(err.path(), Some("/text"));
/// # }
/// ```
#[derive(Clone)]
pub struct ToolDefinition {
    inner: Arc<DefinitionInner>,
}

// Independent facts the macro proved about the code, each read on its own.
#[allow(clippy::struct_excessive_bools)]
struct DefinitionInner {
    name: String,
    description: String,
    input: CompiledSchema,
    output: Option<CompiledSchema>,
    invoke: Invoke,
    check: Option<Check>,
    /// Reading the text into the input succeeds only for text the input schema accepts, so the
    /// generic validator runs only to explain a failure.
    checked_by_type: bool,
    /// Every result the code can return meets the output schema (the output type guarantees it),
    /// so results are not checked against it.
    output_checked_by_type: bool,
    /// Whether `invoke` runs the code to its end (`Started::Ready`), never handing back a future.
    in_place: bool,
    /// Whether the code reads a `ToolContext` (a `#[tool]` fn without one does not).
    takes_context: bool,
    site: DefinitionSite,
}

/// Everything a definition is made of, before its checks.
// Independent facts the macro proved about the code, each read on its own.
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct DefinitionParts {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) invoke: Invoke,
    pub(crate) check: Option<Check>,
    pub(crate) checked_by_type: bool,
    pub(crate) output_checked_by_type: bool,
    pub(crate) in_place: bool,
    pub(crate) takes_context: bool,
    pub(crate) site: DefinitionSite,
}

impl ToolDefinition {
    /// Checks the parts and compiles the schemas.
    pub(crate) fn from_parts(parts: DefinitionParts) -> Result<Self, DefinitionError> {
        let DefinitionParts {
            name,
            description,
            input_schema,
            output_schema,
            invoke,
            check,
            checked_by_type,
            output_checked_by_type,
            in_place,
            takes_context,
            site,
        } = parts;
        if !is_valid_tool_name(&name) {
            return Err(DefinitionError::InvalidName { name, site });
        }
        if description.trim().is_empty() {
            return Err(DefinitionError::EmptyDescription { name, site });
        }
        let invalid = |which, reason| DefinitionError::InvalidSchema {
            name: name.clone(),
            which,
            reason,
            site: site.clone(),
        };
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(invalid(
                "input",
                "it must describe an object (`\"type\": \"object\"`): providers pass arguments as a JSON object"
                    .to_owned(),
            ));
        }
        let input = CompiledSchema::compile(input_schema).map_err(|e| invalid("input", e))?;
        // A typed input gets a property's default when the call leaves it out: one its own schema
        // refuses would fail every such call for a value the model never sent.
        if check.is_some() {
            let defaults: serde_json::Map<String, Value> =
                top_level_defaults(input.schema()).into_iter().collect();
            let verdict = input.validate(&Value::Object(defaults));
            if let Some(error) = verdict.errors.iter().find(|e| !e.path.is_empty()) {
                return Err(invalid(
                    "input",
                    format!(
                        "the default at `{}` fails its own schema: {}",
                        error.path, error.message
                    ),
                ));
            }
        }
        let output = output_schema
            .map(CompiledSchema::compile)
            .transpose()
            .map_err(|e| invalid("output", e))?;
        Ok(ToolDefinition {
            inner: Arc::new(DefinitionInner {
                name,
                description,
                input,
                output,
                invoke,
                check,
                checked_by_type,
                output_checked_by_type,
                in_place,
                takes_context,
                site,
            }),
        })
    }

    /// The name the model emits in `tool_calls[].name`.
    ///
    /// ```
    /// let ping = pleach_core::define_tool("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.name(), "ping");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the tool does, for the model.
    ///
    /// ```
    /// let ping = pleach_core::define_tool("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.description(), "Answers pong.");
    /// ```
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// The input JSON Schema (draft 2020-12, an object schema).
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let ping = pleach_core::define_tool("ping", "Answers pong.")
    ///     .input_schema(json!({ "type": "object", "properties": { "n": { "type": "integer" } } }))
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.input_schema()["properties"]["n"]["type"], "integer");
    /// ```
    pub fn input_schema(&self) -> &Value {
        self.inner.input.schema()
    }

    /// The output JSON Schema, if the tool declares one.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let ping = pleach_core::define_tool("ping", "Answers pong.")
    ///     .output_schema(json!({ "type": "string" }))
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.output_schema(), Some(&json!({ "type": "string" })));
    /// ```
    pub fn output_schema(&self) -> Option<&Value> {
        self.inner.output.as_ref().map(CompiledSchema::schema)
    }

    /// Where the tool was defined.
    ///
    /// ```
    /// let ping = pleach_core::define_tool("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert!(ping.site().line() > 0); // where `define_tool` was called
    /// ```
    pub fn site(&self) -> &DefinitionSite {
        &self.inner.site
    }

    /// Checks arguments text against the input schema without running the tool: JSON syntax,
    /// duplicate keys, then the schema. Every violation comes with a JSON pointer and a keyword.
    ///
    /// ```
    /// let def = pleach_core::define_tool("t", "A tool.")
    ///     .input_schema(serde_json::json!({
    ///         "type": "object",
    ///         "properties": { "n": { "type": "integer", "maximum": 5 } }
    ///     }))
    ///     .execute_json(|v, _| async move { Ok::<_, pleach_core::ToolError>(v) })
    ///     .unwrap();
    /// let verdict = def.validate_arguments(r#"{"n": 9}"#);
    /// assert!(!verdict.valid);
    /// assert_eq!(verdict.errors[0].path, "/n");
    /// assert_eq!(verdict.errors[0].keyword, "maximum");
    /// ```
    pub fn validate_arguments(&self, arguments: &str) -> ValidationResult {
        let (verdict, value) = match schema::parse_arguments(arguments) {
            Ok(value) => (self.inner.input.validate(&value), value),
            Err(error) => return ValidationResult::invalid(vec![error]),
        };
        match &self.inner.check {
            Some(check) if verdict.valid => match check(arguments) {
                Ok(()) => verdict,
                // `3.0` where the type wants an integer: the schema takes it, and so does the
                // call (see `start`).
                Err(_)
                    if schema::integral_floats_as_integers(&value)
                        .is_some_and(|text| check(&text).is_ok()) =>
                {
                    verdict
                }
                Err(refused) => ValidationResult::invalid(vec![schema::ValidationError {
                    path: refused.path().unwrap_or_default().to_owned(),
                    keyword: "type".to_owned(),
                    message: refused.message().to_owned(),
                }]),
            },
            _ => verdict,
        }
    }

    /// Runs one call: parse the arguments (duplicate keys refused) → validate them against the
    /// input schema → run the tool with `ctx` → validate the result against the output schema.
    ///
    /// Invalid input fails with 1001 (or 1005 for text that is not JSON) before the tool runs;
    /// a result that fails the output schema fails with 1002.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{define_tool, ToolContext, ToolError};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { a: i64, b: i64 }
    ///
    /// let add = define_tool("add", "Adds two integers.")
    ///     .execute(|input: Add, _ctx| async move { Ok::<_, ToolError>(input.a + input.b) })
    ///     .unwrap();
    /// let sum = add.call(r#"{"a":1,"b":2}"#, ToolContext::new("call_1")).await.unwrap();
    /// assert_eq!(sum, 3);
    /// # }
    /// ```
    pub async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<Value, ToolError> {
        let output = self.start(arguments, Some(ctx))?.finish().await?;
        self.check_output(&output)?;
        Ok(output)
    }

    /// Parses the arguments (duplicate keys refused: 1005) and validates them (1001).
    pub(crate) fn parse_and_validate(&self, arguments: &str) -> Result<Value, ToolError> {
        let value =
            schema::parse_arguments(arguments).map_err(schema::ValidationError::into_tool_error)?;
        self.inner.input.check_input(&value)?;
        Ok(value)
    }

    /// Validates the arguments and starts the tool's code.
    ///
    /// When the input type checks everything its schema says (`checked_by_type`), the text is
    /// read straight into it, and the generic parser and validator run only to explain a refusal;
    /// the verdict is the same either way (tests compare the two on generated inputs). Otherwise
    /// the arguments are parsed and validated first.
    pub(crate) fn start(
        &self,
        arguments: &str,
        mut ctx: Option<ToolContext>,
    ) -> Result<Started, ToolError> {
        if self.inner.checked_by_type {
            // serde reads a struct from an array as well as from an object (`["6*7"]` fills the
            // first parameter); a tool's parameters schema takes objects only. Anything else
            // goes to the validator, which says why.
            let object = arguments
                .trim_start_matches([' ', '\t', '\n', '\r'])
                .starts_with('{');
            let started = if object {
                self.inner.invoke.call(arguments, &mut ctx)
            } else {
                Err(ToolError::new(
                    ErrorCode::InputInvalid,
                    "the arguments must be a JSON object",
                ))
            };
            return started.or_else(|refused| match self.parse_and_validate(arguments) {
                Err(explained) => Err(explained),
                Ok(value) => self.start_normalized(&value, &mut ctx, refused),
            });
        }
        let value = self.parse_and_validate(arguments)?;
        self.inner
            .invoke
            .call(arguments, &mut ctx)
            .or_else(|refused| self.start_normalized(&value, &mut ctx, refused))
    }

    /// Arguments the schema accepts but the input type refused: JSON Schema counts `3.0` as an
    /// integer, and serde reads it into no integer type. Read again with such numbers written as
    /// integers; anything else keeps the type's refusal.
    fn start_normalized(
        &self,
        value: &Value,
        ctx: &mut Option<ToolContext>,
        refused: ToolError,
    ) -> Result<Started, ToolError> {
        if refused.code() != ErrorCode::InputInvalid {
            return Err(refused);
        }
        match schema::integral_floats_as_integers(value) {
            Some(text) => self.inner.invoke.call(&text, ctx).map_err(|_| refused),
            None => Err(refused),
        }
    }

    /// Whether the tool's code reads its [`ToolContext`].
    pub(crate) fn takes_context(&self) -> bool {
        self.inner.takes_context
    }

    /// Whether starting the tool runs it to its end (a `#[tool]` fn that cannot suspend).
    pub(crate) fn runs_in_place(&self) -> bool {
        self.inner.in_place
    }

    /// Validates a result against the output schema, if there is one (1002), unless the output
    /// type already guarantees it.
    pub(crate) fn check_output(&self, output: &Value) -> Result<(), ToolError> {
        match &self.inner.output {
            Some(schema) if !self.inner.output_checked_by_type => schema.check_output(output),
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.inner.name)
            .field("description", &self.inner.description)
            .field("input_schema", self.input_schema())
            .field("output_schema", &self.output_schema())
            .field("site", &self.inner.site)
            .finish_non_exhaustive()
    }
}

/// Whether `name` matches `^[A-Za-z0-9_-]{1,64}$`, the rule every provider accepts.
///
/// ```
/// use pleach_core::tool::is_valid_tool_name;
/// assert!(is_valid_tool_name("search_corpus"));
/// assert!(!is_valid_tool_name("search corpus"));
/// assert!(!is_valid_tool_name(""));
/// ```
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Starts a tool definition at run time: the Rust form of the spec's `defineTool`.
///
/// Finish it with [`ToolBuilder::execute`] (typed input and output: the schemas are derived) or
/// [`ToolBuilder::execute_json`] (JSON in, JSON out, for tools whose schema comes from
/// configuration or another system). The call site is recorded for error messages.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{define_tool, ToolContext, ToolError};
/// use serde::{Deserialize, Serialize};
/// use schemars::JsonSchema;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct SearchInput {
///     /// Free-text query.
///     query: String,
///     #[schemars(range(min = 1, max = 50))]
///     #[serde(default = "ten")]
///     limit: u32,
/// }
/// fn ten() -> u32 { 10 }
///
/// #[derive(Serialize, JsonSchema)]
/// struct SearchOutput { results: Vec<String> }
///
/// let search = define_tool("search_corpus", "Free-text search over the host corpus.")
///     .execute(|input: SearchInput, _ctx: ToolContext| async move {
///         let results = (0..input.limit.min(2)).map(|i| format!("{} #{i}", input.query)).collect();
///         Ok::<_, ToolError>(SearchOutput { results })
///     })
///     .unwrap();
///
/// assert_eq!(search.input_schema()["required"], serde_json::json!(["query"]));
/// let out = search.call(r#"{"query":"rust"}"#, ToolContext::new("c1")).await.unwrap();
/// assert_eq!(out["results"][1], "rust #1");
/// let err = search.call(r#"{"query":"rust","limit":80}"#, ToolContext::new("c2")).await.unwrap_err();
/// assert_eq!(err.path(), Some("/limit"));
/// # }
/// ```
#[track_caller]
pub fn define_tool(name: impl Into<String>, description: impl Into<String>) -> ToolBuilder {
    ToolBuilder {
        name: name.into(),
        description: description.into(),
        input_schema: None,
        output_schema: None,
        site: DefinitionSite::caller(),
    }
}

/// A tool definition under construction; see [`define_tool`].
///
/// ```
/// use pleach_core::{define_tool, ToolError};
///
/// let builder = define_tool("ping", "Answers pong.");
/// let ping = builder
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// assert_eq!(ping.name(), "ping");
/// ```
#[derive(Debug, Clone)]
#[must_use = "a tool builder does nothing until `execute` or `execute_json` finishes it"]
pub struct ToolBuilder {
    name: String,
    description: String,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    site: DefinitionSite,
}

impl ToolBuilder {
    /// Sets the input JSON Schema. It must describe an object. With [`execute`](Self::execute) it
    /// replaces the derived schema (say, to add constraints the Rust type cannot carry); the typed
    /// input must still deserialize from every value it accepts.
    ///
    /// ```
    /// let def = pleach_core::define_tool("t", "A tool.")
    ///     .input_schema(serde_json::json!({ "type": "object" }))
    ///     .execute_json(|v, _| async move { Ok::<_, pleach_core::ToolError>(v) })
    ///     .unwrap();
    /// assert_eq!(def.input_schema()["type"], "object");
    /// ```
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the output JSON Schema; results are validated against it (1002 on failure).
    ///
    /// ```
    /// let def = pleach_core::define_tool("t", "A tool.")
    ///     .output_schema(serde_json::json!({ "type": "string" }))
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("ok")) })
    ///     .unwrap();
    /// assert_eq!(def.output_schema().unwrap()["type"], "string");
    /// ```
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Finishes the definition with typed code: the input schema is derived from `I`, the output
    /// schema from `O` (none when `O`'s schema accepts anything, as for `serde_json::Value`).
    /// The arguments text is deserialized straight into `I`.
    ///
    /// ```
    /// use pleach_core::{define_tool, ToolError};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Input { a: i64, b: i64 }
    /// let add = define_tool("add", "Adds.")
    ///     .execute(|i: Input, _| async move { Ok::<_, ToolError>(i.a + i.b) })
    ///     .unwrap();
    /// assert_eq!(add.output_schema().unwrap()["type"], "integer");
    /// ```
    pub fn execute<I, O, E, F, Fut>(self, f: F) -> Result<ToolDefinition, DefinitionError>
    where
        I: DeserializeOwned + JsonSchema,
        O: Serialize + JsonSchema,
        E: Into<ToolError>,
        F: Fn(I, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
    {
        let input_schema = self
            .input_schema
            .unwrap_or_else(schema::input_schema_for::<I>);
        let output_schema = self.output_schema.or_else(schema::output_schema_for::<O>);
        let invoke = Invoke::Closure(Arc::new(move |arguments: &str, ctx: &mut Option<_>| {
            let input: I = schema::deserialize_input(arguments)?;
            let future = f(input, ctx.take().unwrap_or_else(ToolContext::detached));
            Ok(Started::Running(Box::pin(async move {
                match future.await {
                    Ok(output) => schema::output_to_value(&output),
                    Err(error) => Err(error.into()),
                }
            })))
        }));
        let check: Check =
            Arc::new(|arguments: &str| schema::deserialize_input::<I>(arguments).map(drop));
        ToolDefinition::from_parts(DefinitionParts {
            name: self.name,
            description: self.description,
            input_schema,
            output_schema,
            invoke,
            check: Some(check),
            checked_by_type: false,
            output_checked_by_type: false,
            in_place: false,
            takes_context: true,
            site: self.site,
        })
    }

    /// Finishes the definition with JSON code: the input is the arguments as a
    /// [`Value`], already validated against the input schema (an open object
    /// schema when none was set), with the schema's top-level `default`s filled in for the
    /// properties the call left out (as `z.number().default(10)` gives `execute` its 10).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{define_tool, ToolContext, ToolError};
    /// use serde_json::json;
    ///
    /// let def = define_tool("search", "Searches.")
    ///     .input_schema(json!({
    ///         "type": "object",
    ///         "properties": {
    ///             "query": { "type": "string" },
    ///             "limit": { "type": "integer", "default": 10 }
    ///         },
    ///         "required": ["query"]
    ///     }))
    ///     .execute_json(|input, _| async move { Ok::<_, ToolError>(input) })
    ///     .unwrap();
    /// let input = def.call(r#"{"query":"rust"}"#, ToolContext::new("c1")).await.unwrap();
    /// assert_eq!(input, json!({ "query": "rust", "limit": 10 }));
    /// # }
    /// ```
    pub fn execute_json<E, F, Fut>(self, f: F) -> Result<ToolDefinition, DefinitionError>
    where
        E: Into<ToolError>,
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, E>> + Send + 'static,
    {
        let input_schema = self
            .input_schema
            .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
        let defaults = top_level_defaults(&input_schema);
        let invoke = Invoke::Closure(Arc::new(move |arguments: &str, ctx: &mut Option<_>| {
            let mut input: Value = schema::deserialize_input(arguments)?;
            if let Value::Object(given) = &mut input {
                for (key, default) in &defaults {
                    if !given.contains_key(key) {
                        given.insert(key.clone(), default.clone());
                    }
                }
            }
            let future = f(input, ctx.take().unwrap_or_else(ToolContext::detached));
            Ok(Started::Running(Box::pin(async move {
                future.await.map_err(Into::into)
            })))
        }));
        ToolDefinition::from_parts(DefinitionParts {
            name: self.name,
            description: self.description,
            input_schema,
            output_schema: self.output_schema,
            invoke,
            check: None,
            checked_by_type: false,
            output_checked_by_type: false,
            in_place: false,
            takes_context: true,
            site: self.site,
        })
    }
}

/// The `default` of each top-level property of an object schema that has one.
fn top_level_defaults(schema: &Value) -> Vec<(String, Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(key, property)| Some((key.clone(), property.get("default")?.clone())))
        .collect()
}

/// The registry-level tool shape: a [`ToolDefinition`] plus `id`, `display_name`, `category`,
/// `schema_key` and the optional [`SafetyTier`]. The Rust form of the spec's
/// `UnifiedToolDefinition`; the registry holds these (a basic definition converts with defaults).
///
/// ```
/// use pleach_core::{create_unified_tool, define_tool, SafetyTier, ToolError, UnifiedToolDefinition};
///
/// let lookup = define_tool("dangerous_lookup", "Looks up an account.")
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// let unified = create_unified_tool(lookup.clone())
///     .with_category("analysis")
///     .with_safety_tier(SafetyTier::Critical);
/// assert_eq!(unified.id(), "dangerous_lookup");
/// assert_eq!(unified.display_name(), "Dangerous Lookup");
/// assert_eq!(unified.schema_key(), "DangerousLookupInput");
/// assert_eq!(unified.safety_tier(), Some(SafetyTier::Critical));
///
/// let plain = UnifiedToolDefinition::from(lookup);
/// assert_eq!(plain.safety_tier(), None);
/// assert_eq!(plain.category(), "general");
/// ```
#[derive(Debug, Clone)]
pub struct UnifiedToolDefinition {
    definition: ToolDefinition,
    // Shared so that sessions and registries clone a tool for two reference-count bumps.
    meta: Arc<UnifiedMeta>,
}

#[derive(Debug, Clone)]
struct UnifiedMeta {
    id: String,
    display_name: String,
    category: String,
    schema_key: String,
    safety_tier: Option<SafetyTier>,
}

/// Lifts a [`ToolDefinition`] to the registry-level shape: the Rust form of the spec's
/// `createUnifiedTool`. Defaults: `id` = the name, `display_name` = the name in title case,
/// `category` = `"general"`, `schema_key` = the name in `CamelCase` + `Input`, no safety tier.
///
/// ```
/// use pleach_core::{create_unified_tool, define_tool, SafetyTier, ToolError};
/// let def = define_tool("wire_transfer", "Moves money.")
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// let tool = create_unified_tool(def).with_id("payments.wire").with_safety_tier(SafetyTier::Standard);
/// assert_eq!(tool.id(), "payments.wire");
/// assert_eq!(tool.name(), "wire_transfer");
/// ```
pub fn create_unified_tool(definition: ToolDefinition) -> UnifiedToolDefinition {
    UnifiedToolDefinition::from(definition)
}

impl From<ToolDefinition> for UnifiedToolDefinition {
    fn from(definition: ToolDefinition) -> Self {
        let name = definition.name();
        let meta = UnifiedMeta {
            id: name.to_owned(),
            display_name: title_case(name),
            category: "general".to_owned(),
            schema_key: format!("{}Input", camel_case(name)),
            safety_tier: None,
        };
        UnifiedToolDefinition {
            definition,
            meta: Arc::new(meta),
        }
    }
}

impl UnifiedToolDefinition {
    /// Sets the registry id.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::create_unified_tool(def).with_id("payments.wire");
    /// assert_eq!(tool.id(), "payments.wire");
    /// ```
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).id = id.into();
        self
    }

    /// Sets the name shown to people.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::create_unified_tool(def).with_display_name("Wire transfer");
    /// assert_eq!(tool.display_name(), "Wire transfer");
    /// ```
    #[must_use]
    pub fn with_display_name(mut self, display_name: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).display_name = display_name.into();
        self
    }

    /// Sets the category (`"analysis"`, `"filesystem"`, …).
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::create_unified_tool(def).with_category("payments");
    /// assert_eq!(tool.category(), "payments");
    /// ```
    #[must_use]
    pub fn with_category(mut self, category: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).category = category.into();
        self
    }

    /// Sets the key of the input schema in the host's schema catalog.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::create_unified_tool(def).with_schema_key("WireInput");
    /// assert_eq!(tool.schema_key(), "WireInput");
    /// ```
    #[must_use]
    pub fn with_schema_key(mut self, schema_key: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).schema_key = schema_key.into();
        self
    }

    /// Sets the safety tier (see [`SafetyTier`]).
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// use pleach_core::SafetyTier;
    /// let tool = pleach_core::create_unified_tool(def).with_safety_tier(SafetyTier::Critical);
    /// assert_eq!(tool.safety_tier(), Some(SafetyTier::Critical));
    /// ```
    #[must_use]
    pub fn with_safety_tier(mut self, tier: SafetyTier) -> Self {
        Arc::make_mut(&mut self.meta).safety_tier = Some(tier);
        self
    }

    /// The basic definition.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::create_unified_tool(def);
    /// assert_eq!(tool.definition().description(), "Sends money.");
    /// ```
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The tool's name (the definition's).
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::create_unified_tool(def).name(), "wire_transfer");
    /// ```
    pub fn name(&self) -> &str {
        self.definition.name()
    }

    /// The registry id.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::create_unified_tool(def).id(), "wire_transfer"); // the name by default
    /// ```
    pub fn id(&self) -> &str {
        &self.meta.id
    }

    /// The name shown to people.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::create_unified_tool(def).display_name(), "Wire Transfer");
    /// ```
    pub fn display_name(&self) -> &str {
        &self.meta.display_name
    }

    /// The category.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::create_unified_tool(def).category(), "general");
    /// ```
    pub fn category(&self) -> &str {
        &self.meta.category
    }

    /// The key of the input schema in the host's schema catalog.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::create_unified_tool(def).schema_key(), "WireTransferInput");
    /// ```
    pub fn schema_key(&self) -> &str {
        &self.meta.schema_key
    }

    /// The safety tier, if set.
    ///
    /// ```
    /// # let def = pleach_core::define_tool("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::create_unified_tool(def).safety_tier(), None);
    /// ```
    pub fn safety_tier(&self) -> Option<SafetyTier> {
        self.meta.safety_tier
    }
}

/// `dangerous_lookup` → `Dangerous Lookup`.
fn title_case(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|w| !w.is_empty())
        .map(capitalize)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `dangerous_lookup` → `DangerousLookup`.
fn camel_case(name: &str) -> String {
    name.split(['_', '-']).map(capitalize).collect()
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_cut_at_a_character_boundary() {
        assert_eq!(cut_to("abc", 3), "abc");
        assert_eq!(cut_to("abc", 2), "ab");
        assert_eq!(
            cut_to("aé", 2),
            "a",
            "`é` is two bytes: it does not fit in one"
        );
        assert_eq!(cut_to("é", 0), "");
    }

    #[test]
    fn a_call_keeps_its_texts_and_signature_apart() {
        let call = ToolCall::joined("ид-1", "añadir", r#"{"x":"é"}"#, "c2ln");
        assert_eq!(
            (call.id(), call.name(), call.arguments(), call.signature()),
            ("ид-1", "añadir", r#"{"x":"é"}"#, Some("c2ln"))
        );
        let edited = call.with_arguments("{}");
        assert_eq!(
            (edited.arguments(), edited.signature()),
            ("{}", Some("c2ln"))
        );
        assert_eq!(edited.with_signature("").signature(), None);
        assert_ne!(
            call,
            call.with_signature("other"),
            "the signature is part of the call"
        );
    }

    #[test]
    fn a_call_keeps_its_three_texts_apart() {
        for (id, name, arguments) in [
            ("call_1", "add", r#"{"a":1}"#),
            ("", "", ""),
            ("ид-1", "añadir", r#"{"texte":"été ✓"}"#),
            ("c", "big", &"x".repeat(100_000)),
        ] {
            let call = ToolCall::new(id, name, arguments);
            assert_eq!(
                (call.id(), call.name(), call.arguments()),
                (id, name, arguments)
            );
        }
    }

    #[test]
    fn calls_compare_by_text_and_clones_are_the_same_call() {
        let a = ToolCall::new("c1", "add", "{}");
        let b = ToolCall::new("c1", "add", "{}");
        assert_eq!(a, b);
        assert!(!a.same(&b));
        assert!(a.same(&a.clone()));
        // The same bytes split differently are a different call.
        assert_ne!(ToolCall::new("c1a", "dd", "{}"), a);
        let edited = a.with_arguments(r#"{"a":2}"#);
        assert_eq!((edited.id(), edited.name()), ("c1", "add"));
        assert_ne!(edited, a);
    }

    #[test]
    fn a_call_serializes_as_its_three_fields() {
        let call = ToolCall::new("c1", "add", r#"{"a":1}"#);
        let json = serde_json::to_value(&call).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "id": "c1", "name": "add", "arguments": "{\"a\":1}" })
        );
        let back: ToolCall = serde_json::from_value(json).unwrap();
        assert_eq!(back, call);
        let escaped: ToolCall =
            serde_json::from_str(r#"{"id":"c\"2","name":"n","arguments":"{}"}"#).unwrap();
        assert_eq!(escaped.id(), "c\"2");
        assert!(serde_json::from_str::<ToolCall>(r#"{"id":"c"}"#).is_err());
        assert_eq!(
            format!("{call:?}"),
            r#"ToolCall { id: "c1", name: "add", arguments: "{\"a\":1}" }"#
        );
    }

    #[test]
    fn names_follow_the_provider_rule() {
        assert!(is_valid_tool_name("a"));
        assert!(is_valid_tool_name(&"x".repeat(64)));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
        assert!(!is_valid_tool_name("dotted.name"));
        assert!(!is_valid_tool_name("ünïcode"));
    }

    #[test]
    fn derived_names() {
        assert_eq!(title_case("get-user_profile"), "Get User Profile");
        assert_eq!(camel_case("get_user"), "GetUser");
    }

    #[test]
    fn input_schema_must_be_an_object() {
        let err = define_tool("t", "d")
            .input_schema(serde_json::json!({ "type": "string" }))
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(matches!(
            err,
            DefinitionError::InvalidSchema { which: "input", .. }
        ));
    }

    #[test]
    fn invalid_schema_is_refused_at_definition() {
        let err = define_tool("t", "d")
            .input_schema(
                serde_json::json!({ "type": "object", "properties": { "a": { "type": 5 } } }),
            )
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(err.to_string().contains("input schema is invalid"), "{err}");
    }

    #[test]
    fn remote_refs_are_never_fetched() {
        let err = define_tool("t", "d")
            .input_schema(serde_json::json!({
                "type": "object",
                "properties": { "a": { "$ref": "http://127.0.0.1:9/schema.json" } }
            }))
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(
            matches!(err, DefinitionError::InvalidSchema { .. }),
            "{err}"
        );
    }

    #[test]
    fn empty_description_is_refused() {
        let err = define_tool("t", "  ")
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(matches!(err, DefinitionError::EmptyDescription { .. }));
    }
}
