//! Batching: how the calls of one model step share the runtime. Each tool has a
//! [`BatchingStrategy`] — inferred from its definition ([`infer_batching_strategy`]) unless a
//! plugin's [`BatchingHint`] says otherwise — and [`ToolBatchExecutor`] runs a step's calls under
//! those rules with a global cap. `docs/batching.md` is the contract.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{Semaphore as TokioSemaphore, watch};

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
    pub fn new(tool_name: impl Into<String>, strategy: BatchingStrategy) -> Self {
        BatchingHint {
            tool_name: tool_name.into(),
            strategy,
            max_concurrency: None,
        }
    }

    /// Caps the tool's concurrent calls.
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
#[derive(Debug, Clone)]
pub struct Semaphore {
    inner: Arc<TokioSemaphore>,
}

impl Semaphore {
    /// A limit of `permits` concurrent runs (at least 1).
    pub fn new(permits: usize) -> Self {
        Semaphore {
            inner: Arc::new(TokioSemaphore::new(permits.max(1))),
        }
    }

    /// Runs `future` once a permit is free, holding it until the future completes.
    pub async fn run<F: Future>(&self, future: F) -> F::Output {
        // The semaphore is never closed, so acquiring cannot fail; if it ever did, running
        // without the limit beats failing the tool.
        let _permit = self.inner.acquire().await.ok();
        future.await
    }

    /// How many permits are free now.
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
                let group = match value {
                    Some(value) => format!("{tool_name}\u{0}{value}"),
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
    pub fn new(config: BatchingConfig) -> Self {
        ToolBatchExecutor { config }
    }

    /// The executor's settings.
    pub fn config(&self) -> BatchingConfig {
        self.config
    }

    /// Runs `run(index)` for every item as a Tokio task, each when its lane allows, and returns
    /// the outputs in item order. A task that panics yields `None` in its place (and, like any
    /// finished item, releases the items waiting for it).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn run<T, F, Fut>(&self, lanes: Vec<Lane>, run: F) -> Vec<Option<T>>
    where
        T: Send + 'static,
        F: Fn(usize) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        let gates = Arc::new(Gates::new(&lanes, self.config));
        let mut tasks = tokio::task::JoinSet::new();
        let mut index_of = HashMap::new();
        for index in 0..lanes.len() {
            let (gates, future) = (gates.clone(), run(index));
            let handle = tasks.spawn(async move {
                let _pass = gates.enter(index).await;
                future.await
            });
            index_of.insert(handle.id(), index);
        }
        let mut outputs: Vec<Option<T>> = (0..lanes.len()).map(|_| None).collect();
        while let Some(joined) = tasks.join_next_with_id().await {
            if let Ok((id, output)) = joined
                && let Some(&index) = index_of.get(&id)
            {
                outputs[index] = Some(output);
            }
        }
        outputs
    }
}

/// The dependencies and permits of a step's items.
#[derive(Debug)]
pub(crate) struct Gates {
    /// For each item, the items it must wait for.
    waits_for: Vec<Vec<usize>>,
    /// For each item, its per-tool limit, if any.
    limits: Vec<Option<Arc<TokioSemaphore>>>,
    global: Arc<TokioSemaphore>,
    /// Completion signals, only for items another item waits for.
    done: Vec<Option<watch::Sender<bool>>>,
}

/// Held while an item runs; its drop marks the item done (also when it fails, panics or is
/// cancelled), which releases the items waiting for it.
#[derive(Debug)]
pub(crate) struct Pass {
    gates: Arc<Gates>,
    index: usize,
    _global: Option<tokio::sync::OwnedSemaphorePermit>,
    _limit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for Pass {
    fn drop(&mut self) {
        if let Some(done) = &self.gates.done[self.index] {
            done.send_replace(true);
        }
    }
}

impl Gates {
    pub(crate) fn new(lanes: &[Lane], config: BatchingConfig) -> Self {
        let mut waits_for = Vec::with_capacity(lanes.len());
        let mut last_serial: Option<usize> = None;
        let mut last_in_group: HashMap<&str, usize> = HashMap::new();
        let mut limit_groups: HashMap<&str, Arc<TokioSemaphore>> = HashMap::new();
        let mut limits = Vec::with_capacity(lanes.len());
        for (index, lane) in lanes.iter().enumerate() {
            let mut deps = Vec::new();
            let mut limit = None;
            match lane {
                Lane::Serial => {
                    // The previous serial item and everything since: together, every earlier
                    // item (the previous serial item itself waited for all before it).
                    deps.extend(last_serial.map_or(0, |s| s)..index);
                    last_serial = Some(index);
                }
                Lane::Parallel { limit: cap } => {
                    deps.extend(last_serial);
                    if let Some((group, cap)) = cap {
                        limit = Some(
                            limit_groups
                                .entry(group.as_str())
                                .or_insert_with(|| Arc::new(TokioSemaphore::new((*cap).max(1))))
                                .clone(),
                        );
                    }
                }
                Lane::Chunked { group } => {
                    deps.extend(last_serial);
                    if let Some(previous) = last_in_group.insert(group.as_str(), index) {
                        // Only a group member after the last serial item is still pending.
                        if last_serial.is_none_or(|serial| previous > serial) {
                            deps.push(previous);
                        }
                    }
                }
            }
            waits_for.push(deps);
            limits.push(limit);
        }
        let mut awaited = vec![false; lanes.len()];
        for &dependency in waits_for.iter().flatten() {
            awaited[dependency] = true;
        }
        let done = awaited
            .into_iter()
            .map(|awaited| awaited.then(|| watch::channel(false).0))
            .collect();
        Gates {
            waits_for,
            limits,
            global: Arc::new(TokioSemaphore::new(config.max_concurrency.max(1))),
            done,
        }
    }

    /// Waits until item `index` may run: its dependencies done, then its permits.
    pub(crate) async fn enter(self: &Arc<Self>, index: usize) -> Pass {
        for &dependency in &self.waits_for[index] {
            if let Some(done) = &self.done[dependency] {
                // The sender lives as long as `self`, so this only ends when the item is done.
                let _ = done.subscribe().wait_for(|done| *done).await;
            }
        }
        let limit = match &self.limits[index] {
            Some(limit) => limit.clone().acquire_owned().await.ok(),
            None => None,
        };
        let global = self.global.clone().acquire_owned().await.ok();
        Pass {
            gates: self.clone(),
            index,
            _global: global,
            _limit: limit,
        }
    }
}
