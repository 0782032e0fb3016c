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
    "ipv4",
    "ipv6",
    "uuid",
];

/// Kept as they are.
const SUPPORTED: &[&str] = &[
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
];

const MAX_PROPERTIES: usize = 5000;
const MAX_NESTING: usize = 10;
const MAX_STRING_TOTAL: usize = 120_000;
const MAX_ENUM_VALUES: usize = 1000;
const LARGE_ENUM: usize = 250;
const MAX_LARGE_ENUM_CHARS: usize = 15_000;

pub(super) fn apply(schema: &Value) -> Result<Value, Vec<ProfileProblem>> {
    let mut strict = Strict {
        root: schema,
        problems: Vec::new(),
        inlining: Vec::new(),
        properties: 0,
        string_chars: 0,
        enum_values: 0,
    };
    if let Some(keyword) = ["anyOf", "oneOf"]
        .into_iter()
        .find(|k| schema.get(*k).is_some())
    {
        strict.problem(
            child("", keyword),
            keyword,
            format!("the root cannot be `{keyword}` in strict mode; it must be one object"),
        );
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        strict.problem("", "type", "the root must be `\"type\": \"object\"`");
    }
    let mut out = strict.schema(schema, "", 0);
    super::transform::drop_unreferenced_defs(&mut out);
    strict.check_totals();
    if strict.problems.is_empty() {
        Ok(out)
    } else {
        Err(strict.problems)
    }
}

struct Strict<'a> {
    root: &'a Value,
    problems: Vec<ProfileProblem>,
    /// `$ref`s being inlined (to stop at a recursive one).
    inlining: Vec<String>,
    properties: usize,
    string_chars: usize,
    enum_values: usize,
}

