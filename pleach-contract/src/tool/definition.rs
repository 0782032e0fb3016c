//! [`ToolDefinition`]: a tool's name, description, compiled schemas and code, and how one call
//! runs through them (parse, validate, start, check the output).

use std::borrow::Cow;
use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use serde_json::Value;

use super::{Started, ToolContext};
use crate::content::ToolOutput;
use crate::error::{ErrorCode, ToolError};
use crate::schema::{self, CompiledSchema, ValidationResult};

/// Turns the arguments text into the tool's input and starts its code. Deserialization happens
/// before the future exists, so a typed tool reads the text straight into its input type.
///
/// The context is `None` only for a tool that takes none (`takes_context` false): the runtime then
/// builds no context, token or id for it.
#[derive(Clone)]
pub(crate) enum Invoke {
    /// A `#[tool]` fn's generated entry point: called directly.
    Generated(InvokeFn),
    /// A closure built at run time ([`ToolDefinition::builder`](super::ToolDefinition::builder)).
    Closure(Arc<InvokeClosure>),
}

/// A generated entry point.
///
/// The context is taken only when the arguments were read: a refusal leaves it in place, so the
/// arguments can be read again ([`ToolDefinition::start`]).
pub(crate) type InvokeFn = fn(&str, &mut Option<ToolContext>) -> Result<Started, ToolError>;

/// A run-time tool's code.
pub(crate) type InvokeClosure =
    dyn Fn(&str, &mut Option<ToolContext>) -> Result<Started, ToolError> + Send + Sync + 'static;

impl Invoke {
    fn call(&self, arguments: &str, ctx: &mut Option<ToolContext>) -> Result<Started, ToolError> {
        match self {
            Invoke::Generated(invoke) => invoke(arguments, ctx),
            Invoke::Closure(invoke) => invoke(arguments, ctx),
        }
    }
}

/// Reads the arguments text into the tool's input without starting it: what the Rust type
/// refuses that the schema allows (`1.0` for an integer, say) shows up here.
pub(crate) type Check = Arc<dyn Fn(&str) -> Result<(), ToolError> + Send + Sync + 'static>;

/// Where a tool was defined: the `#[tool]` fn, or the `ToolDefinition::builder` call. Duplicate-name errors
/// name both sites.
///
/// ```
/// let def = pleach_core::ToolDefinition::builder("noop", "Does nothing.")
///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::Value::Null) })
///     .unwrap();
/// assert!(def.site().file().ends_with(".rs"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefinitionSite {
    file: Cow<'static, str>,
    line: u32,
    column: u32,
}

impl DefinitionSite {
    /// A site from its parts.
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 1);
    /// assert_eq!(site.to_string(), "src/tools.rs:12:1");
    /// ```
    pub fn new(file: impl Into<Cow<'static, str>>, line: u32, column: u32) -> Self {
        DefinitionSite {
            file: file.into(),
            line,
            column,
        }
    }

    /// A place outside source code that defined a tool, such as the MCP server a remote tool
    /// comes from; errors show it as written (line and column are 0).
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::elsewhere("the MCP server `github` (https://mcp.example/mcp)");
    /// assert_eq!(site.to_string(), "the MCP server `github` (https://mcp.example/mcp)");
    /// assert_eq!(site.line(), 0);
    /// ```
    pub fn elsewhere(place: impl Into<Cow<'static, str>>) -> Self {
        DefinitionSite::new(place, 0, 0)
    }

    /// The caller's location (for `#[track_caller]` constructors).
    #[track_caller]
    pub(crate) fn caller() -> Self {
        let at = Location::caller();
        DefinitionSite::new(at.file(), at.line(), at.column())
    }

    /// The source file, as `file!()` spells it.
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 1);
    /// assert_eq!(site.file(), "src/tools.rs");
    /// ```
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The 1-based line (0 for a place outside source code).
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 1);
    /// assert_eq!(site.line(), 12);
    /// ```
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The 1-based column.
    ///
    /// ```
    /// let site = pleach_core::DefinitionSite::new("src/tools.rs", 12, 5);
    /// assert_eq!(site.column(), 5);
    /// ```
    pub fn column(&self) -> u32 {
        self.column
    }
}

