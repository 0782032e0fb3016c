//! Gemini `functionDeclarations[].parameters`: the OpenAPI 3.0 `Schema` subset (Gemini API
//! reference, `Schema`): `type`, `format`, `title`, `description`, `nullable`, `enum` (strings),
//! `default`, `example`, `items`, `minItems`, `maxItems`, `properties`, `required`,
//! `minProperties`, `maxProperties`, `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`,
//! `anyOf`, `propertyOrdering`. No references, no type arrays, no `oneOf`, no `const`; an object
//! needs at least one property ("should be non-empty for OBJECT type").

use serde_json::{Map, Value};

use super::ProfileProblem;
use super::transform::{ANNOTATIONS, child, merge_ref_siblings, merge_single_all_of};
use crate::schema::resolve_local;

/// Kept as they are.
const SUPPORTED: &[&str] = &[
    "title",
    "description",
    "default",
    "example",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "propertyOrdering",
];

pub(super) fn apply(schema: &Value) -> Result<Value, Vec<ProfileProblem>> {
    let mut gemini = Gemini {
        root: schema,
        problems: Vec::new(),
        refs: Vec::new(),
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        gemini.problem("", "type", "the root must be `\"type\": \"object\"`");
    }
    let out = gemini.schema(schema, "", true);
    if gemini.problems.is_empty() {
        Ok(out)
    } else {
        Err(gemini.problems)
    }
}

struct Gemini<'a> {
    root: &'a Value,
    problems: Vec<ProfileProblem>,
    /// The `$ref`s being inlined, to refuse a recursive one.
    refs: Vec<String>,
}

