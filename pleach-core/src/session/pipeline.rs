//! The pipeline of one call: lookup, limits, the repeated-failure check, a runtime-wide slot,
//! validation and start, the wait against timeout and cancellation, output validation, and the
//! terminal event.

use std::any::Any;
use std::fmt::Write as _;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;

use crate::content::{Block, ContentBlock, ToolOutput};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::shared::CallSlot;
use super::shared::{Limits, OverloadPolicy};
use super::suggestion::suggestion;
use super::telemetry;
use super::{SessionInner, SessionLog, SessionTool, cancelled_error};
use crate::batch::Slot;
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, ToolEvent};
use crate::safety::Action;
use crate::safety::fingerprint as fingerprint_of;
use crate::schema;
use crate::session::call_events::CallEvents;
use crate::session::call_events::send_terminal;
use crate::session::call_events::terminal_event;
use crate::tool::{Started, ToolContext, ToolDefinition};

impl SessionInner {
    pub(super) fn log(&self) -> std::sync::MutexGuard<'_, SessionLog> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    pub(super) fn tool(&self, name: &str) -> Option<&SessionTool> {
        self.tools
            .binary_search_by(|t| t.tool.name().cmp(name))
            .ok()
            .map(|index| &self.tools[index])
    }

    /// The whole pipeline for one call, ending in its terminal event. Returns the outcome, and
    /// whether it counts toward the repeated-failure limit (recorded by the caller: a turn
    /// records its failures when it ends, since calls of one model step are issued together and
    /// none of them repeats another).
    pub(super) async fn dispatch(
        &self,
        call: ToolCall,
        sink: &EventSender,
        turn_signal: &CancellationToken,
        approved: Option<Action>,
        reserved: Option<CallSlot>,
    ) -> Dispatched {
        let recording = &self.runtime.config.recording;
        let mut gate = Gate(None);
        let mut ran = call;
        let outcome = if recording.active() {
            let started = telemetry::started(recording, ran.name());
            let span = telemetry::call_span(&ran, recording.trace_payloads);
            let outcome = self
                .run(&mut ran, sink, turn_signal, &mut gate, approved, reserved)
                .instrument(span.clone())
                .await;
            telemetry::record_outcome(&span, &outcome, recording.trace_payloads);
            telemetry::ended(recording, ran.name(), started, &outcome);
            outcome
        } else {
            self.run(&mut ran, sink, turn_signal, &mut gate, approved, reserved)
                .await
        };
        self.conclude(ran, outcome, sink, gate.0.as_deref(), Terminal::Send)
    }

    /// The pipeline for a call that can finish right here, without waiting for anything: no
    /// safety stage, a runtime-wide slot free now, and a tool that runs to its end when started
    /// and reads no context (or a call that fails before it would start). `Err` hands the call
    /// back when it needs [`dispatch`](Self::dispatch); nothing has been done for it then.
    /// `turn_signal` is the token that cancels the call's turn, if anything can cancel it before
    /// it starts. With `slot`, the call runs under the runtime-wide slot kept there, taking one
    /// into it if it holds none (a run of calls run one after another shares one); without, the
    /// call takes its own for the time it runs. `terminal` says where the call's terminal event
    /// goes.
    pub(super) fn dispatch_now<'s>(
        &'s self,
        call: ToolCall,
        sink: &EventSender,
        turn_signal: Option<&CancellationToken>,
        slot: Option<&mut Option<Slot<'s>>>,
        terminal: Terminal<'_>,
    ) -> Result<Dispatched, ToolCall> {
        if self.screens() {
            return Err(call);
        }
        let recording = &self.runtime.config.recording;
        // Read once: whether anything records this call (its span, its phases, its metrics).
        let recorded = recording.active();
        let outcome = match self.tool(call.name()) {
            // A name that keeps failing to resolve is a loop like any other.
            None => telemetry::in_call_span(recording, recorded, &call, || {
                self.check_repetition(&call)
                    .and_then(|()| Err(self.not_found(call.name())))
            }),
            Some(session_tool) => {
                let definition = session_tool.tool.definition();
                // Decided before any check, so a call that goes the other way is checked once.
                if !definition.runs_in_place() || definition.takes_context() {
                    return Err(call);
                }
                // It holds a runtime-wide slot while it runs, like any call: other threads (a
                // multi-thread runtime, or another runtime sharing this pleach `Runtime`) may be
                // running calls meanwhile. No slot free: the slow path waits or fails fast.
                // Kept in the caller's place if it gave one, else here, for this call alone.
                let mut own = None;
                let kept = slot.unwrap_or(&mut own);
                if kept.is_none() {
                    let Some(taken) = self.runtime.in_flight.try_take() else {
                        return Err(call);
                    };
                    *kept = Some(taken);
                }
                telemetry::in_call_span(recording, recorded, &call, || {
                    self.check_call(&call)
                        .and_then(|()| self.run_in_place(definition, &call, turn_signal, recorded))
                })
            }
        };
        Ok(self.conclude(call, outcome, sink, None, terminal))
    }

    /// Runs a tool that finishes where it starts (`runs_in_place`), unless the turn is over.
    /// `recorded`: whether anything records the call (its phases are `debug` events then).
    #[inline]
    fn run_in_place(
        &self,
        definition: &ToolDefinition,
        call: &ToolCall,
        turn_signal: Option<&CancellationToken>,
        recorded: bool,
    ) -> Result<ToolOutput, ToolError> {
        if turn_signal.is_some_and(CancellationToken::is_cancelled) {
            // Nothing of a cancelled turn starts; a tool that cannot suspend cannot be stopped
            // once started, and could not see the signal anyway.
            return Err(cancelled_error());
        }
        match start_caught(definition, call.arguments(), None)? {
            Started::Ready(outcome) => {
                if recorded {
                    tracing::debug!(target: "pleach::tool", "arguments valid; tool ran");
                }
                self.accept_output(definition, outcome, recorded)
            }
            // `runs_in_place` promises a finished start; should it ever not be, the future is
            // dropped unpolled, and the call reports it rather than hang.
            Started::Running(_) => Err(crate::tool::not_finished_in_place()),
        }
    }

    /// A call's terminal event and what the turn keeps of it (`ran`: the call as it ran, a
    /// user's edit included).
    #[inline]
    fn conclude(
        &self,
        ran: ToolCall,
        outcome: Result<ToolOutput, ToolError>,
        sink: &EventSender,
        gate: Option<&CallEvents>,
        terminal: Terminal<'_>,
    ) -> Dispatched {
        // Only a call run in place has its terminal event held back or paired, and it has no gate.
        match terminal {
            Terminal::Held(held) if gate.is_none() && sink.is_connected() => {
                held.push(terminal_event(&ran, &outcome));
            }
            Terminal::AfterStarted if gate.is_none() => {
                sink.send_pair(
                    || ToolEvent::Started {
                        tool_call: ran.clone(),
                    },
                    || terminal_event(&ran, &outcome),
                );
            }
            _ => send_terminal(sink, &ran, gate, &outcome),
        }
        let counts = match &outcome {
            Ok(result) => {
                if self.screens() {
                    let mut provenance = self.provenance();
                    // What detectors check calls against: the structured value and the text
                    // blocks (media carry no values a later call could copy).
                    if let Some(value) = &result.structured {
                        provenance.record_result(&ran, value);
                    }
                    for text in result.content.iter().filter_map(ContentBlock::as_text) {
                        provenance.record_result(&ran, &Value::from(text));
                    }
                }
                false
            }
            Err(error) => error.is_recoverable(),
        };
        Dispatched {
            call: ran,
            outcome,
            counts,
        }
    }

    /// The checks before anything runs: the tool's lookup, then [`check_call`](Self::check_call).
    fn admit(&self, call: &ToolCall) -> Result<&SessionTool, ToolError> {
        let Some(session_tool) = self.tool(call.name()) else {
            self.check_repetition(call)?;
            return Err(self.not_found(call.name()));
        };
        self.check_call(call)?;
        Ok(session_tool)
    }

    /// The size limits and the repeated-failure limit. A call over the limits is looked up in
    /// the failure counts too: it fails recoverably (1006) and is counted like any such failure,
    /// so a model that keeps sending it is stopped (1015) like one repeating any other failing
    /// call.
    #[inline]
    fn check_call(&self, call: &ToolCall) -> Result<(), ToolError> {
        let within_limits = check_limits(call.arguments(), self.runtime.config.limits);
        self.check_repetition(call)?;
        within_limits
    }

    /// The key a call's recoverable failures are counted under: its
    /// [`fingerprint`](crate::safety::fingerprint) (the tool's name and the canonical arguments),
    /// or for arguments over the runtime's limits, the name and the text as it came (text the
    /// limits refuse is never parsed, not even to be counted).
    pub(super) fn failure_key(&self, call: &ToolCall) -> String {
        if check_limits(call.arguments(), self.runtime.config.limits).is_ok() {
            fingerprint_of(call)
        } else {
            crate::safety::fingerprint_of_text(call)
        }
    }

    /// Counts recoverable failures toward the repeated-failure limit.
    pub(super) fn record_failures(&self, fingerprints: impl IntoIterator<Item = String>) {
        let mut fingerprints = fingerprints.into_iter().peekable();
        if fingerprints.peek().is_none() {
            return;
        }
        let mut state = self.log();
        for key in fingerprints {
            *state.failures.entry(key).or_insert(0) += 1;
        }
        self.any_failures
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Runs the call in `ran`; a user's edit replaces it there.
    async fn run(
        &self,
        ran: &mut ToolCall,
        sink: &EventSender,
        turn_signal: &CancellationToken,
        gate: &mut Gate,
        approved: Option<Action>,
        reserved: Option<CallSlot>,
    ) -> Result<ToolOutput, ToolError> {
        let config = &self.runtime.config;
        let session_tool = self.admit(ran)?;
        let definition = session_tool.tool.definition();
        if approved.is_some() || self.screens() {
            // Boxed: the safety stage is for guarded tools only; inline it would grow every
            // call's future.
            let screened =
                Box::pin(self.screen(ran, session_tool, sink, turn_signal, approved)).await?;
            // The user's edit is new text: it meets the same limits as the model's did.
            if !screened.same(ran) {
                *ran = screened;
                check_limits(ran.arguments(), config.limits)?;
            }
        }
        let call: &ToolCall = ran;
        // Before anything is built for the call: a call refused for capacity costs nothing.
        // A slot taken ahead of the call (a host's guard) is the call's; else one is taken now.
        let carried = reserved.filter(|slot| slot.is_of(&self.runtime));
        let _slot = match carried {
            Some(_) => None,
            None => Some(self.slot(turn_signal, session_tool.timeout).await?),
        };

        // The call's own token, fired by its timeout or by the turn's cancellation (in `wait`, or
        // here when the turn is already over): a standalone token costs one allocation, a child
        // token a lock on the turn's as well. A tool that takes no context gets none of it: it
        // could not see a signal, so it is simply dropped when its call is.
        let call_signal = definition.takes_context().then(|| {
            let token = CancellationToken::new();
            if turn_signal.is_cancelled() {
                token.cancel();
            }
            token
        });
        let ctx = call_signal.as_ref().map(|token| {
            let asking = super::call_events::Asking {
                elicitation: self
                    .answers_elicitation
                    .load(std::sync::atomic::Ordering::Relaxed),
                sampling: self
                    .answers_sampling
                    .load(std::sync::atomic::Ordering::Relaxed),
                timeout: self.runtime.config.approval_timeout,
                signal: token.clone(),
            };
            let events = Arc::new(CallEvents::new(call.clone(), sink.clone(), asking));
            gate.0 = Some(events.clone());
            ToolContext::for_call(
                call.id().to_owned(),
                token.clone(),
                events,
                self.scope.clone(),
            )
        });
        let started = start_caught(definition, call.arguments(), ctx)?;
        tracing::debug!(target: "pleach::tool", "arguments valid; tool started");
        let future = match started {
            Started::Ready(outcome) => return self.finish_call(definition, turn_signal, outcome),
            Started::Running(future) => future,
        };
        let mut future = CatchUnwind(future);
        // Most tools finish on their first poll: only a tool that waits arms the timer.
        let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut future).poll(cx))).await;
        let outcome = match first {
            Poll::Ready(outcome) => outcome,
            Poll::Pending => {
                // Boxed: the wait (a select with a timer) is the rare path, and inline it would
                // make every call's future, moved into its task, several times larger.
                Box::pin(self.wait(
                    &mut future,
                    session_tool.timeout,
                    turn_signal,
                    call_signal.as_ref(),
                ))
                .await?
            }
        };
        self.finish_call(definition, turn_signal, outcome)
    }

    /// The last steps of a call whose tool has returned: cancellation, output schema, size.
    fn finish_call(
        &self,
        definition: &ToolDefinition,
        turn_signal: &CancellationToken,
        outcome: Result<ToolOutput, ToolError>,
    ) -> Result<ToolOutput, ToolError> {
        // A tool that returns because its signal fired (the cooperative way to stop) was still
        // cancelled: its result is whatever it had, not an answer.
        if turn_signal.is_cancelled() {
            return Err(cancelled_error());
        }
        self.accept_output(definition, outcome, true)
    }

    /// A tool's result against its output schema and the result-size limit. `recorded`: whether
    /// the phases may be recorded (`debug` events; `false` skips even their level check).
    #[inline]
    fn accept_output(
        &self,
        definition: &ToolDefinition,
        outcome: Result<ToolOutput, ToolError>,
        recorded: bool,
    ) -> Result<ToolOutput, ToolError> {
        let mut output = outcome?;
        if recorded {
            tracing::debug!(target: "pleach::tool", "tool returned");
        }
        definition.check_output(&output)?;
        let config = &self.runtime.config;
        let cap = config
            .result_caps
            .get(definition.name())
            .copied()
            .unwrap_or(config.limits.max_result_bytes);
        cap_result(&mut output, cap)?;
        if recorded {
            tracing::debug!(target: "pleach::tool", "result valid");
        }
        Ok(output)
    }

    /// Waits for a tool that did not finish on its first poll, against its timeout and the
    /// turn's cancellation; either fires its signal and drops it after the grace period.
    async fn wait(
        &self,
        future: &mut CatchUnwind,
        timeout: Duration,
        turn_signal: &CancellationToken,
        call_signal: Option<&CancellationToken>,
    ) -> Result<Result<ToolOutput, ToolError>, ToolError> {
        tokio::select! {
            biased;
            outcome = &mut *future => Ok(outcome),
            () = turn_signal.cancelled() => {
                let _ = tokio::time::timeout(self.fire(call_signal), &mut *future).await;
                Err(cancelled_error())
            }
            () = tokio::time::sleep(timeout) => {
                let _ = tokio::time::timeout(self.fire(call_signal), &mut *future).await;
                Err(ToolError::new(
                    ErrorCode::TimedOut,
                    format!("the tool did not finish within {}", human(timeout)),
                ))
            }
        }
    }

    /// A runtime-wide slot for a running call, by the overload policy. A call that waits for one
    /// waits at most its timeout (then fails with 1010, recoverable: the runtime was busy, the
    /// call was fine), and no longer than its turn runs (1011); once it has its slot, its tool has
    /// the whole timeout to run.
    async fn slot(
        &self,
        turn_signal: &CancellationToken,
        timeout: Duration,
    ) -> Result<Slot<'_>, ToolError> {
        let slots = &self.runtime.in_flight;
        if let Some(slot) = slots.try_take() {
            return Ok(slot);
        }
        match self.runtime.overload {
            OverloadPolicy::FailFast => Err(ToolError::new(
                ErrorCode::Overloaded,
                format!(
                    "the runtime is at capacity ({} calls running); try again shortly",
                    slots.max()
                ),
            )),
            // Boxed: waiting is the rare path, and inline it would grow every call's future.
            OverloadPolicy::Wait => {
                Box::pin(async {
                    tokio::select! {
                        biased;
                        () = turn_signal.cancelled() => Err(cancelled_error()),
                        slot = slots.take() => Ok(slot),
                        () = tokio::time::sleep(timeout) => Err(ToolError::new(
                            ErrorCode::TimedOut,
                            format!(
                                "the call did not start within {}: the runtime was at capacity \
                                 ({} calls running); try again shortly",
                                human(timeout),
                                slots.max()
                            ),
                        )),
                    }
                })
                .await
            }
        }
    }

    /// Fires a call's signal and returns how long the tool may take to stop on its own: the grace
    /// period, or nothing for a tool without a signal (it could not notice).
    fn fire(&self, call_signal: Option<&CancellationToken>) -> Duration {
        match call_signal {
            Some(signal) => {
                signal.cancel();
                self.runtime.config.cancel_grace
            }
            None => Duration::ZERO,
        }
    }

    fn not_found(&self, name: &str) -> ToolError {
        let registry = &self.runtime.registry;
        if registry.contains(name) {
            return ToolError::new(
                ErrorCode::ToolNotEnabled,
                format!(
                    "tool `{name}` is not enabled in this session; call one of the enabled tools"
                ),
            );
        }
        let names: Vec<&str> = self.tools.iter().map(|t| t.tool.name()).collect();
        let suggestion = suggestion(name, &names);
        ToolError::new(
            ErrorCode::UnknownTool,
            format!("no tool named `{name}`{suggestion}"),
        )
    }

    /// Refuses a call that already failed recoverably too often with the same arguments this
    /// user turn: the model is stuck in a loop, and another try will not help.
    #[inline]
    fn check_repetition(&self, call: &ToolCall) -> Result<(), ToolError> {
        if !self.any_failures.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let state = self.log();
        if state.failures.is_empty() {
            return Ok(());
        }
        let key = self.failure_key(call);
        let failures = state.failures.get(&key).copied().unwrap_or(0);
        drop(state);
        let limit = self.runtime.config.max_repeated_failures;
        // Only a call that did fail is refused (a limit of 0 acts as 1).
        if failures > 0 && failures >= limit {
            return Err(ToolError::new(
                ErrorCode::RepeatedFailure,
                format!(
                    "`{}` already failed {failures} times with these same arguments in this turn; \
                     trying again will not help: change the arguments or take another approach",
                    call.name()
                ),
            ));
        }
        Ok(())
    }
}

