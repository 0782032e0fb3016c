//! **bare**: the floor, the same no-op futures with no framework at all.
//!
//! One batch: `futures::stream::iter(0..100_000).map(read_noop).buffer_unordered(64)` collected
//! into a `Vec<u32>` — the very `async fn` the pleach column runs, called directly with its
//! integer, at most 64 futures in flight, all polled inside the one task that awaits the stream.
//! No arguments text, no parse, no lookup, no validation, no events, no results in call order, no
//! conversation.
//!
//! [`SpawnEach`] is context, not a baseline: the same futures, each spawned as its own Tokio task
//! on a `JoinSet` holding at most 64, results placed by index.

use std::hint::black_box;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

use super::{CALLS, CAP, read_noop};
use crate::measure::Contender;

/// The column's name.
pub(super) const LABEL: &str = "bare";

/// `buffer_unordered(64)` over the tool's futures.
pub(super) struct BufferUnordered;

async fn buffered(calls: u32) -> Vec<u32> {
    futures::stream::iter(0..calls)
        .map(|n| read_noop(black_box(n)))
        .buffer_unordered(CAP)
        .collect()
        .await
}

/// One Tokio task per call, at most 64 at once.
pub(super) struct SpawnEach;

async fn spawned(calls: u32) -> Vec<u32> {
    let mut results = vec![0; calls as usize];
    let mut tasks = JoinSet::new();
    let mut place = |joined: Option<Result<(u32, u32), tokio::task::JoinError>>| {
        if let Some(Ok((index, value))) = joined {
            results[index as usize] = value;
        }
    };
    for n in 0..calls {
        if tasks.len() >= CAP {
            place(tasks.join_next().await);
        }
        tasks.spawn(async move { (n, read_noop(black_box(n)).await) });
    }
    while let Some(joined) = tasks.join_next().await {
        place(Some(joined));
    }
    results
}

/// Every call's result is its own input (in any order for `buffer_unordered`).
fn check(mut results: Vec<u32>, sort: bool) -> Result<(), String> {
    if sort {
        results.sort_unstable();
    }
    if results.len() != CALLS as usize {
        return Err(format!("{} results for {CALLS} calls", results.len()));
    }
    match results.iter().zip(0..).find(|(value, n)| **value != *n) {
        Some((value, n)) => Err(format!("call {n} returned {value}")),
        None => Ok(()),
    }
}

/// Runs `batch` on `runtime` with the clock inside `block_on`; its output is dropped after the
/// clock stops.
pub(super) fn time<F: Future>(runtime: &Runtime, batch: F) -> Duration {
    runtime.block_on(async {
        let start = Instant::now();
        let results = black_box(batch.await);
        let elapsed = start.elapsed();
        drop(results);
        elapsed
    })
}

impl Contender for BufferUnordered {
    fn label(&self) -> &'static str {
        LABEL
    }

    fn describe(&self) -> &'static str {
        "stream::iter(0..n).map(read_noop).buffer_unordered(64).collect::<Vec<u32>>()"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        check(runtime.block_on(buffered(CALLS)), true)
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        time(runtime, buffered(calls))
    }
}

impl Contender for SpawnEach {
    fn label(&self) -> &'static str {
        "bare (spawn)"
    }

    fn describe(&self) -> &'static str {
        "tokio JoinSet::spawn per call, at most 64 in flight, results by index"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        check(runtime.block_on(spawned(CALLS)), false)
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        time(runtime, spawned(calls))
    }
}
