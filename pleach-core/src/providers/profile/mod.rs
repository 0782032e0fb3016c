//! Schema profiles: what each provider accepts of JSON Schema, as checked transforms. A profile
//! takes a tool's input schema and returns the schema to send, or every problem found, each with
//! the JSON pointer of the keyword at fault.
//!
//! | profile | converts | refuses |
//! | --- | --- | --- |
//! | [`Profile::OpenAiStrict`] | `additionalProperties: false` on every object; every property required, optional ones made nullable; `oneOf` → `anyOf`; one-element `allOf` merged; a `$ref` with siblings inlined and `$defs` left unreferenced dropped; annotations OpenAI rejects (`default`, `examples`, …) and unsupported `format`s dropped | open objects and maps, `allOf`, `not`, `if`/`then`/`else`, `dependent*`, `patternProperties`, tuples, other keywords outside the subset; root `anyOf`; size limits |
//! | [`Profile::Gemini`] | `$ref`/`$defs` inlined; `["T","null"]` and `anyOf` with `null` → `nullable: true`; `oneOf` → `anyOf`; `const` → one-value `enum`; integer `exclusiveMinimum`/`exclusiveMaximum` → `minimum`/`maximum`; `additionalProperties`, `$schema`, unsupported `format`s dropped | recursive `$ref`, several non-null types, non-string `enum`/`const`, untyped schemas, objects without properties, `allOf` of several, `not`, `if`/`then`/`else`, `multipleOf`, `uniqueItems`, tuples, … |
//! | [`Profile::Anthropic`] | nothing | a root that is not `type: object`, or has `anyOf`/`oneOf`/`allOf` |
//! | [`Profile::AnthropicStrict`] | `additionalProperties: false` on every object; `$ref`s inlined, `$defs` dropped; `oneOf` → `anyOf`; one-element `allOf` merged; bounds, lengths, `pattern`, `maxItems`, `minItems` over 1 and `default` moved into the description; unsupported `format`s and annotations dropped | as Anthropic, and open objects and maps, recursive schemas, non-primitive `enum`/`const`, `allOf` of several, tuples, `not`, conditionals, other keywords outside the subset |
//! | [`Profile::Mcp`] | `format`s JSON Schema does not define dropped (`schemars`' `int32`, `uint64`, `double`, …) | a root that is not `type: object` |
//!
//! Every profile also leaves out bounds past 2^53 that only restate a 64-bit integer type's range,
//! and widens other such bounds to a double (`docs/providers.md`, "Numbers").
//!
//! Conversions only ever widen what the provider is told to produce (`oneOf` → `anyOf`, a dropped
//! `additionalProperties`), or keep it the same; that is safe because pleach validates every call
//! against the tool's own schema before it runs. Where a conversion would narrow or lose a
//! constraint the model is told about, the profile refuses instead. `docs/providers.md` has the
//! full lists and their sources.
//!
//! ```
//! use pleach_core::providers::Profile;
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {
//!         "query": { "type": "string" },
//!         "limit": { "type": "integer", "default": 10 }
//!     },
//!     "required": ["query"]
//! });
//! let strict = Profile::OpenAiStrict.apply(&schema).unwrap();
//! assert_eq!(strict["required"], json!(["limit", "query"]));
//! assert_eq!(strict["properties"]["limit"]["type"], json!(["integer", "null"]));
//! assert_eq!(strict["additionalProperties"], false);
//!
//! let open = json!({ "type": "object", "properties": { "tags": { "type": "object" } } });
//! let problems = Profile::OpenAiStrict.apply(&open).unwrap_err();
//! assert_eq!(problems[0].path, "/properties/tags");
//! ```

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::registry::{ToolSource, active_registry};
use crate::schema::resolve_local;
use crate::tool::ToolDefinition;

mod anthropic_strict;
mod gemini;
mod openai_strict;

/// A provider's schema dialect.
///
/// ```
/// use pleach_core::providers::Profile;
/// assert_eq!(Profile::Gemini.to_string(), "Gemini");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Profile {
    /// OpenAI Structured Outputs (`strict: true` function tools, Chat and Responses).
    OpenAiStrict,
    /// Gemini `functionDeclarations[].parameters` (the OpenAPI 3.0 subset).
    Gemini,
    /// Anthropic `tools[].input_schema`.
    Anthropic,
    /// Anthropic strict tool use (`"strict": true` on a tool): `input_schema` in the subset
    /// Anthropic's grammar-constrained sampling takes.
    AnthropicStrict,
    /// MCP `tools/list` `inputSchema`.
    Mcp,
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Profile::OpenAiStrict => "OpenAI strict",
            Profile::Gemini => "Gemini",
            Profile::Anthropic => "Anthropic",
            Profile::AnthropicStrict => "Anthropic strict",
            Profile::Mcp => "MCP",
        })
    }
}