/// Where [`SessionInner::dispatch_now`] sends the terminal event of a call it runs.
pub(super) enum Terminal<'a> {
    /// To the sink, alone.
    Send,
    /// To the sink, under one lock with the call's `tool.started`, which nothing has sent: the
    /// call ran to its end before anyone could read an event of it.
    AfterStarted,
    /// Into the caller's list, which the caller sends with others under one lock before anything
    /// else of the turn can run.
    Held(&'a mut Vec<ToolEvent>),
}

/// What came of one call: the call as it ran (the user's edit, after an approval with edits),
/// its outcome, and whether that outcome counts toward the repeated-failure limit (a recoverable
/// failure of a call that went through the pipeline; the count is keyed by the call as the model
/// issued it, see [`fingerprint`](crate::safety::fingerprint)).
pub(super) struct Dispatched {
    pub(super) call: ToolCall,
    pub(super) outcome: Result<ToolOutput, ToolError>,
    pub(super) counts: bool,
}

impl Dispatched {
    /// A call that ends without running (it failed before, or its turn was cancelled first):
    /// its terminal event goes out now.
    pub(super) fn never_ran(call: ToolCall, error: ToolError, sink: &EventSender) -> Self {
        let outcome = Err(error);
        send_terminal(sink, &call, None, &outcome);
        Dispatched {
            call,
            outcome,
            counts: false,
        }
    }
}

