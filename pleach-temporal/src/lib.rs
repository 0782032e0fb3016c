//! # pleach-temporal
//!
//! Durable pleach conversations on [Temporal](https://temporal.io): one workflow per
//! conversation runs the agent loop ([`pleach_core::durable::run`]); each model request and each
//! tool call is an activity a worker runs through the ordinary pipeline (validation, tiers,
//! limits, events). A conversation outlives the processes that run it:
//!
//! - a call that completed is in the workflow's history and never runs again;
//! - a call whose worker died mid-run runs again only if its tool is idempotent
//!   ([`RuntimeBuilder::idempotent`](pleach_core::RuntimeBuilder::idempotent)), else it ends
//!   with 1018 (`OutcomeUnknown`) and the model decides;
//! - an approval interrupt waits in the workflow for days with no worker held, for a decision
//!   sent with [`DurableClient::decide`] (`pleach approve`), optionally until an expiry (1016).
//!
//! `docs/durable.md` is the contract. The engine-neutral seam is [`pleach_core::durable::Engine`];
//! this crate is its Temporal adapter.
//!
//! | file | owns |
//! | --- | --- |
//! | `input.rs` | [`ConversationInput`] and the memo a client reads ([`Waiting`]) |
//! | `workflow.rs` | [`ConversationWorkflow`]: state, the decision signal, the events query |
//! | `workflow/engine.rs` | the [`Engine`](pleach_core::durable::Engine) over the workflow's context |
//! | `activities.rs` | the model step and call activities, heartbeating |
//! | `worker.rs` | [`serve`] and its [`ServeOptions`]: a worker process |
//! | `client.rs` | [`DurableClient`]: start, events, status, decide, outcome |
//! | `history.rs` | what a client reads from a conversation's history: decisions not yet applied, expiries fired |
//! | `connection.rs` | reaching the service |
//! | `defaults.rs` | [`defaults`]: the task queue, heartbeat and sticky-queue timeouts, the calls at once a host gets unless it says otherwise |

mod activities;
mod client;
mod connection;
pub mod defaults;
mod history;
mod input;
mod worker;
mod workflow;

pub use client::{DurableClient, Status};
pub use input::{ConversationInput, Waiting};
pub use worker::{ServeOptions, serve};
pub use workflow::ConversationWorkflow;

/// The memo key of a conversation's [`Waiting`].
pub(crate) const MEMO_WAITING: &str = "pleach.waiting";

/// The summary of the timer an interrupt's expiry runs on: how a client finds it in the history.
pub(crate) fn expiry_summary(interrupt_id: &str) -> String {
    format!("pleach.expiry {interrupt_id}")
}

/// Why a durable operation failed.
///
/// ```
/// let error = pleach_temporal::DurableError::Refused("no call `c9` is waiting".into());
/// assert_eq!(error.to_string(), "refused: no call `c9` is waiting");
/// let _boxed: Box<dyn std::error::Error + Send + Sync> = error.into(); // what `?` does
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The service's address is not `HOST:PORT` or a URL.
    #[error("{0}")]
    Target(String),
    /// Nothing answered at the address.
    #[error("{0}")]
    Unreachable(String),
    /// The service refused or failed an operation.
    #[error("{0}")]
    Service(String),
    /// A decision was refused: nothing waits for that call, or it is for another call.
    #[error("refused: {0}")]
    Refused(String),
    /// The worker could not start or failed.
    #[error("{0}")]
    Worker(String),
}
