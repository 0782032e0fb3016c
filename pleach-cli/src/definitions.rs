//! Tool definitions read from a file, in any format `pleach schema --all` prints: what `pleach
//! validate --tools` checks calls against and `pleach schema --tools` converts.

use std::path::Path;

use pleach_core::{DefinitionError, ToolDefinition, ToolError};
use serde_json::Value;

use crate::usage::{UsageError, read_file};

/// Where each provider format keeps a tool's input schema: OpenAI (Chat Completions and
/// Responses) and Gemini `parameters`, Gemini's newer `parametersJsonSchema`, Anthropic
/// `input_schema`, MCP and pleach's own `inputSchema`.
const SCHEMA_KEYS: [&str; 4] = [
    "parameters",
    "parametersJsonSchema",
    "input_schema",
    "inputSchema",
];

/// The definitions of a file, in its order: a JSON list of tools in any of the formats `pleach
/// schema --all` prints (OpenAI function tools, with or without the `function` wrapper,
/// Anthropic, Gemini, MCP, pleach's own). A tool without any schema key takes no arguments, as
/// OpenAI defines it. A name used twice is an error.
pub(crate) fn read_definitions(path: &Path) -> Result<Vec<ToolDefinition>, UsageError> {
    let at = format!("`{}`", path.display());
    let value: Value = serde_json::from_slice(&read_file(path)?)
        .map_err(|error| UsageError(format!("{at} is not JSON: {error}")))?;
    let Value::Array(entries) = value else {
        return Err(UsageError(format!(
            "{at}: tool definitions are a JSON list"
        )));
    };
    let mut tools = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (index, entry) in entries.iter().enumerate() {
        let function = entry.get("function").unwrap_or(entry);
        let Some(name) = function.get("name").and_then(Value::as_str) else {
            return Err(UsageError(format!("{at}: entry {index} has no `name`")));
        };
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or(name);
        let schemas: Vec<&str> = SCHEMA_KEYS
            .into_iter()
            .filter(|key| function.get(key).is_some())
            .collect();
        let parameters = match schemas.as_slice() {
            [] => serde_json::json!({
                "type": "object", "properties": {}, "additionalProperties": false
            }),
            [key] => {
                let mut schema = function[key].clone();
                nullable_as_json_schema(&mut schema);
                schema
            }
            keys => {
                return Err(UsageError(format!(
                    "{at}: tool `{name}` has more than one input schema (`{}`); keep one",
                    keys.join("`, `")
                )));
            }
        };
        let definition = ToolDefinition::builder(name, description)
            .input_schema(parameters)
            .execute_json(|value, _| async move { Ok::<_, ToolError>(value) })
            .map_err(|error| UsageError(format!("{at}: {}", definition_problem(&error))))?;
        if !names.insert(name.to_owned()) {
            return Err(UsageError(format!("{at}: tool `{name}` is defined twice")));
        }
        tools.push(definition);
    }
    Ok(tools)
}

/// Gemini's `parameters` are OpenAPI 3.0 schemas, where `nullable: true` lets a value be `null`.
/// JSON Schema has no such keyword (a validator ignores it, and would refuse the `null` Gemini may
/// send), so each `nullable: true` becomes `null` among the schema's types, `enum` values or
/// `anyOf` branches. Only schema positions are followed: a `default` or `enum` value is data.
fn nullable_as_json_schema(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if map.remove("nullable") == Some(Value::Bool(true)) {
        match map.get_mut("type") {
            Some(Value::String(one)) if one != "null" => {
                let one = std::mem::take(one);
                map.insert("type".to_owned(), serde_json::json!([one, "null"]));
            }
            Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
                types.push(Value::from("null"));
            }
            Some(_) => {}
            None => {
                if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
                    branches.push(serde_json::json!({ "type": "null" }));
                }
            }
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.iter().any(Value::is_null)
        {
            values.push(Value::Null);
        }
    }
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "definitions", Value::Object(named)) => {
                named.values_mut().for_each(nullable_as_json_schema);
            }
            ("items" | "additionalProperties", sub) => nullable_as_json_schema(sub),
            ("anyOf" | "oneOf" | "allOf", Value::Array(branches)) => {
                branches.iter_mut().for_each(nullable_as_json_schema);
            }
            _ => {}
        }
    }
}

/// What is wrong with a definition read from a file. `DefinitionError`'s own text ends with the
/// source line that built the definition, which here is pleach's, not the user's.
fn definition_problem(error: &DefinitionError) -> String {
    match error {
        DefinitionError::InvalidName { name, .. } => {
            format!("tool name `{name}` is invalid: use 1 to 64 ASCII letters, digits, `_` or `-`")
        }
        DefinitionError::EmptyDescription { name, .. } => format!(
            "tool `{name}` has an empty description; the model reads it to decide when to call \
             the tool"
        ),
        DefinitionError::InvalidSchema {
            name,
            which,
            reason,
            ..
        } => format!("tool `{name}`: the {which} schema is invalid: {reason}"),
        other => other.to_string(),
    }
}
