//! A client of durable conversations: start one, read its events, decide on its interrupts,
//! read its state and its outcome.

use std::time::Duration;

use pleach_core::durable::DurableOutcome;
use pleach_core::safety::{Action, Decision, Interrupt};
use serde_json::Value;
use temporalio_client::{
    Client, WorkflowDescribeOptions, WorkflowExecutionStatus, WorkflowFetchHistoryOptions,
    WorkflowGetResultOptions, WorkflowIdReusePolicy, WorkflowQueryOptions, WorkflowSignalOptions,
    WorkflowStartOptions,
};

use crate::history::Since;
use crate::{ConversationInput, ConversationWorkflow, DurableError, MEMO_WAITING, Waiting};

/// A connection to the Temporal service durable conversations run on. Cheap to clone.
///
/// ```no_run
/// # async fn run() -> Result<(), pleach_temporal::DurableError> {
/// use pleach_core::{Message, agent::{ModelEndpoint, WireFormat}};
/// use pleach_temporal::{ConversationInput, DurableClient};
///
/// let client = DurableClient::connect("127.0.0.1:7233").await?;
/// let input = ConversationInput::new(
///     vec![Message::User { content: "what is 6*7?".into() }],
///     ModelEndpoint::new(WireFormat::OpenAiChat, "http://127.0.0.1:11434/v1", "llama3.2"),
/// );
/// let id = client.start("pleach", None, input).await?;
/// let outcome = client.outcome(&id).await?;
/// println!("{:?}", outcome.final_text);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DurableClient {
    client: Client,
}

impl std::fmt::Debug for DurableClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableClient").finish_non_exhaustive()
    }
}

/// Where a conversation stands, read with no worker running.
///
/// ```
/// /// Whether the conversation waits for someone to decide.
/// fn needs_a_decision(status: &pleach_temporal::Status) -> bool {
///     status.running && !status.waiting.pending.is_empty()
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Status {
    /// Whether the conversation is still going (waiting for a decision counts).
    pub running: bool,
    /// Temporal's word for it: `running`, `completed`, `failed`, `terminated`, …
    pub state: String,
    /// The interrupts waiting for a decision, and the last decision refused, as a worker last
    /// left them (the memo).
    pub waiting: Waiting,
    /// The decisions sent that no worker has applied yet (none runs, say), oldest first: each
    /// interrupt's first is final, a worker takes it when it next runs the conversation.
    pub unapplied: Vec<Decision>,
    /// The interrupts whose approval expired (`--approval-expiry`): their calls end with 1016,
    /// whatever decision comes later.
    pub expired: Vec<String>,
    /// Why the last model step or call that failed for good (its attempts spent, or its worker
    /// lost) failed: the root cause (`the model API could not be reached: …`).
    pub last_failure: Option<String>,
}

impl Status {
    /// The decision sent on `interrupt_id` that no worker has applied yet, if one was.
    ///
    /// ```
    /// # fn show(status: &pleach_temporal::Status) {
    /// for interrupt in &status.waiting.pending {
    ///     if let Some(decision) = status.unapplied(&interrupt.id) {
    ///         println!("{}: {} sent, not yet applied", interrupt.tool_call.id(), decision.action.name());
    ///     }
    /// }
    /// # }
    /// ```
    pub fn unapplied(&self, interrupt_id: &str) -> Option<&Decision> {
        self.unapplied
            .iter()
            .find(|decision| decision.interrupt_id == interrupt_id)
    }

    /// Whether `interrupt_id`'s approval expired.
    ///
    /// ```
    /// # fn show(status: &pleach_temporal::Status) {
    /// for interrupt in &status.waiting.pending {
    ///     if status.is_expired(&interrupt.id) {
    ///         println!("{}: expired (1016)", interrupt.tool_call.id());
    ///     }
    /// }
    /// # }
    /// ```
    pub fn is_expired(&self, interrupt_id: &str) -> bool {
        self.expired.iter().any(|expired| expired == interrupt_id)
    }
}

