//! Anthropic strict tool use (`"strict": true` on a tool), after Anthropic's structured outputs
//! guide, "JSON Schema limitations" (platform.claude.com/docs/en/build-with-claude/structured-outputs),
//! and the schema transformation Anthropic's own SDKs apply (`transform_schema` in
//! anthropic-sdk-python):
//!
//! - types: object, array, string, integer, number, boolean, null (type arrays too); `enum` and
//!   `const` of primitive values; `anyOf`; local `$ref`s, not recursive; `required`;
//! - `additionalProperties: false` on every object (anything else is refused by the API);
//! - string `format`: date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid;
//! - arrays: `items`, `minItems` of 0 or 1;
//! - not supported: recursive schemas, numeric constraints (`minimum`, `maximum`,
//!   `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`), string lengths, `maxItems`, larger
//!   `minItems`, complex types in enums, external `$ref`s.
//!
//! The constraints strict mode cannot hold are moved into the schema's `description`, as the SDKs
//! do (`{minimum: 1, maximum: 50}` after the text), so the model is still told about them and
//! pleach's own validation still enforces them; `pattern` goes there too (the API takes only
//! simple expressions, and which ones is not specified). What would change the shape of valid
//! values (maps, open objects, `not`, conditionals, tuples, recursion) is refused, with the path.
//! `$ref`s are inlined and `$defs` dropped, so no reference reaches the API.

use serde_json::{Map, Value};

use super::ProfileProblem;
use super::transform::{
    ANNOTATIONS, child, is_object_schema, merge_ref_siblings, merge_single_all_of, names_json_types,
};
use crate::schema::resolve_local;

const STRING_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Kept as they are.
const SUPPORTED: &[&str] = &["title", "required"];

/// Constraints strict mode cannot hold: moved into the description (`default` too, as the SDKs
/// do: it tells the model what leaving the property out means).
const DESCRIBED: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "default",
];

/// Deep enough for any real schema; bounds the work on pathological ones.
const MAX_DEPTH: usize = 64;

pub(super) fn apply(schema: &Value) -> Result<Value, Vec<ProfileProblem>> {
    let mut strict = Strict {
        root: schema,
        problems: super::transform::anthropic_root(schema)
            .err()
            .unwrap_or_default(),
        inlining: Vec::new(),
    };
    let out = strict.schema(schema, "", 0);
    if strict.problems.is_empty() {
        Ok(out)
    } else {
        Err(strict.problems)
    }
}

struct Strict<'a> {
    root: &'a Value,
    problems: Vec<ProfileProblem>,
    /// `$ref`s being inlined (a `$ref` met again inside its own target is recursion).
    inlining: Vec<String>,
}

