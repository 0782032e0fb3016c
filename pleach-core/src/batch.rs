//! Batching: how the calls of one model step share the runtime. Each tool has a
//! [`BatchingStrategy`] — inferred from its definition ([`infer_batching_strategy`]) unless a
//! plugin's [`BatchingHint`] says otherwise — and [`ToolBatchExecutor`] runs a step's calls under
//! those rules with a global cap. `docs/batching.md` is the contract.
//!
//! ```
//! use pleach_core::{BatchingStrategy, ToolError, define_tool, infer_batching_strategy};
//! use serde_json::json;
//!
//! let write_file = define_tool("write_file", "Writes a file.")
//!     .input_schema(json!({ "type": "object", "properties": { "path": { "type": "string" } } }))
//!     .execute_json(|_, _| async { Ok::<_, ToolError>(json!(null)) })
//!     .unwrap();
//! // A write with a resource key: calls on one path run in order, other paths beside them.
//! assert_eq!(infer_batching_strategy(&write_file), BatchingStrategy::Chunked { key: "path".into() });
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore as TokioSemaphore;

use crate::registry;
use crate::tool::ToolDefinition;

/// How calls of one tool may run beside the other calls of their step.
///
/// ```
/// use pleach_core::BatchingStrategy;
/// let hint: BatchingStrategy = serde_json::from_str(r#"{"strategy":"chunked","key":"path"}"#).unwrap();
/// assert_eq!(hint, BatchingStrategy::Chunked { key: "path".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "lowercase")]
#[non_exhaustive]
pub enum BatchingStrategy {
    /// Concurrency 1: the call starts after every earlier call of the step has finished, and later
    /// calls wait for it. For writes, side effects and dependency chains. The safe default.
    Serial,
    /// Runs beside other calls, up to [`BatchingConfig::max_concurrency`] (and a hint's per-tool
    /// `max_concurrency`). For independent reads.
    Parallel,
    /// Grouped by the value at `key` in the arguments (a top-level field name, or a JSON pointer
    /// starting with `/`): serial in call order within a group, parallel across groups. For
    /// per-resource serialization (per file, per user).
    Chunked {
        /// The field or JSON pointer whose value names the group.
        key: String,
    },
}

/// Runtime-wide batching settings.
///
/// ```
/// assert_eq!(pleach_core::BatchingConfig::default().max_concurrency, 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchingConfig {
    /// How many calls of one step run at once, at most.
    pub max_concurrency: usize,
}

impl Default for BatchingConfig {
    fn default() -> Self {
        BatchingConfig {
            max_concurrency: 16,
        }
    }
}

impl BatchingConfig {
    /// A config with the given global cap (at least 1).
    ///
    /// ```
    /// use pleach_core::BatchingConfig;
    /// assert_eq!(BatchingConfig::new(64).max_concurrency, 64);
    /// assert_eq!(BatchingConfig::new(0).max_concurrency, 1);
    /// ```
    pub fn new(max_concurrency: usize) -> Self {
        BatchingConfig {
            max_concurrency: max_concurrency.max(1),
        }
    }
}

/// A plugin's override of a tool's inferred strategy: the spec's
/// `{ toolName, strategy, maxConcurrency }` (plus `key` for `chunked`).
///
/// ```
/// use pleach_core::{BatchingHint, BatchingStrategy};
/// let hint: BatchingHint = serde_json::from_str(
///     r#"{ "toolName": "fetch_document", "strategy": "parallel", "maxConcurrency": 5 }"#,
/// ).unwrap();
/// assert_eq!(hint, BatchingHint::new("fetch_document", BatchingStrategy::Parallel).with_max_concurrency(5));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchingHint {
    /// The tool the hint is for.
    pub tool_name: String,
    /// Its strategy.
    #[serde(flatten)]
    pub strategy: BatchingStrategy,
    /// At most this many calls of the tool at once (parallel tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<usize>,
}

impl BatchingHint {
    /// A hint without a per-tool cap.
    ///
    /// ```
    /// use pleach_core::{BatchingHint, BatchingStrategy};
    /// let hint = BatchingHint::new("write_file", BatchingStrategy::Serial);
    /// assert_eq!(hint.max_concurrency, None);
    /// ```
    pub fn new(tool_name: impl Into<String>, strategy: BatchingStrategy) -> Self {
        BatchingHint {
            tool_name: tool_name.into(),
            strategy,
            max_concurrency: None,
        }
    }

