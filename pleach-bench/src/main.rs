//! `pleach-bench`: what pleach's runtime costs, measured in one process beside a no-framework
//! baseline and beside other Rust tool runtimes (rmcp, rig) running the same tool.
//!
//! ```text
//! cargo run --release -p pleach-bench -- dispatch [--quick] [--profile]
//! cargo run --release -p pleach-bench -- batch [--quick]
//! cargo run --release -p pleach-bench -- stream [--quick]
//! cargo run --release -p pleach-bench -- soak [--quick]
//! cargo run --release -p pleach-bench -- compile [--quick] [--tools N] [--keep]
//! cargo run --release -p pleach-bench -- mcp-http [--quick]
//! cargo run --release -p pleach-bench -- mcp-stdio [--quick]
//! cargo run --release -p pleach-bench -- durable [--quick] --temporal HOST:PORT
//! cargo run --release -p pleach-bench -- tool-search [--quick] [--bfcl DIR] [--explain CATEGORY]
//! cargo run --release -p pleach-bench -- media [--quick]
//! ```
//!
//! Each subcommand prints a short table for people and ends with one `key=value` line for
//! scripts (`stream`: one line per size). See `docs/performance.md` for what each measures and the
//! numbers it gave, and `docs/reliability.md` for `soak`.

mod batch;
mod compile;
mod dispatch;
mod durable;
mod mcp_http;
mod mcp_stdio;
mod measure;
mod media;
mod soak;
mod stream;
mod tool_search;

use std::process::ExitCode;

const USAGE: &str = "\
usage: pleach-bench <dispatch|batch|stream|soak|compile|mcp-http|mcp-stdio|durable|tool-search|media> [--quick] [--profile] [--tools N] [--keep] [--temporal HOST:PORT] [--bfcl DIR] [--explain CATEGORY]

