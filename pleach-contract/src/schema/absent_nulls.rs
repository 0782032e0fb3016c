//! A `null` that stands for an absent property: what a model sends, under a provider's strict
//! mode, for a property the tool's own schema makes optional and does not let be `null`
//! (`docs/providers.md`, "How the runtime reads calls"). Removed before the schema is applied, so
//! the property's default applies as if the model had left it out.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// How deep the walk follows the arguments; deeper nulls are left as they are (and refused by
/// the schema). The runtime's nesting limit is lower.
const MAX_DEPTH: usize = 128;

/// How many local `$ref` hops are followed from one schema before giving up (a cycle of
/// references to references describes no value).
const MAX_REF_HOPS: usize = 32;

/// Removes from `value` every `null` at a property that `schema` (the tool's own input schema)
/// does not require and whose schema does not accept `null`; `true` when one was removed.
///
/// The walk follows the schema: `properties` (and `additionalProperties` for other keys), `items`,
/// local `$ref`s, every part of an `allOf`, and for `anyOf` / `oneOf` the first branch whose shape
/// the value has (an object whose keys that branch declares, with its required keys and its
/// `const` values). A `null` the schema accepts (`Option<T>`, `"type": ["string", "null"]`) is
/// kept: it means `None`, not "absent".
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn remove_absent_nulls(schema: &Value, value: &mut Value) -> bool {
    has_null(value) && relax(schema, schema, value, 0)
}

fn has_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(has_null),
        Value::Object(map) => map.values().any(has_null),
        _ => false,
    }
}

fn relax(schema: &Value, root: &Value, value: &mut Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Some(Value::Object(map)) = resolve_refs(schema, root) else {
        return false;
    };
    let mut changed = false;
    if let Some(parts) = map.get("allOf").and_then(Value::as_array) {
        for part in parts {
            changed |= relax(part, root, value, depth + 1);
        }
    }
    for keyword in ["anyOf", "oneOf"] {
        let branch = map
            .get(keyword)
            .and_then(Value::as_array)
            .and_then(|branches| branches.iter().find(|b| has_shape_of(b, root, value)));
        if let Some(branch) = branch {
            changed |= relax(branch, root, value, depth + 1);
        }
    }
    match value {
        Value::Object(object) => changed |= relax_object(map, root, object, depth),
        Value::Array(items) => {
            if let Some(item_schema) = map.get("items").filter(|s| s.is_object()) {
                for item in items {
                    changed |= relax(item_schema, root, item, depth + 1);
                }
            }
        }
        _ => {}
    }
    changed
}

fn relax_object(
    map: &Map<String, Value>,
    root: &Value,
    object: &mut Map<String, Value>,
    depth: usize,
) -> bool {
    let properties = map.get("properties").and_then(Value::as_object);
    let mut changed = false;
    if let Some(properties) = properties {
        let required = required_names(map);
        let before = object.len();
        object.retain(|key, v| {
            !(v.is_null()
                && !required.contains(key.as_str())
                && properties.get(key).is_some_and(|p| !accepts_null(p, root)))
        });
        changed = object.len() != before;
    }
    let others = map.get("additionalProperties").filter(|s| s.is_object());
    for (key, v) in object.iter_mut() {
        if let Some(property) = properties.and_then(|p| p.get(key)).or(others) {
            changed |= relax(property, root, v, depth + 1);
        }
    }
    changed
}

/// Whether `value` has the shape `branch` describes, as far as telling the branches of an
/// `anyOf` / `oneOf` apart needs: an object the branch declares every key of, with the branch's
/// required keys and `const` values; another value of the branch's type.
fn has_shape_of(branch: &Value, root: &Value, value: &Value) -> bool {
    let Some(Value::Object(map)) = resolve_refs(branch, root) else {
        return false;
    };
    match value {
        Value::Object(object) => {
            let properties = map.get("properties").and_then(Value::as_object);
            if properties.is_none() || !type_allows(map, "object") {
                return false;
            }
            let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
            let declared = |key: &String| properties.is_some_and(|p| p.contains_key(key));
            let keys_known = !closed || object.keys().all(declared);
            let required_present = required_names(map)
                .iter()
                .all(|name| object.contains_key(*name));
            let consts_match = properties.into_iter().flatten().all(|(name, property)| {
                let expected = resolve_refs(property, root).and_then(|p| p.get("const"));
                match (expected, object.get(name)) {
                    (Some(expected), Some(got)) => expected == got,
                    _ => true,
                }
            });
            keys_known && required_present && consts_match
        }
        Value::Array(_) => type_allows(map, "array"),
        _ => false,
    }
}

/// Whether the schema's `type` (if it has one) allows `name`.
fn type_allows(map: &Map<String, Value>, name: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(types)) => types.iter().any(|t| t == name),
        _ => true,
    }
}

/// Follows local `$ref`s from `schema` (a bounded number of hops).
fn resolve_refs<'a>(mut schema: &'a Value, root: &'a Value) -> Option<&'a Value> {
    for _ in 0..MAX_REF_HOPS {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => schema = resolve_local(root, reference)?,
            None => return Some(schema),
        }
    }
    None
}