impl fmt::Display for DefinitionSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            // A place outside source code (`DefinitionSite::elsewhere`).
            return f.write_str(&self.file);
        }
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Why a tool definition was refused.
///
/// ```
/// let err = pleach_core::ToolDefinition::builder("has space", "x")
///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::Value::Null) })
///     .unwrap_err();
/// assert!(err.to_string().contains("`has space`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefinitionError {
    /// The name does not match `^[A-Za-z0-9_-]{1,64}$` (what every provider accepts).
    #[error(
        "tool name `{name}` is invalid: use 1 to 64 ASCII letters, digits, `_` or `-` (defined at {site})"
    )]
    InvalidName {
        /// The refused name.
        name: String,
        /// Where it was defined.
        site: DefinitionSite,
    },
    /// The description is empty; the model reads it to decide when to call the tool.
    #[error(
        "tool `{name}` has an empty description; the model reads it to decide when to call the tool (defined at {site})"
    )]
    EmptyDescription {
        /// The tool.
        name: String,
        /// Where it was defined.
        site: DefinitionSite,
    },
    /// A schema is not a valid JSON Schema, or the input schema does not describe an object.
    #[error("tool `{name}`: the {which} schema is invalid: {reason} (defined at {site})")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// `"input"` or `"output"`.
        which: &'static str,
        /// What is wrong.
        reason: String,
        /// Where it was defined.
        site: DefinitionSite,
    },
}

/// The basic tool shape: name, description, input schema, optional output schema, and the code.
///
/// Built by `#[tool]` (through the fn's handle, `my_tool::definition()`) or at run time by
/// [`ToolDefinition::builder`]. Cloning is cheap (one `Arc`). The schemas are compiled into validators when the
/// definition is built, once.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{ToolContext, ToolError, ToolDefinition};
/// use serde_json::json;
///
/// let echo = ToolDefinition::builder("echo", "Returns its input.")
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "text": { "type": "string" } },
///         "required": ["text"]
///     }))
///     .execute_json(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .unwrap();
///
/// let out = echo.call(r#"{"text":"hi"}"#, ToolContext::new("call_1")).await.unwrap();
/// assert_eq!(out, json!({ "text": "hi" }));
///
/// let err = echo.call(r#"{"text":5}"#, ToolContext::new("call_2")).await.unwrap_err();
/// assert_eq!(err.code().as_u16(), 1001);
/// assert_eq!(err.path(), Some("/text"));
/// # }
/// ```
#[derive(Clone)]
pub struct ToolDefinition {
    inner: Arc<DefinitionInner>,
}

// Independent facts the macro proved about the code, each read on its own.
#[allow(clippy::struct_excessive_bools)]
struct DefinitionInner {
    name: String,
    description: String,
    input: CompiledSchema,
    output: Option<CompiledSchema>,
    invoke: Invoke,
    check: Option<Check>,
    /// Reading the text into the input succeeds only for text the input schema accepts, so the
    /// generic validator runs only to explain a failure.
    checked_by_type: bool,
    /// Every result the code can return meets the output schema (the output type guarantees it),
    /// so results are not checked against it.
    output_checked_by_type: bool,
    /// Whether `invoke` runs the code to its end (`Started::Ready`), never handing back a future.
    in_place: bool,
    /// Whether the code reads a `ToolContext` (a `#[tool]` fn without one does not).
    takes_context: bool,
    site: DefinitionSite,
}

/// Everything a definition is made of, before its checks.
// Independent facts the macro proved about the code, each read on its own.
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct DefinitionParts {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) invoke: Invoke,
    pub(crate) check: Option<Check>,
    pub(crate) checked_by_type: bool,
    pub(crate) output_checked_by_type: bool,
    pub(crate) in_place: bool,
    pub(crate) takes_context: bool,
    pub(crate) site: DefinitionSite,
}

