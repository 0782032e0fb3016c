//! The conversation workflow: the durable agent loop ([`pleach_core::durable::run`]) with its
//! state — the events so far, the interrupts waiting, the decisions received — and the messages
//! a client sends it.

// `#[workflow_methods]` makes a public marker constant per method (`ConversationWorkflow::run`,
// what a client names) with no doc comment of its own: the method's documents it.
#![allow(missing_docs)]

// The `Engine` over this workflow's context: it reads and writes the workflow's state, and only the
// workflow's `run` builds it, so it is the workflow's own module, below it.
mod engine;

use std::collections::VecDeque;

use pleach_core::durable::DurableOutcome;
use pleach_core::safety::{Decision, Interrupt};
use serde_json::Value;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{SyncWorkflowContext, WorkflowContext, WorkflowContextView, WorkflowResult};

use self::engine::TemporalEngine;
use crate::ConversationInput;

/// The name of the decision signal, [`ConversationWorkflow::decide`] (the attribute needs the
/// literal): what a client looks for in the history.
pub(crate) const DECIDE_SIGNAL: &str = "pleach.decide";

/// One durable conversation: the agent loop as a Temporal workflow. Model steps and calls are
/// activities; an approval interrupt is workflow state waiting for [`decide`](Self::decide);
/// the events are read with [`events`](Self::events).
///
/// Start it with [`DurableClient::start`](crate::DurableClient::start); its result is the
/// [`DurableOutcome`].
#[workflow]
#[derive(Default)]
pub struct ConversationWorkflow {
    /// Every event so far, in the order recorded.
    pub(crate) events: Vec<Value>,
    /// The interrupts waiting for a decision, oldest first.
    pub(crate) pending: Vec<Interrupt>,
    /// Decisions received and not yet taken, in arrival order.
    pub(crate) decisions: VecDeque<Decision>,
    /// Why the last decision was refused.
    pub(crate) refused: Option<String>,
}

#[workflow_methods]
impl ConversationWorkflow {
    /// Runs the conversation to its end.
    #[run(name = "pleach.conversation")]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: ConversationInput,
    ) -> WorkflowResult<DurableOutcome> {
        let ConversationInput {
            conversation,
            model,
            options,
            heartbeat_timeout,
        } = input;
        let trace_context = options.trace_context.clone();
        let engine = TemporalEngine::new(ctx.clone(), model, heartbeat_timeout, trace_context);
        Ok(pleach_core::durable::run(&engine, conversation, &options).await)
    }

    /// The user's decision on a waiting interrupt (accept, edit, reject). The first decision
    /// on an interrupt is final: one for an interrupt that is not waiting, or that already has a
    /// decision not yet taken, is refused at once; the loop checks the rest (the call's
    /// fingerprint, an edit against the tool's schema; a decision it refuses leaves the
    /// interrupt waiting for another).
    #[signal(name = "pleach.decide")]
    pub fn decide(&mut self, _ctx: &mut SyncWorkflowContext<Self>, decision: Decision) {
        let id = &decision.interrupt_id;
        if !self.pending.iter().any(|interrupt| interrupt.id == *id) {
            self.refused = Some(format!("no interrupt `{id}` is waiting for a decision"));
        } else if let Some(first) = self.decisions.iter().find(|sent| sent.interrupt_id == *id) {
            self.refused = Some(format!(
                "interrupt `{id}` already has a decision ({}): the first decision is final",
                first.action.name()
            ));
        } else {
            self.decisions.push_back(decision);
        }
    }

    /// The events from index `from` on (wire JSON, `docs/events.md`).
    #[query(name = "pleach.events")]
    pub fn events(&self, _ctx: &WorkflowContextView, from: usize) -> Vec<Value> {
        self.events.get(from..).unwrap_or_default().to_vec()
    }
}
