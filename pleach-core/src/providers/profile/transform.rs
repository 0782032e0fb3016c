//! The schema transforms the profiles share: pointers and `required` names, `$ref` siblings and
//! one-element `allOf` merged, the object roots every provider needs, the `format`s and number
//! bounds every profile sends, `$defs` left unreferenced dropped, and the annotation and type
//! names the dialects are written against.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::ProfileProblem;

/// Whether a schema accepts `null`: the one rule both the strict profile (which makes an optional
/// property nullable unless it is) and the runtime (which reads such a `null` as absent) use.
pub(super) fn accepts_null(schema: &Value, root: &Value) -> bool {
    crate::schema::accepts_null(schema, root)
}

/// The `required` names of an object schema.
pub(super) fn required_names(schema: &Value) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `path` + `/segment`, escaped as JSON pointers require.
pub(super) fn child(path: &str, segment: &str) -> String {
    let mut out = String::with_capacity(path.len() + segment.len() + 1);
    out.push_str(path);
    crate::schema::push_pointer_segment(&mut out, segment);
    out
}

/// Whether an object schema describes an object (by `type`, or by carrying `properties`).
pub(super) fn is_object_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    }
}

/// A `$ref` with siblings, as one schema: the target's keywords, overridden by the siblings.
pub(super) fn merge_ref_siblings(target: &Value, siblings: &Map<String, Value>) -> Value {
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
pub(super) fn merge_single_all_of(
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
pub(super) fn object_root(schema: &Value) -> Result<(), Vec<ProfileProblem>> {
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
pub(super) fn anthropic_root(schema: &Value) -> Result<(), Vec<ProfileProblem>> {
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
pub(super) fn dedup(problems: Vec<ProfileProblem>) -> Vec<ProfileProblem> {
    let mut seen = BTreeSet::new();
    problems
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

/// Keywords that are annotations only (they do not change which values are valid); profiles that
/// do not accept them drop them.
pub(super) const ANNOTATIONS: &[&str] = &[
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