impl Profile {
    /// Transforms an input schema for this profile, or lists every problem found.
    ///
    /// ```
    /// use pleach_core::providers::Profile;
    /// use serde_json::json;
    ///
    /// let schema = json!({ "type": "object", "properties": { "n": { "type": ["integer", "null"] } } });
    /// let gemini = Profile::Gemini.apply(&schema).unwrap();
    /// assert_eq!(gemini["properties"]["n"], json!({ "type": "integer", "nullable": true }));
    /// ```
    pub fn apply(self, schema: &Value) -> Result<Value, Vec<ProfileProblem>> {
        let result = match self {
            Profile::OpenAiStrict => openai_strict::apply(schema),
            Profile::Gemini => gemini::apply(schema),
            Profile::Anthropic => anthropic_root(schema).map(|()| schema.clone()),
            Profile::AnthropicStrict => anthropic_strict::apply(schema),
            Profile::Mcp => object_root(schema).map(|()| standard_formats_only(schema)),
        };
        result
            .map(|converted| sendable_numbers(&converted))
            .map_err(dedup)
    }

    /// Checks a tool's name against this profile's rule and transforms its input schema.
    ///
    /// ```
    /// use pleach_core::{define_tool, ToolError};
    /// use pleach_core::providers::Profile;
    ///
    /// let tool = define_tool("echo", "Returns its input.")
    ///     .input_schema(serde_json::json!({ "type": "object", "properties": { "text": { "type": "string" } } }))
    ///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
    ///     .unwrap();
    /// assert!(Profile::Anthropic.apply_tool(&tool).is_ok());
    /// ```
    pub fn apply_tool(self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        let name_problem = self.name_problem(tool.name());
        match (self.apply(tool.input_schema()), name_problem) {
            (Ok(schema), None) => Ok(schema),
            (Ok(_), Some(problem)) => Err(vec![problem]),
            (Err(mut problems), name) => {
                problems.splice(0..0, name);
                Err(problems)
            }
        }
    }

    /// The problem with a tool name, if this profile's rule refuses it.
    fn name_problem(self, name: &str) -> Option<ProfileProblem> {
        let (max, extra, rule): (usize, &[u8], &str) = match self {
            // OpenAI and Anthropic: `^[a-zA-Z0-9_-]{1,64}$`.
            Profile::OpenAiStrict | Profile::Anthropic | Profile::AnthropicStrict => {
                (64, b"_-", "^[a-zA-Z0-9_-]{1,64}$")
            }
            // Gemini also allows `.` and `:`.
            Profile::Gemini => (64, b"_-.:", "^[a-zA-Z0-9_.:-]{1,64}$"),
            // MCP (2025-11-25): 1 to 128 of letters, digits, `_`, `-`, `.`.
            Profile::Mcp => (128, b"_-.", "^[a-zA-Z0-9_.-]{1,128}$"),
        };
        let ok = (1..=max).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b));
        (!ok).then(|| {
            ProfileProblem::new(
                "",
                "name",
                format!("the tool name `{name}` does not match {rule}"),
            )
        })
    }
}