impl Strict<'_> {
    fn problem(&mut self, path: impl Into<String>, keyword: &str, message: impl Into<String>) {
        self.problems
            .push(ProfileProblem::new(path, keyword, message));
    }

    /// `depth`: how many objects enclose this schema.
    fn schema(&mut self, schema: &Value, path: &str, depth: usize) -> Value {
        let Value::Object(map) = schema else {
            self.problem(
                path,
                "type",
                "a boolean schema (any value) cannot be expressed in strict mode; give it a type",
            );
            return schema.clone();
        };
        let mut map = map.clone();
        merge_single_all_of(&mut map, path, &mut self.problems);
        if let Some(inlined) = self.inline_ref(&map, path) {
            let out = self.schema(&inlined, path, depth);
            self.inlining.pop();
            return out;
        }

        let object = is_object_schema(&map);
        let depth = if object { depth + 1 } else { depth };
        if object && depth > MAX_NESTING {
            self.problem(
                path,
                "properties",
                format!("objects are nested deeper than strict mode's {MAX_NESTING} levels"),
            );
        }

        let mut out = Map::new();
        for (key, value) in &map {
            let at = child(path, key);
            match key.as_str() {
                "type" => {
                    self.check_types(value, &at);
                    out.insert(key.clone(), value.clone());
                }
                "properties" | "required" | "additionalProperties" => {} // below
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
                    let branches = self.branches(value, &at, depth);
                    // `oneOf` becomes `anyOf`: the tool's own validation still applies `oneOf`.
                    out.insert("anyOf".to_owned(), branches);
                }
                "enum" => {
                    self.count_enum(value, &at);
                    out.insert(key.clone(), value.clone());
                }
                "const" => {
                    self.count_string(value);
                    out.insert(key.clone(), value.clone());
                }
                "$ref" => {
                    let local = value
                        .as_str()
                        .is_some_and(|r| resolve_local(self.root, r).is_some());
                    if !local {
                        self.problem(&at, key, "only local `$ref`s (`#/$defs/…`) are supported");
                    }
                    out.insert(key.clone(), value.clone());
                }
                "$defs" | "definitions" => {
                    let defs = self.definitions(value, &at);
                    out.insert(key.clone(), defs);
                }
                "format" => {
                    // Unsupported formats are annotations: dropped, the tool's validation is unchanged.
                    if value.as_str().is_some_and(|f| STRING_FORMATS.contains(&f)) {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "allOf" => self.problem(
                    &at,
                    key,
                    "`allOf` is not supported in strict mode; merge its schemas into one",
                ),
                k if SUPPORTED.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if ANNOTATIONS.contains(&k) => {}
                _ => self.problem(
                    &at,
                    key,
                    format!("`{key}` is not in OpenAI's strict subset of JSON Schema"),
                ),
            }
        }
        if object {
            self.close_object(&map, &mut out, path, depth);
        }
        Value::Object(out)
    }

    /// A `$ref` with siblings is inlined (strict mode refuses the siblings): the schema to use
    /// instead, its `$ref` pushed on the inlining stack.
    fn inline_ref(&mut self, map: &Map<String, Value>, path: &str) -> Option<Value> {
        let reference = map.get("$ref")?.as_str()?;
        let has_siblings = map
            .keys()
            .any(|k| k != "$ref" && !ANNOTATIONS.contains(&k.as_str()));
        if !has_siblings {
            return None;
        }
        let target = resolve_local(self.root, reference)?;
        if self.inlining.iter().any(|r| r == reference) {
            self.problem(
                child(path, "$ref"),
                "$ref",
                "a recursive `$ref` with sibling keywords cannot be inlined; move the siblings into the definition",
            );
            return None;
        }
        self.inlining.push(reference.to_owned());
        Some(merge_ref_siblings(target, map))
    }

    fn check_types(&mut self, value: &Value, at: &str) {
        if !names_json_types(value) {
            self.problem(at, "type", format!("unsupported type {value}"));
        }
    }

    fn items(&mut self, value: &Value, at: &str, depth: usize) -> Value {
        match value {
            Value::Object(_) => self.schema(value, at, depth),
            Value::Array(_) => {
                self.problem(
                    at,
                    "items",
                    "tuples (`items` as an array) are not supported in strict mode",
                );
                value.clone()
            }
            _ => {
                self.problem(at, "items", "`items` must be a typed schema in strict mode");
                value.clone()
            }
        }
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
                .map(|(i, b)| self.schema(b, &child(at, &i.to_string()), depth))
                .collect(),
        )
    }

    fn definitions(&mut self, value: &Value, at: &str) -> Value {
        let Value::Object(defs) = value else {
            self.problem(at, "$defs", "must be an object of schemas");
            return value.clone();
        };
        let mut out = Map::new();
        for (name, def) in defs {
            self.string_chars += name.chars().count();
            out.insert(name.clone(), self.schema(def, &child(at, name), 0));
        }
        Value::Object(out)
    }

    /// Every property required, the optional ones nullable, no other keys.
    fn close_object(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        depth: usize,
    ) {
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => self.problem(
                child(path, "additionalProperties"),
                "additionalProperties",
                "strict mode needs `additionalProperties: false`; a map with free keys cannot be expressed (use an array of key/value objects)",
            ),
        }
        let properties = map.get("properties").and_then(Value::as_object);
        if properties.is_none() && map.get("additionalProperties") != Some(&Value::Bool(false)) {
            self.problem(
                path,
                "properties",
                "an object without `properties` accepts any keys, which strict mode cannot express; declare its properties",
            );
        }
        let required = super::transform::required_names(&Value::Object(map.clone()))
            .into_iter()
            .map(str::to_owned)
            .collect::<std::collections::BTreeSet<_>>();
        let mut props_out = Map::new();
        let mut names = Vec::new();
        for (name, schema) in properties.into_iter().flatten() {
            self.properties += 1;
            self.string_chars += name.chars().count();
            let at = child(&child(path, "properties"), name);
            let converted = self.schema(schema, &at, depth);
            let converted =
                if required.contains(name) || super::transform::accepts_null(schema, self.root) {
                    converted
                } else {
                    nullable(converted)
                };
            props_out.insert(name.clone(), converted);
            names.push(Value::from(name.as_str()));
        }
        out.insert("properties".to_owned(), Value::Object(props_out));
        out.insert("required".to_owned(), Value::Array(names));
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
    }

    fn count_string(&mut self, value: &Value) {
        if let Value::String(s) = value {
            self.string_chars += s.chars().count();
        }
    }

    fn count_enum(&mut self, value: &Value, at: &str) {
        let Value::Array(values) = value else {
            self.problem(at, "enum", "must be an array");
            return;
        };
        self.enum_values += values.len();
        let chars: usize = values
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.chars().count())
            .sum();
        self.string_chars += chars;
        if values.len() > LARGE_ENUM && chars > MAX_LARGE_ENUM_CHARS {
            self.problem(
                at,
                "enum",
                format!("an enum of more than {LARGE_ENUM} values may total at most {MAX_LARGE_ENUM_CHARS} characters in strict mode (this one: {chars})"),
            );
        }
    }

    fn check_totals(&mut self) {
        if self.properties > MAX_PROPERTIES {
            let n = self.properties;
            self.problem(
                "",
                "properties",
                format!("{n} properties: strict mode allows {MAX_PROPERTIES}"),
            );
        }
        if self.string_chars > MAX_STRING_TOTAL {
            let n = self.string_chars;
            self.problem(
                "",
                "properties",
                format!("property names, definition names, enum and const values total {n} characters: strict mode allows {MAX_STRING_TOTAL}"),
            );
        }
        if self.enum_values > MAX_ENUM_VALUES {
            let n = self.enum_values;
            self.problem(
                "",
                "enum",
                format!("{n} enum values: strict mode allows {MAX_ENUM_VALUES}"),
            );
        }
    }
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