    /// Caps the tool's concurrent calls.
    ///
    /// ```
    /// use pleach_core::{BatchingHint, BatchingStrategy};
    /// let hint = BatchingHint::new("fetch_page", BatchingStrategy::Parallel).with_max_concurrency(4);
    /// assert_eq!(hint.max_concurrency, Some(4));
    /// ```
    #[must_use]
    pub fn with_max_concurrency(mut self, max_concurrency: usize) -> Self {
        self.max_concurrency = Some(max_concurrency.max(1));
        self
    }
}

/// Name prefixes of tools that only read: their calls can run side by side.
const READ_VERBS: &[&str] = &[
    "get",
    "list",
    "search",
    "find",
    "read",
    "fetch",
    "lookup",
    "query",
    "describe",
    "count",
    "show",
    "view",
    "check",
    "validate",
    "calculate",
    "compute",
    "convert",
    "math",
    "parse",
    "format",
    "estimate",
    "summarize",
    "inspect",
    "stat",
    "exists",
    "resolve",
];

/// Argument names that identify the resource a call acts on.
const RESOURCE_KEYS: &[&str] = &[
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "user_id",
    "account_id",
    "resource_id",
    "document_id",
    "key",
    "url",
    "id",
];

/// The strategy a definition implies, by these rules (in order; `docs/batching.md`):
///
/// 1. a name that starts with a read-only verb (`get`, `list`, `search`, `read`, `fetch`,
///    `lookup`, …, as a whole word: `get_user`, `search-corpus`, `math`) → [`Parallel`];
/// 2. an input schema with a resource key among its properties (`path`, `file`, `user_id`,
///    `account_id`, `key`, `url`, `id`, …) → [`Chunked`] on the first one;
/// 3. otherwise → [`Serial`], the safe default.
///
/// [`Parallel`]: BatchingStrategy::Parallel
/// [`Chunked`]: BatchingStrategy::Chunked
/// [`Serial`]: BatchingStrategy::Serial
///
/// ```
/// use pleach_core::{define_tool, infer_batching_strategy, BatchingStrategy, ToolError};
/// use serde_json::json;
///
/// let tool = |name: &str, schema| define_tool(name, "A tool.")
///     .input_schema(schema)
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// let object = json!({ "type": "object", "properties": { "path": { "type": "string" } } });
/// assert_eq!(infer_batching_strategy(&tool("read_file", object.clone())), BatchingStrategy::Parallel);
/// assert_eq!(
///     infer_batching_strategy(&tool("write_file", object)),
///     BatchingStrategy::Chunked { key: "path".into() }
/// );
/// assert_eq!(infer_batching_strategy(&tool("send_email", json!({ "type": "object" }))), BatchingStrategy::Serial);
/// ```
pub fn infer_batching_strategy(definition: &ToolDefinition) -> BatchingStrategy {
    let name = definition.name().to_ascii_lowercase();
    let first_word = name.split(['_', '-']).next().unwrap_or_default();
    if READ_VERBS.contains(&first_word) {
        return BatchingStrategy::Parallel;
    }
    let properties = definition
        .input_schema()
        .get("properties")
        .and_then(Value::as_object);
    if let Some(properties) = properties {
        for key in RESOURCE_KEYS {
            if properties.contains_key(*key) {
                return BatchingStrategy::Chunked {
                    key: (*key).to_owned(),
                };
            }
        }
    }
    BatchingStrategy::Serial
}

/// The strategy of the tool named `name` in the active registry (see
/// [`set_orchestrator_registry`](crate::set_orchestrator_registry)), by inference. A runtime also
/// applies its plugins' hints: [`Runtime::batching_strategy`](crate::Runtime::batching_strategy).
///
/// ```
/// use pleach_core::{get_batching_strategy_for_tool, tool, BatchingStrategy};
///
/// /// Looks a word up.
/// #[tool]
/// async fn lookup_word(word: String) -> String { word }
///
/// assert_eq!(get_batching_strategy_for_tool("lookup_word"), Some(BatchingStrategy::Parallel));
/// assert_eq!(get_batching_strategy_for_tool("no_such_tool"), None);
/// ```
pub fn get_batching_strategy_for_tool(name: &str) -> Option<BatchingStrategy> {
    registry::active_registry()
        .get(name)
        .map(|tool| infer_batching_strategy(tool.definition()))
}