impl Gemini<'_> {
    fn problem(&mut self, path: impl Into<String>, keyword: &str, message: impl Into<String>) {
        self.problems
            .push(ProfileProblem::new(path, keyword, message));
    }

    fn schema(&mut self, schema: &Value, path: &str, is_root: bool) -> Value {
        let Value::Object(map) = schema else {
            self.problem(
                path,
                "type",
                "a boolean schema (any value) cannot be expressed for Gemini; give it a type",
            );
            return Value::Object(Map::new());
        };
        let mut map = map.clone();
        merge_single_all_of(&mut map, path, &mut self.problems);
        if let Some(reference) = map.get("$ref") {
            return self.inline(reference, &map, path);
        }

        let mut out = Map::new();
        let mut nullable = false;
        for (key, value) in &map {
            let at = child(path, key);
            match key.as_str() {
                "type" => self.convert_type(value, &at, &mut out, &mut nullable),
                "nullable" => nullable |= value == &Value::Bool(true),
                "properties" => {
                    let Value::Object(properties) = value else {
                        self.problem(&at, key, "must be an object of schemas");
                        continue;
                    };
                    let converted = properties
                        .iter()
                        .map(|(name, p)| (name.clone(), self.schema(p, &child(&at, name), false)))
                        .collect();
                    out.insert(key.clone(), Value::Object(converted));
                }
                "required" => {
                    out.insert(key.clone(), value.clone());
                }
                "items" => {
                    if value.is_object() {
                        let items = self.schema(value, &at, false);
                        out.insert(key.clone(), items);
                    } else {
                        self.problem(&at, key, "Gemini has no tuples: `items` must be one schema");
                    }
                }
                "anyOf" | "oneOf" => {
                    if key == "oneOf" && map.contains_key("anyOf") {
                        self.problem(&at, key, "both `oneOf` and `anyOf`; merge them into one `anyOf`");
                        continue;
                    }
                    self.convert_branches(value, &at, &mut out, &mut nullable);
                }
                "const" => match value {
                    Value::String(_) => {
                        out.insert("enum".to_owned(), Value::Array(vec![value.clone()]));
                        out.entry("type").or_insert_with(|| Value::from("string"));
                    }
                    Value::Null => nullable = true,
                    _ => self.problem(&at, key, "Gemini's `enum` holds strings only, so a non-string `const` cannot be expressed"),
                },
                "enum" => self.convert_enum(value, &at, &mut out, &mut nullable),
                "format" => {
                    if supported_format(&map, value) {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    self.convert_exclusive(key, value, &map, &at, &mut out);
                }
                // Dropped: Gemini has no `additionalProperties`; the tool's own validation still
                // refuses keys it does not declare.
                "additionalProperties" | "$defs" | "definitions" => {}
                "allOf" => self.problem(&at, key, "Gemini has no `allOf`; merge its schemas into one"),
                // An exclusive bound turned inclusive is set only when it is the tighter one, and
                // must not be overwritten by the looser bound beside it, whichever comes first.
                "minimum" | "maximum" => {
                    out.entry(key.clone()).or_insert_with(|| value.clone());
                }
                k if SUPPORTED.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if ANNOTATIONS.contains(&k) => {}
                _ => self.problem(&at, key, format!("`{key}` is not in Gemini's schema subset")),
            }
        }
        if nullable {
            out.insert("nullable".to_owned(), Value::Bool(true));
        }
        let typed = ["type", "anyOf", "oneOf", "enum", "const"]
            .iter()
            .any(|k| map.contains_key(*k));
        self.check_shape(&out, path, is_root, typed);
        Value::Object(out)
    }

    /// `$ref`s are inlined; a recursive one cannot be.
    fn inline(&mut self, reference: &Value, map: &Map<String, Value>, path: &str) -> Value {
        let at = child(path, "$ref");
        let Some(reference) = reference.as_str() else {
            self.problem(&at, "$ref", "must be a string");
            return Value::Object(Map::new());
        };
        let Some(target) = resolve_local(self.root, reference) else {
            self.problem(
                &at,
                "$ref",
                format!("`{reference}` is not a local definition of this schema"),
            );
            return Value::Object(Map::new());
        };
        if self.refs.iter().any(|r| r == reference) {
            self.problem(
                &at,
                "$ref",
                format!("`{reference}` is recursive; Gemini's schemas have no references, so it cannot be inlined"),
            );
            return Value::Object(Map::new());
        }
        self.refs.push(reference.to_owned());
        let merged = merge_ref_siblings(target, map);
        // Problems inside the definition are reported at the definition.
        let def_path = reference.trim_start_matches('#');
        let out = self.schema(&merged, def_path, false);
        self.refs.pop();
        out
    }

    fn convert_type(
        &mut self,
        value: &Value,
        at: &str,
        out: &mut Map<String, Value>,
        nullable: &mut bool,
    ) {
        match value {
            Value::String(t) if super::transform::JSON_TYPES.contains(&t.as_str()) => {
                out.insert("type".to_owned(), value.clone());
            }
            Value::Array(types) => {
                let mut kept = Vec::new();
                for t in types {
                    match t.as_str() {
                        Some("null") => *nullable = true,
                        Some(t) if super::transform::JSON_TYPES.contains(&t) => kept.push(t),
                        _ => self.problem(at, "type", format!("unsupported type {t}")),
                    }
                }
                match kept.as_slice() {
                    [] => {
                        out.insert("type".to_owned(), Value::from("null"));
                    }
                    [only] => {
                        out.insert("type".to_owned(), Value::from(*only));
                    }
                    _ => self.problem(
                        at,
                        "type",
                        "Gemini takes one type per schema; use `anyOf` with one schema per type",
                    ),
                }
            }
            _ => self.problem(at, "type", format!("unsupported type {value}")),
        }
    }

    fn convert_branches(
        &mut self,
        value: &Value,
        at: &str,
        out: &mut Map<String, Value>,
        nullable: &mut bool,
    ) {
        let Value::Array(branches) = value else {
            self.problem(at, "anyOf", "must be an array of schemas");
            return;
        };
        let mut kept = Vec::new();
        for (i, branch) in branches.iter().enumerate() {
            if branch.get("type").and_then(Value::as_str) == Some("null")
                && branch.as_object().is_some_and(|b| b.len() == 1)
            {
                *nullable = true;
            } else {
                kept.push(self.schema(branch, &child(at, &i.to_string()), false));
            }
        }
        match kept.len() {
            0 => {
                out.insert("type".to_owned(), Value::from("null"));
            }
            1 => {
                // One schema and `null`: that schema, nullable.
                if let Some(Value::Object(only)) = kept.pop() {
                    for (key, value) in only {
                        out.entry(key).or_insert(value);
                    }
                }
            }
            _ => {
                out.insert("anyOf".to_owned(), Value::Array(kept));
            }
        }
    }

    fn convert_enum(
        &mut self,
        value: &Value,
        at: &str,
        out: &mut Map<String, Value>,
        nullable: &mut bool,
    ) {
        let Value::Array(values) = value else {
            self.problem(at, "enum", "must be an array");
            return;
        };
        let mut strings = Vec::new();
        for v in values {
            match v {
                Value::String(_) => strings.push(v.clone()),
                Value::Null => *nullable = true,
                _ => {
                    self.problem(
                        at,
                        "enum",
                        format!("Gemini's `enum` holds strings only, not {v}"),
                    );
                    return;
                }
            }
        }
        out.insert("enum".to_owned(), Value::Array(strings));
        out.entry("type").or_insert_with(|| Value::from("string"));
    }

    /// For integers, `exclusiveMinimum: n` is `minimum: n + 1` (and the maximum likewise), set when
    /// it is tighter than an inclusive bound beside it.
    fn convert_exclusive(
        &mut self,
        key: &str,
        value: &Value,
        map: &Map<String, Value>,
        at: &str,
        out: &mut Map<String, Value>,
    ) {
        let integer = map.get("type").and_then(Value::as_str) == Some("integer");
        let (bound, step): (&str, i64) = if key == "exclusiveMinimum" {
            ("minimum", 1)
        } else {
            ("maximum", -1)
        };
        match value.as_i64().and_then(|n| n.checked_add(step)) {
            Some(inclusive) if integer => {
                let tighter = match map.get(bound).and_then(Value::as_f64) {
                    #[allow(clippy::cast_precision_loss)] // comparing bounds, not storing
                    Some(existing) if step > 0 => existing >= inclusive as f64,
                    #[allow(clippy::cast_precision_loss)]
                    Some(existing) => existing <= inclusive as f64,
                    None => false,
                };
                if !tighter {
                    out.insert(bound.to_owned(), Value::from(inclusive));
                }
            }
            _ => self.problem(
                at,
                key,
                format!("Gemini has no `{key}`; for a number it cannot be turned into `{bound}` without changing its meaning"),
            ),
        }
    }

    /// `typed`: the schema said what type it has (a refused way of saying it is reported
    /// already).
    fn check_shape(&mut self, out: &Map<String, Value>, path: &str, is_root: bool, typed: bool) {
        if !typed {
            self.problem(path, "type", "Gemini needs a `type` for every schema");
        }
        let object = out.get("type").and_then(Value::as_str) == Some("object");
        let empty = out
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if object && empty && !is_root {
            self.problem(
                path,
                "properties",
                "Gemini needs at least one property in every object; a free-form object or map cannot be expressed",
            );
        }
    }
}

