//! `mcp-stdio`: `tools/call` over MCP's stdio transport, a server in a child process and rmcp's
//! client in this one, `add(a, b)` with `{"a":1,"b":2}`, [`IN_FLIGHT`] calls in flight.
//!
//! | column | the child process |
//! | --- | --- |
//! | `pleach` | `pleach_mcp::serve_stdio` of a runtime holding `add` (every call validated) |
//! | `rmcp` | rmcp's own server: `add` in a `#[tool_router]`, served on `rmcp::transport::stdio()` |
//!
//! Both children are this binary, started with a hidden argument ([`SERVE_ARG`]), on a
//! current-thread Tokio runtime (as the `pleach` CLI runs `pleach mcp`). A run starts a child,
//! completes the handshake, times N calls (each result checked), closes the child's stdin and
//! waits for it to exit; the child's user and system CPU time come from `/proc/PID/stat` once it
//! has exited and before it is reaped, so they cover its whole life (start-up and handshake
//! included, a few milliseconds) and nothing of this process. Runs alternate between the columns
//! and rotate who goes first, so load from elsewhere lands on both alike. Calls per second is the
//! median of the runs; CPU per call is the total over all runs divided by all calls (the clock
//! behind `/proc/PID/stat` ticks every 10 ms, so one run alone would be coarse).

mod child;
mod rmcp_server;

use std::error::Error;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{Peer, RoleClient};

pub(crate) use child::SERVE_ARG;

/// Requests the client keeps in flight.
const IN_FLIGHT: usize = 64;

/// The arguments of every call.
const ARGUMENTS: &str = r#"{"a":1,"b":2}"#;

/// Which server a child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Server {
    Pleach,
    Rmcp,
}

impl Server {
    const ALL: [Server; 2] = [Server::Pleach, Server::Rmcp];

    /// The column's name, and the child's argument after [`SERVE_ARG`].
    pub(crate) fn name(self) -> &'static str {
        match self {
            Server::Pleach => "pleach",
            Server::Rmcp => "rmcp",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Server::ALL.into_iter().find(|server| server.name() == name)
    }

    fn describe(self) -> &'static str {
        match self {
            Server::Pleach => "pleach_mcp::serve_stdio, `add` validated and run by a Session",
            Server::Rmcp => "rmcp #[tool_router] on rmcp::transport::stdio()",
        }
    }
}

/// One run: how long the calls took and what the child spent.
#[derive(Debug, Clone, Copy)]
struct Run {
    elapsed: Duration,
    cpu: child::Cpu,
}

/// Runs the `mcp-stdio` measurement and prints its table and summary line.
pub(crate) fn run(quick: bool) -> Result<(), Box<dyn Error>> {
    let (calls, rounds): (u32, usize) = if quick { (5_000, 3) } else { (20_000, 9) };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "pleach-bench mcp-stdio: {calls} tools/call of add(a, b) per run, {IN_FLIGHT} in flight, \
         rmcp's client in this process, the server a child process on stdin/stdout; {rounds} \
         runs per column after one warm-up run each, columns interleaved{}",
        if quick { " (--quick)" } else { "" },
    );
    let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    for round in 0..=rounds {
        for turn in 0..Server::ALL.len() {
            let index = (round + turn) % Server::ALL.len();
            let server = Server::ALL[index];
            let run = runtime.block_on(one_run(server, calls))?;
            if round > 0 {
                runs[index].push(run);
            }
        }
    }

    println!();
    println!(
        "{:<6}  {:>9}  {:>9}  {:>9}  {:>12}  {:>12}  the server",
        "column", "median/s", "min/s", "max/s", "user us/call", "sys us/call"
    );
    let mut columns = Vec::new();
    for (server, runs) in Server::ALL.into_iter().zip(&runs) {
        let column = Column::of(runs, calls);
        println!(
            "{:<6}  {:>9.0}  {:>9.0}  {:>9.0}  {:>12.1}  {:>12.1}  {}",
            server.name(),
            column.median_cps,
            column.min_cps,
            column.max_cps,
            column.user_us,
            column.sys_us,
            server.describe(),
        );
        columns.push(column);
    }
    let [pleach, rmcp] = [&columns[0], &columns[1]];
    println!();
    println!(
        "pleach/rmcp calls/s = {:.2}x; pleach system/user CPU = {:.2} (project target: <= 1)",
        pleach.median_cps / rmcp.median_cps,
        pleach.sys_us / pleach.user_us,
    );
    println!(
        "mcp_stdio calls={calls} pleach_cps={:.0} rmcp_cps={:.0} pleach_user_us={:.1} \
         pleach_sys_us={:.1} rmcp_user_us={:.1} rmcp_sys_us={:.1}",
        pleach.median_cps,
        rmcp.median_cps,
        pleach.user_us,
        pleach.sys_us,
        rmcp.user_us,
        rmcp.sys_us,
    );
    Ok(())
}