/// The arguments text against the size and nesting limits, as a verdict (keyword `limits`): for
/// hosts checking a call or an edit before it runs.
pub(crate) fn limits_verdict(arguments: &str, limits: Limits) -> Option<crate::ValidationResult> {
    let over = check_limits(arguments, limits).err()?;
    Some(crate::ValidationResult::invalid(vec![
        crate::schema::ValidationError {
            path: String::new(),
            keyword: "limits".to_owned(),
            message: over.message().to_owned(),
        },
    ]))
}

/// Size and nesting limits, checked on the text before anything is parsed.
pub(super) fn check_limits(arguments: &str, limits: Limits) -> Result<(), ToolError> {
    if arguments.len() > limits.max_argument_bytes {
        return Err(ToolError::new(
            ErrorCode::ArgumentsTooLarge,
            format!(
                "the arguments are {} bytes, over the limit of {}; send less data",
                arguments.len(),
                limits.max_argument_bytes
            ),
        ));
    }
    // Each level opens with a byte of its own: text no longer than the limit cannot pass it.
    if arguments.len() <= limits.max_argument_depth {
        return Ok(());
    }
    let depth = schema::nesting_depth(arguments);
    if depth > limits.max_argument_depth {
        return Err(ToolError::new(
            ErrorCode::ArgumentsTooLarge,
            format!(
                "the arguments nest {depth} levels deep, over the limit of {}; flatten them",
                limits.max_argument_depth
            ),
        ));
    }
    Ok(())
}

