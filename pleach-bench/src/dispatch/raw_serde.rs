//! **raw**: the floor, what any host has to do for this call with no framework at all.
//!
//! One call: `serde_json::from_str` of the arguments text into a `#[derive(Deserialize)]` struct,
//! `add(a, b).await` (the very `async fn` the pleach column runs, awaited in place: one poll,
//! which is ready at once), and `serde_json::to_value` of the `i64`. No lookup by name, no
//! validation beyond what serde's derive checks, no events, no cancellation or timeout.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use tokio::runtime::Runtime;

use super::{ARGUMENTS, add};
use crate::measure::Contender;

/// The column's name.
pub(super) const LABEL: &str = "raw";

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Parse, call, serialize: nothing else.
pub(super) struct RawCall;

/// The raw call: parse, call, serialize (also the middle of `--profile`'s event floor row).
pub(super) async fn call(arguments: &str) -> Result<Value, serde_json::Error> {
    let args: AddArgs = serde_json::from_str(arguments)?;
    let sum = add(args.a, args.b).await;
    serde_json::to_value(sum)
}

impl Contender for RawCall {
    fn label(&self) -> &'static str {
        LABEL
    }

    fn describe(&self) -> &'static str {
        "from_str into a struct + add(a, b).await + to_value"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        match runtime.block_on(call(ARGUMENTS)) {
            Ok(value) if value == 3 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for _ in 0..calls {
                black_box(call(black_box(ARGUMENTS)).await.ok());
            }
            start.elapsed()
        })
    }
}