impl DurableClient {
    /// Connects to the service at `target` (`HOST:PORT`, or an `http://` / `https://` URL).
    ///
    /// # Errors
    ///
    /// [`DurableError::Target`] for an address that is neither, [`DurableError::Unreachable`]
    /// when nothing answers there.
    pub async fn connect(target: &str) -> Result<Self, DurableError> {
        Ok(DurableClient {
            client: crate::connection::connect(target).await?,
        })
    }

    /// Starts a conversation on `task_queue` (where the workers poll) as workflow `id` (a new id
    /// when `None`), and returns its id. Started inside a traced span (feature `otel` of
    /// pleach-core, an OpenTelemetry layer), the conversation's steps and calls join its trace
    /// unless the input names a trace context of its own.
    ///
    /// # Errors
    ///
    /// The id is taken by a conversation still running, or the service refused the start.
    pub async fn start(
        &self,
        task_queue: &str,
        id: Option<String>,
        mut input: ConversationInput,
    ) -> Result<String, DurableError> {
        let id = id.unwrap_or_else(new_id);
        if input.options.trace_context.is_empty() {
            input.options.trace_context = pleach_core::durable::current_trace_context();
        }
        let options = WorkflowStartOptions::new(task_queue.to_owned(), id.clone())
            .id_reuse_policy(WorkflowIdReusePolicy::AllowDuplicate)
            .build();
        self.client
            .start_workflow(ConversationWorkflow::run, input, options)
            .await
            .map_err(|error| DurableError::Service(format!("cannot start `{id}`: {error}")))?;
        Ok(id)
    }

    /// The conversation's events from index `from` on. Needs a worker (the workflow answers).
    ///
    /// # Errors
    ///
    /// No worker answered, or the conversation does not exist.
    pub async fn events(&self, id: &str, from: usize) -> Result<Vec<Value>, DurableError> {
        self.handle(id)
            .query(
                ConversationWorkflow::events,
                from,
                WorkflowQueryOptions::default(),
            )
            .await
            .map_err(|error| {
                DurableError::Service(format!("cannot read the events of `{id}`: {error}"))
            })
    }

    /// Where the conversation stands: read from the service alone, no worker needed.
    ///
    /// # Errors
    ///
    /// The conversation does not exist, or its memo cannot be read.
    pub async fn status(&self, id: &str) -> Result<Status, DurableError> {
        let described = self
            .handle(id)
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(|error| DurableError::Service(format!("cannot describe `{id}`: {error}")))?;
        let waiting = described
            .memo()
            .get::<Waiting>(MEMO_WAITING)
            .map_err(|error| {
                DurableError::Service(format!("the memo of `{id}` is unreadable: {error}"))
            })?
            .unwrap_or_default();
        let status = described.status();
        let since = Since::read(
            &self
                .handle(id)
                .fetch_history(WorkflowFetchHistoryOptions::default())
                .into_events()
                .await
                .map_err(|error| {
                    DurableError::Service(format!("cannot read the history of `{id}`: {error}"))
                })?,
        );
        Ok(Status {
            running: status == WorkflowExecutionStatus::Running,
            state: format!("{status:?}").to_lowercase(),
            waiting,
            unapplied: since.unapplied,
            expired: since.expired,
            last_failure: since.last_failure,
        })
    }

