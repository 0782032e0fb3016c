//! `pleach validate`: calls checked against tool definitions, one verdict a line.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use pleach_core::{ToolDefinition, ToolError, ValidationError, ValidationResult, define_tool};
use serde_json::Value;

use crate::{Outcome, UsageError, read_file};

/// Where the definitions come from: a file's, or the registry's.
enum Definitions {
    File(HashMap<String, ToolDefinition>),
    Registry,
}

impl Definitions {
    fn get(&self, name: &str) -> Option<&ToolDefinition> {
        match self {
            Definitions::File(tools) => tools.get(name),
            Definitions::Registry => pleach_core::tool_registry().definition(name),
        }
    }
}

pub(crate) fn run(tools: Option<&Path>, calls: Option<&Path>) -> Outcome {
    let definitions = match tools {
        Some(path) => Definitions::File(read_definitions(path)?),
        None => Definitions::Registry,
    };
    let input: Box<dyn BufRead> = match calls {
        Some(path) => Box::new(std::io::Cursor::new(read_file(path)?)),
        None => Box::new(std::io::stdin().lock()),
    };
    let source = calls.map_or_else(|| "stdin".to_owned(), |p| format!("`{}`", p.display()));
    let mut all_valid = true;
    let mut out = std::io::stdout().lock();
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
        let line = serde_json::to_string(&verdict).unwrap_or_default();
        if writeln!(out, "{line}").is_err() {
            break; // stdout closed: nobody is reading any more
        }
    }
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A call line's name and its arguments as text: a JSON object as written, a string as it holds.
fn read_call(line: &str) -> Result<(String, String), String> {
    let value: Value = serde_json::from_str(line).map_err(|error| format!("not JSON: {error}"))?;
    let Value::Object(mut call) = value else {
        return Err("a call is a JSON object: {\"name\": …, \"arguments\": …}".to_owned());
    };
    let Some(Value::String(name)) = call.remove("name") else {
        return Err("the call has no `name` string".to_owned());
    };
    let arguments = match call.remove("arguments") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    };
    Ok((name, arguments))
}

/// The definitions of a file: a JSON list of OpenAI function tools, or of bare
/// `{"name","description","parameters"}` objects.
fn read_definitions(path: &Path) -> Result<HashMap<String, ToolDefinition>, UsageError> {
    let at = format!("`{}`", path.display());
    let value: Value = serde_json::from_slice(&read_file(path)?)
        .map_err(|error| UsageError(format!("{at} is not JSON: {error}")))?;
    let Value::Array(entries) = value else {
        return Err(UsageError(format!(
            "{at}: tool definitions are a JSON list"
        )));
    };
    let mut tools = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let function = entry.get("function").unwrap_or(entry);
        let Some(name) = function.get("name").and_then(Value::as_str) else {
            return Err(UsageError(format!("{at}: entry {index} has no `name`")));
        };
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or(name);
        let parameters = function
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
        let definition = define_tool(name, description)
            .input_schema(parameters)
            .execute_json(|value, _| async move { Ok::<_, ToolError>(value) })
            .map_err(|error| UsageError(format!("{at}: tool `{name}`: {error}")))?;
        if tools.insert(name.to_owned(), definition).is_some() {
            return Err(UsageError(format!("{at}: tool `{name}` is defined twice")));
        }
    }
    Ok(tools)
}
