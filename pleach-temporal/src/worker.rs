//! A worker process: polls a task queue for conversations, runs their workflows, and runs their
//! model steps and calls on its runtime.

use std::future::Future;
use std::time::Duration;

use pleach_core::durable::Worker;
use temporalio_sdk::runtime::RuntimeOptions;
use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::{Runtime, WorkerOptions};

use crate::activities::PleachActivities;
use crate::{ConversationWorkflow, DurableError, defaults};

/// How a worker serves: the task queue it polls, how much it runs at once, how long its
/// conversations wait for it after it died. [`serve`] takes it.
///
/// ```
/// use std::time::Duration;
/// let options = pleach_temporal::ServeOptions::default()
///     .task_queue("billing")
///     .max_calls(16)
///     .sticky_queue_timeout(Duration::from_secs(5));
/// assert_eq!(options.task_queue, "billing");
/// assert_eq!(options.max_calls, 16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The task queue to poll.
    pub task_queue: String,
    /// Most model steps and calls run at once.
    pub max_calls: usize,
    /// How long a conversation's next workflow task waits for this worker on its own queue before
    /// any worker may take it: after a worker died, its conversations stall this long (beside
    /// the heartbeat timeout of a call it ran).
    pub sticky_queue_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            task_queue: defaults::TASK_QUEUE.to_owned(),
            max_calls: defaults::MAX_CALLS,
            sticky_queue_timeout: defaults::STICKY_QUEUE_TIMEOUT,
        }
    }
}

impl ServeOptions {
    /// Sets the task queue to poll (default [`defaults::TASK_QUEUE`], `pleach`).
    ///
    /// ```
    /// let options = pleach_temporal::ServeOptions::default().task_queue("billing");
    /// assert_eq!(options.task_queue, "billing");
    /// ```
    #[must_use]
    pub fn task_queue(mut self, queue: impl Into<String>) -> Self {
        self.task_queue = queue.into();
        self
    }

    /// Sets how many model steps and calls run at once (at least 1; default
    /// [`defaults::MAX_CALLS`], 64).
    ///
    /// ```
    /// let options = pleach_temporal::ServeOptions::default().max_calls(0);
    /// assert_eq!(options.max_calls, 1);
    /// ```
    #[must_use]
    pub fn max_calls(mut self, max: usize) -> Self {
        self.max_calls = max.max(1);
        self
    }

    /// Sets how long a conversation's next workflow task waits for this worker before any
    /// worker may take it (at least a second; default [`defaults::STICKY_QUEUE_TIMEOUT`], 2 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = pleach_temporal::ServeOptions::default().sticky_queue_timeout(Duration::from_secs(5));
    /// assert_eq!(options.sticky_queue_timeout, Duration::from_secs(5));
    /// ```
    #[must_use]
    pub fn sticky_queue_timeout(mut self, timeout: Duration) -> Self {
        self.sticky_queue_timeout = timeout.max(Duration::from_secs(1));
        self
    }
}

/// Runs a worker for durable conversations against the Temporal service at `target` until
/// `shutdown` resolves (then it stops polling and lets what runs finish): the conversation
/// workflow, and model steps and calls on `worker`'s runtime, as `options` say.
///
/// While it runs it checks the service every [`defaults::CONNECTION_CHECK`] and says once when
/// it lost it (a `warn` event, target `pleach_temporal::connection`: the service's address and
/// why) and once when it is back (`info`); the SDK goes on retrying in between.
///
/// Must run on the calling task (the SDK's worker is not `Send`): join it with what else the
/// process does.
///
/// ```no_run
/// # async fn run() -> Result<(), pleach_temporal::DurableError> {
/// let runtime = pleach_core::Runtime::builder().build().unwrap();
/// let worker = pleach_core::durable::Worker::new(runtime);
/// let options = pleach_temporal::ServeOptions::default();
/// pleach_temporal::serve("127.0.0.1:7233", worker, options, tokio::signal::ctrl_c()).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// The service cannot be reached, or the worker failed.
pub async fn serve(
    target: &str,
    worker: Worker,
    options: ServeOptions,
    shutdown: impl Future,
) -> Result<(), DurableError> {
    let client = crate::connection::connect(target).await?;
    let runtime = Runtime::from_current_tokio(RuntimeOptions::default()).map_err(|error| {
        DurableError::Worker(format!("cannot start the worker's runtime: {error}"))
    })?;
    let tuner = TunerHolder::builder()
        .workflow_task_slot_supplier(FixedSizeSlotSupplier::new(100))
        .activity_task_slot_supplier(FixedSizeSlotSupplier::new(options.max_calls.max(1)))
        .local_activity_task_slot_supplier(FixedSizeSlotSupplier::new(10))
        .nexus_task_slot_supplier(FixedSizeSlotSupplier::new(1))
        .build();
    let sdk_options = WorkerOptions::new(options.task_queue.clone())
        .register_workflow::<ConversationWorkflow>()
        .map_err(|error| DurableError::Worker(format!("cannot register the workflow: {error}")))?
        .register_activities(PleachActivities { worker })
        .tuner(tuner)
        .sticky_queue_schedule_to_start_timeout(options.sticky_queue_timeout)
        .build();
    let watched = client.clone();
    let mut sdk_worker = temporalio_sdk::Worker::new(&runtime, client, sdk_options)
        .map_err(|error| DurableError::Worker(format!("cannot start the worker: {error}")))?;
    let stop = sdk_worker.shutdown_handle();
    let run = sdk_worker.run();
    tokio::pin!(run);
    let serving = async {
        tokio::select! {
            ran = &mut run => ran,
            _ = shutdown => {
                stop();
                run.await
            }
        }
    };
    let ran = tokio::select! {
        ran = serving => ran,
        never = crate::connection::watch(&watched, target) => match never {},
    };
    ran.map_err(|error| DurableError::Worker(format!("the worker failed: {error}")))
}