subcommands:
  dispatch   per-call cost of one tool call `add(a, b)` with {\"a\":1,\"b\":2}:
             raw serde + direct call, pleach `Session::dispatch`, rmcp `ToolRouter::call`,
             rig `ErasedTool::execute`
  batch      one step of 100,000 no-op calls `read_noop(n)` under parallel batching, cap 64:
             bare `buffer_unordered(64)`, pleach `Session::run_turn` with its events read
  stream     one call's arguments (2,000, 20,000 and 200,000 bytes) in ~10-byte deltas: one
             serde_json parse of the whole text, pleach's StreamAssembler (partial value read
             every 100 deltas), and re-parsing the whole buffer on every delta
  soak       1,000,000 calls (--quick: 100,000) through sessions with random failures, panics,
             invalid and unknown calls, timeouts and cancelled turns; checks that every call
             ended in exactly one terminal event
  compile    a generated crate of 200 `#[tool]` fns beside the same tools in an rmcp
             `#[tool_router]`, dev profile, dependencies built first: the crate's clean build,
             the build after one tool's body is edited, and `cargo check` after such an edit
             (several minutes: each run builds both crates' dependencies first)
  mcp-http   `tools/call add(1, 2)` round trips over MCP Streamable HTTP on loopback with 1 and
             16 clients at once: pleach's HTTP server beside rmcp's own serving the same tool
             from a `#[tool_router]` (no validation); then `pleach mcp`'s cold start on stdio to
             its first `tools/list` answer (needs the `pleach` binary beside this one)
  mcp-stdio  20,000 tools/call of add(a, b) per run (--quick: 5,000), 64 in flight, from rmcp's
             client to a server in a child process over stdin/stdout: pleach's stdio server
             beside rmcp's own, runs interleaved; calls/s and the server's CPU per call
  durable    one conversation (a step of 1, then 100, parallel calls, then the answer) on a
             loopback model: in process (`Session::run_agent`) beside a durable conversation on
             the Temporal server `--temporal` names, with a worker in this process; 5 of each
             (--quick: 1), medians
  tool-search  pleach's tool search on BFCL's catalog (1,437 functions, bfcl-eval from PyPI,
             fetched once into the cache by `pip download`): recall@1 and @5 per category beside
             plain BM25, then build time and query latency over 1,000 and 10,000 tools
  media      a 1 MB image from a tool's ToolOutput through `Session::call` and the conversation
             to the request body's bytes in each provider format, beside base64-encoding the
             1 MB alone; 301 runs per row (--quick: 31), medians

options:
  --quick    fewer batches (rounds, for batch and stream): a rough number in a few seconds
             (stream: about 20 s, most of it one quadratic re-parse of 200,000 bytes;
             compile: 50 tools, one run of each measurement; mcp-stdio: 3 runs of 5,000 calls)
  --profile  dispatch only: also time the parts of pleach's pipeline reachable from outside
  --tools N  compile only: N tools per crate (default 200, --quick 50)
  --keep     compile only: leave the generated crates and their target dirs in the temp dir
             (for `cargo rustc -- -Z time-passes` and the like)
  --temporal HOST:PORT  durable only: the Temporal server (`temporal server start-dev`)
  --bfcl DIR tool-search only: an unpacked `bfcl_eval/data` directory instead of the download
  --explain CATEGORY  tool-search only: each question of CATEGORY (e.g. live_parallel) with its
             ground truth and the first five of pleach and of plain BM25, then that category's
             line; nothing is timed
  -h, --help print this help

The last line of output is machine-readable, e.g.
  dispatch raw_ns=<median> floor_ns=<median> pleach_ns=<median> rmcp_ns=<median> rig_ns=<median> pleach_floor_ratio=<x>
  batch calls=100000 bare_ms=<median> pleach_ms=<median> peak_rss_mb=<n>
  stream size=<bytes> final_parse_us=<median> pleach_us=<median> reparse_us=<median> (per size)
  compile tools=<n> pleach_clean_s=<median> rmcp_clean_s=<median> pleach_edit_s=<median>
    rmcp_edit_s=<median> pleach_check_edit_s=<median> rmcp_check_edit_s=<median> (one line)
  mcp_http clients=16 pleach_rps=<median> rmcp_rps=<median> pleach_p99_ms=<p99> rmcp_p99_ms=<p99>
    (after `mcp_http_image pleach_rps=<median> rmcp_rps=<median>`: a 1 MiB image, 16 clients)
  mcp_stdio calls=<n> pleach_cps=<median> rmcp_cps=<median> pleach_user_us=<mean> pleach_sys_us=<mean>
    rmcp_user_us=<mean> rmcp_sys_us=<mean>
  durable calls=100 inproc_ms=<median> temporal_ms=<median> per_call_ms=<temporal_ms/calls>
  tool_search multiple_recall_at_5=<r> live_multiple_recall_at_5=<r> build_ms_1000=<ms>
    p99_us_1000=<us> build_ms_10000=<ms> p99_us_10000=<us> (after one line per category and size)
  media bytes=1048576 pleach_us=<slowest format's median> encode_only_us=<median>";

/// A hidden command for counting instructions: its arguments after its name.
type Counted = fn(&[String]) -> Result<(), Box<dyn std::error::Error>>;

/// The arguments `args`, as the process gets them (for the hidden commands' tests).
#[cfg(test)]
fn owned_args(args: &[&str]) -> Vec<String> {
    args.iter().map(|&arg| arg.to_owned()).collect()
}

/// Checks that `run` refuses each of `refused` with its usage message (for the hidden commands'
/// tests).
#[cfg(test)]
fn assert_refused(run: Counted, refused: &[&[&str]]) {
    for args in refused {
        let error = run(&owned_args(args)).expect_err("refused");
        assert!(
            error.to_string().starts_with("usage: "),
            "{args:?}: {error}"
        );
    }
}

/// Exit code for a command line we cannot run: bad arguments, or a subcommand not built yet.
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subcommand {
    Dispatch,
    Batch,
    Stream,
    Soak,
    Compile,
    McpHttp,
    McpStdio,
    Durable,
    ToolSearch,
    Media,
}

impl Subcommand {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "dispatch" => Some(Subcommand::Dispatch),
            "batch" => Some(Subcommand::Batch),
            "stream" => Some(Subcommand::Stream),
            "soak" => Some(Subcommand::Soak),
            "compile" => Some(Subcommand::Compile),
            "mcp-http" => Some(Subcommand::McpHttp),
            "mcp-stdio" => Some(Subcommand::McpStdio),
            "durable" => Some(Subcommand::Durable),
            "tool-search" => Some(Subcommand::ToolSearch),
            "media" => Some(Subcommand::Media),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Subcommand::Dispatch => "dispatch",
            Subcommand::Batch => "batch",
            Subcommand::Stream => "stream",
            Subcommand::Soak => "soak",
            Subcommand::Compile => "compile",
            Subcommand::McpHttp => "mcp-http",
            Subcommand::McpStdio => "mcp-stdio",
            Subcommand::Durable => "durable",
            Subcommand::ToolSearch => "tool-search",
            Subcommand::Media => "media",
        }
    }
}

/// A parsed command line.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help,
    Run {
        subcommand: Subcommand,
        options: Options,
    },
}

/// What every subcommand may be asked for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Options {
    quick: bool,
    profile: bool,
    /// `--tools N` (compile).
    tools: Option<u32>,
    /// `--keep` (compile).
    keep: bool,
    /// `--temporal HOST:PORT` (durable).
    temporal: Option<String>,
    /// `--bfcl DIR` (tool-search).
    bfcl: Option<String>,
    /// `--explain CATEGORY` (tool-search).
    explain: Option<String>,
}

