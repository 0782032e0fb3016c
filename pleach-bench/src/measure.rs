//! The timing harness: warm-up rounds, then measured rounds in which every contender runs one
//! batch of calls; the result is each contender's per-batch nanoseconds per call.
//!
//! Rounds interleave the contenders (and rotate who goes first) so that a burst of load from
//! elsewhere on the machine lands on all of them alike instead of on whoever ran at that moment.
//! The median of the batches is the headline number: robust to the odd slow batch.

use std::time::Duration;

use tokio::runtime::Runtime;

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Rounds run and thrown away first (caches, allocator, branch predictors, lazy statics).
    pub(crate) warmup_rounds: u32,
    /// Rounds measured.
    pub(crate) rounds: u32,
    /// Calls in one batch: one `Instant` pair per batch, so the clock's own cost is negligible.
    pub(crate) batch_calls: u32,
}

impl Plan {
    /// The default: 10 warm-up rounds, then 201 batches of 10,000 calls per contender.
    pub(crate) fn full() -> Self {
        Plan {
            warmup_rounds: 10,
            rounds: 201,
            batch_calls: 10_000,
        }
    }

    /// `--quick`: 2 warm-up rounds, then 21 batches of 10,000 calls per contender.
    pub(crate) fn quick() -> Self {
        Plan {
            warmup_rounds: 2,
            rounds: 21,
            batch_calls: 10_000,
        }
    }
}

/// Something to time.
pub(crate) trait Contender {
    /// The row's name in the table.
    fn label(&self) -> &'static str;

    /// What one call includes, in a few words for the table.
    fn describe(&self) -> &'static str;

    /// Makes one call and checks its result; run once, before anything is timed.
    fn verify(&mut self, runtime: &Runtime) -> Result<(), String>;

    /// Runs `calls` calls on `runtime` and returns how long they took. The clock runs inside the
    /// runtime's `block_on`, so entering the runtime is not part of the time.
    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration;
}

/// One contender's batches, as nanoseconds per call.
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    pub(crate) label: &'static str,
    /// Per-batch ns/call, sorted ascending.
    batches: Vec<f64>,
}

impl Summary {
    /// The median batch.
    pub(crate) fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    /// The fastest batch.
    pub(crate) fn min(&self) -> f64 {
        self.quantile(0.0)
    }

    /// The batch that 90% of batches were at least as fast as.
    pub(crate) fn p90(&self) -> f64 {
        self.quantile(0.9)
    }

    /// Nearest-rank quantile of the sorted batches (`NaN` when nothing was measured).
    fn quantile(&self, q: f64) -> f64 {
        if self.batches.is_empty() {
            return f64::NAN;
        }
        let last = self.batches.len() - 1;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )] // a batch count is small and `q` is in 0..=1
        let index = ((last as f64) * q).round() as usize;
        self.batches[index.min(last)]
    }
}

/// Runs `plan` over `contenders` and returns one summary per contender, in their order.
pub(crate) fn run(
    plan: Plan,
    runtime: &Runtime,
    contenders: &mut [Box<dyn Contender + '_>],
) -> Vec<Summary> {
    let count = contenders.len();
    let mut batches: Vec<Vec<f64>> = vec![Vec::with_capacity(plan.rounds as usize); count];
    for round in 0..plan.warmup_rounds + plan.rounds {
        let measured = round >= plan.warmup_rounds;
        for offset in 0..count {
            let index = (round as usize + offset) % count;
            let elapsed = contenders[index].time_batch(runtime, plan.batch_calls);
            if measured {
                batches[index].push(ns_per_call(elapsed, plan.batch_calls));
            }
        }
    }
    contenders
        .iter()
        .zip(batches)
        .map(|(contender, mut batches)| {
            batches.sort_by(f64::total_cmp);
            Summary {
                label: contender.label(),
                batches,
            }
        })
        .collect()
}

fn ns_per_call(elapsed: Duration, calls: u32) -> f64 {
    #[allow(clippy::cast_precision_loss)] // a batch takes far less than 2^52 ns
    let nanos = elapsed.as_nanos() as f64;
    nanos / f64::from(calls.max(1))
}

/// The width of a table's first column: the longest label, at least as wide as its header.
pub(crate) fn label_width(summaries: &[Summary]) -> usize {
    summaries
        .iter()
        .map(|summary| summary.label.len())
        .max()
        .unwrap_or(0)
        .max("column".len())
}

/// The `/proc/self/status` field of the peak resident set.
pub(crate) const PEAK_RSS: &str = "VmHWM:";
/// The `/proc/self/status` field of the current resident set.
pub(crate) const RSS: &str = "VmRSS:";

/// A `/proc/self/status` memory field (`PEAK_RSS`, `RSS`), in whole megabytes.
pub(crate) fn status_mb(field: &str) -> Result<u64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kilobytes = status_kb(&status, field)
        .ok_or_else(|| format!("no `{field}` line in /proc/self/status"))?;
    Ok(kilobytes.div_ceil(1024))
}

/// The kilobytes on the `field` line of a `/proc/<pid>/status` text.
fn status_kb(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|number| number.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_peak_resident_set() {
        let status =
            "Name:\tpleach-bench\nVmPeak:\t  300000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(status_kb(status, PEAK_RSS), Some(51_200));
        assert_eq!(status_kb("VmRSS:\t1 kB\n", PEAK_RSS), None);
    }

    #[test]
    fn quantiles_pick_from_the_sorted_batches() {
        let summary = Summary {
            label: "x",
            batches: vec![1.0, 2.0, 3.0, 4.0, 100.0],
        };
        assert!((summary.median() - 3.0).abs() < f64::EPSILON);
        assert!((summary.min() - 1.0).abs() < f64::EPSILON);
        assert!((summary.p90() - 100.0).abs() < f64::EPSILON);
    }

    #[test]
    fn every_contender_runs_every_round() {
        struct Counter(u32);
        impl Contender for Counter {
            fn label(&self) -> &'static str {
                "counter"
            }
            fn describe(&self) -> &'static str {
                "counts its batches"
            }
            fn verify(&mut self, _: &Runtime) -> Result<(), String> {
                Ok(())
            }
            fn time_batch(&mut self, _: &Runtime, calls: u32) -> Duration {
                self.0 += 1;
                Duration::from_nanos(u64::from(calls) * 2)
            }
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let plan = Plan {
            warmup_rounds: 2,
            rounds: 3,
            batch_calls: 10,
        };
        let (mut a, mut b) = (Counter(0), Counter(0));
        let mut contenders: Vec<Box<dyn Contender + '_>> = vec![Box::new(&mut a), Box::new(&mut b)];
        let summaries = run(plan, &runtime, &mut contenders);
        drop(contenders);
        assert_eq!((a.0, b.0), (5, 5));
        assert_eq!(summaries[0].batches, [2.0, 2.0, 2.0]);
    }

    impl<C: Contender> Contender for &mut C {
        fn label(&self) -> &'static str {
            (**self).label()
        }
        fn describe(&self) -> &'static str {
            (**self).describe()
        }
        fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
            (**self).verify(runtime)
        }
        fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
            (**self).time_batch(runtime, calls)
        }
    }
}