/// One problem of a schema for a profile: where (a JSON pointer into the schema, `""` for the
/// root or the tool's name), which keyword, and what is wrong.
///
/// ```
/// let p = pleach_core::providers::ProfileProblem {
///     path: "/properties/tags".into(),
///     keyword: "additionalProperties".into(),
///     message: "a map cannot be expressed in strict mode".into(),
/// };
/// assert_eq!(p.to_string(), "at `/properties/tags`: a map cannot be expressed in strict mode (additionalProperties)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProfileProblem {
    /// JSON pointer into the schema.
    pub path: String,
    /// The keyword at fault (`name` for the tool's name).
    pub keyword: String,
    /// What is wrong, and what to do instead.
    pub message: String,
}

impl ProfileProblem {
    fn new(
        path: impl Into<String>,
        keyword: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ProfileProblem {
            path: path.into(),
            keyword: keyword.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ProfileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at the root: {} ({})", self.message, self.keyword)
        } else {
            write!(f, "at `{}`: {} ({})", self.path, self.message, self.keyword)
        }
    }
}

/// Every problem of a set of tools for a profile, by tool name.
///
/// ```
/// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
/// use pleach_core::providers::{check_registry, Profile};
///
/// let open = define_tool("open_ended", "Takes anything.")
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(open).build().unwrap();
/// let err = check_registry(&registry, Profile::OpenAiStrict).unwrap_err();
/// assert_eq!(err.problems()[0].0, "open_ended");
/// assert!(err.to_string().contains("tool `open_ended` at the root"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ProfileError {
    profile: Profile,
    problems: Vec<(String, ProfileProblem)>,
}

impl ProfileError {
    pub(crate) fn new(profile: Profile, problems: Vec<(String, ProfileProblem)>) -> Self {
        ProfileError { profile, problems }
    }

    /// The profile checked.
    ///
    /// ```
    /// use pleach_core::providers::{check_registry, Profile};
    /// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
    /// let any = define_tool("any_input", "Takes anything.")
    ///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(any).build().unwrap();
    /// let err = check_registry(&registry, Profile::OpenAiStrict).unwrap_err();
    /// assert_eq!(err.profile(), Profile::OpenAiStrict);
    /// assert_eq!(err.problems()[0].1.path, "");
    /// ```
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Every problem, with the name of its tool (see [`ProfileError::profile`] for an example).
    ///
    /// ```
    /// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
    /// use pleach_core::providers::{Profile, check_registry};
    ///
    /// let any = define_tool("any_input", "Takes anything.")
    ///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(any).build().unwrap();
    /// let err = check_registry(&registry, Profile::OpenAiStrict).unwrap_err();
    /// assert_eq!(err.problems()[0].0, "any_input");
    /// ```
    pub fn problems(&self) -> &[(String, ProfileProblem)] {
        &self.problems
    }
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: BTreeSet<&str> = self.problems.iter().map(|(t, _)| t.as_str()).collect();
        write!(
            f,
            "{} problem(s) in {} tool(s) for the {} profile:",
            self.problems.len(),
            tools.len(),
            self.profile
        )?;
        for (tool, problem) in &self.problems {
            write!(f, "\n  tool `{tool}` {problem}")?;
        }
        Ok(())
    }
}

/// Checks every tool of `registry` against `profile`: names and input schemas.
///
/// ```
/// use pleach_core::providers::{check_registry, Profile};
/// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
/// let ping = define_tool("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
/// check_registry(&registry, Profile::Anthropic).unwrap();
/// ```
pub fn check_registry(registry: &dyn ToolSource, profile: Profile) -> Result<(), ProfileError> {
    let mut problems = Vec::new();
    for tool in registry.tools() {
        if let Err(found) = profile.apply_tool(tool.definition()) {
            problems.extend(found.into_iter().map(|p| (tool.name().to_owned(), p)));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ProfileError::new(profile, problems))
    }
}