impl ToolDefinition {
    /// Checks the parts and compiles the schemas.
    pub(crate) fn from_parts(parts: DefinitionParts) -> Result<Self, DefinitionError> {
        let DefinitionParts {
            name,
            description,
            input_schema,
            output_schema,
            invoke,
            check,
            checked_by_type,
            output_checked_by_type,
            in_place,
            takes_context,
            site,
        } = parts;
        if !is_valid_tool_name(&name) {
            return Err(DefinitionError::InvalidName { name, site });
        }
        if description.trim().is_empty() {
            return Err(DefinitionError::EmptyDescription { name, site });
        }
        let invalid = |which, reason| DefinitionError::InvalidSchema {
            name: name.clone(),
            which,
            reason,
            site: site.clone(),
        };
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(invalid(
                "input",
                "it must describe an object (`\"type\": \"object\"`): providers pass arguments as a JSON object"
                    .to_owned(),
            ));
        }
        let input = CompiledSchema::compile(input_schema).map_err(|e| invalid("input", e))?;
        // A typed input gets a property's default when the call leaves it out: one its own schema
        // refuses would fail every such call for a value the model never sent.
        if check.is_some() {
            let defaults: serde_json::Map<String, Value> =
                top_level_defaults(input.schema()).into_iter().collect();
            let verdict = input.validate(&Value::Object(defaults));
            if let Some(error) = verdict.errors.iter().find(|e| !e.path.is_empty()) {
                return Err(invalid(
                    "input",
                    format!(
                        "the default at `{}` fails its own schema: {}",
                        error.path, error.message
                    ),
                ));
            }
        }
        let output = output_schema
            .map(CompiledSchema::compile)
            .transpose()
            .map_err(|e| invalid("output", e))?;
        Ok(ToolDefinition {
            inner: Arc::new(DefinitionInner {
                name,
                description,
                input,
                output,
                invoke,
                check,
                checked_by_type,
                output_checked_by_type,
                in_place,
                takes_context,
                site,
            }),
        })
    }

    /// The name the model emits in `tool_calls[].name`.
    ///
    /// ```
    /// let ping = pleach_core::ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.name(), "ping");
    /// ```
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the tool does, for the model.
    ///
    /// ```
    /// let ping = pleach_core::ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.description(), "Answers pong.");
    /// ```
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// The input JSON Schema (draft 2020-12, an object schema).
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let ping = pleach_core::ToolDefinition::builder("ping", "Answers pong.")
    ///     .input_schema(json!({ "type": "object", "properties": { "n": { "type": "integer" } } }))
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.input_schema()["properties"]["n"]["type"], "integer");
    /// ```
    pub fn input_schema(&self) -> &Value {
        self.inner.input.schema()
    }

    /// The output JSON Schema, if the tool declares one.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let ping = pleach_core::ToolDefinition::builder("ping", "Answers pong.")
    ///     .output_schema(json!({ "type": "string" }))
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(ping.output_schema(), Some(&json!({ "type": "string" })));
    /// ```
    pub fn output_schema(&self) -> Option<&Value> {
        self.inner.output.as_ref().map(CompiledSchema::schema)
    }

    /// Where the tool was defined.
    ///
    /// ```
    /// let ping = pleach_core::ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert!(ping.site().line() > 0); // where `ToolDefinition::builder` was called
    /// ```
    pub fn site(&self) -> &DefinitionSite {
        &self.inner.site
    }

    /// Checks arguments text against the input schema without running the tool: JSON syntax,
    /// duplicate keys, then the schema. Every violation comes with a JSON pointer and a keyword.
    ///
    /// ```
    /// let def = pleach_core::ToolDefinition::builder("t", "A tool.")
    ///     .input_schema(serde_json::json!({
    ///         "type": "object",
    ///         "properties": { "n": { "type": "integer", "maximum": 5 } }
    ///     }))
    ///     .execute_json(|v, _| async move { Ok::<_, pleach_core::ToolError>(v) })
    ///     .unwrap();
    /// let verdict = def.validate_arguments(r#"{"n": 9}"#);
    /// assert!(!verdict.valid);
    /// assert_eq!(verdict.errors[0].path, "/n");
    /// assert_eq!(verdict.errors[0].keyword, "maximum");
    /// ```
    pub fn validate_arguments(&self, arguments: &str) -> ValidationResult {
        let mut value = match schema::parse_arguments(arguments) {
            Ok(value) => value,
            Err(error) => return ValidationResult::invalid(vec![error]),
        };
        let mut verdict = self.inner.input.validate(&value);
        // A `null` standing for an absent property is read as absent (see `read_arguments`).
        let mut read = None;
        if !verdict.valid && schema::remove_absent_nulls(self.input_schema(), &mut value) {
            verdict = self.inner.input.validate(&value);
            read = Some(value.to_string());
        }
        let arguments = read.as_deref().unwrap_or(arguments);
        match &self.inner.check {
            Some(check) if verdict.valid => match check(arguments) {
                Ok(()) => verdict,
                // `3.0` where the type wants an integer: the schema takes it, and so does the
                // call (see `start`).
                Err(_)
                    if schema::integral_floats_as_integers(&value)
                        .is_some_and(|text| check(&text).is_ok()) =>
                {
                    verdict
                }
                Err(refused) => ValidationResult::invalid(vec![schema::ValidationError {
                    path: refused.path().unwrap_or_default().to_owned(),
                    keyword: "type".to_owned(),
                    message: refused.message().to_owned(),
                }]),
            },
            _ => verdict,
        }
    }

    /// Runs one call: parse the arguments (duplicate keys refused) → validate them against the
    /// input schema → run the tool with `ctx` → validate the result against the output schema.
    ///
    /// Invalid input fails with 1001 (or 1005 for text that is not JSON) before the tool runs;
    /// a result that fails the output schema fails with 1002.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{input, ToolContext, ToolError, ToolDefinition};
    ///
    /// #[input]
    /// struct Add { a: i64, b: i64 }
    ///
    /// let add = ToolDefinition::builder("add", "Adds two integers.")
    ///     .execute(|input: Add, _ctx| async move { Ok::<_, ToolError>(input.a + input.b) })
    ///     .unwrap();
    /// let sum = add.call(r#"{"a":1,"b":2}"#, ToolContext::new("call_1")).await.unwrap();
    /// assert_eq!(sum, serde_json::json!(3));
    /// # }
    /// ```
    pub async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let output = self.start(arguments, Some(ctx))?.finish().await?;
        self.check_output(&output)?;
        Ok(output)
    }

    /// Parses the arguments (duplicate keys refused: 1005) and validates them (1001); arguments
    /// the schema refuses are read once more without the `null`s that stand for an absent
    /// property (`docs/providers.md`, "How the runtime reads calls").
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn parse_and_validate(&self, arguments: &str) -> Result<Value, ToolError> {
        self.read_arguments(arguments).map(|(value, _)| value)
    }

    /// The arguments as the tool reads them: parsed, and validated against the input schema.
    /// Arguments the schema refuses are read once more without the `null`s that stand for an
    /// absent property (one the schema neither requires nor lets be `null`: what a strict-mode
    /// model sends for an optional field, `docs/providers.md`), so the property's default
    /// applies; `true` when such a `null` was removed. Valid arguments are never rewritten: a
    /// `null` the schema accepts means `None`.
    fn read_arguments(&self, arguments: &str) -> Result<(Value, bool), ToolError> {
        let mut value =
            schema::parse_arguments(arguments).map_err(schema::ValidationError::into_tool_error)?;
        if self.inner.input.is_valid(&value) {
            return Ok((value, false));
        }
        let removed = schema::remove_absent_nulls(self.input_schema(), &mut value);
        self.inner.input.check_input(&value)?;
        Ok((value, removed))
    }

    /// Validates the arguments and starts the tool's code.
    ///
    /// When the input type checks everything its schema says (`checked_by_type`), the text is
    /// read straight into it, and the generic parser and validator run only to explain a refusal
    /// (or to read a `null` that stands for an absent property as absent); the verdict is the
    /// same either way (tests compare the two on generated inputs). Otherwise the arguments are
    /// parsed and validated first.
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn start(
        &self,
        arguments: &str,
        mut ctx: Option<ToolContext>,
    ) -> Result<Started, ToolError> {
        if self.inner.checked_by_type {
            // serde reads a struct from an array as well as from an object (`["6*7"]` fills the
            // first parameter); a tool's parameters schema takes objects only. Anything else
            // goes to the validator, which says why.
            let object = arguments
                .trim_start_matches([' ', '\t', '\n', '\r'])
                .starts_with('{');
            let started = if object {
                self.inner.invoke.call(arguments, &mut ctx)
            } else {
                Err(ToolError::new(
                    ErrorCode::InputInvalid,
                    "the arguments must be a JSON object",
                ))
            };
            return started.or_else(|refused| match self.read_arguments(arguments) {
                Err(explained) => Err(explained),
                Ok((value, rewritten)) => {
                    self.start_normalized(&value, rewritten, &mut ctx, refused)
                }
            });
        }
        let (value, rewritten) = self.read_arguments(arguments)?;
        let read = rewritten.then(|| value.to_string());
        self.inner
            .invoke
            .call(read.as_deref().unwrap_or(arguments), &mut ctx)
            .or_else(|refused| self.start_normalized(&value, false, &mut ctx, refused))
    }

    /// Arguments the schema accepts but the input type refused: JSON Schema counts `3.0` as an
    /// integer, and serde reads it into no integer type; and the text may have held a `null`
    /// standing for an absent property (`rewritten`: `value` is without it). Read again with such
    /// numbers written as integers and `value` as it is; anything else keeps the type's refusal.
    fn start_normalized(
        &self,
        value: &Value,
        rewritten: bool,
        ctx: &mut Option<ToolContext>,
        refused: ToolError,
    ) -> Result<Started, ToolError> {
        if refused.code() != ErrorCode::InputInvalid {
            return Err(refused);
        }
        let text = schema::integral_floats_as_integers(value)
            .or_else(|| rewritten.then(|| value.to_string()));
        match text {
            Some(text) => self.inner.invoke.call(&text, ctx).map_err(|_| refused),
            None => Err(refused),
        }
    }

    /// Whether the tool's code reads its [`ToolContext`].
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn takes_context(&self) -> bool {
        self.inner.takes_context
    }

    /// Whether starting the tool runs it to its end (a `#[tool]` fn that cannot suspend).
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn runs_in_place(&self) -> bool {
        self.inner.in_place
    }

    /// Validates a result's structured part against the output schema, if there are both
    /// (1002), unless the output type already guarantees it. Content blocks are not checked: the
    /// schema describes the structured value alone, as MCP's `outputSchema` does.
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn check_output(&self, output: &ToolOutput) -> Result<(), ToolError> {
        match (&self.inner.output, &output.structured) {
            (Some(schema), Some(value)) if !self.inner.output_checked_by_type => {
                schema.check_output(value)
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.inner.name)
            .field("description", &self.inner.description)
            .field("input_schema", self.input_schema())
            .field("output_schema", &self.output_schema())
            .field("site", &self.inner.site)
            .finish_non_exhaustive()
    }
}

