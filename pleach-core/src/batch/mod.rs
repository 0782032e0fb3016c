//! Batching: how the calls of one model step share the runtime. Each tool has a
//! [`BatchingStrategy`] — inferred from its definition ([`infer_batching_strategy`]) unless a
//! plugin's [`BatchingHint`] says otherwise — and [`ToolBatchExecutor`] runs a step's calls under
//! those rules with a global cap. `docs/batching.md` is the contract.
//!
//! ```
//! use pleach_core::{BatchingStrategy, ToolError, infer_batching_strategy, ToolDefinition};
//! use serde_json::json;
//!
//! let write_file = ToolDefinition::builder("write_file", "Writes a file.")
//!     .input_schema(json!({ "type": "object", "properties": { "path": { "type": "string" } } }))
//!     .execute_json(|_, _| async { Ok::<_, ToolError>(json!(null)) })
//!     .unwrap();
//! // A write with a resource key: calls on one path run in order, other paths beside them.
//! assert_eq!(infer_batching_strategy(&write_file), BatchingStrategy::Chunked { key: "path".into() });
//! ```
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | strategies, hints, the global cap, lanes and [`ToolBatchExecutor`] |
//! | `inference.rs` | [`infer_batching_strategy`]: a strategy from a tool's name and schema |
//! | `semaphore.rs` | [`Semaphore`] for tools, and the runtime's slots |
//! | `scheduler.rs` | the loop that runs one step's items by their lanes |

mod inference;
mod scheduler;
mod semaphore;

pub use inference::infer_batching_strategy;
pub(crate) use inference::names_a_read;
pub(crate) use scheduler::{Schedule, Step, on_multi_thread_runtime, run_scheduled};
pub use semaphore::Semaphore;
pub(crate) use semaphore::{Slot, Slots};

use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// How many calls of one step run at once, at most (default
    /// [`defaults::MAX_CONCURRENCY`](crate::defaults::MAX_CONCURRENCY), 16).
    pub max_concurrency: usize,
}

impl Default for BatchingConfig {
    fn default() -> Self {
        BatchingConfig {
            max_concurrency: crate::defaults::MAX_CONCURRENCY,
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

/// A plugin's override of a tool's inferred strategy: the TypeScript spec's
/// `{ toolName, strategy, maxConcurrency }` (plus `key` for `chunked`).
///
/// ```
/// use pleach_core::{BatchingHint, BatchingStrategy};
/// let hint: BatchingHint = serde_json::from_str(
///     r#"{ "toolName": "fetch_document", "strategy": "parallel", "maxConcurrency": 5 }"#,
/// ).unwrap();
/// assert_eq!(hint, BatchingHint::new("fetch_document", BatchingStrategy::Parallel).max_concurrency(5));
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

    /// Caps the tool's concurrent calls (at least 1; default: no cap of its own, only the
    /// runtime's [`max_concurrency`](crate::RuntimeBuilder::max_concurrency)).
    ///
    /// ```
    /// use pleach_core::{BatchingHint, BatchingStrategy};
    /// let hint = BatchingHint::new("fetch_page", BatchingStrategy::Parallel).max_concurrency(4);
    /// assert_eq!(hint.max_concurrency, Some(4));
    /// ```
    #[must_use]
    pub fn max_concurrency(mut self, max_concurrency: usize) -> Self {
        self.max_concurrency = Some(max_concurrency.max(1));
        self
    }
}

/// Where one call stands in its step, as the executor sees it.
///
/// ```
/// use pleach_core::{BatchingStrategy, Lane};
/// let lane = Lane::for_call("read_file", &BatchingStrategy::Chunked { key: "path".into() }, None, r#"{"path":"a.txt"}"#);
/// assert!(matches!(lane, Lane::Chunked { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
}
