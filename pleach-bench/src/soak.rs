//! `soak`: many calls (1,000,000; `--quick`: 100,000) through sessions, with random failures,
//! panics, invalid and unknown calls, timeouts and cancelled turns, checking the runtime's first
//! guarantee on every one of them: each call ends in exactly one terminal event and one result.
//!
//! Turns of [`CALLS_PER_TURN`] calls run one after another; a fresh session takes over every
//! [`TURNS_PER_SESSION`] turns (the old one is dropped, so its conversation does not grow without
//! bound). The mix, per call (a seeded generator, so every run is the same):
//!
//! | share | call | expected end |
//! | --- | --- | --- |
//! | 80 % | `soak_ok` | `tool.completed` |
//! | 6 % | `soak_fail` (returns an error) | `tool.failed` 1008 |
//! | 4 % | `soak_panic` (panics) | `tool.failed` 1009 |
//! | 4 % | `soak_ok` with an argument of the wrong type | `tool.failed` 1001 |
//! | 3 % | `soak_missing` (not registered) | `tool.failed` 1003 |
//! | 2 % | `soak_slow` (waits 50 ms, watching its signal; timeout 2 ms) | `tool.failed` 1010 |
//! | 1 % | `soak_stubborn` (waits 50 ms, no signal; timeout 2 ms) | `tool.failed` 1010 |
//!
//! One turn in 20 is cancelled as soon as it starts: its calls end as they may (1011 for those
//! not done). The last line is
//! `soak calls=… lost=… duplicated=… peak_rss_mb=… tasks_left=…`: calls without a terminal event,
//! calls with more than one, the peak resident set, and the Tokio tasks still alive once every
//! session is gone. It also prints the resident set after the first tenth of the calls and at the
//! end, to show memory does not grow with the call count.

use std::collections::HashMap;
use std::error::Error;
use std::time::{Duration, Instant};

use crate::measure::{PEAK_RSS, RSS, status_mb};
use pleach_core::{Runtime, SessionOptions, ToolCall, ToolContext, ToolError, ToolEvent};

/// Calls in one model step.
const CALLS_PER_TURN: usize = 100;
/// Turns before the session is replaced.
const TURNS_PER_SESSION: usize = 50;
/// How long the slow tools wait, and their timeout.
const SLOW: Duration = Duration::from_millis(50);
const TIMEOUT: Duration = Duration::from_millis(2);

/// Returns its input.
#[pleach_core::tool]
async fn soak_ok(n: u32) -> u32 {
    n
}

/// Always fails.
#[pleach_core::tool]
async fn soak_fail(n: u32) -> Result<u32, ToolError> {
    Err(ToolError::failed(format!("call {n} failed on purpose")))
}

/// Always panics.
#[pleach_core::tool]
async fn soak_panic(n: u32) -> u32 {
    panic!("call {n} panicked on purpose")
}

/// Waits, unless its signal fires first.
#[pleach_core::tool]
async fn soak_slow(ctx: ToolContext, n: u32) -> u32 {
    tokio::select! {
        () = ctx.signal.cancelled() => n,
        () = tokio::time::sleep(SLOW) => n,
    }
}

/// Waits, with no signal to watch.
#[pleach_core::tool]
async fn soak_stubborn(n: u32) -> u32 {
    tokio::time::sleep(SLOW).await;
    n
}

/// xorshift64*: a small seeded generator, so every run draws the same mix.
struct Draws(u64);

impl Draws {
    fn next_percent(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % 100
    }
}

fn call_for(id: usize, percent: u64) -> ToolCall {
    let n = id % 1_000_000;
    let (name, arguments) = match percent {
        0..80 => ("soak_ok", format!("{{\"n\":{n}}}")),
        80..86 => ("soak_fail", format!("{{\"n\":{n}}}")),
        86..90 => ("soak_panic", format!("{{\"n\":{n}}}")),
        90..94 => ("soak_ok", format!("{{\"n\":\"{n}\"}}")),
        94..97 => ("soak_missing", format!("{{\"n\":{n}}}")),
        97..99 => ("soak_slow", format!("{{\"n\":{n}}}")),
        _ => ("soak_stubborn", format!("{{\"n\":{n}}}")),
    };
    ToolCall::new(format!("c{id}"), name, arguments)
}

/// What the soak found.
#[derive(Debug, Default)]
struct Tally {
    calls: usize,
    lost: usize,
    duplicated: usize,
    results_missing: usize,
    by_end: HashMap<String, usize>,
}