/// The value of `--tools`: a positive count.
fn parse_tools(value: Option<String>) -> Result<u32, String> {
    let value = value.ok_or("`--tools` needs a number of tools")?;
    match value.parse::<u32>() {
        Ok(count) if count > 0 => Ok(count),
        _ => Err(format!(
            "`--tools {value}`: expected a number of tools, at least 1"
        )),
    }
}

/// Parses the arguments after the program name; `Err` holds the message for the user.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut subcommand = None;
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--quick" => options.quick = true,
            "--profile" => options.profile = true,
            "--keep" => options.keep = true,
            "--tools" => options.tools = Some(parse_tools(args.next())?),
            "--temporal" => {
                options.temporal = Some(args.next().ok_or("`--temporal` needs HOST:PORT")?);
            }
            "--bfcl" => {
                options.bfcl = Some(args.next().ok_or("`--bfcl` needs a directory")?);
            }
            "--explain" => {
                options.explain = Some(args.next().ok_or("`--explain` needs a category")?);
            }
            flag if flag.starts_with("--tools=") => {
                options.tools = Some(parse_tools(Some(flag["--tools=".len()..].to_owned()))?);
            }
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
            name => match (subcommand, Subcommand::from_name(name)) {
                (None, Some(parsed)) => subcommand = Some(parsed),
                (None, None) => {
                    return Err(format!(
                        "unknown subcommand `{name}`; expected one of `dispatch`, `batch`, \
                         `stream`, `soak`, `compile`, `mcp-http`, `mcp-stdio`, `durable`, \
                         `tool-search`, `media`"
                    ));
                }
                (Some(first), _) => {
                    return Err(format!(
                        "unexpected argument `{name}` after subcommand `{}`",
                        first.name()
                    ));
                }
            },
        }
    }
    let subcommand = subcommand.ok_or("missing subcommand")?;
    if options.profile && subcommand != Subcommand::Dispatch {
        return Err("`--profile` is for `dispatch` only".to_owned());
    }
    if (options.tools.is_some() || options.keep) && subcommand != Subcommand::Compile {
        return Err("`--tools` and `--keep` are for `compile` only".to_owned());
    }
    if options.temporal.is_some() && subcommand != Subcommand::Durable {
        return Err("`--temporal` is for `durable` only".to_owned());
    }
    if (options.bfcl.is_some() || options.explain.is_some()) && subcommand != Subcommand::ToolSearch
    {
        return Err("`--bfcl` and `--explain` are for `tool-search` only".to_owned());
    }
    Ok(Command::Run {
        subcommand,
        options,
    })
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some(mcp_stdio::SERVE_ARG) {
        return serve_mcp_stdio(args.nth(1).as_deref());
    }
    // The commands for counting instructions under callgrind.
    let counted: [(&str, Counted); 2] = [
        (mcp_http::ROUND_TRIPS_ARG, mcp_http::round_trips),
        (dispatch::BATCH_ARG, dispatch::one_batch),
    ];
    if let Some(&(name, run)) = args
        .peek()
        .and_then(|first| counted.iter().find(|(name, _)| name == first))
    {
        let rest: Vec<String> = args.skip(1).collect();
        return match run(&rest) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("pleach-bench {name}: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let command = match parse_args(args) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("pleach-bench: {message}\n\n{USAGE}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match command {
        Command::Help => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Command::Run {
            subcommand: Subcommand::Dispatch,
            options,
        } => exit_code(
            Subcommand::Dispatch,
            dispatch::run(options.quick, options.profile),
        ),
        Command::Run {
            subcommand: Subcommand::Batch,
            options,
        } => exit_code(Subcommand::Batch, batch::run(options.quick)),
        Command::Run {
            subcommand: Subcommand::Stream,
            options,
        } => exit_code(Subcommand::Stream, stream::run(options.quick)),
        Command::Run {
            subcommand: Subcommand::Soak,
            options,
        } => exit_code(Subcommand::Soak, soak::run(options.quick)),
        Command::Run {
            subcommand: Subcommand::Compile,
            options,
        } => exit_code(
            Subcommand::Compile,
            compile::run(options.quick, options.tools, options.keep),
        ),
        Command::Run {
            subcommand: Subcommand::McpHttp,
            options,
        } => exit_code(Subcommand::McpHttp, mcp_http::run(options.quick)),
        Command::Run {
            subcommand: Subcommand::McpStdio,
            options,
        } => exit_code(Subcommand::McpStdio, mcp_stdio::run(options.quick)),
        Command::Run {
            subcommand: Subcommand::Durable,
            options,
        } => exit_code(
            Subcommand::Durable,
            durable::run(options.quick, options.temporal.as_deref()),
        ),
        Command::Run {
            subcommand: Subcommand::ToolSearch,
            options,
        } => exit_code(
            Subcommand::ToolSearch,
            tool_search::run(
                options.quick,
                options.bfcl.as_deref().map(std::path::Path::new),
                options.explain.as_deref(),
            ),
        ),
        Command::Run {
            subcommand: Subcommand::Media,
            options,
        } => exit_code(Subcommand::Media, media::run(options.quick)),
    }
}

/// `mcp-stdio`'s server child: serves the named server on stdin and stdout.
fn serve_mcp_stdio(server: Option<&str>) -> ExitCode {
    let Some(server) = server.and_then(mcp_stdio::Server::from_name) else {
        eprintln!(
            "pleach-bench: `{}` takes `pleach` or `rmcp`",
            mcp_stdio::SERVE_ARG
        );
        return ExitCode::from(EXIT_USAGE);
    };
    match mcp_stdio::serve(server) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!(
                "pleach-bench {} {}: {error}",
                mcp_stdio::SERVE_ARG,
                server.name()
            );
            ExitCode::FAILURE
        }
    }
}

