//! `pleach-bench`: what pleach's runtime costs, measured in one process beside a no-framework
//! baseline and beside other Rust tool runtimes (rmcp, rig) running the same tool.
//!
//! ```text
//! cargo run --release -p pleach-bench -- dispatch [--quick] [--profile]
//! cargo run --release -p pleach-bench -- batch [--quick]
//! cargo run --release -p pleach-bench -- stream [--quick]
//! cargo run --release -p pleach-bench -- soak [--quick]
//! ```
//!
//! Each subcommand prints a short table for people and ends with one `key=value` line for
//! scripts (`stream`: one line per size). See `docs/performance.md` for what each measures and the
//! numbers it gave, and `docs/reliability.md` for `soak`.

mod batch;
mod dispatch;
mod measure;
mod soak;
mod stream;

use std::process::ExitCode;

const USAGE: &str = "\
usage: pleach-bench <dispatch|batch|stream|soak> [--quick] [--profile]

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

options:
  --quick    fewer batches (rounds, for batch and stream): a rough number in a few seconds
             (stream: about 20 s, most of it one quadratic re-parse of 200,000 bytes)
  --profile  dispatch only: also time the parts of pleach's pipeline reachable from outside
  -h, --help print this help

The last line of output is machine-readable, e.g.
  dispatch raw_ns=<median> floor_ns=<median> pleach_ns=<median> rmcp_ns=<median> rig_ns=<median> pleach_floor_ratio=<x>
  batch calls=100000 bare_ms=<median> pleach_ms=<median> peak_rss_mb=<n>
  stream size=<bytes> final_parse_us=<median> pleach_us=<median> reparse_us=<median> (per size)";

/// Exit code for a command line we cannot run: bad arguments, or a subcommand not built yet.
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subcommand {
    Dispatch,
    Batch,
    Stream,
    Soak,
}

impl Subcommand {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "dispatch" => Some(Subcommand::Dispatch),
            "batch" => Some(Subcommand::Batch),
            "stream" => Some(Subcommand::Stream),
            "soak" => Some(Subcommand::Soak),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Subcommand::Dispatch => "dispatch",
            Subcommand::Batch => "batch",
            Subcommand::Stream => "stream",
            Subcommand::Soak => "soak",
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
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Options {
    quick: bool,
    profile: bool,
}

/// Parses the arguments after the program name; `Err` holds the message for the user.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut subcommand = None;
    let mut options = Options::default();
    for arg in args {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--quick" => options.quick = true,
            "--profile" => options.profile = true,
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
            name => match (subcommand, Subcommand::from_name(name)) {
                (None, Some(parsed)) => subcommand = Some(parsed),
                (None, None) => {
                    return Err(format!(
                        "unknown subcommand `{name}`; expected one of `dispatch`, `batch`, \
                         `stream`, `soak`"
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
    match subcommand {
        Some(subcommand) => Ok(Command::Run {
            subcommand,
            options,
        }),
        None => Err("missing subcommand".to_owned()),
    }
}

fn main() -> ExitCode {
    let command = match parse_args(std::env::args().skip(1)) {
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
            subcommand: Subcommand::Batch | Subcommand::Stream | Subcommand::Soak,
            options: Options { profile: true, .. },
        } => {
            eprintln!("pleach-bench: `--profile` is for `dispatch` only\n\n{USAGE}");
            ExitCode::from(EXIT_USAGE)
        }
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

    #[test]
    fn reads_a_subcommand_and_its_flags_in_any_order() {
        assert_eq!(
            parse(&["--quick", "dispatch", "--profile"]),
            Ok(Command::Run {
                subcommand: Subcommand::Dispatch,
                options: Options {
                    quick: true,
                    profile: true,
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
    fn help_wins_over_everything_else() {
        assert_eq!(parse(&["dispatch", "--help"]), Ok(Command::Help));
        assert_eq!(parse(&["-h"]), Ok(Command::Help));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert!(parse(&[]).unwrap_err().contains("missing subcommand"));
        assert!(
            parse(&["dispach"])
                .unwrap_err()
                .contains("unknown subcommand")
        );
        assert!(
            parse(&["dispatch", "--fast"])
                .unwrap_err()
                .contains("`--fast`")
        );
        assert!(
            parse(&["dispatch", "batch"])
                .unwrap_err()
                .contains("after subcommand `dispatch`")
        );
    }
}