/// The schema a local `$ref` (`#`, `#/$defs/…`, any `#/…` pointer) points at.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn resolve_local<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(pointer)
    }
}

/// Whether a schema accepts `null` (looking through `$ref`, `anyOf`, `oneOf`, `type`, `enum`,
/// `const`). An unreadable reference counts as accepting it: the `null` is then left for the
/// schema to judge.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn accepts_null(schema: &Value, root: &Value) -> bool {
    accepts_null_within(schema, root, 0)
}

fn accepts_null_within(schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > MAX_REF_HOPS {
        return true;
    }
    let Some(schema) = resolve_refs(schema, root) else {
        return true;
    };
    let accepts = |schema: &Value| accepts_null_within(schema, root, depth + 1);
    match schema {
        Value::Bool(b) => *b,
        // Every keyword that can refuse `null` must let it through.
        Value::Object(map) => {
            let by_type = match map.get("type") {
                Some(Value::String(t)) => t == "null",
                Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
                _ => true,
            };
            let by_enum = map
                .get("enum")
                .and_then(Value::as_array)
                .is_none_or(|values| values.iter().any(Value::is_null));
            let by_const = map.get("const").is_none_or(Value::is_null);
            let by_branches = ["anyOf", "oneOf"].iter().all(|k| {
                map.get(*k)
                    .and_then(Value::as_array)
                    .is_none_or(|branches| branches.iter().any(accepts))
            });
            let by_parts = map
                .get("allOf")
                .and_then(Value::as_array)
                .is_none_or(|parts| parts.iter().all(accepts));
            by_type && by_enum && by_const && by_branches && by_parts
        }
        _ => false,
    }
}

/// The `required` names of an object schema.
fn required_names(map: &Map<String, Value>) -> BTreeSet<&str> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn removed(schema: &Value, mut value: Value) -> Value {
        remove_absent_nulls(schema, &mut value);
        value
    }

    #[test]
    fn a_null_is_absent_only_where_the_schema_neither_requires_nor_accepts_it() {
        let schema = json!({
            "type": "object",
            "properties": {
                "needed": { "type": "string" },
                "defaulted": { "type": "string", "default": "UTC" },
                "option": { "type": ["string", "null"] },
                "any": {},
                "choice": { "enum": ["a", "b", null] },
                "typed_choice": { "type": "string", "enum": ["a", "b"] }
            },
            "required": ["needed"]
        });
        let sent = json!({
            "needed": null, "defaulted": null, "option": null, "any": null,
            "choice": null, "typed_choice": null, "unknown": null
        });
        assert_eq!(
            removed(&schema, sent),
            json!({ "needed": null, "option": null, "any": null, "choice": null, "unknown": null })
        );
    }

    #[test]
    fn nested_objects_items_refs_and_branches_are_followed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } },
                "maybe_line": { "anyOf": [{ "$ref": "#/$defs/Line" }, { "type": "null" }] },
                "shape": { "oneOf": [
                    { "type": "object", "properties": { "kind": { "const": "circle" }, "r": { "type": "number" } }, "required": ["kind"] },
                    { "type": "object", "properties": { "kind": { "const": "square" }, "side": { "type": "number" } }, "required": ["kind"] }
                ] },
                "by_name": { "type": "object", "additionalProperties": { "$ref": "#/$defs/Line" } },
                "tree": { "$ref": "#/$defs/Tree" }
            },
            "$defs": {
                "Line": {
                    "type": "object",
                    "properties": { "sku": { "type": "string" }, "note": { "type": "string" } },
                    "required": ["sku"]
                },
                "Tree": {
                    "type": "object",
                    "properties": { "label": { "type": "string" }, "child": { "anyOf": [{ "$ref": "#/$defs/Tree" }, { "type": "null" }] } }
                }
            }
        });
        let sent = json!({
            "lines": [{ "sku": "a", "note": null }],
            "maybe_line": { "sku": "b", "note": null },
            "shape": { "kind": "square", "side": null },
            "by_name": { "x": { "sku": "c", "note": null } },
            "tree": { "label": null, "child": { "label": null, "child": null } }
        });
        assert_eq!(
            removed(&schema, sent),
            json!({
                "lines": [{ "sku": "a" }],
                "maybe_line": { "sku": "b" },
                "shape": { "kind": "square" },
                "by_name": { "x": { "sku": "c" } },
                "tree": { "child": { "child": null } }
            })
        );
    }

    #[test]
    fn nothing_changes_without_a_null() {
        let schema = json!({ "type": "object", "properties": { "a": { "type": "string" } } });
        let mut value = json!({ "a": "x" });
        assert!(!remove_absent_nulls(&schema, &mut value));
        let mut looping = json!({ "a": null });
        let cycle = json!({ "$ref": "#/$defs/A", "$defs": { "A": { "$ref": "#/$defs/A" } } });
        assert!(!remove_absent_nulls(&cycle, &mut looping));
        assert!(accepts_null(&cycle["$defs"]["A"], &cycle));
    }
}