/// The process's exit code after `subcommand` ran: failure, with the error printed, if it failed.
fn exit_code(subcommand: Subcommand, result: Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("pleach-bench {}: {error}", subcommand.name());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|&arg| arg.to_owned()))
    }

    /// The message for a command line that must be refused.
    fn refusal(args: &[&str]) -> String {
        parse(args).expect_err("a refused command line")
    }

    #[test]
    fn reads_a_subcommand_and_its_flags_in_any_order() {
        assert_eq!(
            parse(&["--quick", "dispatch", "--profile"]),
            Ok(Command::Run {
                subcommand: Subcommand::Dispatch,
                options: Options {
                    quick: true,
                    profile: true,
                    ..Options::default()
                },
            })
        );
        assert_eq!(
            parse(&["mcp-stdio", "--quick"]),
            Ok(Command::Run {
                subcommand: Subcommand::McpStdio,
                options: Options {
                    quick: true,
                    ..Options::default()
                },
            })
        );
        assert_eq!(
            parse(&["media", "--quick"]),
            Ok(Command::Run {
                subcommand: Subcommand::Media,
                options: Options {
                    quick: true,
                    ..Options::default()
                },
            })
        );
        assert_eq!(
            parse(&["soak"]),
            Ok(Command::Run {
                subcommand: Subcommand::Soak,
                options: Options::default(),
            })
        );
    }

    #[test]
    fn reads_the_tool_count_in_either_spelling() {
        let compile = |tools| {
            Ok(Command::Run {
                subcommand: Subcommand::Compile,
                options: Options {
                    tools: Some(tools),
                    keep: true,
                    ..Options::default()
                },
            })
        };
        assert_eq!(parse(&["compile", "--tools", "20", "--keep"]), compile(20));
        assert_eq!(parse(&["--keep", "--tools=7", "compile"]), compile(7));
        assert!(refusal(&["compile", "--tools"]).contains("needs"));
        assert!(refusal(&["compile", "--tools", "0"]).contains("at least 1"));
    }

    #[test]
    fn reads_the_category_to_explain() {
        assert_eq!(
            parse(&["tool-search", "--explain", "live_parallel", "--quick"]),
            Ok(Command::Run {
                subcommand: Subcommand::ToolSearch,
                options: Options {
                    quick: true,
                    explain: Some("live_parallel".to_owned()),
                    ..Options::default()
                },
            })
        );
    }

    #[test]
    fn help_wins_over_everything_else() {
        assert_eq!(parse(&["dispatch", "--help"]), Ok(Command::Help));
        assert_eq!(parse(&["-h"]), Ok(Command::Help));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert!(refusal(&[]).contains("missing subcommand"));
        assert!(refusal(&["dispach"]).contains("unknown subcommand"));
        assert!(refusal(&["dispatch", "--fast"]).contains("`--fast`"));
        assert!(refusal(&["dispatch", "batch"]).contains("after subcommand `dispatch`"));
        assert!(refusal(&["batch", "--profile"]).contains("`dispatch` only"));
        assert!(refusal(&["soak", "--tools", "3"]).contains("`compile` only"));
        assert!(refusal(&["mcp-stdio", "--keep"]).contains("`compile` only"));
        assert!(refusal(&["media", "--explain", "multiple"]).contains("`tool-search` only"));
        assert!(refusal(&["tool-search", "--explain"]).contains("needs a category"));
    }
}
