//! `pleach-bench __dispatch-batch raw|pleach|rmcp|floor|rig CALLS`: one batch of one `dispatch`
//! column, for counting instructions. The column's call is made and checked as the bench checks
//! it, then `CALLS` calls run as in one of the bench's batches (pleach's channel drained every
//! 1,000 calls). Two runs under callgrind differ only by their calls:
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/pleach-bench __dispatch-batch pleach 200000   # then 100000
//! ```

use std::error::Error;

use crate::measure::Contender;

/// The hidden first argument that runs this instead of a subcommand.
pub(crate) const ARG: &str = "__dispatch-batch";

/// Runs the batch `args` (the arguments after [`ARG`]) asks for.
pub(crate) fn run(args: &[String]) -> Result<(), Box<dyn Error>> {
    let usage = || format!("usage: pleach-bench {ARG} raw|pleach|rmcp|floor|rig CALLS");
    let [column, calls] = args else {
        return Err(usage().into());
    };
    let calls: u32 = calls.parse().map_err(|_| usage())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let mut contender: Box<dyn Contender> = match column.as_str() {
        "raw" => Box::new(super::raw_serde::RawCall),
        "pleach" => Box::new(super::pleach_session::SessionDispatch::new()?),
        "rmcp" => Box::new(super::rmcp_router::RouterCall::new(&runtime)),
        "floor" => Box::new(super::owned_events_floor::OwnedEventsFloor::new(false)),
        #[cfg(feature = "rig")]
        "rig" => Box::new(super::rig_erased::ErasedExecute::new()),
        #[cfg(not(feature = "rig"))]
        "rig" => return Err("this build leaves rig out (`--no-default-features`)".into()),
        _ => return Err(usage().into()),
    };
    contender
        .verify(&runtime)
        .map_err(|problem| format!("`{column}` gave a wrong result: {problem}"))?;
    std::hint::black_box(contender.time_batch(&runtime, calls));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::run;

    #[test]
    fn refuses_what_it_cannot_run() {
        crate::assert_refused(run, &[&[], &["pleach"], &["axum", "3"], &["raw", "three"]]);
    }

    #[test]
    fn runs_a_batch_of_every_column() {
        for column in ["raw", "pleach", "rmcp", "floor"] {
            run(&crate::owned_args(&[column, "1500"])).expect(column);
        }
    }
}