/// Fails (panics, for use in tests) unless every tool of the active registry (see
/// [`active_registry`]) fits `profile`; the message lists every tool and
/// path at fault. One test makes a schema the provider would refuse a CI failure instead of a
/// 400 in production.
///
/// ```rust,standalone_crate
/// use pleach_core::tool;
/// use pleach_core::providers::{assert_registry_fits, Profile};
///
/// /// Adds two integers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// assert_registry_fits(Profile::OpenAiStrict);
/// assert_registry_fits(Profile::Gemini);
/// ```
///
/// # Panics
///
/// When a tool does not fit, with every problem.
#[track_caller]
pub fn assert_registry_fits(profile: Profile) {
    if let Err(error) = check_registry(&*active_registry(), profile) {
        panic!("{error}");
    }
}

/// Removes the `null`s OpenAI strict mode makes the model send for optional properties, so the
/// arguments fit the tool's own schema again (where such a property is absent, not `null`).
///
/// A `null` is removed only for a property the original schema does not require and whose schema
/// does not accept `null` itself; nested objects, array items and the branch of an `anyOf` /
/// `oneOf` the value has the shape of are followed, through local `$ref`s. The runtime does the
/// same for every call whose arguments the tool's schema refuses as they are
/// (`docs/providers.md`, "How the runtime reads calls"); this is for hosts that check arguments
/// some other way.
///
/// ```
/// use pleach_core::providers::profile::remove_strict_nulls;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "query": { "type": "string" }, "limit": { "type": "integer" } },
///     "required": ["query"]
/// });
/// let sent = json!({ "query": "rust", "limit": null });
/// assert_eq!(remove_strict_nulls(&schema, &sent), json!({ "query": "rust" }));
/// ```
pub fn remove_strict_nulls(original_schema: &Value, arguments: &Value) -> Value {
    let mut arguments = arguments.clone();
    crate::schema::remove_absent_nulls(original_schema, &mut arguments);
    arguments
}

/// Whether a schema accepts `null`: the one rule both the strict profile (which makes an optional
/// property nullable unless it is) and the runtime (which reads such a `null` as absent) use.
fn accepts_null(schema: &Value, root: &Value) -> bool {
    crate::schema::accepts_null(schema, root)
}

/// The `required` names of an object schema.
fn required_names(schema: &Value) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `path` + `/segment`, escaped as JSON pointers require.
fn child(path: &str, segment: &str) -> String {
    let mut out = String::with_capacity(path.len() + segment.len() + 1);
    out.push_str(path);
    crate::schema::push_pointer_segment(&mut out, segment);
    out
}

/// Whether an object schema describes an object (by `type`, or by carrying `properties`).
fn is_object_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    }
}

/// A `$ref` with siblings, as one schema: the target's keywords, overridden by the siblings.
fn merge_ref_siblings(target: &Value, siblings: &Map<String, Value>) -> Value {
    let mut merged = target.as_object().cloned().unwrap_or_default();
    for (key, value) in siblings {
        if key != "$ref" {
            merged.insert(key.clone(), value.clone());
        }
    }
    Value::Object(merged)
}

/// A one-element `allOf` says the same as its element's keywords written beside the others
/// (generators wrap a `$ref` so to give it a description): they are merged in; a keyword set on
/// both sides is a problem.
fn merge_single_all_of(
    map: &mut Map<String, Value>,
    path: &str,
    problems: &mut Vec<ProfileProblem>,
) {
    let Some(Value::Array(parts)) = map.get("allOf") else {
        return;
    };
    let [Value::Object(only)] = parts.as_slice() else {
        return;
    };
    let only = only.clone();
    map.remove("allOf");
    for (key, value) in only {
        if map.contains_key(&key) {
            problems.push(ProfileProblem::new(
                child(&child(path, "allOf"), "0"),
                key.clone(),
                format!("`{key}` is set both beside and inside `allOf`; merge them"),
            ));
        } else {
            map.insert(key, value);
        }
    }
}

