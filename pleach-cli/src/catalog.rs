//! The catalog as a runtime configured from flags, and the commands that read it: `list`,
//! `schema`, `call`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use pleach_core::providers::{anthropic, gemini, mcp_tools, openai_chat};
use pleach_core::{
    BatchingStrategy, Runtime, SessionOptions, ToolCall, ToolDefinition, UnifiedToolDefinition,
};
use serde_json::{Value, json};

use crate::remote::RemoteArgs;
use crate::render::Renderer;
use crate::usage::{Outcome, UsageError};

/// The formats `pleach schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SchemaProvider {
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

/// What the host lets the tools reach.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct HostArgs {
    /// The folder the `fs_*` tools and `shell_exec` work under (nothing outside it).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// A program `shell_exec` may run (repeatable; needs `--root`).
    #[arg(long = "allow-program", value_name = "P", requires = "root")]
    allow_program: Vec<String>,
    /// The runtime's default timeout per call, and the shell's, in milliseconds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    #[command(flatten)]
    remote: RemoteArgs,
}

impl HostArgs {
    /// The runtime over the catalog and the remote servers' tools, with the tools'
    /// configuration from the flags.
    pub(crate) async fn runtime(&self) -> Result<Runtime, UsageError> {
        self.runtime_builder()
            .await?
            .build()
            .map_err(|error| UsageError(format!("cannot build the runtime: {error}")))
    }

    /// The runtime's builder, configured from the flags (the remote servers connected, their
    /// tools added), for a command to add to.
    pub(crate) async fn runtime_builder(&self) -> Result<pleach_core::RuntimeBuilder, UsageError> {
        let mut builder = self.catalog_builder()?;
        for server in self.remote.connect().await? {
            builder = builder.plugin(server.plugin());
        }
        Ok(builder)
    }

    /// The catalog's part of [`runtime_builder`](HostArgs::runtime_builder).
    fn catalog_builder(&self) -> Result<pleach_core::RuntimeBuilder, UsageError> {
        // The scratchpad's notes can outlive a process (`pleach mcp --http --session-store`).
        let mut builder =
            Runtime::builder().persist_state::<pleach_tools::scratchpad::Scratchpad>();
        let timeout = self.timeout_ms.map(Duration::from_millis);
        if let Some(timeout) = timeout {
            builder = builder.default_timeout(timeout);
        }
        if let Some(root) = &self.root {
            let fs = pleach_tools::fs::FsConfig::new(root).map_err(|error| {
                UsageError(format!(
                    "cannot open the root `{}`: {error}",
                    root.display()
                ))
            })?;
            builder = builder.provide(fs);
            builder = builder.provide(self.shell_config(root, timeout)?);
        }
        if let Some(meter) = crate::telemetry::meter() {
            builder = builder.meter(meter);
        }
        Ok(builder)
    }

    fn shell_config(
        &self,
        root: &std::path::Path,
        timeout: Option<Duration>,
    ) -> Result<pleach_tools::shell::ShellConfig, UsageError> {
        let mut shell = pleach_tools::shell::ShellConfig::new(root).map_err(|error| {
            UsageError(format!(
                "cannot open the root `{}`: {error}",
                root.display()
            ))
        })?;
        for program in &self.allow_program {
            shell = shell
                .allow_program(program)
                .map_err(|error| UsageError(format!("cannot allow `{program}`: {error}")))?;
        }
        if let Some(timeout) = timeout {
            shell = shell.timeout(timeout);
        }
        Ok(shell)
    }
}

/// A batching strategy as `list` prints it.
pub(crate) fn strategy_name(strategy: &BatchingStrategy) -> String {
    match strategy {
        BatchingStrategy::Serial => "serial".to_owned(),
        BatchingStrategy::Parallel => "parallel".to_owned(),
        BatchingStrategy::Chunked { key } => format!("chunked({key})"),
        _ => "other".to_owned(),
    }
}

/// `pleach list`.
pub(crate) async fn list(as_json: bool, remote: RemoteArgs) -> Outcome {
    let runtime = HostArgs {
        root: None,
        allow_program: Vec::new(),
        timeout_ms: None,
        remote,
    }
    .runtime()
    .await?;
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
    if as_json {
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

/// `pleach schema`: the registry's tools.
pub(crate) fn schema(name: Option<&str>, all: bool, provider: Option<SchemaProvider>) -> Outcome {
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
pub(crate) fn schema_of_file(
    path: &Path,
    name: Option<&str>,
    provider: Option<SchemaProvider>,
) -> Outcome {
    let tools: Vec<UnifiedToolDefinition> = crate::validate::read_definitions(path)?
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
    provider: Option<SchemaProvider>,
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
    provider: Option<SchemaProvider>,
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
        Some(SchemaProvider::Openai) => Ok(openai_chat::definition(definition)),
        Some(SchemaProvider::OpenaiStrict) => {
            openai_chat::strict_definition(definition).map_err(problems)
        }
        Some(SchemaProvider::Anthropic) => anthropic::definition(definition).map_err(problems),
        Some(SchemaProvider::AnthropicStrict) => {
            anthropic::strict_definition(definition).map_err(problems)
        }
        Some(SchemaProvider::Gemini) => gemini::definition(definition).map_err(problems),
        Some(SchemaProvider::Mcp) => mcp_tools::definition(tool)
            .map(|mut listed| {
                if let Some(tier) = tool.safety_tier() {
                    listed["annotations"] = tier.mcp_annotations();
                }
                listed
            })
            .map_err(problems),
    }
}

/// Whether `serde_json` gave up on the text only for its nesting (past its 128 levels): the text
/// may well be JSON, and the runtime, whose depth limit is lower, refuses it with the code for
/// that (1006) instead of a usage error saying it is not JSON.
fn too_deep_to_read(error: &serde_json::Error) -> bool {
    error.is_syntax() && error.to_string().starts_with("recursion limit exceeded")
}

/// `pleach call`.
pub(crate) async fn call(name: &str, arguments: &str, as_json: bool, host: &HostArgs) -> Outcome {
    if let Err(error) = serde_json::from_str::<Value>(arguments)
        && !too_deep_to_read(&error)
    {
        return Err(UsageError(format!("`--args` is not JSON: {error}")));
    }
    let runtime = host.runtime().await?;
    let session = runtime
        .create_session(SessionOptions::all())
        .map_err(|error| UsageError(error.to_string()))?;
    let mut renderer = Renderer::new(as_json);
    let mut turn = session.run_turn(vec![ToolCall::new("call_1", name, arguments)]);
    renderer.follow(turn.events()).await;
    let results = turn.finish().await;
    Ok(if results.iter().all(|r| r.outcome.is_ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