/// Whether `name` matches `^[A-Za-z0-9_-]{1,64}$`, the rule every provider accepts.
///
/// ```
/// use pleach_core::tool::is_valid_tool_name;
/// assert!(is_valid_tool_name("search_corpus"));
/// assert!(!is_valid_tool_name("search corpus"));
/// assert!(!is_valid_tool_name(""));
/// ```
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The `default` of each top-level property of an object schema that has one.
pub(super) fn top_level_defaults(schema: &Value) -> Vec<(String, Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(key, property)| Some((key.clone(), property.get("default")?.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolDefinition;

    #[test]
    fn names_follow_the_provider_rule() {
        assert!(is_valid_tool_name("a"));
        assert!(is_valid_tool_name(&"x".repeat(64)));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
        assert!(!is_valid_tool_name("dotted.name"));
        assert!(!is_valid_tool_name("ünïcode"));
    }

    #[test]
    fn input_schema_must_be_an_object() {
        let err = ToolDefinition::builder("t", "d")
            .input_schema(serde_json::json!({ "type": "string" }))
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(matches!(
            err,
            DefinitionError::InvalidSchema { which: "input", .. }
        ));
    }

    #[test]
    fn invalid_schema_is_refused_at_definition() {
        let err = ToolDefinition::builder("t", "d")
            .input_schema(
                serde_json::json!({ "type": "object", "properties": { "a": { "type": 5 } } }),
            )
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(err.to_string().contains("input schema is invalid"), "{err}");
    }

    #[test]
    fn remote_refs_are_never_fetched() {
        let err = ToolDefinition::builder("t", "d")
            .input_schema(serde_json::json!({
                "type": "object",
                "properties": { "a": { "$ref": "http://127.0.0.1:9/schema.json" } }
            }))
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(
            matches!(err, DefinitionError::InvalidSchema { .. }),
            "{err}"
        );
    }

    #[test]
    fn empty_description_is_refused() {
        let err = ToolDefinition::builder("t", "  ")
            .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
            .unwrap_err();
        assert!(matches!(err, DefinitionError::EmptyDescription { .. }));
    }
}
