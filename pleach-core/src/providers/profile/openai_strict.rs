//! OpenAI Structured Outputs (`strict: true`), after OpenAI's "Supported schemas" list
//! (platform.openai.com/docs/guides/structured-outputs#supported-schemas):
//!
//! - types: string, number, boolean, integer, object, array, enum, `anyOf`; the root is an object
//!   and not an `anyOf`;
//! - string: `pattern`, `format` (date-time, time, date, duration, email, hostname, ipv4, ipv6,
//!   uuid); `minLength`/`maxLength` are listed as unsupported only for fine-tuned models;
//! - number: `multipleOf`, `maximum`, `exclusiveMaximum`, `minimum`, `exclusiveMinimum`;
//! - array: `minItems`, `maxItems`;
//! - `$defs`/`$ref` (recursion included);
//! - every property required (optional ones as a union with `null`), `additionalProperties:
//!   false` on every object;
//! - not supported: `allOf`, `not`, `dependentRequired`, `dependentSchemas`, `if`, `then`, `else`;
//! - limits: 5000 properties, 10 levels of nesting, 120,000 characters of property names,
//!   definition names, enum and const values, 1000 enum values, and 15,000 characters for a
//!   single enum of more than 250 string values.
//!
//! `default` is dropped: OpenAI refused it ("'default' is not permitted", reported in
//! 567-labs/instructor#1074 and dotnet/extensions#6196). A `$ref` with sibling keywords is
//! inlined, as openai-python's own strict conversion does.
//!
//! This file holds those rules and the nullable form of an optional property; the walk itself is
//! `strict.rs`, shared with Anthropic's strict mode.

use serde_json::{Map, Value};

use super::ProfileProblem;
use super::strict::{Enums, Limits, Properties, Refs, StrictRules};
use super::transform::child;

/// OpenAI's strict mode, as rules for the strict walker.
const RULES: StrictRules = StrictRules {
    subset: "OpenAI's",
    root,
    boolean_schema: "a boolean schema (any value) cannot be expressed in strict mode; give it a type",
    formats: &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
    ],
    kept: &[
        "title",
        "description",
        "pattern",
        "minLength",
        "maxLength",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    ],
    described: &[],
    max_min_items: None,
    refs: Refs::InlinedWithSiblings,
    properties: Properties::AllRequired(nullable),
    enums: Enums::Counted,
    tuple_items: "tuples (`items` as an array) are not supported in strict mode",
    other_items: "`items` must be a typed schema in strict mode",
    all_of: "`allOf` is not supported in strict mode; merge its schemas into one",
    max_depth: None,
    limits: Some(Limits {
        properties: 5000,
        nesting: 10,
        string_chars: 120_000,
        enum_values: 1000,
        large_enum: 250,
        large_enum_chars: 15_000,
    }),
};

pub(super) fn apply(schema: &Value) -> Result<Value, Vec<ProfileProblem>> {
    super::strict::apply(schema, &RULES)
}

/// The root is one object, not a union.
fn root(schema: &Value) -> Vec<ProfileProblem> {
    let mut problems = Vec::new();
    if let Some(keyword) = ["anyOf", "oneOf"]
        .into_iter()
        .find(|k| schema.get(*k).is_some())
    {
        problems.push(ProfileProblem::new(
            child("", keyword),
            keyword,
            format!("the root cannot be `{keyword}` in strict mode; it must be one object"),
        ));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        problems.push(ProfileProblem::new(
            "",
            "type",
            "the root must be `\"type\": \"object\"`",
        ));
    }
    problems
}

/// The schema, also accepting `null`: a `null` added to `type` (and to `enum`), a `const` turned
/// into a two-value `enum`, or else an `anyOf` with a `null` branch.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if let Some(types) = map.get_mut("type") {
        match types {
            Value::String(t) if t != "null" => {
                *types = Value::Array(vec![Value::String(t.clone()), Value::from("null")]);
            }
            Value::Array(list) if !list.iter().any(|t| t == "null") => {
                list.push(Value::from("null"));
            }
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.iter().any(Value::is_null)
        {
            values.push(Value::Null);
        }
        if let Some(constant) = map.remove("const") {
            map.insert("enum".to_owned(), Value::Array(vec![constant, Value::Null]));
        }
        return Value::Object(map);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type") == Some(&Value::from("null")))
        {
            branches.push(serde_json::json!({ "type": "null" }));
        }
        return Value::Object(map);
    }
    let mut outer = Map::new();
    for key in ["title", "description"] {
        if let Some(value) = map.remove(key) {
            outer.insert(key.to_owned(), value);
        }
    }
    outer.insert(
        "anyOf".to_owned(),
        Value::Array(vec![
            Value::Object(map),
            serde_json::json!({ "type": "null" }),
        ]),
    );
    Value::Object(outer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_forms() {
        assert_eq!(
            nullable(json!({ "type": "string" })),
            json!({ "type": ["string", "null"] })
        );
        assert_eq!(
            nullable(json!({ "type": "string", "enum": ["a"] })),
            json!({ "type": ["string", "null"], "enum": ["a", null] })
        );
        assert_eq!(
            nullable(json!({ "description": "d", "$ref": "#/$defs/X" })),
            json!({ "description": "d", "anyOf": [{ "$ref": "#/$defs/X" }, { "type": "null" }] })
        );
        assert_eq!(
            nullable(json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] })),
            json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }, { "type": "null" }] })
        );
    }

    #[test]
    fn ref_with_siblings_is_inlined() {
        let schema = json!({
            "type": "object",
            "properties": { "a": { "$ref": "#/$defs/A", "description": "the a" } },
            "required": ["a"],
            "$defs": { "A": { "type": "string", "minLength": 1 } }
        });
        let out = apply(&schema).unwrap();
        assert_eq!(
            out["properties"]["a"],
            json!({ "type": "string", "minLength": 1, "description": "the a" })
        );
    }

    #[test]
    fn recursion_through_bare_refs_is_kept() {
        let schema = json!({
            "type": "object",
            "properties": { "node": { "$ref": "#/$defs/Node" } },
            "required": ["node"],
            "$defs": { "Node": {
                "type": "object",
                "properties": { "next": { "anyOf": [{ "$ref": "#/$defs/Node" }, { "type": "null" }] } },
                "required": ["next"]
            } }
        });
        let out = apply(&schema).unwrap();
        assert_eq!(out["$defs"]["Node"]["additionalProperties"], false);
    }

    #[test]
    fn nesting_limit() {
        let mut schema =
            json!({ "type": "object", "properties": {}, "additionalProperties": false });
        for _ in 0..10 {
            schema = json!({ "type": "object", "properties": { "x": schema }, "required": ["x"] });
        }
        let problems = apply(&schema).unwrap_err();
        assert_eq!(problems[0].keyword, "properties");
        assert!(
            problems[0].path.ends_with("/properties/x"),
            "{}",
            problems[0].path
        );
    }
}