/// Runs one turn (cancelled at once when `cancel`), reads its events to the end, and counts
/// each call's terminal events.
async fn one_turn(
    session: &pleach_core::Session,
    calls: Vec<ToolCall>,
    cancel: bool,
    tally: &mut Tally,
) {
    let ids: Vec<String> = calls.iter().map(|c| c.id().to_owned()).collect();
    let mut turn = session.run_turn(calls);
    if cancel {
        turn.cancel();
    }
    let mut ends: HashMap<String, usize> = HashMap::new();
    while let Some(event) = turn.events().recv().await {
        let end = match &event {
            ToolEvent::Completed { tool_call, .. } => {
                Some((tool_call.id(), "completed".to_owned()))
            }
            ToolEvent::Failed { tool_call, error } => {
                Some((tool_call.id(), error.code().as_u16().to_string()))
            }
            _ => None,
        };
        if let Some((id, end)) = end {
            *ends.entry(id.to_owned()).or_default() += 1;
            *tally.by_end.entry(end).or_default() += 1;
        }
    }
    let results = turn.finish().await;
    tally.calls += ids.len();
    tally.results_missing += ids.len().saturating_sub(results.len());
    for id in &ids {
        match ends.get(id).copied().unwrap_or(0) {
            0 => tally.lost += 1,
            1 => {}
            _ => tally.duplicated += 1,
        }
    }
}

/// Runs the soak and prints its summary line.
pub(crate) fn run(quick: bool) -> Result<(), Box<dyn Error>> {
    let total: usize = if quick { 100_000 } else { 1_000_000 };
    // 50,000 panics on purpose would flood stderr: the runtime reports them as 1009 anyway.
    std::panic::set_hook(Box::new(|_| {}));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let pleach = Runtime::builder()
        .tool_timeout("soak_slow", TIMEOUT)
        .tool_timeout("soak_stubborn", TIMEOUT)
        .cancel_grace(Duration::from_millis(1))
        .max_concurrency(64)
        .build()?;
    println!(
        "pleach-bench soak: {total} calls, {CALLS_PER_TURN} a turn, a new session every \
         {TURNS_PER_SESSION} turns{}",
        if quick { " (--quick)" } else { "" }
    );

    let started = Instant::now();
    let mut tally = Tally::default();
    let mut draws = Draws(0x9E37_79B9_7F4A_7C15);
    let mut rss_after_tenth = None;
    let turns = total.div_ceil(CALLS_PER_TURN);
    runtime.block_on(async {
        let mut session = None;
        for turn_index in 0..turns {
            if turn_index % TURNS_PER_SESSION == 0 {
                session = Some(pleach.create_session(SessionOptions::all())?);
            }
            let Some(session) = &session else {
                continue;
            };
            let first = turn_index * CALLS_PER_TURN;
            let calls: Vec<ToolCall> = (first..(first + CALLS_PER_TURN).min(total))
                .map(|id| call_for(id, draws.next_percent()))
                .collect();
            one_turn(session, calls, turn_index % 20 == 19, &mut tally).await;
            if rss_after_tenth.is_none() && tally.calls >= total / 10 {
                rss_after_tenth = Some(status_mb(RSS)?);
            }
        }
        drop(session);
        Ok::<(), Box<dyn Error>>(())
    })?;
    // Let whatever the dropped sessions left behind (a stubborn tool's task) wind down.
    let tasks_left = runtime.block_on(async {
        for _ in 0..100 {
            if tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
                == 0
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    });
    let _ = std::panic::take_hook();

    print_summary(&tally, started, rss_after_tenth, tasks_left)?;
    if tally.lost + tally.duplicated + tally.results_missing > 0 || tasks_left > 0 {
        return Err("a guarantee did not hold (see the summary line)".into());
    }
    Ok(())
}

fn print_summary(
    tally: &Tally,
    started: Instant,
    rss_after_tenth: Option<u64>,
    tasks_left: usize,
) -> Result<(), Box<dyn Error>> {
    let mut ends: Vec<(&String, &usize)> = tally.by_end.iter().collect();
    ends.sort();
    println!();
    println!("ends:");
    for (end, count) in ends {
        println!("  {end:>9}  {count}");
    }
    println!(
        "elapsed {:.1} s; results missing from Turn::finish: {}",
        started.elapsed().as_secs_f64(),
        tally.results_missing
    );
    println!(
        "resident set: {} MB after the first tenth of the calls, {} MB at the end",
        rss_after_tenth.unwrap_or(0),
        status_mb(RSS)?
    );
    let peak = status_mb(PEAK_RSS)?;
    println!(
        "soak calls={} lost={} duplicated={} peak_rss_mb={peak} tasks_left={tasks_left}",
        tally.calls, tally.lost, tally.duplicated
    );
    Ok(())
}