/// A result within `cap` bytes: its structured value's JSON text (over the cap: 1002) and its
/// blocks' bytes. A medium that does not fit in what is left fails the call (1019); text blocks
/// are cut to what is left, each cut marked with how much was dropped.
#[inline]
fn cap_result(output: &mut ToolOutput, cap: usize) -> Result<(), ToolError> {
    // A number, a boolean or null alone is at most `SCALAR_LEN` bytes of JSON: most results of
    // most tools, and nothing to count.
    let scalar = matches!(
        output.structured,
        None | Some(Value::Null | Value::Bool(_) | Value::Number(_))
    );
    if scalar && output.content.is_empty() && cap >= SCALAR_LEN {
        return Ok(());
    }
    let mut used = match &output.structured {
        Some(value) => json_len_within(value, cap).ok_or_else(|| {
            ToolError::new(
                ErrorCode::OutputInvalid,
                format!(
                    "the tool's result is larger than this runtime's limit of {cap} bytes; ask \
                     for less (a narrower query, a page of the data)"
                ),
            )
        })?,
        None => 0,
    };
    if output.content.is_empty() {
        return Ok(());
    }
    // Media first: they cannot be cut, so they take their room before the text does.
    for block in output
        .content
        .iter()
        .filter(|block| block.as_text().is_none())
    {
        let bytes = block.len();
        if used.saturating_add(bytes) > cap {
            return Err(ToolError::new(
                ErrorCode::ContentRefused,
                format!(
                    "the tool's {} is over the result cap of {} ({} left for it); ask for a \
                     smaller one (a lower resolution, fewer pages)",
                    block.summary(),
                    crate::content::human_size(cap),
                    crate::content::human_size(cap - used),
                ),
            ));
        }
        used += bytes;
    }
    for block in &mut output.content {
        if let Block::Text(text) = &mut block.block {
            let left = cap - used;
            used += if text.len() > left {
                cut_text(text, left, cap)
            } else {
                text.len()
            };
        }
    }
    Ok(())
}

