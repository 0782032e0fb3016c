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
//!
//! This file holds those rules; the walk itself is `strict.rs`, shared with OpenAI's strict mode.

use serde_json::Value;

use super::ProfileProblem;
use super::strict::{Enums, Properties, Refs, StrictRules};

/// Anthropic's strict tool use, as rules for the strict walker.
const RULES: StrictRules = StrictRules {
    subset: "Anthropic's",
    root: |schema| {
        super::transform::anthropic_root(schema)
            .err()
            .unwrap_or_default()
    },
    boolean_schema: "a boolean schema cannot be expressed in strict mode; give it a type",
    formats: &[
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
    ],
    kept: &["title", "required"],
    // `default` too, as the SDKs do: it tells the model what leaving the property out means.
    described: &[
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
    ],
    max_min_items: Some(1),
    refs: Refs::Inlined,
    properties: Properties::AsWritten,
    enums: Enums::Primitive,
    tuple_items: ITEMS,
    other_items: ITEMS,
    all_of: "`allOf` of several schemas is not supported in strict mode; merge them into one",
    // Deep enough for any real schema; bounds the work on pathological ones.
    max_depth: Some(64),
    limits: None,
};

const ITEMS: &str =
    "`items` must be one schema in strict mode (tuples and boolean schemas are not supported)";

pub(super) fn apply(schema: &Value) -> Result<Value, Vec<ProfileProblem>> {
    super::strict::apply(schema, &RULES)
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