/// The root must be `type: "object"` (every provider takes arguments as an object).
fn object_root(schema: &Value) -> Result<(), Vec<ProfileProblem>> {
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
    if is_object {
        Ok(())
    } else {
        Err(vec![ProfileProblem::new(
            "",
            "type",
            "the root must be `\"type\": \"object\"`: arguments are a JSON object",
        )])
    }
}

/// The `format` values JSON Schema 2020-12 defines. Others (`schemars` writes `int32`,
/// `uint64`, `double`, … for Rust's number types) are annotations a validator ignores, and MCP
/// clients warn about each one.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` without the `format`s JSON Schema does not define. Only annotations go: the range a
/// Rust integer type implies is in `minimum`/`maximum` already, and pleach validates every call
/// against the tool's own schema. Values that are data (`default`, `const`, `enum`, `examples`)
/// are left as they are, and so are properties named `format`.
pub(crate) fn standard_formats_only(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| {
                    key.as_str() != "format"
                        || value
                            .as_str()
                            .is_none_or(|format| STANDARD_FORMATS.contains(&format))
                })
                .map(|(key, value)| {
                    let kept = match key.as_str() {
                        "default" | "const" | "enum" | "examples" => value.clone(),
                        // A map of names to schemas: each schema is walked, the names kept.
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" => match value {
                            Value::Object(named) => Value::Object(
                                named
                                    .iter()
                                    .map(|(name, schema)| {
                                        (name.clone(), standard_formats_only(schema))
                                    })
                                    .collect(),
                            ),
                            other => other.clone(),
                        },
                        _ => standard_formats_only(value),
                    };
                    (key.clone(), kept)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(standard_formats_only).collect()),
        other => other.clone(),
    }
}

/// 2^53: past it, not every integer is a double, and providers read a schema's numbers as
/// doubles (JSON numbers in JavaScript and in protobuf's `double` fields).
const EXACT_IN_A_DOUBLE: u64 = 1 << 53;

/// `schema` with bounds a provider can read: a `minimum`, `maximum`, `exclusiveMinimum` or
/// `exclusiveMaximum` past ±2^53 is left out when it is the limit of a 64-bit integer type
/// (`u64::MAX`, `i64::MAX`, `i64::MIN`: `usize` and `isize` too; it only restates the type's own
/// range), and otherwise widened to the nearest double outside it (a wider bound is safe: pleach
/// validates every call against the tool's own schema, which keeps the exact bound). Data
/// (`default`, `const`, `enum`, `examples`) and property names are left as they are.
pub(crate) fn sendable_numbers(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let kept = match key.as_str() {
                    "default" | "const" | "enum" | "examples" => Some(value.clone()),
                    "minimum" | "exclusiveMinimum" => sendable_bound(value, false),
                    "maximum" | "exclusiveMaximum" => sendable_bound(value, true),
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" => Some(match value {
                        Value::Object(named) => Value::Object(
                            named
                                .iter()
                                .map(|(name, schema)| (name.clone(), sendable_numbers(schema)))
                                .collect(),
                        ),
                        other => other.clone(),
                    }),
                    _ => Some(sendable_numbers(value)),
                };
                if let Some(kept) = kept {
                    out.insert(key.clone(), kept);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sendable_numbers).collect()),
        other => other.clone(),
    }
}

/// A bound as [`sendable_numbers`] sends it (`upper`: a maximum, widened upward); `None` to leave
/// it out.
fn sendable_bound(bound: &Value, upper: bool) -> Option<Value> {
    let Value::Number(number) = bound else {
        return Some(bound.clone());
    };
    let exact = if let Some(n) = number.as_u64() {
        n <= EXACT_IN_A_DOUBLE
    } else if let Some(n) = number.as_i64() {
        n.unsigned_abs() <= EXACT_IN_A_DOUBLE
    } else {
        // Already a double.
        true
    };
    if exact {
        return Some(bound.clone());
    }
    let type_limit = number.as_u64() == Some(u64::MAX)
        || number
            .as_i64()
            .is_some_and(|n| n == i64::MAX || n == i64::MIN);
    if type_limit {
        return None;
    }
    Some(nearest_double_outside(number, upper))
}