/// Cuts `text` to at most `keep` bytes (at a character boundary) and says so on a line of its
/// own: how much was dropped, the cap, and how to get the rest. Returns the bytes kept.
fn cut_text(text: &mut String, keep: usize, cap: usize) -> usize {
    let total = text.len();
    let mut end = keep.min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    let _ = write!(
        text,
        "\n[cut: {} of {total} bytes dropped at the result cap of {}; ask for the rest in parts \
         (a range, an offset, the next page) or for less]",
        total - end,
        crate::content::human_size(cap),
    );
    end
}

/// The length of `value`'s JSON text if it is at most `limit` bytes. Walks the value and stops as
/// soon as the limit is passed, so a small result costs a few steps and a huge one no more than
/// the limit.
fn json_len_within(value: &Value, limit: usize) -> Option<usize> {
    /// Takes `bytes` from the budget; false once it is spent.
    fn take(budget: &mut usize, bytes: usize) -> bool {
        *budget = budget.saturating_sub(bytes);
        *budget > 0
    }
    fn size(value: &Value, budget: &mut usize) -> bool {
        match value {
            Value::Null | Value::Bool(true) => take(budget, 4),
            Value::Bool(false) => take(budget, 5),
            Value::Number(number) => take(budget, number_len(number)),
            // Escapes can make the text longer than the string; the limit is a guard, not a
            // byte-exact count.
            Value::String(text) => take(budget, text.len() + 2),
            // Brackets, and a comma before every item but the first.
            Value::Array(items) => {
                take(budget, 2)
                    && items.iter().enumerate().all(|(index, item)| {
                        take(budget, usize::from(index > 0)) && size(item, budget)
                    })
            }
            // Braces; per member its quoted key, the colon, and a comma before all but the first.
            Value::Object(map) => {
                take(budget, 2)
                    && map.iter().enumerate().all(|(index, (key, item))| {
                        take(budget, key.len() + 3 + usize::from(index > 0)) && size(item, budget)
                    })
            }
        }
    }
    let start = limit.saturating_add(1);
    let mut budget = start;
    size(value, &mut budget).then(|| start - budget)
}