    /// Decides on the interrupt waiting for call `call_id`: checks, from the conversation's memo
    /// and history (no worker needed), that it waits, that its approval has not expired, that no
    /// decision on it is already on its way (the first is final: the same decision again is
    /// not sent twice, another is refused) and that `fingerprint` (when given: the one the user
    /// was shown) is its call's, then sends the decision. The workflow checks it again when a
    /// worker runs it, and an edit is validated against the tool's schema there.
    ///
    /// # Errors
    ///
    /// [`DurableError::Refused`]: nothing waits for that call, its approval expired, another
    /// decision on it was sent, or the fingerprint is another call's; or the service could not
    /// be reached.
    pub async fn decide(
        &self,
        id: &str,
        call_id: &str,
        fingerprint: Option<&str>,
        action: Action,
    ) -> Result<Interrupt, DurableError> {
        let status = self.status(id).await?;
        let interrupt = status
            .waiting
            .pending
            .iter()
            .find(|interrupt| interrupt.tool_call.id() == call_id)
            .cloned()
            .ok_or_else(|| {
                DurableError::Refused(format!(
                    "no call `{call_id}` of `{id}` is waiting for a decision"
                ))
            })?;
        if status.is_expired(&interrupt.id) {
            return Err(DurableError::Refused(format!(
                "the approval of call `{call_id}` of `{id}` expired: the call ends with 1016"
            )));
        }
        if let Some(sent) = status.unapplied(&interrupt.id) {
            if sent.action == action {
                return Ok(interrupt);
            }
            return Err(DurableError::Refused(format!(
                "a decision on call `{call_id}` of `{id}` is already pending ({}, sent, not yet \
                 applied): the first decision is final",
                describe(&sent.action)
            )));
        }
        if let Some(fingerprint) = fingerprint.filter(|given| *given != interrupt.fingerprint) {
            return Err(DurableError::Refused(format!(
                "the fingerprint `{fingerprint}` is not that of the waiting call `{call_id}` \
                 (`{}`): its arguments are not the ones decided on",
                interrupt.fingerprint
            )));
        }
        let decision = Decision {
            interrupt_id: interrupt.id.clone(),
            fingerprint: interrupt.fingerprint.clone(),
            action,
        };
        self.send_decision(id, decision).await?;
        Ok(interrupt)
    }

    /// Sends `decision` as it is, unchecked (the workflow checks it).
    ///
    /// # Errors
    ///
    /// The service could not be reached or the conversation is not running.
    pub async fn send_decision(&self, id: &str, decision: Decision) -> Result<(), DurableError> {
        self.handle(id)
            .signal(
                ConversationWorkflow::decide,
                decision,
                WorkflowSignalOptions::default(),
            )
            .await
            .map_err(|error| {
                DurableError::Service(format!("cannot send the decision to `{id}`: {error}"))
            })
    }

    /// Waits for the conversation's end and returns what it came to.
    ///
    /// # Errors
    ///
    /// The conversation failed, was terminated or cancelled, or the service could not be reached.
    pub async fn outcome(&self, id: &str) -> Result<DurableOutcome, DurableError> {
        self.handle(id)
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|error| DurableError::Service(format!("`{id}` did not finish: {error:?}")))
    }

    /// Waits up to `limit` for the conversation to end; `None` if it is still going.
    ///
    /// # Errors
    ///
    /// As [`outcome`](Self::outcome).
    pub async fn outcome_within(
        &self,
        id: &str,
        limit: Duration,
    ) -> Result<Option<DurableOutcome>, DurableError> {
        match tokio::time::timeout(limit, self.outcome(id)).await {
            Ok(outcome) => outcome.map(Some),
            Err(_) => Ok(None),
        }
    }

    fn handle(&self, id: &str) -> temporalio_client::WorkflowHandle<Client, ConversationWorkflow> {
        self.client.get_workflow_handle::<ConversationWorkflow>(id)
    }
}

/// A decision as `pleach status` and a refusal name it: `accept`, `edit {…}`, `reject: reason`.
fn describe(action: &Action) -> String {
    match action {
        Action::Accept => "accept".to_owned(),
        Action::Edit { arguments } => format!("edit {arguments}"),
        Action::Reject { reason } => format!("reject: {reason}"),
        other => other.name().to_owned(),
    }
}

/// A new conversation id: `pleach-` and 16 hex digits from the OS's randomness.
fn new_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos()),
    );
    format!("pleach-{:016x}", hasher.finish())
}
