//! The defaults of pleach-temporal, in one place: each is what its setting is when a host does
//! not set it, and the setting's doc names it.
//!
//! ```
//! assert_eq!(pleach_temporal::defaults::TASK_QUEUE, "pleach");
//! ```

use std::time::Duration;

/// The task queue for workers to poll and conversations to start on when a host has no reason to
/// name another: the default of [`ServeOptions::task_queue`](crate::ServeOptions::task_queue()),
/// what to pass as [`DurableClient::start`]'s `task_queue`, and what `pleach worker` and `pleach
/// chat --temporal` use unless `--task-queue` says otherwise.
///
/// [`DurableClient::start`]: crate::DurableClient::start
///
/// ```
/// assert_eq!(pleach_temporal::defaults::TASK_QUEUE, "pleach");
/// ```
pub const TASK_QUEUE: &str = "pleach";

/// How long a worker may go silent before its activity counts as lost: the default of
/// [`ConversationInput::heartbeat_timeout`](crate::ConversationInput::heartbeat_timeout()),
/// 5 seconds. A worker that died mid-call is noticed this long after its last heartbeat; a
/// worker heartbeats every third of it while it runs a step or a call.
///
/// ```
/// assert_eq!(pleach_temporal::defaults::HEARTBEAT_TIMEOUT.as_secs(), 5);
/// ```
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a worker's next workflow task waits for it on its own (sticky) queue before any
/// worker may take it: the default of
/// [`ServeOptions::sticky_queue_timeout`](crate::ServeOptions::sticky_queue_timeout()), 2
/// seconds. A worker that died holds its conversations this long (Temporal's own default is
/// 10 s); a live worker that misses it replays the conversation's history instead of reading it
/// from its cache.
///
/// ```
/// assert_eq!(pleach_temporal::defaults::STICKY_QUEUE_TIMEOUT.as_secs(), 2);
/// ```
pub const STICKY_QUEUE_TIMEOUT: Duration = Duration::from_secs(2);

/// How many model steps and calls a worker runs at once: the default of
/// [`ServeOptions::max_calls`](crate::ServeOptions::max_calls()), 64.
///
/// ```
/// assert_eq!(pleach_temporal::defaults::MAX_CALLS, 64);
/// ```
pub const MAX_CALLS: usize = 64;

/// How often a worker checks that the Temporal service answers, to say once when it lost it and
/// once when it is back: 1 second.
///
/// ```
/// assert_eq!(pleach_temporal::defaults::CONNECTION_CHECK.as_secs(), 1);
/// ```
pub const CONNECTION_CHECK: Duration = Duration::from_secs(1);
