//! [`ToolDefinition::builder`] and [`ToolBuilder`]: a tool defined at run time, from typed code
//! or a raw JSON Schema (the TypeScript spec's `defineTool`).

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::definition::{Check, DefinitionParts, Invoke, top_level_defaults};
use super::{DefinitionError, DefinitionSite, Started, ToolContext, ToolDefinition};
use crate::content::ToolOutput;
use crate::error::ToolError;
use crate::schema;

impl ToolDefinition {
    /// Starts a tool definition at run time: the Rust form of the TypeScript spec's `defineTool`.
    ///
    /// Finish it with [`ToolBuilder::execute`] (typed input and output: the schemas are derived)
    /// or [`ToolBuilder::execute_json`] (JSON in, JSON out, for tools whose schema comes from
    /// configuration or another system). The call site is recorded for error messages.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{input, ToolContext, ToolError, ToolDefinition};
    /// use serde::Serialize;
    /// use schemars::JsonSchema;
    ///
    /// #[input]
    /// struct SearchInput {
    ///     /// Free-text query.
    ///     query: String,
    ///     #[schemars(range(min = 1, max = 50))]
    ///     #[serde(default = "ten")]
    ///     limit: u32,
    /// }
    /// fn ten() -> u32 { 10 }
    ///
    /// #[derive(Serialize, JsonSchema)]
    /// struct SearchOutput { results: Vec<String> }
    ///
    /// let search = ToolDefinition::builder("search_corpus", "Free-text search over the host corpus.")
    ///     .execute(|input: SearchInput, _ctx: ToolContext| async move {
    ///         let results = (0..input.limit.min(2)).map(|i| format!("{} #{i}", input.query)).collect();
    ///         Ok::<_, ToolError>(SearchOutput { results })
    ///     })
    ///     .unwrap();
    ///
    /// assert_eq!(search.input_schema()["required"], serde_json::json!(["query"]));
    /// let out = search.call(r#"{"query":"rust"}"#, ToolContext::new("c1")).await.unwrap();
    /// assert_eq!(out.value()["results"][1], "rust #1");
    /// let err = search.call(r#"{"query":"rust","limit":80}"#, ToolContext::new("c2")).await.unwrap_err();
    /// assert_eq!(err.path(), Some("/limit"));
    /// # }
    /// ```
    #[doc(alias = "defineTool")]
    #[doc(alias = "define_tool")]
    #[track_caller]
    pub fn builder(name: impl Into<String>, description: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            name: name.into(),
            description: description.into(),
            input_schema: None,
            output_schema: None,
            site: DefinitionSite::caller(),
        }
    }
}

/// A tool definition under construction; see [`ToolDefinition::builder`].
///
/// ```
/// use pleach_core::{ToolError, ToolDefinition};
///
/// let builder = ToolDefinition::builder("ping", "Answers pong.");
/// let ping = builder
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// assert_eq!(ping.name(), "ping");
/// ```
#[derive(Debug, Clone)]
#[must_use = "a tool builder does nothing until `execute` or `execute_json` finishes it"]
pub struct ToolBuilder {
    name: String,
    description: String,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    site: DefinitionSite,
}

