//! A worker process: polls a task queue for conversations, runs their workflows, and runs their
//! model steps and calls on its runtime.

use std::future::Future;

use pleach_core::durable::Worker;
use temporalio_sdk::runtime::RuntimeOptions;
use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::{Runtime, WorkerOptions};

use crate::activities::PleachActivities;
use crate::{ConversationWorkflow, DurableError};

/// Runs a worker for durable conversations against the Temporal service at `target` until
/// `shutdown` resolves (then it stops polling and lets what runs finish): the conversation
/// workflow, and model steps and calls on `worker`'s runtime. At most `max_calls` activities run
/// at once.
///
/// Must run on the calling task (the SDK's worker is not `Send`): join it with what else the
/// process does.
///
/// ```no_run
/// # async fn run() -> Result<(), pleach_temporal::DurableError> {
/// let runtime = pleach_core::Runtime::builder().build().unwrap();
/// let worker = pleach_core::durable::Worker::new(runtime);
/// pleach_temporal::serve("127.0.0.1:7233", "pleach", worker, 64, tokio::signal::ctrl_c()).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// The service cannot be reached, or the worker failed.
pub async fn serve(
    target: &str,
    task_queue: &str,
    worker: Worker,
    max_calls: usize,
    shutdown: impl Future,
) -> Result<(), DurableError> {
    let client = crate::connection::connect(target).await?;
    let runtime = Runtime::from_current_tokio(RuntimeOptions::default()).map_err(|error| {
        DurableError::Worker(format!("cannot start the worker's runtime: {error}"))
    })?;
    let tuner = TunerHolder::builder()
        .workflow_task_slot_supplier(FixedSizeSlotSupplier::new(100))
        .activity_task_slot_supplier(FixedSizeSlotSupplier::new(max_calls.max(1)))
        .local_activity_task_slot_supplier(FixedSizeSlotSupplier::new(10))
        .nexus_task_slot_supplier(FixedSizeSlotSupplier::new(1))
        .build();
    let options = WorkerOptions::new(task_queue.to_owned())
        .register_workflow::<ConversationWorkflow>()
        .map_err(|error| DurableError::Worker(format!("cannot register the workflow: {error}")))?
        .register_activities(PleachActivities { worker })
        .tuner(tuner)
        .build();
    let mut sdk_worker = temporalio_sdk::Worker::new(&runtime, client, options)
        .map_err(|error| DurableError::Worker(format!("cannot start the worker: {error}")))?;
    let stop = sdk_worker.shutdown_handle();
    let stopping = async move {
        shutdown.await;
        stop();
    };
    let (ran, ()) = tokio::join!(sdk_worker.run(), stopping);
    ran.map_err(|error| DurableError::Worker(format!("the worker failed: {error}")))
}
