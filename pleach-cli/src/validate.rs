//! `pleach validate`: calls checked against tool definitions, one verdict a line.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

use pleach_core::{ToolDefinition, ValidationError, ValidationResult};
use serde_json::value::RawValue;

use crate::definitions::read_definitions;
use crate::usage::{Outcome, UsageError, read_file};

/// What `pleach validate` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Tool definitions: a JSON list in any format `pleach schema --all` prints (default: the
    /// registry).
    #[arg(long, value_name = "DEFS.json")]
    tools: Option<PathBuf>,
    /// Calls, one JSON object a line: `{"name", "arguments"}` (default: stdin).
    #[arg(long, value_name = "CALLS.jsonl")]
    calls: Option<PathBuf>,
}

/// Where the definitions come from: a file's, or the registry's.
enum Definitions {
    File(HashMap<String, ToolDefinition>),
    ToolRegistry,
}

impl Definitions {
    fn get(&self, name: &str) -> Option<&ToolDefinition> {
        match self {
            Definitions::File(tools) => tools.get(name),
            Definitions::ToolRegistry => pleach_core::tool_registry().definition(name),
        }
    }
}

/// Prints a verdict for each call; exit 1 when any call is invalid.
pub(crate) fn run(args: Args) -> Outcome {
    let Args { tools, calls } = args;
    let calls = calls.as_deref();
    let definitions = match tools.as_deref() {
        Some(path) => Definitions::File(
            read_definitions(path)?
                .into_iter()
                .map(|tool| (tool.name().to_owned(), tool))
                .collect(),
        ),
        None => Definitions::ToolRegistry,
    };
    let input: Box<dyn BufRead> = match calls {
        Some(path) => Box::new(std::io::Cursor::new(read_file(path)?)),
        None => Box::new(std::io::stdin().lock()),
    };
    let source = calls.map_or_else(|| "stdin".to_owned(), |p| format!("`{}`", p.display()));
    let mut all_valid = true;
    for (index, line) in input.lines().enumerate() {
        let line = line.map_err(|error| UsageError(format!("cannot read {source}: {error}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{source} line {}", index + 1);
        let (name, arguments) =
            read_call(&line).map_err(|message| UsageError(format!("{at}: {message}")))?;
        let verdict = match definitions.get(&name) {
            Some(definition) => definition.validate_arguments(&arguments),
            None => ValidationResult::invalid(vec![ValidationError {
                path: String::new(),
                keyword: "unknownTool".to_owned(),
                message: format!("no tool named `{name}` among the definitions"),
            }]),
        };
        all_valid &= verdict.valid;
        // A reader that went away ends the process quietly; any other write failure is an error.
        outln!("{}", serde_json::to_string(&verdict).unwrap_or_default());
    }
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A call line: the tool's name and its arguments, kept as the line wrote them.
#[derive(serde::Deserialize)]
struct CallLine<'a> {
    name: String,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// A call line's name and its arguments as text: a JSON object as written (a repeated key stays
/// visible to the check), a string as it holds.
fn read_call(line: &str) -> Result<(String, String), String> {
    let call: CallLine<'_> = serde_json::from_str(line).map_err(|error| {
        format!("a call is one JSON object {{\"name\": …, \"arguments\": …}}: {error}")
    })?;
    let arguments = match call.arguments.map(RawValue::get) {
        None | Some("null") => "{}".to_owned(),
        Some(text) if text.starts_with('"') => serde_json::from_str::<String>(text)
            .map_err(|error| format!("the arguments string is not readable: {error}"))?,
        Some(text) => text.to_owned(),
    };
    Ok((call.name, arguments))
}
