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
//! This file holds the profile API: [`Profile`] and what it finds ([`ProfileProblem`],
//! [`ProfileError`]), the registry checks and [`remove_strict_nulls`]. The transforms the profiles
//! share are `transform.rs`; the two strict dialects go through one walker (`strict.rs`), each
//! with its rules in its own file (`openai_strict.rs`, `anthropic_strict.rs`); Gemini's
//! conversion to its OpenAPI subset is `gemini.rs`.
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

use serde_json::Value;

use crate::registry::{ToolSource, active_registry};
use crate::tool::ToolDefinition;

mod anthropic_strict;
mod gemini;
mod openai_strict;
mod strict;
mod transform;

pub(crate) use transform::{sendable_numbers, standard_formats_only};

use self::transform::{anthropic_root, dedup, object_root};

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
    /// use pleach_core::{ToolError, ToolDefinition};
    /// use pleach_core::providers::Profile;
    ///
    /// let tool = ToolDefinition::builder("echo", "Returns its input.")
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

/// Every problem of a set of tools for a profile, by tool name: what
/// [`check_registry`] and the registry forms of a
/// [`ProviderFormat`](crate::providers::ProviderFormat) find.
///
/// ```
/// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
/// use pleach_core::providers::{check_registry, Profile};
///
/// let open = ToolDefinition::builder("open_ended", "Takes anything.")
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(open).build().unwrap();
/// let err = check_registry(&registry, Profile::OpenAiStrict).unwrap_err();
/// assert_eq!(err.problems()[0].0, "open_ended");
/// assert!(err.to_string().contains("tool `open_ended` at the root"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ProfileError {
    profile: Option<Profile>,
    problems: Vec<(String, ProfileProblem)>,
}

impl ProfileError {
    pub(crate) fn new(profile: Option<Profile>, problems: Vec<(String, ProfileProblem)>) -> Self {
        ProfileError { profile, problems }
    }

    /// The profile checked; `None` when the tools went through none (a format without strict
    /// mode asked for strict definitions).
    ///
    /// ```
    /// use pleach_core::providers::{check_registry, Profile};
    /// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
    /// let any = ToolDefinition::builder("any_input", "Takes anything.")
    ///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(any).build().unwrap();
    /// let err = check_registry(&registry, Profile::OpenAiStrict).unwrap_err();
    /// assert_eq!(err.profile(), Some(Profile::OpenAiStrict));
    /// assert_eq!(err.problems()[0].1.path, "");
    /// ```
    pub fn profile(&self) -> Option<Profile> {
        self.profile
    }

    /// Every problem, with the name of its tool (see [`ProfileError::profile`] for an example).
    ///
    /// ```
    /// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
    /// use pleach_core::providers::{Profile, check_registry};
    ///
    /// let any = ToolDefinition::builder("any_input", "Takes anything.")
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
            "{} problem(s) in {} tool(s)",
            self.problems.len(),
            tools.len()
        )?;
        if let Some(profile) = self.profile {
            write!(f, " for the {profile} profile")?;
        }
        f.write_str(":")?;
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
/// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
/// let ping = ToolDefinition::builder("ping", "Answers pong.")
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
        Err(ProfileError::new(Some(profile), problems))
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

#[cfg(test)]
mod tests {
    use super::transform::child;
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