/// A concurrency limit for code inside a tool: the spec's `Semaphore`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::Semaphore;
/// let limit = Semaphore::new(4);
/// let answer = limit.run(async { 42 }).await;
/// assert_eq!(answer, 42);
/// assert_eq!(limit.available(), 4);
/// # }
/// ```
///
/// The spec's module-level `const limit = new Semaphore(4)`, shared by every call of a tool, is a
/// `static` built on first use:
///
/// ```
/// use std::sync::LazyLock;
/// use pleach_core::{tool, Semaphore};
///
/// static UPSTREAM: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(4));
///
/// /// Fetches a page from the upstream API, at most four at once across all calls.
/// #[tool]
/// async fn fetch_page(page: u32) -> u32 {
///     UPSTREAM.run(async { page }).await
/// }
/// # assert_eq!(UPSTREAM.available(), 4);
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    inner: Arc<TokioSemaphore>,
}

impl Semaphore {
    /// A limit of `permits` concurrent runs (at least 1).
    ///
    /// ```
    /// let limit = pleach_core::Semaphore::new(2);
    /// assert_eq!(limit.available(), 2);
    /// ```
    pub fn new(permits: usize) -> Self {
        Semaphore {
            inner: Arc::new(TokioSemaphore::new(permits.max(1))),
        }
    }

    /// Runs `future` once a permit is free, holding it until the future completes.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::LazyLock;
    /// use pleach_core::Semaphore;
    ///
    /// // At most 3 requests to the upstream at once, across every call of the tool.
    /// static UPSTREAM: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(3));
    ///
    /// let body = UPSTREAM.run(async { "response" }).await;
    /// assert_eq!(body, "response");
    /// assert_eq!(UPSTREAM.available(), 3); // the permit is back
    /// # }
    /// ```
    pub async fn run<F: Future>(&self, future: F) -> F::Output {
        // The semaphore is never closed, so acquiring cannot fail; if it ever did, running
        // without the limit beats failing the tool.
        let _permit = self.inner.acquire().await.ok();
        future.await
    }

    /// How many permits are free now.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limit = pleach_core::Semaphore::new(1);
    /// limit.run(async { assert_eq!(limit.available(), 0) }).await;
    /// assert_eq!(limit.available(), 1);
    /// # }
    /// ```
    pub fn available(&self) -> usize {
        self.inner.available_permits()
    }
}

/// The runtime-wide cap on running calls (backpressure across sessions). Taking and returning a
/// slot is one atomic operation each when nobody waits, which a general-purpose semaphore cannot
/// offer (returning a permit takes its waiters' lock). Waiters are woken in arrival order by a
/// [`tokio::sync::Notify`]; a call arriving as a slot frees up may take it first, which only
/// changes who runs, never how many.
#[derive(Debug)]
pub(crate) struct Slots {
    used: std::sync::atomic::AtomicUsize,
    waiting: std::sync::atomic::AtomicUsize,
    max: usize,
    freed: tokio::sync::Notify,
}

/// One taken slot, returned on drop.
#[derive(Debug)]
pub(crate) struct Slot<'a>(&'a Slots);

impl Slots {
    pub(crate) fn new(max: usize) -> Self {
        Slots {
            used: std::sync::atomic::AtomicUsize::new(0),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            max: max.max(1),
            freed: tokio::sync::Notify::new(),
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A slot if one is free now.
    pub(crate) fn try_take(&self) -> Option<Slot<'_>> {
        use std::sync::atomic::Ordering::{Relaxed, SeqCst};
        let mut used = self.used.load(Relaxed);
        loop {
            if used >= self.max {
                return None;
            }
            match self
                .used
                .compare_exchange_weak(used, used + 1, SeqCst, Relaxed)
            {
                Ok(_) => return Some(Slot(self)),
                Err(now) => used = now,
            }
        }
    }

    /// A slot, once one is free.
    pub(crate) async fn take(&self) -> Slot<'_> {
        use std::sync::atomic::Ordering::SeqCst;
        loop {
            if let Some(slot) = self.try_take() {
                return slot;
            }
            // Announce the wait before the last check: a slot returned after that check sees
            // `waiting` and notifies, and `Notify` keeps the permit if we are not parked yet.
            self.waiting.fetch_add(1, SeqCst);
            let freed = self.freed.notified();
            let slot = self.try_take();
            if slot.is_none() {
                freed.await;
            }
            self.waiting.fetch_sub(1, SeqCst);
            if let Some(slot) = slot {
                return slot;
            }
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.0.used.fetch_sub(1, SeqCst);
        if self.0.waiting.load(SeqCst) > 0 {
            self.0.freed.notify_one();
        }
    }
}

/// Where one call stands in its step, as the executor sees it.
///
/// ```
/// use pleach_core::{BatchingStrategy, Lane};
/// let lane = Lane::for_call("read_file", &BatchingStrategy::Chunked { key: "path".into() }, None, r#"{"path":"a.txt"}"#);
/// assert!(matches!(lane, Lane::Chunked { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lane {
    /// Runs alone: after every earlier item, before every later one.
    Serial,
    /// Runs beside others; `limit` names a per-tool cap group and its size.
    Parallel {
        /// `(group, cap)`: items of one group run at most `cap` at once.
        limit: Option<(String, usize)>,
    },
    /// Serial within `group`, parallel across groups.
    Chunked {
        /// The group (tool and key value).
        group: String,
    },
}

