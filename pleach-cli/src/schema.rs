//! `pleach schema`: tool definitions as a provider takes them, the registry's or a file's.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pleach_core::providers::{anthropic, gemini, mcp_tools, openai_chat};
use pleach_core::{ToolDefinition, UnifiedToolDefinition};
use serde_json::{Value, json};

use crate::definitions::read_definitions;
use crate::usage::{Outcome, UsageError};

/// What `pleach schema` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The tool's name.
    #[arg(required_unless_present_any = ["all", "tools"], conflicts_with = "all")]
    name: Option<String>,
    /// Every tool, as a JSON array.
    #[arg(long)]
    all: bool,
    /// The provider format; without it, pleach's own: name, description, input and output schemas.
    #[arg(long, value_enum)]
    provider: Option<Provider>,
    /// Converts the tools of a file instead of the registry's: a JSON list in any format
    /// `validate --tools` reads (OpenAI's function tools among them); every tool, as a JSON
    /// array in the file's order, unless a NAME picks one.
    #[arg(long, value_name = "DEFS.json")]
    tools: Option<PathBuf>,
}

/// The formats `pleach schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Provider {
    /// OpenAI function tool (Chat Completions).
    Openai,
    /// OpenAI function tool with `strict: true` (the schema transformed for strict mode).
    OpenaiStrict,
    /// Anthropic Messages tool.
    Anthropic,
    /// Anthropic Messages tool with `strict: true` (the schema transformed for strict tool use).
    AnthropicStrict,
    /// Gemini function declaration.
    Gemini,
    /// MCP `tools/list` entry.
    Mcp,
}

/// Prints the tools asked for, or every problem that keeps the format from expressing them.
pub(crate) fn run(args: Args) -> Outcome {
    let Args {
        name,
        all,
        provider,
        tools,
    } = args;
    match tools {
        Some(path) => of_file(&path, name.as_deref(), provider),
        None => of_registry(name.as_deref(), all, provider),
    }
}

/// `pleach schema NAME|--all`: the registry's tools.
fn of_registry(name: Option<&str>, all: bool, provider: Option<Provider>) -> Outcome {
    let registry = pleach_core::tool_registry();
    let tools: Vec<&UnifiedToolDefinition> = if all {
        registry.tools().iter().collect()
    } else {
        let name = name.unwrap_or_default();
        let Some(tool) = registry.get(name) else {
            let names: Vec<&str> = registry.names().collect();
            return Err(UsageError(format!(
                "no tool named `{name}`; the registry has: {}",
                names.join(", ")
            )));
        };
        vec![tool]
    };
    print_schemas(&tools, all, provider)
}

/// `pleach schema --tools DEFS.json`: the tools of a file, every one or the one named.
fn of_file(path: &Path, name: Option<&str>, provider: Option<Provider>) -> Outcome {
    let tools: Vec<UnifiedToolDefinition> = read_definitions(path)?
        .into_iter()
        .map(UnifiedToolDefinition::from)
        .collect();
    let chosen: Vec<&UnifiedToolDefinition> = match name {
        None => tools.iter().collect(),
        Some(name) => {
            let Some(tool) = tools.iter().find(|tool| tool.name() == name) else {
                let names: Vec<&str> = tools.iter().map(UnifiedToolDefinition::name).collect();
                return Err(UsageError(format!(
                    "no tool named `{name}` in `{}`; it has: {}",
                    path.display(),
                    names.join(", ")
                )));
            };
            vec![tool]
        }
    };
    print_schemas(&chosen, name.is_none(), provider)
}

/// Prints `tools` in `provider`'s format (a JSON array if `as_list`), or, when the format cannot
/// express one of them, every problem of every tool on stderr and nothing on stdout (exit 1).
fn print_schemas(
    tools: &[&UnifiedToolDefinition],
    as_list: bool,
    provider: Option<Provider>,
) -> Outcome {
    let mut described = Vec::new();
    let mut problems = Vec::new();
    for tool in tools {
        match describe(tool, provider) {
            Ok(value) => described.push(value),
            Err(found) => {
                problems.extend(found.into_iter().map(|p| format!("{}: {p}", tool.name())));
            }
        }
    }
    if !problems.is_empty() {
        for problem in problems {
            eprintln!("error: {problem}");
        }
        return Ok(ExitCode::FAILURE);
    }
    let out = if as_list {
        Value::Array(described)
    } else {
        described.pop().unwrap_or_default()
    };
    match serde_json::to_string_pretty(&out) {
        Ok(text) => outln!("{text}"),
        Err(error) => return Err(UsageError(format!("cannot print the schema: {error}"))),
    }
    Ok(ExitCode::SUCCESS)
}

/// One tool in one format; the problems when the format cannot express its schema.
fn describe(
    tool: &UnifiedToolDefinition,
    provider: Option<Provider>,
) -> Result<Value, Vec<String>> {
    let definition: &ToolDefinition = tool.definition();
    let problems = |found: Vec<pleach_core::providers::ProfileProblem>| {
        found
            .into_iter()
            .map(|p| format!("at `{}`: {} ({})", p.path, p.message, p.keyword))
            .collect::<Vec<_>>()
    };
    match provider {
        None => {
            let mut out = json!({
                "name": tool.name(),
                "description": definition.description(),
                "inputSchema": definition.input_schema(),
            });
            if let Some(output) = definition.output_schema() {
                out["outputSchema"] = output.clone();
            }
            Ok(out)
        }
        Some(Provider::Openai) => Ok(openai_chat::definition(definition)),
        Some(Provider::OpenaiStrict) => {
            openai_chat::strict_definition(definition).map_err(problems)
        }
        Some(Provider::Anthropic) => anthropic::definition(definition).map_err(problems),
        Some(Provider::AnthropicStrict) => {
            anthropic::strict_definition(definition).map_err(problems)
        }
        Some(Provider::Gemini) => gemini::definition(definition).map_err(problems),
        Some(Provider::Mcp) => mcp_tools::definition(tool)
            .map(|mut listed| {
                if let Some(tier) = tool.safety_tier() {
                    listed["annotations"] = tier.mcp_annotations();
                }
                listed
            })
            .map_err(problems),
    }
}