impl Strict<'_> {
    fn problem(&mut self, path: impl Into<String>, keyword: &str, message: impl Into<String>) {
        self.problems
            .push(ProfileProblem::new(path, keyword, message));
    }

    fn schema(&mut self, schema: &Value, path: &str, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            self.problem(
                path,
                "type",
                format!("schemas nested deeper than {MAX_DEPTH} levels"),
            );
            return Value::Object(Map::new());
        }
        let Value::Object(map) = schema else {
            self.problem(
                path,
                "type",
                "a boolean schema cannot be expressed in strict mode; give it a type",
            );
            return schema.clone();
        };
        let mut map = map.clone();
        merge_single_all_of(&mut map, path, &mut self.problems);
        if let Some(reference) = map.get("$ref").cloned() {
            return self.inline(&reference, &map, path, depth);
        }

        let mut out = Map::new();
        let mut described = Vec::new();
        for (key, value) in &map {
            let at = child(path, key);
            match key.as_str() {
                "type" => {
                    self.check_types(value, &at);
                    out.insert(key.clone(), value.clone());
                }
                // `description` and `additionalProperties` are written below; every `$ref` is
                // inlined, so the definitions are not sent.
                "description" | "additionalProperties" | "$defs" | "definitions" => {}
                "properties" => {
                    let properties = self.properties(value, &at, depth);
                    out.insert(key.clone(), properties);
                }
                "items" => {
                    let items = self.items(value, &at, depth);
                    out.insert(key.clone(), items);
                }
                "anyOf" | "oneOf" => {
                    if key == "oneOf" && map.contains_key("anyOf") {
                        self.problem(
                            &at,
                            key,
                            "both `oneOf` and `anyOf`: strict mode has `anyOf` only; merge them",
                        );
                        continue;
                    }
                    // `oneOf` becomes `anyOf`: the tool's own validation still applies `oneOf`.
                    let branches = self.branches(value, &at, depth);
                    out.insert("anyOf".to_owned(), branches);
                }
                "enum" | "const" => {
                    let values = match value {
                        Value::Array(values) if key == "enum" => values.as_slice(),
                        _ => std::slice::from_ref(value),
                    };
                    if values.iter().any(|v| v.is_object() || v.is_array()) {
                        self.problem(
                            &at,
                            key,
                            "strict mode takes only strings, numbers, booleans and `null` here",
                        );
                    }
                    out.insert(key.clone(), value.clone());
                }
                "format" => {
                    // Other formats are annotations (schemars' `uint32`, `double`, …): dropped,
                    // the tool's validation is unchanged.
                    if value.as_str().is_some_and(|f| STRING_FORMATS.contains(&f)) {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "minItems" if matches!(value.as_u64(), Some(0 | 1)) => {
                    out.insert(key.clone(), value.clone());
                }
                "minItems" => described.push((key.as_str(), value)),
                k if DESCRIBED.contains(&k) => described.push((key.as_str(), value)),
                k if SUPPORTED.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if ANNOTATIONS.contains(&k) => {}
                "allOf" => self.problem(
                    &at,
                    key,
                    "`allOf` of several schemas is not supported in strict mode; merge them into one",
                ),
                _ => self.problem(
                    &at,
                    key,
                    format!("`{key}` is not in Anthropic's strict subset of JSON Schema"),
                ),
            }
        }
        if is_object_schema(&map) {
            self.close_object(&map, &mut out, path);
        }
        describe(&map, &mut out, &described);
        Value::Object(out)
    }

    /// A `$ref`, inlined with its siblings over the target's keywords; refused when it is not
    /// local or points back into a definition being inlined (recursion).
    fn inline(
        &mut self,
        reference: &Value,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Value {
        let at = child(path, "$ref");
        let Some(target) = reference
            .as_str()
            .and_then(|r| resolve_local(self.root, r).map(|t| (r, t)))
        else {
            self.problem(
                &at,
                "$ref",
                "only local `$ref`s (`#/$defs/…`) are supported",
            );
            return Value::Object(Map::new());
        };
        let (reference, target) = target;
        if self.inlining.iter().any(|r| r == reference) {
            self.problem(
                &at,
                "$ref",
                "recursive schemas are not supported in strict mode",
            );
            return Value::Object(Map::new());
        }
        self.inlining.push(reference.to_owned());
        let merged = merge_ref_siblings(target, map);
        let out = self.schema(&merged, path, depth + 1);
        self.inlining.pop();
        out
    }

    fn check_types(&mut self, value: &Value, at: &str) {
        if !names_json_types(value) {
            self.problem(at, "type", format!("unsupported type {value}"));
        }
    }

    fn properties(&mut self, value: &Value, at: &str, depth: usize) -> Value {
        let Value::Object(properties) = value else {
            self.problem(at, "properties", "must be an object of schemas");
            return value.clone();
        };
        Value::Object(
            properties
                .iter()
                .map(|(name, schema)| {
                    let schema = self.schema(schema, &child(at, name), depth + 1);
                    (name.clone(), schema)
                })
                .collect(),
        )
    }

    fn items(&mut self, value: &Value, at: &str, depth: usize) -> Value {
        if value.is_object() {
            return self.schema(value, at, depth + 1);
        }
        self.problem(
            at,
            "items",
            "`items` must be one schema in strict mode (tuples and boolean schemas are not supported)",
        );
        value.clone()
    }

    fn branches(&mut self, value: &Value, at: &str, depth: usize) -> Value {
        let Value::Array(branches) = value else {
            self.problem(at, "anyOf", "must be an array of schemas");
            return value.clone();
        };
        Value::Array(
            branches
                .iter()
                .enumerate()
                .map(|(i, b)| self.schema(b, &child(at, &i.to_string()), depth + 1))
                .collect(),
        )
    }

    /// `additionalProperties: false` on every object; an object that takes other keys (a map,
    /// or one without `properties`) cannot be said in strict mode.
    fn close_object(&mut self, map: &Map<String, Value>, out: &mut Map<String, Value>, path: &str) {
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => self.problem(
                child(path, "additionalProperties"),
                "additionalProperties",
                "strict mode needs `additionalProperties: false`; a map with free keys cannot be expressed (use an array of key/value objects)",
            ),
        }
        if !map.contains_key("properties") && !map.contains_key("additionalProperties") {
            self.problem(
                path,
                "properties",
                "an object without `properties` accepts any keys, which strict mode cannot express; declare its properties",
            );
        }
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
}

/// The schema's description, with the constraints strict mode cannot hold written after it as
/// `{minimum: 1, maximum: 50}` (the form Anthropic's SDKs use).
fn describe(map: &Map<String, Value>, out: &mut Map<String, Value>, described: &[(&str, &Value)]) {
    let text = map.get("description").and_then(Value::as_str);
    if described.is_empty() {
        if let Some(text) = text {
            out.insert("description".to_owned(), Value::from(text));
        }
        return;
    }
    let constraints: Vec<String> = described
        .iter()
        .map(|(key, value)| format!("{key}: {value}"))
        .collect();
    let constraints = format!("{{{}}}", constraints.join(", "));
    let description = match text {
        Some(text) => format!("{text}\n\n{constraints}"),
        None => constraints,
    };
    out.insert("description".to_owned(), Value::from(description));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn objects_close_refs_inline_and_constraints_move_to_the_description() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "description": "What to find.", "minLength": 1, "pattern": "^\\w+$" },
                "limit": { "type": "integer", "format": "uint32", "minimum": 1, "maximum": 50, "default": 10 },
                "at": { "type": "string", "format": "date-time" },
                "tags": { "type": "array", "items": { "$ref": "#/$defs/Tag" }, "minItems": 1, "maxItems": 5 },
                "mode": { "oneOf": [{ "const": "fast" }, { "const": "exact" }] }
            },
            "required": ["query"],
            "$defs": { "Tag": { "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } }
        });
        let sent = apply(&schema).unwrap();
        assert_eq!(
            sent,
            json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "What to find.\n\n{minLength: 1, pattern: \"^\\\\w+$\"}" },
                    "limit": { "type": "integer", "description": "{default: 10, maximum: 50, minimum: 1}" },
                    "at": { "type": "string", "format": "date-time" },
                    "tags": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": { "name": { "type": "string" } },
                            "required": ["name"],
                            "additionalProperties": false
                        },
                        "minItems": 1,
                        "description": "{maxItems: 5}"
                    },
                    "mode": { "anyOf": [{ "const": "fast" }, { "const": "exact" }] }
                },
                "required": ["query"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn what_strict_mode_cannot_say_is_refused_with_its_path() {
        let schema = json!({
            "type": "object",
            "properties": {
                "labels": { "type": "object", "additionalProperties": { "type": "string" } },
                "anything": { "type": "object" },
                "pair": { "type": "array", "items": [{ "type": "string" }, { "type": "integer" }] },
                "tree": { "$ref": "#/$defs/Node" },
                "shape": { "enum": [{ "kind": "circle" }] },
                "odd": { "type": "integer", "not": { "const": 3 } }
            },
            "$defs": { "Node": { "type": "object", "properties": { "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } } } } }
        });
        let problems = apply(&schema).unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/properties/anything",
                "/properties/labels/additionalProperties",
                "/properties/odd/not",
                "/properties/pair/items",
                "/properties/shape/enum",
                "/properties/tree/properties/children/items/$ref",
            ]
        );
        let root =
            apply(&json!({ "type": "object", "anyOf": [{ "required": ["a"] }] })).unwrap_err();
        assert_eq!(root[0].path, "/anyOf");
    }
}
