//! `pleach schema`: tool definitions as a provider takes them, the registry's or a file's.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use clap::builder::PossibleValue;
use pleach_core::providers::{ProfileProblem, mcp_tools};
use pleach_core::{ToolDefinition, UnifiedToolDefinition};
use serde_json::{Value, json};

use crate::definitions::read_definitions;
use crate::provider::Provider;
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
    provider: Option<Target>,
    /// The provider format's strict mode (the schema transformed for it, `strict: true`).
    #[arg(long, requires = "provider")]
    strict: bool,
    /// Converts the tools of a file instead of the registry's: a JSON list in any format
    /// `validate --tools` reads (OpenAI's function tools among them); every tool, as a JSON
    /// array in the file's order, unless a NAME picks one.
    #[arg(long, value_name = "DEFS.json")]
    tools: Option<PathBuf>,
}

/// The formats `pleach schema` prints: a model API's, or MCP's `tools/list` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A model API's tool definition.
    Model(Provider),
    /// MCP `tools/list` entry.
    Mcp,
    /// A model API's strict definition, as spelled before `--strict`: `openai-strict`,
    /// `anthropic-strict` (hidden; kept so scripts go on working).
    Strict(Provider),
}

impl ValueEnum for Target {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Target::Model(Provider::OpenaiChat),
            Target::Model(Provider::OpenaiResponses),
            Target::Model(Provider::Anthropic),
            Target::Model(Provider::Gemini),
            Target::Mcp,
            Target::Strict(Provider::OpenaiChat),
            Target::Strict(Provider::Anthropic),
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            Target::Model(provider) => provider.to_possible_value(),
            Target::Mcp => Some(PossibleValue::new("mcp").help("MCP `tools/list` entry")),
            Target::Strict(Provider::OpenaiChat) => {
                Some(PossibleValue::new("openai-strict").hide(true))
            }
            Target::Strict(Provider::Anthropic) => {
                Some(PossibleValue::new("anthropic-strict").hide(true))
            }
            Target::Strict(_) => None,
        }
    }
}

/// What a tool is printed as.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// pleach's own: name, description, input and output schemas.
    Own,
    /// A model API's definition, strict or not.
    Model { provider: Provider, strict: bool },
    /// MCP's `tools/list` entry.
    Mcp,
}

impl Form {
    /// The form `--provider` and `--strict` ask for, or why they cannot go together.
    fn of(target: Option<Target>, strict: bool) -> Result<Form, UsageError> {
        let form = match target {
            None => Form::Own,
            Some(Target::Mcp) if strict => {
                return Err(UsageError(
                    "`--strict` is a model API's strict mode; MCP has none".into(),
                ));
            }
            Some(Target::Mcp) => Form::Mcp,
            Some(Target::Model(provider)) => Form::Model { provider, strict },
            Some(Target::Strict(provider)) => Form::Model {
                provider,
                strict: true,
            },
        };
        if let Form::Model {
            provider,
            strict: true,
        } = form
            && provider.format().strict_profile().is_none()
        {
            let name = provider
                .to_possible_value()
                .map_or_else(String::new, |v| v.get_name().to_owned());
            return Err(UsageError(format!(
                "`{name}` has no strict mode; leave out `--strict`"
            )));
        }
        Ok(form)
    }
}

/// Prints the tools asked for, or every problem that keeps the format from expressing them.
pub(crate) fn run(args: Args) -> Outcome {
    let Args {
        name,
        all,
        provider,
        strict,
        tools,
    } = args;
    let form = Form::of(provider, strict)?;
    match tools {
        Some(path) => of_file(&path, name.as_deref(), form),
        None => of_registry(name.as_deref(), all, form),
    }
}

/// `pleach schema NAME|--all`: the registry's tools.
fn of_registry(name: Option<&str>, all: bool, form: Form) -> Outcome {
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
    print_schemas(&tools, all, form)
}

/// `pleach schema --tools DEFS.json`: the tools of a file, every one or the one named.
fn of_file(path: &Path, name: Option<&str>, form: Form) -> Outcome {
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
    print_schemas(&chosen, name.is_none(), form)
}

/// Prints `tools` in `form` (a JSON array if `as_list`), or, when the format cannot express one
/// of them, every problem of every tool on stderr and nothing on stdout (exit 1).
fn print_schemas(tools: &[&UnifiedToolDefinition], as_list: bool, form: Form) -> Outcome {
    let mut described = Vec::new();
    let mut problems = Vec::new();
    for tool in tools {
        match describe(tool, form) {
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

/// One tool in one form; the problems when the format cannot express its schema.
fn describe(tool: &UnifiedToolDefinition, form: Form) -> Result<Value, Vec<String>> {
    let definition: &ToolDefinition = tool.definition();
    let problems = |found: Vec<ProfileProblem>| {
        found
            .into_iter()
            .map(|p| format!("at `{}`: {} ({})", p.path, p.message, p.keyword))
            .collect::<Vec<_>>()
    };
    match form {
        Form::Own => {
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
        Form::Model {
            provider,
            strict: false,
        } => provider.format().definition(definition).map_err(problems),
        Form::Model {
            provider,
            strict: true,
        } => provider
            .format()
            .strict_definition(definition)
            .map_err(problems),
        Form::Mcp => mcp_tools::definition(tool)
            .map(|mut listed| {
                if let Some(tier) = tool.safety_tier() {
                    listed["annotations"] = tier.mcp_annotations();
                }
                listed
            })
            .map_err(problems),
    }
}
