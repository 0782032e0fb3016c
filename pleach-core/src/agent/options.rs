//! How an agent run goes and how it ended: [`AgentOptions`] and its defaults, [`StopReason`],
//! each step's [`StepReport`] and the run's [`AgentOutcome`].

use super::client::ModelError;
use crate::defaults;
use crate::session::ToolResult;

/// How an agent run goes. Read the settings as fields; set them with the setter of the same
/// name.
///
/// ```
/// use pleach_core::agent::AgentOptions;
/// let options = AgentOptions::default().max_steps(3);
/// assert_eq!(options.max_steps, 3);
/// assert_eq!(AgentOptions::default().max_steps, pleach_core::defaults::MAX_STEPS);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentOptions {
    /// How many requests to the model at most (each step is one request and the calls it
    /// makes; default [`defaults::MAX_STEPS`], 16). Reached with calls still being made, the run
    /// stops with [`StopReason::MaxSteps`].
    pub max_steps: usize,
    /// How many bytes one response may have (default [`defaults::MAX_RESPONSE_BYTES`], 32 MiB);
    /// past it the response is cut off there (its open calls fail as incomplete) and the run
    /// stops with [`ModelError::TooLarge`].
    pub max_response_bytes: usize,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_steps: defaults::MAX_STEPS,
            max_response_bytes: defaults::MAX_RESPONSE_BYTES,
        }
    }
}

impl AgentOptions {
    /// Sets how many requests to the model a run makes at most (default
    /// [`defaults::MAX_STEPS`], 16).
    ///
    /// ```
    /// assert_eq!(pleach_core::agent::AgentOptions::default().max_steps(1).max_steps, 1);
    /// ```
    #[must_use]
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }

    /// Sets how many bytes one response may have (default [`defaults::MAX_RESPONSE_BYTES`],
    /// 32 MiB).
    ///
    /// ```
    /// let options = pleach_core::agent::AgentOptions::default().max_response_bytes(1024);
    /// assert_eq!(options.max_response_bytes, 1024);
    /// ```
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }
}

/// Why a run stopped.
///
/// ```
/// use pleach_core::agent::StopReason;
/// assert!(StopReason::Finished.is_finished());
/// assert!(!StopReason::MaxSteps.is_finished());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without calling a tool: [`AgentOutcome::final_text`] is its answer.
    Finished,
    /// [`AgentOptions::max_steps`] requests were made and the model was still calling tools;
    /// the last calls ran and their results are in the conversation.
    MaxSteps,
    /// The run was cancelled ([`AgentRun::cancel`](crate::agent::AgentRun::cancel), or the
    /// session dropped).
    Cancelled,
    /// The model could not be asked, or its response broke off. Calls that were complete
    /// before the break ran; the others failed.
    Error(ModelError),
}

impl StopReason {
    /// Whether the model finished with an answer.
    ///
    /// ```
    /// assert!(pleach_core::agent::StopReason::Finished.is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        matches!(self, StopReason::Finished)
    }
}

/// What happened in one step: the model's text, its calls' results, and what the stream held
/// that was not a call.
///
/// ```
/// let step = pleach_core::agent::StepReport::default();
/// assert!(step.results.is_empty() && step.skipped_events == 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StepReport {
    /// The model's text in this step, if any.
    pub text: Option<String>,
    /// One result per call, in call order (failed calls included).
    pub results: Vec<ToolResult>,
    /// The provider's finish or stop reason, as it spells it.
    pub finish_reason: Option<String>,
    /// Events of a type the stream parser does not know: skipped, and counted here.
    pub skipped_events: usize,
    /// Problems not tied to one call: unreadable events, errors the provider reported.
    pub stream_errors: Vec<String>,
    /// Stream input that named no call that could be run or failed on its own (a call id seen
    /// twice, fragments for a call never started): no events, no result message, said here.
    pub refused: Vec<String>,
    /// Prompt tokens, as reported.
    pub input_tokens: Option<u64>,
    /// Completion tokens, as reported.
    pub output_tokens: Option<u64>,
}

/// How a run ended.
///
/// ```
/// use pleach_core::agent::{AgentOutcome, StopReason};
/// let outcome = AgentOutcome::default();
/// assert_eq!(outcome.stop_reason, StopReason::Finished);
/// assert!(outcome.steps.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// Every step, in order (one per request that was answered).
    pub steps: Vec<StepReport>,
    /// The model's answer, when it finished with one.
    pub final_text: Option<String>,
    /// Why the run stopped.
    pub stop_reason: StopReason,
}

impl Default for AgentOutcome {
    fn default() -> Self {
        AgentOutcome {
            steps: Vec::new(),
            final_text: None,
            stop_reason: StopReason::Finished,
        }
    }
}