impl Lane {
    /// The lane of a call of a tool with `strategy` (and a hint's cap), given its arguments text.
    /// A chunked call whose key is missing joins the tool's group of keyless calls.
    ///
    /// ```
    /// use pleach_core::{BatchingStrategy, Lane};
    ///
    /// let chunked = BatchingStrategy::Chunked { key: "path".into() };
    /// let a = Lane::for_call("read_file", &chunked, None, r#"{"path":"a.txt"}"#);
    /// let b = Lane::for_call("read_file", &chunked, None, r#"{"path":"b.txt"}"#);
    /// assert_ne!(a, b); // different keys: different groups, may overlap
    /// assert_eq!(
    ///     Lane::for_call("fetch", &BatchingStrategy::Parallel, Some(4), "{}"),
    ///     Lane::Parallel { limit: Some(("fetch".into(), 4)) },
    /// );
    /// ```
    pub fn for_call(
        tool_name: &str,
        strategy: &BatchingStrategy,
        max_concurrency: Option<usize>,
        arguments: &str,
    ) -> Lane {
        match strategy {
            BatchingStrategy::Serial => Lane::Serial,
            BatchingStrategy::Parallel => Lane::Parallel {
                limit: max_concurrency.map(|cap| (tool_name.to_owned(), cap)),
            },
            BatchingStrategy::Chunked { key } => {
                let value = serde_json::from_str::<Value>(arguments)
                    .ok()
                    .and_then(|args| {
                        if key.starts_with('/') {
                            args.pointer(key).cloned()
                        } else {
                            args.get(key).cloned()
                        }
                    });
                // Grouped by the value, not its spelling: `7`, `7.0` and `70e-1` are one key.
                let group = match value {
                    Some(value) => {
                        let text = crate::schema::integral_floats_as_integers(&value)
                            .unwrap_or_else(|| value.to_string());
                        format!("{tool_name}\u{0}{text}")
                    }
                    None => format!("{tool_name}\u{0}"),
                };
                Lane::Chunked { group }
            }
        }
    }
}

/// Runs one step's items under their lanes with a global cap, and returns their outputs in item
/// order whatever order they finish in. Sessions use it for every turn; it is public for hosts
/// that schedule work of their own the same way.
///
/// Rules: a `Serial` item starts after every earlier item has finished and every later item waits
/// for it; a `Chunked` item starts after the previous item of its group; at most
/// `max_concurrency` items run at once, and at most `cap` of a `Parallel` limit group.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{BatchingConfig, Lane, ToolBatchExecutor};
///
/// let executor = ToolBatchExecutor::new(BatchingConfig::new(4));
/// let lanes = vec![Lane::Parallel { limit: None }, Lane::Serial, Lane::Parallel { limit: None }];
/// let out = executor.run(lanes, |index| async move { index * 10 }).await;
/// assert_eq!(out, [Some(0), Some(10), Some(20)]);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ToolBatchExecutor {
    config: BatchingConfig,
}

impl ToolBatchExecutor {
    /// An executor with `config`.
    ///
    /// ```
    /// use pleach_core::{BatchingConfig, ToolBatchExecutor};
    /// let executor = ToolBatchExecutor::new(BatchingConfig::new(8));
    /// assert_eq!(executor.config().max_concurrency, 8);
    /// ```
    pub fn new(config: BatchingConfig) -> Self {
        ToolBatchExecutor { config }
    }

    /// The executor's settings.
    ///
    /// ```
    /// use pleach_core::{BatchingConfig, ToolBatchExecutor};
    /// assert_eq!(ToolBatchExecutor::new(BatchingConfig::default()).config(), BatchingConfig::default());
    /// ```
    pub fn config(&self) -> BatchingConfig {
        self.config
    }

