//! `pleach list`: the registry (the catalog and the remote servers' tools), a row a tool.

use std::process::ExitCode;

use pleach_core::BatchingStrategy;
use serde_json::{Value, json};

use crate::host::HostArgs;
use crate::remote::RemoteArgs;
use crate::usage::Outcome;

/// What `pleach list` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Prints a JSON array instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Prints the registry: a table, or a JSON array with `--json`.
pub(crate) async fn run(args: Args) -> Outcome {
    let runtime = HostArgs::from(args.remote).runtime().await?;
    let rows: Vec<Value> = runtime
        .registry()
        .tools()
        .iter()
        .map(|tool| {
            let strategy = runtime
                .batching_strategy(tool.name())
                .map(|s| strategy_name(&s));
            json!({
                "name": tool.name(),
                "title": tool.display_name(),
                "tier": tool.safety_tier().map(pleach_core::SafetyTier::as_str),
                "batching": strategy,
                "idempotent": runtime.is_idempotent(tool.name()),
                "description": tool.definition().description(),
            })
        })
        .collect();
    if args.json {
        outln!("{}", Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    let cell = |row: &Value, key: &str| row[key].as_str().unwrap_or("-").to_owned();
    let width = |key: &str, header: &str| {
        rows.iter()
            .map(|row| cell(row, key).chars().count())
            .chain([header.len()])
            .max()
            .unwrap_or(0)
    };
    let (name_w, tier_w, batch_w) = (
        width("name", "NAME"),
        width("tier", "TIER"),
        width("batching", "BATCHING"),
    );
    outln!(
        "{:name_w$}  {:tier_w$}  {:batch_w$}  DESCRIPTION",
        "NAME",
        "TIER",
        "BATCHING"
    );
    for row in &rows {
        let description = cell(row, "description");
        let first_line = description.lines().next().unwrap_or_default();
        outln!(
            "{:name_w$}  {:tier_w$}  {:batch_w$}  {first_line}",
            cell(row, "name"),
            cell(row, "tier"),
            cell(row, "batching"),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A batching strategy as `list` prints it.
fn strategy_name(strategy: &BatchingStrategy) -> String {
    match strategy {
        BatchingStrategy::Serial => "serial".to_owned(),
        BatchingStrategy::Parallel => "parallel".to_owned(),
        BatchingStrategy::Chunked { key } => format!("chunked({key})"),
        _ => "other".to_owned(),
    }
}
