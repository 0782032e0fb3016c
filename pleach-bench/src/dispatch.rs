//! `dispatch`: the cost of one tool call, `add(a: i64, b: i64) -> i64` with the arguments text
//! `{"a":1,"b":2}`, from arguments text to a JSON result, through four paths in one process:
//!
//! | column | what one call is |
//! | --- | --- |
//! | `raw` | `serde_json::from_str` into an args struct, `add(a, b).await`, `serde_json::to_value` |
//! | `pleach` | `Session::dispatch` of a `ToolCall`: the whole pipeline, with its two events sent into a channel |
//! | `rmcp` | the arguments parsed into a `JsonObject`, a `ToolCallContext`, `ToolRouter::call` |
//! | `rig` | `ErasedTool::execute` (rig's object-safe tool call) with the arguments as a `String` |
//!
//! Every path runs on the same current-thread Tokio runtime, inside one `block_on` per batch, and
//! awaits its entry point directly: no spawn, no runtime entry per call. Each module says exactly
//! what its path includes. Each path's result is checked once (it must be 3) before any timing.
//!
//! All columns share one build of `serde_json`, and rig-core turns on its `preserve_order`
//! feature, which makes every JSON object an `IndexMap`. Building with `--no-default-features`
//! leaves rig out (its column prints `na`) to measure the rest with sorted-map objects.

mod one_batch;
mod owned_events_floor;
mod pleach_session;
mod raw_serde;
#[cfg(feature = "rig")]
mod rig_erased;
pub(crate) mod rmcp_router;

use std::error::Error;

use crate::measure::{self, Contender, Plan, Summary};

pub(crate) use one_batch::{ARG as BATCH_ARG, run as one_batch};

/// The arguments text every path is given.
const ARGUMENTS: &str = r#"{"a":1,"b":2}"#;

/// Adds two integers (`mcp-stdio`'s pleach server serves it too: a second `add` would be a
/// duplicate tool name in this binary's registry).
#[pleach_core::tool]
pub(crate) async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Runs the `dispatch` measurement and prints its table, ratios and summary line.
pub(crate) fn run(quick: bool, profile: bool) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let plan = if quick { Plan::quick() } else { Plan::full() };

    let mut contenders: Vec<Box<dyn Contender>> = vec![
        Box::new(raw_serde::RawCall),
        Box::new(pleach_session::SessionDispatch::new()?),
        Box::new(rmcp_router::RouterCall::new(&runtime)),
        // The floor under pleach's column (what any runtime whose events own the call pays),
        // always measured: the summary reports pleach against it.
        Box::new(owned_events_floor::OwnedEventsFloor::new(false)),
    ];
    #[cfg(feature = "rig")]
    contenders.extend([
        Box::new(rig_erased::ErasedExecute::new()) as Box<dyn Contender>,
        Box::new(rig_erased::HandlerServe::new()),
    ]);
    if profile {
        contenders.extend(pleach_session::profile_parts()?);
        contenders.push(Box::new(owned_events_floor::OwnedEventsFloor::new(true)));
    }
    for contender in &mut contenders {
        contender
            .verify(&runtime)
            .map_err(|problem| format!("`{}` gave a wrong result: {problem}", contender.label()))?;
    }

    println!(
        "pleach-bench dispatch: add(a, b) with {ARGUMENTS}; per column {} batches of {} calls \
         after {} warm-up rounds, columns interleaved{}",
        plan.rounds,
        plan.batch_calls,
        plan.warmup_rounds,
        if quick { " (--quick)" } else { "" },
    );
    println!(
        "serde_json objects in this build: {}",
        serde_json_object_kind()
    );
    let summaries = measure::run(plan, &runtime, &mut contenders);
    print_table(&summaries, &contenders);

    let median = |label: &str| -> Result<f64, Box<dyn Error>> {
        summaries
            .iter()
            .find(|summary| summary.label == label)
            .map(Summary::median)
            .ok_or_else(|| format!("no column `{label}`").into())
    };
    let raw = median(raw_serde::LABEL)?;
    let pleach = median(pleach_session::LABEL)?;
    let rmcp = median(rmcp_router::LABEL)?;
    let floor = median(owned_events_floor::LABEL)?;
    #[cfg(feature = "rig")]
    let rig = format!("{:.1}", median(rig_erased::LABEL)?);
    #[cfg(not(feature = "rig"))]
    let rig = "na".to_owned();
    println!();
    println!(
        "pleach/raw  = {:.2}x  (project target: <= 3x)",
        pleach / raw
    );
    println!(
        "pleach/floor = {:.2}x  (project target: <= 1.5x)",
        pleach / floor
    );
    println!(
        "rmcp/pleach = {:.2}x  (project target: >= 3x)",
        rmcp / pleach
    );
    println!(
        "dispatch raw_ns={raw:.1} floor_ns={floor:.1} pleach_ns={pleach:.1} rmcp_ns={rmcp:.1} \
         rig_ns={rig} pleach_floor_ratio={:.2}",
        pleach / floor
    );
    Ok(())
}

/// What a JSON object is in this build, for the header of a run: `IndexMap` when rig-core turned
/// on `preserve_order`, else `BTreeMap`.
pub(crate) fn serde_json_object_kind() -> &'static str {
    if serde_json_preserves_order() {
        "IndexMap (serde_json `preserve_order` is on: rig-core turns it on)"
    } else {
        "BTreeMap (serde_json `preserve_order` is off)"
    }
}

/// Whether `serde_json` keeps object keys in insertion order (an `IndexMap`) rather than sorted (a
/// `BTreeMap`): a feature any crate in the build can turn on, and one that changes every column's
/// cost of building a JSON object.
fn serde_json_preserves_order() -> bool {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(r#"{"b":0,"a":0}"#)
        .ok()
        .and_then(|map| map.keys().next().cloned())
        .is_some_and(|first| first == "b")
}

fn print_table(summaries: &[Summary], contenders: &[Box<dyn Contender>]) {
    let width = crate::measure::label_width(summaries);
    println!();
    println!(
        "{:<width$}  {:>10}  {:>10}  {:>10}  one call",
        "column", "median ns", "min ns", "p90 ns"
    );
    for (summary, contender) in summaries.iter().zip(contenders) {
        println!(
            "{:<width$}  {:>10.1}  {:>10.1}  {:>10.1}  {}",
            summary.label,
            summary.median(),
            summary.min(),
            summary.p90(),
            contender.describe(),
        );
    }
}