    /// Runs `run(index)` for every item, each when its lane allows, and returns the outputs in
    /// item order. A future that panics yields `None` in its place (and, like any finished item,
    /// releases the items waiting for it).
    ///
    /// The items run inside the calling task, polled together the way `buffer_unordered` polls
    /// its futures: no task per item. On a multi-thread runtime each started item is spawned as
    /// a task instead, so CPU-heavy items use every worker.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{BatchingConfig, Lane, ToolBatchExecutor};
    ///
    /// let executor = ToolBatchExecutor::new(BatchingConfig::new(2));
    /// let lanes = vec![Lane::Serial, Lane::Serial];
    /// let out = executor.run(lanes, |index| async move {
    ///     if index == 0 { panic!("boom") } else { "ok" }
    /// }).await;
    /// assert_eq!(out, [None, Some("ok")]); // a panic costs its own item only
    /// # }
    /// ```
    pub async fn run<T, F, Fut>(&self, lanes: Vec<Lane>, mut run: F) -> Vec<Option<T>>
    where
        T: Send + 'static,
        F: FnMut(usize) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        run_scheduled(
            &lanes,
            self.config,
            None,
            &mut (),
            |(), index| Step::Later(run(index)),
            |_| None,
            |()| {},
        )
        .await
    }
}

/// After this many items that finished as they started, the step's loop yields to other tasks.
const YIELD_EVERY: u32 = 128;

/// How an item started: already finished (its output), or a future to drive.
pub(crate) enum Step<T, Fut> {
    /// The item ran to its end as it started.
    Done(T),
    /// The item's future.
    Later(Fut),
}

/// Runs items under `lanes`: the loop behind [`ToolBatchExecutor::run`] and every session turn.
///
/// `start(index)` starts an item when its lane lets it: an item that finishes right there frees
/// its place at once, and no future is made for it (the runtime's cooperative budget still
/// applies, so a long run of such items yields to other tasks now and then). Once `stop` fires, nothing
/// more starts: `never(index)` gives the output of each item that had not started (at once), and
/// the running ones are awaited (they watch `stop` themselves). A future that panics leaves
/// `None`.
///
/// `start` and `pause` share `held`, what a run of starts keeps between them (a session's turn:
/// one runtime-wide slot for its calls that run in place, one after another). `pause(held)` runs
/// whenever the loop stops starting items: before it yields to other tasks (every
/// [`YIELD_EVERY`] items that finished at start) and before it waits for running ones.
pub(crate) async fn run_scheduled<T, H, F, Fut, N, P>(
    lanes: &[Lane],
    config: BatchingConfig,
    stop: Option<&tokio_util::sync::CancellationToken>,
    held: &mut H,
    mut start: F,
    mut never: N,
    mut pause: P,
) -> Vec<Option<T>>
where
    T: Send + 'static,
    F: FnMut(&mut H, usize) -> Step<T, Fut>,
    Fut: Future<Output = T> + Send + 'static,
    N: FnMut(usize) -> Option<T>,
    P: FnMut(&mut H),
{
    let mut schedule = Schedule::new(lanes, config);
    let mut outputs: Vec<Option<T>> = (0..lanes.len()).map(|_| None).collect();
    let mut running = Running::new();
    let mut stopped = false;
    let mut finished_at_start = 0_u32;
    // Made once: a wait on a token registers with it, and one per finished item would cost a
    // lock to register and another to leave.
    let mut stop_fired = std::pin::pin!(async {
        match stop {
            Some(stop) => stop.cancelled().await,
            None => std::future::pending().await,
        }
    });
    loop {
        if !stopped && stop.is_some_and(tokio_util::sync::CancellationToken::is_cancelled) {
            stopped = true;
            for index in schedule.unstarted() {
                outputs[index] = never(index);
            }
        }
        if !stopped {
            let mut noticed_stop = false;
            while let Some(index) = schedule.next() {
                match start(held, index) {
                    Step::Later(future) => running.push(index, future),
                    Step::Done(output) => {
                        outputs[index] = Some(output);
                        schedule.finish(index);
                        // Finished items never wait, so a long run of them gives other tasks
                        // (the events' reader, say) their turn now and then; and the step's token
                        // is looked at now and then, as it is not awaited here.
                        finished_at_start = finished_at_start.wrapping_add(1);
                        if finished_at_start.is_multiple_of(YIELD_EVERY) {
                            pause(held);
                            tokio::task::yield_now().await;
                        }
                        if finished_at_start.is_multiple_of(32)
                            && stop.is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
                        {
                            noticed_stop = true;
                            break;
                        }
                    }
                }
            }
            // Nothing more starts now: what the starts hold is let go before anything else of
            // the step runs (or waits).
            pause(held);
            if noticed_stop {
                // The top of the loop ends the items that will not start now.
                continue;
            }
        }
        let finished = if stopped {
            running.next().await
        } else {
            // Once it fires, the next round sees the token cancelled and never polls it again.
            tokio::select! {
                biased;
                finished = running.next() => finished,
                () = &mut stop_fired => continue,
            }
        };
        let Some((index, output)) = finished else {
            // Nothing running: either every item is done, or the step was stopped and the
            // unstarted ones have their outputs already.
            break;
        };
        schedule.finish(index);
        outputs[index] = output;
    }
    outputs
}