/// A column's numbers over its runs.
#[derive(Debug)]
struct Column {
    median_cps: f64,
    min_cps: f64,
    max_cps: f64,
    user_us: f64,
    sys_us: f64,
}

impl Column {
    fn of(runs: &[Run], calls: u32) -> Self {
        let mut cps: Vec<f64> = runs
            .iter()
            .map(|run| f64::from(calls) / run.elapsed.as_secs_f64())
            .collect();
        cps.sort_by(f64::total_cmp);
        let all_calls = f64::from(calls) * f64::from(u32::try_from(runs.len()).unwrap_or(u32::MAX));
        let per_call = |total: Duration| total.as_secs_f64() * 1e6 / all_calls;
        Column {
            median_cps: cps.get(cps.len() / 2).copied().unwrap_or(f64::NAN),
            min_cps: cps.first().copied().unwrap_or(f64::NAN),
            max_cps: cps.last().copied().unwrap_or(f64::NAN),
            user_us: per_call(runs.iter().map(|run| run.cpu.user).sum()),
            sys_us: per_call(runs.iter().map(|run| run.cpu.system).sum()),
        }
    }
}

/// Starts `server` in a child, makes `calls` calls with [`IN_FLIGHT`] in flight, ends the child.
async fn one_run(server: Server, calls: u32) -> Result<Run, Box<dyn Error>> {
    let mut child = child::Child::start(server)?;
    let (stdout, stdin) = child.pipes()?;
    let client = ().serve((stdout, stdin)).await?;
    let arguments: JsonObject = serde_json::from_str(ARGUMENTS)?;
    let request = CallToolRequestParams::new("add").with_arguments(arguments);
    // One call first: the answer is right, and the server has done its lazy set-up.
    check(&call(client.peer(), request.clone()).await?)?;

    let started = Instant::now();
    let mut results = futures::stream::iter(0..calls)
        .map(|_| call(client.peer(), request.clone()))
        .buffer_unordered(IN_FLIGHT);
    while let Some(result) = results.next().await {
        check(&result?)?;
    }
    let elapsed = started.elapsed();
    drop(results);

    // Closing the client closes the child's stdin: MCP's stdio shutdown.
    client.cancel().await?;
    let cpu = child.exited_cpu().await?;
    Ok(Run { elapsed, cpu })
}

async fn call(
    peer: &Peer<RoleClient>,
    request: CallToolRequestParams,
) -> Result<CallToolResult, Box<dyn Error>> {
    Ok(peer.call_tool(request).await?)
}

/// Both servers answer `add(1, 2)` with a result whose first text is `3`.
fn check(result: &CallToolResult) -> Result<(), Box<dyn Error>> {
    let text = result
        .content
        .first()
        .and_then(|content| content.as_text())
        .map(|text| text.text.as_str());
    if result.is_error == Some(true) || text != Some("3") {
        return Err(format!("add(1, 2) gave {result:?}").into());
    }
    Ok(())
}

/// What a child started with [`SERVE_ARG`] runs: `server` on its stdin and stdout until the
/// client closes stdin.
pub(crate) fn serve(server: Server) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match server {
        Server::Pleach => {
            let registry = pleach_core::ToolRegistryBuilder::new()
                .register(crate::dispatch::add::definition())
                .build()?;
            let tools = pleach_core::Runtime::builder().registry(registry).build()?;
            runtime.block_on(pleach_mcp::serve_stdio(tools))?;
        }
        Server::Rmcp => runtime.block_on(rmcp_server::serve())?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_takes_the_median_rate_and_the_mean_cpu() {
        let run = |millis, user_ms, system_ms| Run {
            elapsed: Duration::from_millis(millis),
            cpu: child::Cpu {
                user: Duration::from_millis(user_ms),
                system: Duration::from_millis(system_ms),
            },
        };
        let column = Column::of(
            &[run(1000, 300, 100), run(500, 100, 100), run(250, 200, 100)],
            1000,
        );
        assert!((column.median_cps - 2000.0).abs() < 1e-9);
        assert!((column.min_cps - 1000.0).abs() < 1e-9);
        assert!((column.max_cps - 4000.0).abs() < 1e-9);
        // 600 ms of user time over 3,000 calls.
        assert!((column.user_us - 200.0).abs() < 1e-9);
        assert!((column.sys_us - 100.0).abs() < 1e-9);
    }

    #[test]
    fn names_round_trip() {
        for server in Server::ALL {
            assert_eq!(Server::from_name(server.name()), Some(server));
        }
        assert_eq!(Server::from_name("node"), None);
    }
}
