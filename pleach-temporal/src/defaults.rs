//! The defaults of pleach-temporal, in one place: each is what its setting is when a host does
//! not set it, and the setting's doc names it.
//!
//! ```
//! assert_eq!(pleach_temporal::defaults::TASK_QUEUE, "pleach");
//! ```

use std::time::Duration;

/// The task queue for workers to poll and conversations to start on when a host has no reason to
/// name another: what to pass as [`serve`]'s and [`DurableClient::start`]'s `task_queue`, and
/// what `pleach worker` and `pleach chat --temporal` use unless `--task-queue` says otherwise.
///
/// [`serve`]: crate::serve
/// [`DurableClient::start`]: crate::DurableClient::start
///
/// ```
/// assert_eq!(pleach_temporal::defaults::TASK_QUEUE, "pleach");
/// ```
pub const TASK_QUEUE: &str = "pleach";

/// How long a worker may go silent before its activity counts as lost: the default of
/// [`ConversationInput::heartbeat_timeout`](crate::ConversationInput::heartbeat_timeout()),
/// 10 seconds.
///
/// ```
/// assert_eq!(pleach_temporal::defaults::HEARTBEAT_TIMEOUT.as_secs(), 10);
/// ```
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);