/// The double nearest to an integer `number` on its outer side (at or above it for an upper
/// bound, at or below for a lower one), written as an integer when one holds it.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn nearest_double_outside(number: &serde_json::Number, upper: bool) -> Value {
    // Integers only reach here (a double is exact already); the cast rounds to the nearest.
    let (rounded, exact_side) = if let Some(n) = number.as_u64() {
        let r = n as f64;
        // `r as u64` saturates at `u64::MAX` for 2^64: compare in 128 bits.
        (r, (r as u128).cmp(&u128::from(n)))
    } else if let Some(n) = number.as_i64() {
        let r = n as f64;
        (r, (r as i128).cmp(&i128::from(n)))
    } else {
        return Value::Number(number.clone());
    };
    let widened = match (upper, exact_side) {
        (true, std::cmp::Ordering::Less) => next_double(rounded, true),
        (false, std::cmp::Ordering::Greater) => next_double(rounded, false),
        _ => rounded,
    };
    if (0.0..18_446_744_073_709_551_616.0).contains(&widened) {
        Value::from(widened as u64)
    } else if (-9_223_372_036_854_775_808.0..0.0).contains(&widened) {
        Value::from(widened as i64)
    } else {
        serde_json::Number::from_f64(widened).map_or(Value::Null, Value::Number)
    }
}

/// The next double above (`up`) or below a finite, non-zero `x`.
fn next_double(x: f64, up: bool) -> f64 {
    let bits = x.to_bits();
    // Away from zero is one more in the bits' magnitude; toward zero, one less.
    let away = (x > 0.0) == up;
    f64::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// `schema` without the `$defs` / `definitions` entries nothing references any more (a profile
/// that inlines a `$ref` can leave its target unused); the keyword goes when it is left empty.
pub(crate) fn drop_unreferenced_defs(schema: &mut Value) {
    for keyword in ["$defs", "definitions"] {
        let Some(Value::Object(defs)) = schema.get(keyword) else {
            continue;
        };
        // References from outside the definitions, then from the definitions they reach.
        let mut reached = BTreeSet::new();
        let mut pending = Vec::new();
        if let Value::Object(root) = &*schema {
            for (key, value) in root {
                if key != "$defs" && key != "definitions" {
                    collect_refs(value, &mut pending);
                }
            }
        }
        while let Some(reference) = pending.pop() {
            let Some(name) = def_name(&reference, keyword) else {
                continue;
            };
            if let Some(def) = defs.get(&name)
                && reached.insert(name)
            {
                collect_refs(def, &mut pending);
            }
        }
        // A reference between the two keywords' entries counts for both: kept to be safe.
        let other = if keyword == "$defs" {
            "definitions"
        } else {
            "$defs"
        };
        if let Some(Value::Object(others)) = schema.get(other) {
            let mut from_others = Vec::new();
            for def in others.values() {
                collect_refs(def, &mut from_others);
            }
            reached.extend(from_others.iter().filter_map(|r| def_name(r, keyword)));
        }
        let none_left = match schema.get_mut(keyword) {
            Some(Value::Object(defs)) => {
                defs.retain(|name, _| reached.contains(name));
                defs.is_empty()
            }
            _ => false,
        };
        if none_left && let Some(map) = schema.as_object_mut() {
            map.remove(keyword);
        }
    }
}

/// Every `$ref` string in a schema (data keywords skipped).
fn collect_refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match key.as_str() {
                    "$ref" => {
                        if let Some(reference) = value.as_str() {
                            out.push(reference.to_owned());
                        }
                    }
                    "default" | "const" | "enum" | "examples" => {}
                    _ => collect_refs(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, out)),
        _ => {}
    }
}