impl ToolBuilder {
    /// Sets the input JSON Schema. It must describe an object. With [`execute`](Self::execute) it
    /// replaces the derived schema (say, to add constraints the Rust type cannot carry); the typed
    /// input must still deserialize from every value it accepts.
    ///
    /// ```
    /// let def = pleach_core::ToolDefinition::builder("t", "A tool.")
    ///     .input_schema(serde_json::json!({ "type": "object" }))
    ///     .execute_json(|v, _| async move { Ok::<_, pleach_core::ToolError>(v) })
    ///     .unwrap();
    /// assert_eq!(def.input_schema()["type"], "object");
    /// ```
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the output JSON Schema; results are validated against it (1002 on failure).
    ///
    /// ```
    /// let def = pleach_core::ToolDefinition::builder("t", "A tool.")
    ///     .output_schema(serde_json::json!({ "type": "string" }))
    ///     .execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!("ok")) })
    ///     .unwrap();
    /// assert_eq!(def.output_schema().unwrap()["type"], "string");
    /// ```
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Names where the tool comes from in errors (a duplicate name, a refused schema) instead of
    /// the line that called [`ToolDefinition::builder`]: for tools made from a description found elsewhere,
    /// such as an MCP server's listing.
    ///
    /// ```
    /// use pleach_core::{DefinitionSite, ToolError, ToolDefinition};
    /// let error = ToolDefinition::builder("has space", "x")
    ///     .defined_at(DefinitionSite::elsewhere("the MCP server `files`"))
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::Value::Null) })
    ///     .unwrap_err();
    /// assert!(error.to_string().ends_with("(defined at the MCP server `files`)"), "{error}");
    /// ```
    pub fn defined_at(mut self, site: DefinitionSite) -> Self {
        self.site = site;
        self
    }

    /// Finishes the definition with typed code: the input schema is derived from `I`, the output
    /// schema from `O` (none when `O`'s schema accepts anything, as for `serde_json::Value`).
    /// The arguments text is deserialized straight into `I`.
    ///
    /// ```
    /// use pleach_core::{input, ToolError, ToolDefinition};
    /// #[input]
    /// struct Input { a: i64, b: i64 }
    /// let add = ToolDefinition::builder("add", "Adds.")
    ///     .execute(|i: Input, _| async move { Ok::<_, ToolError>(i.a + i.b) })
    ///     .unwrap();
    /// assert_eq!(add.output_schema().unwrap()["type"], "integer");
    /// ```
    pub fn execute<I, O, E, F, Fut>(self, f: F) -> Result<ToolDefinition, DefinitionError>
    where
        I: DeserializeOwned + JsonSchema,
        O: Serialize + JsonSchema,
        E: Into<ToolError>,
        F: Fn(I, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
    {
        let input_schema = self
            .input_schema
            .unwrap_or_else(schema::input_schema_for::<I>);
        let output_schema = self.output_schema.or_else(schema::output_schema_for::<O>);
        let invoke = Invoke::Closure(Arc::new(move |arguments: &str, ctx: &mut Option<_>| {
            let input: I = schema::deserialize_input(arguments)?;
            let future = f(input, ctx.take().unwrap_or_else(ToolContext::detached));
            Ok(Started::Running(Box::pin(async move {
                match future.await {
                    Ok(output) => schema::output_to_value(&output).map(ToolOutput::new),
                    Err(error) => Err(error.into()),
                }
            })))
        }));
        let check: Check =
            Arc::new(|arguments: &str| schema::deserialize_input::<I>(arguments).map(drop));
        ToolDefinition::from_parts(DefinitionParts {
            name: self.name,
            description: self.description,
            input_schema,
            output_schema,
            invoke,
            check: Some(check),
            checked_by_type: false,
            output_checked_by_type: false,
            in_place: false,
            takes_context: true,
            site: self.site,
        })
    }

    /// Finishes the definition with JSON code: the input is the arguments as a
    /// [`Value`], already validated against the input schema (an open object
    /// schema when none was set), with the schema's top-level `default`s filled in for the
    /// properties the call left out (as `z.number().default(10)` gives `execute` its 10).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{ToolContext, ToolError, ToolDefinition};
    /// use serde_json::json;
    ///
    /// let def = ToolDefinition::builder("search", "Searches.")
    ///     .input_schema(json!({
    ///         "type": "object",
    ///         "properties": {
    ///             "query": { "type": "string" },
    ///             "limit": { "type": "integer", "default": 10 }
    ///         },
    ///         "required": ["query"]
    ///     }))
    ///     .execute_json(|input, _| async move { Ok::<_, ToolError>(input) })
    ///     .unwrap();
    /// let input = def.call(r#"{"query":"rust"}"#, ToolContext::new("c1")).await.unwrap();
    /// assert_eq!(input, json!({ "query": "rust", "limit": 10 }));
    /// # }
    /// ```
    pub fn execute_json<O, E, F, Fut>(self, f: F) -> Result<ToolDefinition, DefinitionError>
    where
        E: Into<ToolError>,
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        O: Into<ToolOutput>,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
    {
        let input_schema = self
            .input_schema
            .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
        let defaults = top_level_defaults(&input_schema);
        let invoke = Invoke::Closure(Arc::new(move |arguments: &str, ctx: &mut Option<_>| {
            let mut input: Value = schema::deserialize_input(arguments)?;
            if let Value::Object(given) = &mut input {
                for (key, default) in &defaults {
                    if !given.contains_key(key) {
                        given.insert(key.clone(), default.clone());
                    }
                }
            }
            let future = f(input, ctx.take().unwrap_or_else(ToolContext::detached));
            Ok(Started::Running(Box::pin(async move {
                future.await.map(Into::into).map_err(Into::into)
            })))
        }));
        ToolDefinition::from_parts(DefinitionParts {
            name: self.name,
            description: self.description,
            input_schema,
            output_schema: self.output_schema,
            invoke,
            check: None,
            checked_by_type: false,
            output_checked_by_type: false,
            in_place: false,
            takes_context: true,
            site: self.site,
        })
    }
}