/// The started items of a step: polled in place (a current-thread runtime, where a task per item
/// buys nothing), or spawned (a multi-thread runtime, so they use every worker).
enum Running<T, Fut> {
    Inline(futures_util::stream::FuturesUnordered<Indexed<Fut>>),
    Spawned {
        tasks: tokio::task::JoinSet<T>,
        index_of: HashMap<tokio::task::Id, usize>,
    },
}

/// Whether the current runtime runs tasks on several threads (so a step spawns what it starts,
/// and CPU-heavy calls use every worker).
pub(crate) fn on_multi_thread_runtime() -> bool {
    tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
}

impl<T: Send + 'static, Fut: Future<Output = T> + Send + 'static> Running<T, Fut> {
    fn new() -> Self {
        if on_multi_thread_runtime() {
            Running::Spawned {
                tasks: tokio::task::JoinSet::new(),
                index_of: HashMap::new(),
            }
        } else {
            Running::Inline(futures_util::stream::FuturesUnordered::new())
        }
    }

    fn push(&mut self, index: usize, future: Fut) {
        match self {
            Running::Inline(running) => running.push(Indexed { index, future }),
            Running::Spawned { tasks, index_of } => {
                let id = tasks.spawn(future).id();
                index_of.insert(id, index);
            }
        }
    }

    /// The next item to finish and its output (`None` for a panic), or `None` when none runs.
    async fn next(&mut self) -> Option<(usize, Option<T>)> {
        use futures_util::StreamExt;
        match self {
            Running::Inline(running) => running.next().await,
            Running::Spawned { tasks, index_of } => loop {
                let joined = tasks.join_next_with_id().await?;
                let (id, output) = match joined {
                    Ok((id, output)) => (id, Some(output)),
                    Err(error) => (error.id(), None),
                };
                // Every spawned id was recorded; a missing one would be a bug, not a reason to
                // stop waiting for the others.
                if let Some(index) = index_of.remove(&id) {
                    return Some((index, output));
                }
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// An item's future with its index; a panic while polling it ends the item with `None`.
    struct Indexed<Fut> {
        index: usize,
        #[pin]
        future: Fut,
    }
}

impl<Fut: Future> Future for Indexed<Fut> {
    type Output = (usize, Option<Fut::Output>);

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let index = *this.index;
        let future = this.future;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.poll(cx))) {
            Ok(std::task::Poll::Ready(output)) => std::task::Poll::Ready((index, Some(output))),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(_) => std::task::Poll::Ready((index, None)),
        }
    }
}

/// Which items of a step may start, as items finish: plain bookkeeping, owned by the one task
/// that drives the step, so starting or finishing an item takes no lock and no wake-up. A few
/// bytes per item (a step can hold many thousands): counters are `u32`, and the dependency graph
/// is stored as one array of edges grouped by item.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// For each item, how many of the items it waits for have not finished.
    remaining: Vec<u32>,
    /// The items waiting for item `i` are `waiting_for[edges_at[i]..edges_at[i + 1]]`; both are
    /// empty when no item waits for another.
    edges_at: Vec<u32>,
    waiting_for: Vec<u32>,
    /// For each item, its per-tool limit group ([`NO_GROUP`] for none); empty when no item has
    /// one.
    group_of: Vec<u32>,
    /// For each limit group, its free places.
    group_room: Vec<usize>,
    /// For each limit group, its ready items waiting for a free place, in item order.
    group_waiting: Vec<VecDeque<u32>>,
    /// Items whose dependencies are done, smallest index first: those ready from the start in
    /// a queue (they come in index order, so taking one costs nothing), the ones made ready
    /// since in a heap.
    ready: Ready,
    /// Free places under the global cap.
    room: usize,
    started: Vec<bool>,
}

/// `group_of` for an item in no limit group.
const NO_GROUP: u32 = u32::MAX;