/// The definition a local reference points into (`#/$defs/Name/…` → `Name`), unescaped.
fn def_name(reference: &str, keyword: &str) -> Option<String> {
    let rest = reference
        .strip_prefix("#/")?
        .strip_prefix(keyword)?
        .strip_prefix('/')?;
    let segment = rest.split('/').next()?;
    Some(segment.replace("~1", "/").replace("~0", "~"))
}

/// Anthropic refuses `oneOf`, `allOf` and `anyOf` at the top level of `input_schema` (the API's
/// own error: "`input_schema` does not support oneOf, allOf, or anyOf at the top level").
fn anthropic_root(schema: &Value) -> Result<(), Vec<ProfileProblem>> {
    let mut problems = object_root(schema).err().unwrap_or_default();
    for keyword in ["oneOf", "allOf", "anyOf"] {
        if schema.get(keyword).is_some() {
            problems.push(ProfileProblem::new(
                child("", keyword),
                keyword,
                format!("Anthropic does not accept `{keyword}` at the top level of `input_schema`; move it into a property"),
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// One problem per place: a definition inlined at several uses reports its problems once.
fn dedup(problems: Vec<ProfileProblem>) -> Vec<ProfileProblem> {
    let mut seen = BTreeSet::new();
    problems
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

/// Keywords that are annotations only (they do not change which values are valid); profiles that
/// do not accept them drop them.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
];

/// JSON Schema's seven type names.
pub(super) const JSON_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Whether a `type` keyword's value is one JSON Schema type name or an array of them.
pub(super) fn names_json_types(value: &Value) -> bool {
    match value {
        Value::String(t) => JSON_TYPES.contains(&t.as_str()),
        Value::Array(types) => types
            .iter()
            .all(|t| t.as_str().is_some_and(|t| JSON_TYPES.contains(&t))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_by_profile() {
        assert!(Profile::Gemini.name_problem("ns.tool:v1").is_none());
        assert!(Profile::OpenAiStrict.name_problem("ns.tool").is_some());
        assert!(Profile::Mcp.name_problem(&"x".repeat(128)).is_none());
        assert!(Profile::Anthropic.name_problem(&"x".repeat(65)).is_some());
        assert!(Profile::Mcp.name_problem("").is_some());
    }

    #[test]
    fn child_escapes_pointer_segments() {
        assert_eq!(child("/a", "b/c~d"), "/a/b~1c~0d");
    }

    #[test]
    fn mcp_drops_only_formats_json_schema_does_not_define() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": { "type": "integer", "format": "uint32", "minimum": 0, "maximum": 4_294_967_295_u64 },
                "at": { "type": "string", "format": "date-time" },
                "format": { "type": "string", "format": "int64", "default": { "format": "uint8" } },
                "xs": { "type": "array", "items": { "$ref": "#/$defs/X" } },
                "e": { "enum": [{ "format": "double" }] }
            },
            "required": ["format"],
            "$defs": { "X": { "type": "number", "format": "double" } }
        });
        let sent = Profile::Mcp.apply(&schema).unwrap();
        assert_eq!(
            sent,
            json!({
                "type": "object",
                "properties": {
                    "n": { "type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64 },
                    "at": { "type": "string", "format": "date-time" },
                    "format": { "type": "string", "default": { "format": "uint8" } },
                    "xs": { "type": "array", "items": { "$ref": "#/$defs/X" } },
                    "e": { "enum": [{ "format": "double" }] }
                },
                "required": ["format"],
                "$defs": { "X": { "type": "number" } }
            })
        );
    }

    #[test]
    fn anthropic_refuses_top_level_composition() {
        let schema = json!({ "type": "object", "anyOf": [{ "required": ["a"] }] });
        let problems = Profile::Anthropic.apply(&schema).unwrap_err();
        assert_eq!(problems[0].path, "/anyOf");
    }

    #[test]
    fn remove_strict_nulls_follows_refs_and_items() {
        let schema = json!({
            "type": "object",
            "properties": { "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } } },
            "required": ["lines"],
            "$defs": { "Line": {
                "type": "object",
                "properties": { "sku": { "type": "string" }, "note": { "type": "string" }, "maybe": { "type": ["string", "null"] } },
                "required": ["sku"]
            } }
        });
        let sent = json!({ "lines": [{ "sku": "a", "note": null, "maybe": null }] });
        assert_eq!(
            remove_strict_nulls(&schema, &sent),
            json!({ "lines": [{ "sku": "a", "maybe": null }] })
        );
    }

    #[test]
    fn bounds_past_two_to_the_53_are_left_out_or_widened() {
        let schema = json!({
            "type": "object",
            "properties": {
                "u": { "type": "integer", "minimum": 0, "maximum": u64::MAX },
                "i": { "type": "integer", "minimum": i64::MIN, "maximum": i64::MAX },
                "small": { "type": "integer", "minimum": -9_007_199_254_740_992_i64, "maximum": 9_007_199_254_740_992_u64 },
                "odd": { "type": "integer", "minimum": -9_007_199_254_740_993_i64, "exclusiveMaximum": 9_007_199_254_740_993_u64 },
                "f": { "type": "number", "maximum": 1.5e300 },
                "data": { "type": "integer", "default": u64::MAX, "enum": [u64::MAX] }
            }
        });
        let sent = sendable_numbers(&schema);
        let p = &sent["properties"];
        assert_eq!(p["u"], json!({ "type": "integer", "minimum": 0 }));
        assert_eq!(p["i"], json!({ "type": "integer" }));
        assert_eq!(p["small"], schema["properties"]["small"]);
        // 2^53 + 1 has no double: the bound goes to the next one outward.
        assert_eq!(
            p["odd"],
            json!({ "type": "integer", "minimum": -9_007_199_254_740_994_i64, "exclusiveMaximum": 9_007_199_254_740_994_u64 })
        );
        assert_eq!(p["f"], schema["properties"]["f"]);
        assert_eq!(p["data"], schema["properties"]["data"]);
        // Every profile sends them so.
        for profile in [Profile::OpenAiStrict, Profile::Anthropic, Profile::Mcp] {
            let out = profile.apply(&schema).unwrap();
            assert_eq!(out["properties"]["u"].get("maximum"), None, "{profile}");
            assert_eq!(out["properties"]["i"].get("minimum"), None, "{profile}");
        }
    }

    #[test]
    fn definitions_left_unreferenced_by_inlining_are_dropped() {
        let schema = json!({
            "type": "object",
            "properties": {
                "only_here": { "$ref": "#/$defs/Inlined", "description": "inlined: has a sibling" },
                "kept": { "$ref": "#/$defs/Kept" }
            },
            "required": ["only_here", "kept"],
            "$defs": {
                "Inlined": { "type": "object", "properties": { "x": { "$ref": "#/$defs/Reached" } }, "required": ["x"] },
                "Reached": { "type": "string" },
                "Kept": { "type": "object", "properties": { "next": { "$ref": "#/$defs/Chain" } }, "required": ["next"] },
                "Chain": { "type": "integer" },
                "Unused": { "type": "boolean" }
            }
        });
        let strict = Profile::OpenAiStrict.apply(&schema).unwrap();
        let names: Vec<&String> = strict["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["Chain", "Kept", "Reached"]);
        // Nothing left: the keyword goes.
        let all_inlined = json!({
            "type": "object",
            "properties": { "a": { "$ref": "#/$defs/A", "description": "a" } },
            "required": ["a"],
            "$defs": { "A": { "type": "string" } }
        });
        let strict = Profile::OpenAiStrict.apply(&all_inlined).unwrap();
        assert!(strict.get("$defs").is_none(), "{strict}");
        assert_eq!(
            strict["properties"]["a"],
            json!({ "type": "string", "description": "a" })
        );
    }
}