/// Formats Gemini knows: `enum` and `date-time` for strings, `float`/`double` for numbers,
/// `int32`/`int64` for integers. Others are annotations and dropped. The kind is the schema's
/// type other than `null`, so a nullable field keeps the format its plain form keeps.
fn supported_format(map: &Map<String, Value>, format: &Value) -> bool {
    let kind = match map.get("type") {
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(Value::Array(kinds)) => {
            let mut others = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| *k != "null");
            match (others.next(), others.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        }
        _ => None,
    };
    let (Some(kind), Some(format)) = (kind, format.as_str()) else {
        return false;
    };
    matches!(
        (kind, format),
        ("string", "enum" | "date-time")
            | ("number", "float" | "double")
            | ("integer", "int32" | "int64")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refs_are_inlined_and_recursion_refused() {
        let schema = json!({
            "type": "object",
            "properties": {
                "line": { "$ref": "#/$defs/Line", "description": "one line" },
                "tree": { "$ref": "#/$defs/Tree" }
            },
            "$defs": {
                "Line": { "type": "object", "properties": { "sku": { "type": "string" } } },
                "Tree": { "type": "object", "properties": { "child": { "$ref": "#/$defs/Tree" } } }
            }
        });
        let problems = apply(&schema).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path, "/$defs/Tree/properties/child/$ref");
    }

    #[test]
    fn nullable_forms() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": { "type": ["string", "null"] },
                "b": { "anyOf": [{ "type": "integer", "format": "uint32", "minimum": 0 }, { "type": "null" }] },
                "c": { "oneOf": [{ "const": "x" }, { "const": "y" }] },
                "d": { "type": "integer", "exclusiveMinimum": 0 }
            },
            "additionalProperties": false
        });
        let out = apply(&schema).unwrap();
        assert_eq!(
            out["properties"]["a"],
            json!({ "type": "string", "nullable": true })
        );
        assert_eq!(
            out["properties"]["b"],
            json!({ "type": "integer", "minimum": 0, "nullable": true })
        );
        assert_eq!(
            out["properties"]["c"],
            json!({ "anyOf": [{ "type": "string", "enum": ["x"] }, { "type": "string", "enum": ["y"] }] })
        );
        assert_eq!(
            out["properties"]["d"],
            json!({ "type": "integer", "minimum": 1 })
        );
        assert!(out.get("additionalProperties").is_none());
    }

    #[test]
    fn an_exclusive_bound_beside_a_looser_inclusive_one_keeps_the_tighter() {
        let schema = json!({
            "type": "object",
            "properties": {
                "above": { "type": "integer", "exclusiveMinimum": 5, "minimum": 0 },
                "below": { "type": "integer", "exclusiveMaximum": 5, "maximum": 10 },
                "inclusive_wins": { "type": "integer", "exclusiveMinimum": 0, "minimum": 3 }
            }
        });
        let out = apply(&schema).unwrap();
        assert_eq!(
            out["properties"]["above"],
            json!({ "type": "integer", "minimum": 6 })
        );
        assert_eq!(
            out["properties"]["below"],
            json!({ "type": "integer", "maximum": 4 })
        );
        assert_eq!(
            out["properties"]["inclusive_wins"],
            json!({ "type": "integer", "minimum": 3 })
        );
    }

    #[test]
    fn a_nullable_field_keeps_the_format_its_plain_form_keeps() {
        let schema = json!({
            "type": "object",
            "properties": {
                "plain": { "type": "number", "format": "double" },
                "nullable": { "type": ["number", "null"], "format": "double" },
                "unknown": { "type": ["integer", "null"], "format": "uint32", "minimum": 0 }
            }
        });
        let out = apply(&schema).unwrap();
        assert_eq!(
            out["properties"]["plain"],
            json!({ "type": "number", "format": "double" })
        );
        assert_eq!(
            out["properties"]["nullable"],
            json!({ "type": "number", "format": "double", "nullable": true })
        );
        assert_eq!(
            out["properties"]["unknown"],
            json!({ "type": "integer", "minimum": 0, "nullable": true })
        );
    }
}