/// The most bytes a number, a boolean or null takes as JSON text as [`json_len_within`] counts
/// it: 24 for a fractional number (the longest shortest form of an `f64`), 20 for the longest
/// integer.
const SCALAR_LEN: usize = 24;

/// The length of a number's JSON text: exact for an integer, at most 24 bytes (the longest
/// shortest form of an `f64`) for the rest.
fn number_len(number: &serde_json::Number) -> usize {
    fn digits(n: u64) -> usize {
        n.checked_ilog10().map_or(1, |log| log as usize + 1)
    }
    if let Some(n) = number.as_u64() {
        digits(n)
    } else if let Some(n) = number.as_i64() {
        digits(n.unsigned_abs()) + 1
    } else {
        24
    }
}

pub(crate) fn human(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// The progress gate of a call whose tool holds a context. Closed on drop, so a call whose
/// pipeline is dropped before its terminal event (its task aborted) stays silent afterwards too.
pub(super) struct Gate(Option<Arc<CallEvents>>);

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some(events) = &self.0 {
            events.close();
        }
    }
}

/// Polls a tool's future, turning a panic into 1009 for that call alone.
struct CatchUnwind(crate::tool::ToolFuture);

impl Future for CatchUnwind {
    type Output = Result<ToolOutput, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => Poll::Ready(Err(panicked(payload.as_ref()))),
        }
    }
}

