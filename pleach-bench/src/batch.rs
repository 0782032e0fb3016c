//! `batch`: one model step of 100,000 no-op tool calls under parallel batching with a cap of 64,
//! from the step's calls to every result back, through two paths in one process:
//!
//! | column | what one batch is |
//! | --- | --- |
//! | `bare` | the tool's `async fn` futures through `futures::stream::iter(..).buffer_unordered(64)` |
//! | `pleach` | `Session::run_turn` of 100,000 `ToolCall`s, its events read to the end, `Turn::finish` |
//!
//! Two more rows are context and not in the summary line: `bare (spawn)`, the same futures, each
//! spawned as its own Tokio task, at most 64 in flight (the cost pleach's scheduler avoids by
//! running calls inside the step's own task); and `floor`, the step's events, results and result
//! messages with no pipeline or schedule (what any design with these events and messages pays).
//!
//! Every path runs on the same current-thread Tokio runtime (the workspace's tokio has no
//! `rt-multi-thread`), inside one `block_on` per batch with the clock inside it. Each module says
//! exactly what its path includes. Each path's results are checked once (100,000 of them, in call
//! order, each its own input) before any timing.

mod bare_buffered;
mod event_floor;
mod pleach_turn;

use std::error::Error;

use crate::measure::{self, Contender, Plan, Summary};

/// Calls in one model step.
const CALLS: u32 = 100_000;

/// The concurrency cap both columns run under.
const CAP: usize = 64;

/// Returns its input.
#[pleach_core::tool]
async fn read_noop(n: u32) -> u32 {
    n
}

/// The plan: one batch is one step of [`CALLS`] calls.
fn plan(quick: bool) -> Plan {
    if quick {
        Plan {
            warmup_rounds: 1,
            rounds: 3,
            batch_calls: CALLS,
        }
    } else {
        Plan {
            warmup_rounds: 2,
            rounds: 11,
            batch_calls: CALLS,
        }
    }
}

/// Runs the `batch` measurement and prints its table, ratio and summary line.
pub(crate) fn run(quick: bool) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let plan = plan(quick);

    let mut contenders: Vec<Box<dyn Contender>> = vec![
        Box::new(bare_buffered::BufferUnordered),
        Box::new(pleach_turn::TurnOfCalls::new()?),
        Box::new(bare_buffered::SpawnEach),
        Box::new(event_floor::EventFloor),
    ];
    for contender in &mut contenders {
        contender
            .verify(&runtime)
            .map_err(|problem| format!("`{}` gave a wrong result: {problem}", contender.label()))?;
    }

    println!(
        "pleach-bench batch: one step of {CALLS} calls to read_noop(n: u32) -> u32, cap {CAP}, \
         current-thread Tokio runtime; per column {} batches after {} warm-up rounds, columns \
         interleaved{}",
        plan.rounds,
        plan.warmup_rounds,
        if quick { " (--quick)" } else { "" },
    );
    let summaries = measure::run(plan, &runtime, &mut contenders);
    print_table(&summaries, &contenders);

    let median_ms = |label: &str| -> Result<f64, Box<dyn Error>> {
        summaries
            .iter()
            .find(|summary| summary.label == label)
            .map(|summary| batch_ms(summary.median()))
            .ok_or_else(|| format!("no column `{label}`").into())
    };
    let bare = median_ms(bare_buffered::LABEL)?;
    let pleach = median_ms(pleach_turn::LABEL)?;
    let peak_rss_mb = crate::measure::status_mb(crate::measure::PEAK_RSS)?;
    println!();
    println!(
        "pleach/bare = {:.2}x  (project target: <= 4x)",
        pleach / bare
    );
    println!(
        "batch calls={CALLS} bare_ms={bare:.1} pleach_ms={pleach:.1} peak_rss_mb={peak_rss_mb}"
    );
    Ok(())
}

/// A batch's milliseconds from its nanoseconds per call.
fn batch_ms(ns_per_call: f64) -> f64 {
    ns_per_call * f64::from(CALLS) / 1e6
}

fn print_table(summaries: &[Summary], contenders: &[Box<dyn Contender>]) {
    let width = crate::measure::label_width(summaries);
    println!();
    println!(
        "{:<width$}  {:>10}  {:>10}  {:>10}  {:>8}  one batch",
        "column", "median ms", "min ms", "p90 ms", "ns/call"
    );
    for (summary, contender) in summaries.iter().zip(contenders) {
        println!(
            "{:<width$}  {:>10.1}  {:>10.1}  {:>10.1}  {:>8.0}  {}",
            summary.label,
            batch_ms(summary.median()),
            batch_ms(summary.min()),
            batch_ms(summary.p90()),
            summary.median(),
            contender.describe(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_ns_per_call_to_batch_ms() {
        assert!((batch_ms(90.0) - 9.0).abs() < 1e-9);
    }
}
