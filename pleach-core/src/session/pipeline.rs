//! The pipeline of one call: lookup, limits, the repeated-failure check, a runtime-wide slot,
//! validation and start, the wait against timeout and cancellation, output validation, and the
//! terminal event.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;

use crate::content::{ContentBlock, ToolOutput};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::limits::{cap_result, check_limits};
use super::shared::CallSlot;
use super::shared::OverloadPolicy;
use super::suggestion::suggestion;
use super::telemetry;
use super::{SessionInner, SessionLog, SessionTool, cancelled_error};
use crate::batch::Slot;
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, ToolEvent};
use crate::safety::Action;
use crate::safety::fingerprint as fingerprint_of;
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
                self.scope().clone(),
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