/// Starts a tool. One that cannot suspend runs to its end inside `start`: its panic is caught
/// here (1009).
#[inline]
fn start_caught(
    definition: &ToolDefinition,
    arguments: &str,
    ctx: Option<ToolContext>,
) -> Result<Started, ToolError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| definition.start(arguments, ctx)))
        .unwrap_or_else(|payload| Ok(Started::Ready(Err(panicked(payload.as_ref())))))
}

/// The error of a call whose tool panicked (1009).
fn panicked(payload: &(dyn Any + Send)) -> ToolError {
    ToolError::new(
        ErrorCode::ToolPanicked,
        "the tool crashed (it panicked); this is a bug in the tool, not in the arguments",
    )
    .with_detail(panic_message(payload))
}

pub(super) fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{cap_result, json_len_within};
    use crate::content::{ContentBlock, ToolOutput};
    use crate::error::ErrorCode;

    /// The smallest limit each result fits under is its JSON text's length, for the results whose
    /// length the guard counts exactly (everything but floats and strings with escapes).
    #[test]
    fn the_result_size_guard_counts_numbers_literals_and_containers_exactly() {
        for result in [
            json!(3),
            json!(0),
            json!(-7),
            json!(12345),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(true),
            json!(false),
            Value::Null,
            json!([1, 22, -333]),
            json!({ "a": [true, null], "bc": "text" }),
            json!([]),
            json!({}),
        ] {
            let length = result.to_string().len();
            assert_eq!(json_len_within(&result, length), Some(length), "{result}");
            assert_eq!(json_len_within(&result, length - 1), None, "{result}");
        }
        // A float counts as the longest shortest form of an `f64`: never less than its text.
        let float = json!(0.1);
        assert!(json_len_within(&float, 24).is_some());
        assert!(json_len_within(&float, 23).is_none());
    }

    #[test]
    fn over_the_cap_text_is_cut_and_marked_and_media_refused() {
        let out = ToolOutput::new(json!("ok"))
            .block(ContentBlock::text("é".repeat(10))) // 20 bytes
            .block(ContentBlock::text("cut to a byte"));
        // 4 bytes for `"ok"`, 7 left: the first text keeps 3 whole characters (6 bytes).
        let mut capped = out;
        cap_result(&mut capped, 11).unwrap();
        let first = capped.content[0].as_text().unwrap();
        assert!(
            first.starts_with("ééé\n[cut: 14 of 20 bytes dropped at the result cap of 11 B"),
            "{first}"
        );
        // One byte was left for the second.
        let second = capped.content[1].as_text().unwrap();
        assert!(second.starts_with("c\n[cut: 12 of 13 bytes"), "{second}");

        let image = ToolOutput::from_blocks([ContentBlock::image(vec![0u8; 100], "image/png")]);
        let error = cap_result(&mut image.clone(), 99).unwrap_err();
        assert_eq!(error.code(), ErrorCode::ContentRefused);
        assert!(
            error
                .message()
                .contains("image/png 100 B is over the result cap of 99 B"),
            "{}",
            error.message()
        );
        assert!(cap_result(&mut image.clone(), 100).is_ok());

        // A scalar fits any cap of `SCALAR_LEN` bytes unchecked; under a smaller one it is
        // counted like any result.
        for scalar in [json!(u64::MAX), json!(-0.1), json!(true), Value::Null] {
            assert!(cap_result(&mut ToolOutput::new(scalar.clone()), super::SCALAR_LEN).is_ok());
        }
        assert_eq!(
            cap_result(&mut ToolOutput::new(json!(12345)), 4)
                .unwrap_err()
                .code(),
            ErrorCode::OutputInvalid
        );
        assert!(cap_result(&mut ToolOutput::new(json!(12345)), 5).is_ok());

        let mut big = ToolOutput::new(json!("x".repeat(50)));
        assert_eq!(
            cap_result(&mut big, 10).unwrap_err().code(),
            ErrorCode::OutputInvalid
        );
    }
}