/// An item's index as the schedule stores it. A step cannot come near `u32::MAX` items: its
/// lanes alone would take 128 GiB.
fn item(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

impl Schedule {
    pub(crate) fn new(lanes: &[Lane], config: BatchingConfig) -> Self {
        let mut remaining = vec![0_u32; lanes.len()];
        // (item waited for, waiting item), in the order the waits are found.
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let mut group_of: Vec<u32> = Vec::new();
        let mut group_room = Vec::new();
        let mut groups: HashMap<&str, usize> = HashMap::new();
        let mut last_serial: Option<usize> = None;
        let mut last_in_chunk: HashMap<&str, usize> = HashMap::new();
        let mut ready = Ready::default();
        for (index, lane) in lanes.iter().enumerate() {
            let mut wait_for = |dependency: usize| {
                remaining[index] += 1;
                edges.push((item(dependency), item(index)));
            };
            match lane {
                Lane::Serial => {
                    // The previous serial item and everything since: together, every earlier
                    // item (the previous serial item itself waited for all before it).
                    for dependency in last_serial.unwrap_or(0)..index {
                        wait_for(dependency);
                    }
                    last_serial = Some(index);
                }
                Lane::Parallel { limit } => {
                    if let Some(serial) = last_serial {
                        wait_for(serial);
                    }
                    if let Some((name, cap)) = limit {
                        let next = group_room.len();
                        let id = *groups.entry(name.as_str()).or_insert(next);
                        if id == next {
                            group_room.push((*cap).max(1));
                        }
                        if group_of.is_empty() {
                            group_of = vec![NO_GROUP; lanes.len()];
                        }
                        group_of[index] = item(id);
                    }
                }
                Lane::Chunked { group: chunk } => {
                    if let Some(serial) = last_serial {
                        wait_for(serial);
                    }
                    if let Some(previous) = last_in_chunk.insert(chunk.as_str(), index) {
                        // Only a chunk member after the last serial item is still pending.
                        if last_serial.is_none_or(|serial| previous > serial) {
                            wait_for(previous);
                        }
                    }
                }
            }
            if remaining[index] == 0 {
                ready.initial.push_back(item(index));
            }
        }
        let (edges_at, waiting_for) = group_edges(lanes.len(), &edges);
        Schedule {
            remaining,
            edges_at,
            waiting_for,
            group_of,
            group_waiting: vec![VecDeque::new(); group_room.len()],
            group_room,
            ready,
            room: config.max_concurrency.max(1),
            started: vec![false; lanes.len()],
        }
    }

    /// Item `index`'s limit group, if any.
    fn group(&self, index: usize) -> Option<usize> {
        match self.group_of.get(index) {
            Some(&group) if group != NO_GROUP => Some(group as usize),
            _ => None,
        }
    }

    /// An item that may start now (its dependencies finished, a place free under the global cap
    /// and its group's), marked started; `None` when no item may start yet.
    pub(crate) fn next(&mut self) -> Option<usize> {
        while self.room > 0 {
            let index = self.ready.pop()? as usize;
            if let Some(group) = self.group(index) {
                if self.group_room[group] == 0 {
                    self.group_waiting[group].push_back(item(index));
                    continue;
                }
                self.group_room[group] -= 1;
            }
            self.room -= 1;
            self.started[index] = true;
            return Some(index);
        }
        None
    }

    /// Marks a started item finished: its places free up, and the items waiting only for it
    /// become ready. Called once per item.
    pub(crate) fn finish(&mut self, index: usize) {
        self.room += 1;
        if let Some(group) = self.group(index) {
            self.group_room[group] += 1;
            if let Some(waiting) = self.group_waiting[group].pop_front() {
                self.ready.later.push(Reverse(waiting));
            }
        }
        if self.edges_at.is_empty() {
            return;
        }
        let (from, to) = (
            self.edges_at[index] as usize,
            self.edges_at[index + 1] as usize,
        );
        for &dependent in &self.waiting_for[from..to] {
            let count = &mut self.remaining[dependent as usize];
            *count -= 1;
            if *count == 0 {
                self.ready.later.push(Reverse(dependent));
            }
        }
    }

    /// The items that never started, each once; afterwards nothing starts.
    pub(crate) fn unstarted(&mut self) -> Vec<usize> {
        self.ready = Ready::default();
        self.group_waiting.iter_mut().for_each(VecDeque::clear);
        let unstarted = (0..self.started.len())
            .filter(|&index| !self.started[index])
            .collect();
        self.started.iter_mut().for_each(|started| *started = true);
        unstarted
    }
}

/// The edges `(item waited for, waiting item)` grouped by the item waited for (a counting sort
/// that keeps their order): offsets per item (`items + 1` of them) and the waiting items. Both
/// empty without edges.
fn group_edges(items: usize, edges: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
    if edges.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut edges_at = vec![0_u32; items + 1];
    for &(dependency, _) in edges {
        edges_at[dependency as usize + 1] += 1;
    }
    for index in 0..items {
        edges_at[index + 1] += edges_at[index];
    }
    let mut next = edges_at.clone();
    let mut waiting_for = vec![0_u32; edges.len()];
    for &(dependency, dependent) in edges {
        let slot = &mut next[dependency as usize];
        waiting_for[*slot as usize] = dependent;
        *slot += 1;
    }
    (edges_at, waiting_for)
}

/// A schedule's ready items, smallest index first.
#[derive(Debug, Default)]
struct Ready {
    /// Ready from the start, in index order.
    initial: VecDeque<u32>,
    /// Made ready as other items finished.
    later: BinaryHeap<Reverse<u32>>,
}

impl Ready {
    fn pop(&mut self) -> Option<u32> {
        match (self.initial.front(), self.later.peek()) {
            (Some(&first), Some(&Reverse(next))) if next < first => {
                self.later.pop().map(|Reverse(index)| index)
            }
            (Some(_), _) => self.initial.pop_front(),
            (None, _) => self.later.pop().map(|Reverse(index)| index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_key_is_grouped_by_its_value_not_its_spelling() {
        let strategy = BatchingStrategy::Chunked {
            key: "user_id".into(),
        };
        let lane = |arguments: &str| Lane::for_call("bump", &strategy, None, arguments);
        let seven = lane(r#"{"user_id":7}"#);
        assert_eq!(lane(r#"{"user_id":7.0}"#), seven);
        assert_eq!(lane(r#"{"user_id":70e-1}"#), seven);
        assert_ne!(lane(r#"{"user_id":7.5}"#), seven);
        assert_ne!(lane(r#"{"user_id":"7"}"#), seven);
    }

    #[test]
    fn ready_items_come_out_smallest_index_first() {
        let mut ready = Ready::default();
        ready.initial.extend([0, 2, 7]);
        ready.later.extend([Reverse(5), Reverse(1), Reverse(9)]);
        let order: Vec<u32> = std::iter::from_fn(|| ready.pop()).collect();
        assert_eq!(order, [0, 1, 2, 5, 7, 9]);
    }

    #[test]
    fn edges_are_grouped_by_the_item_waited_for_in_order() {
        let (at, waiting) = group_edges(4, &[(0, 3), (2, 3), (0, 1), (1, 2)]);
        assert_eq!(at, [0, 2, 3, 4, 4]);
        assert_eq!(waiting, [3, 1, 2, 3]);
        assert_eq!(group_edges(3, &[]), (Vec::new(), Vec::new()));
    }

    #[test]
    fn serial_items_wait_for_everything_before_and_hold_everything_after() {
        let lanes = vec![
            Lane::Parallel { limit: None },
            Lane::Parallel { limit: None },
            Lane::Serial,
            Lane::Parallel { limit: None },
            Lane::Chunked { group: "k".into() },
        ];
        let mut schedule = Schedule::new(&lanes, BatchingConfig::new(8));
        let first: Vec<usize> = std::iter::from_fn(|| schedule.next()).collect();
        assert_eq!(first, [0, 1]);
        schedule.finish(1);
        assert_eq!(
            schedule.next(),
            None,
            "the serial item waits for item 0 too"
        );
        schedule.finish(0);
        assert_eq!(schedule.next(), Some(2));
        assert_eq!(schedule.next(), None);
        schedule.finish(2);
        let after: Vec<usize> = std::iter::from_fn(|| schedule.next()).collect();
        assert_eq!(after, [3, 4]);
    }

    #[test]
    fn a_schedule_releases_waiting_items_as_others_finish() {
        let lanes = vec![
            Lane::Parallel { limit: None },
            Lane::Parallel {
                limit: Some(("g".into(), 1)),
            },
            Lane::Parallel {
                limit: Some(("g".into(), 1)),
            },
            Lane::Serial,
            Lane::Chunked { group: "k".into() },
            Lane::Chunked { group: "k".into() },
        ];
        let mut schedule = Schedule::new(&lanes, BatchingConfig::new(8));
        let mut started = Vec::new();
        started.extend(std::iter::from_fn(|| schedule.next()));
        // Item 2 waits for its group's one place, the serial item 3 for all before it.
        assert_eq!(started, [0, 1]);
        schedule.finish(1);
        assert_eq!(schedule.next(), Some(2));
        assert_eq!(schedule.next(), None);
        schedule.finish(0);
        schedule.finish(2);
        assert_eq!(schedule.next(), Some(3));
        assert_eq!(schedule.next(), None);
        schedule.finish(3);
        // The chunk runs in order: 5 after 4.
        assert_eq!(schedule.next(), Some(4));
        assert_eq!(schedule.next(), None);
        schedule.finish(4);
        assert_eq!(schedule.next(), Some(5));
        assert!(schedule.unstarted().is_empty());
    }
}
