//! The strict-schema walker: one recursive walk over a tool's input schema (objects, arrays,
//! `$ref`s, `anyOf`/`oneOf`, one-element `allOf`, `$defs`, …) that turns it into a strict
//! dialect's subset or lists every problem, each at its JSON pointer. What a dialect keeps,
//! moves into the description, refuses and limits is its [`StrictRules`]; each strict profile's
//! file holds only those rules and the provider's published limits they come from
//! (`openai_strict.rs`, `anthropic_strict.rs`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::ProfileProblem;
use super::transform::{
    ANNOTATIONS, accepts_null, child, drop_unreferenced_defs, is_object_schema, merge_ref_siblings,
    merge_single_all_of, names_json_types, required_names,
};
use crate::schema::resolve_local;

/// One strict dialect's rules: what the walk keeps, converts, describes and refuses.
pub(super) struct StrictRules {
    /// Whose subset of JSON Schema it is, as problems name it (`OpenAI's`).
    pub(super) subset: &'static str,
    /// The problems of the root itself, found before the walk.
    pub(super) root: fn(&Value) -> Vec<ProfileProblem>,
    /// The problem with a boolean schema (any value, or none).
    pub(super) boolean_schema: &'static str,
    /// The string `format`s kept; other formats are annotations, dropped.
    pub(super) formats: &'static [&'static str],
    /// Keywords kept as they are.
    pub(super) kept: &'static [&'static str],
    /// Keywords strict mode cannot hold, moved into the description (`{minimum: 1}` after the
    /// text). A dialect that describes none keeps `description` as written.
    pub(super) described: &'static [&'static str],
    /// The largest `minItems` kept; a larger one is described. `None`: `minItems` is kept or
    /// described as the lists above say.
    pub(super) max_min_items: Option<u64>,
    /// How `$ref`s are sent.
    pub(super) refs: Refs,
    /// How an object's properties are sent.
    pub(super) properties: Properties,
    /// Which `enum` and `const` values are taken.
    pub(super) enums: Enums,
    /// The problem with `items` as an array (a tuple).
    pub(super) tuple_items: &'static str,
    /// The problem with `items` that is neither a schema nor an array.
    pub(super) other_items: &'static str,
    /// The problem with an `allOf` of several schemas.
    pub(super) all_of: &'static str,
    /// How deep schemas may nest before the walk stops (bounds the work on pathological schemas).
    pub(super) max_depth: Option<usize>,
    /// The provider's published limits on one schema.
    pub(super) limits: Option<Limits>,
}

/// How a dialect sends `$ref`s.
#[derive(Clone, Copy)]
pub(super) enum Refs {
    /// Every `$ref` inlined (the target's keywords under the siblings') and the definitions left
    /// out; a `$ref` that is not local, or recursive, is refused.
    Inlined,
    /// A `$ref` kept as it is unless it has sibling keywords the dialect refuses beside it, then
    /// inlined; definitions are walked and kept (but those left unreferenced); recursion through
    /// bare `$ref`s is fine.
    InlinedWithSiblings,
}

/// How a dialect sends an object's properties.
#[derive(Clone, Copy)]
pub(super) enum Properties {
    /// As written: `properties` and `required` kept. An object that names neither
    /// `properties` nor `additionalProperties` is refused.
    AsWritten,
    /// Every property required, an optional one made to accept `null` by the function (unless it
    /// accepts it already). An object without an object of `properties`, and not closed by
    /// `additionalProperties: false`, is refused.
    AllRequired(fn(Value) -> Value),
}

/// Which `enum` and `const` values a dialect takes.
#[derive(Clone, Copy)]
pub(super) enum Enums {
    /// Any JSON values; `enum` must be an array. Counted against the [`Limits`].
    Counted,
    /// Strings, numbers, booleans and `null` only.
    Primitive,
}

/// A provider's published limits on one schema.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    /// Properties, at every level together.
    pub(super) properties: usize,
    /// Objects nested in objects.
    pub(super) nesting: usize,
    /// Characters of property names, definition names, enum and const values together.
    pub(super) string_chars: usize,
    /// Enum values together.
    pub(super) enum_values: usize,
    /// An enum of more than this many values …
    pub(super) large_enum: usize,
    /// … may total at most this many characters.
    pub(super) large_enum_chars: usize,
}

/// Transforms `schema` by `rules`, or lists every problem found.
pub(super) fn apply(schema: &Value, rules: &StrictRules) -> Result<Value, Vec<ProfileProblem>> {
    let mut walk = Walk {
        rules,
        root: schema,
        problems: (rules.root)(schema),
        inlining: Vec::new(),
        tally: Tally::default(),
    };
    let mut out = walk.schema(schema, "", Depth::default());
    if matches!(rules.refs, Refs::InlinedWithSiblings) {
        drop_unreferenced_defs(&mut out);
    }
    walk.check_totals();
    if walk.problems.is_empty() {
        Ok(out)
    } else {
        Err(walk.problems)
    }
}

/// Where a schema sits: how many schemas enclose it, and how many of them are objects.
#[derive(Clone, Copy, Default)]
struct Depth {
    schemas: usize,
    objects: usize,
}

impl Depth {
    /// A schema inside this one.
    fn nested(self) -> Depth {
        Depth {
            schemas: self.schemas + 1,
            ..self
        }
    }
}

/// What the schema holds so far, for the [`Limits`].
#[derive(Default)]
struct Tally {
    properties: usize,
    string_chars: usize,
    enum_values: usize,
}

struct Walk<'a> {
    rules: &'a StrictRules,
    root: &'a Value,
    problems: Vec<ProfileProblem>,
    /// `$ref`s being inlined (a `$ref` met again inside its own target is recursion).
    inlining: Vec<String>,
    tally: Tally,
}

impl Walk<'_> {
    fn problem(&mut self, path: impl Into<String>, keyword: &str, message: impl Into<String>) {
        self.problems
            .push(ProfileProblem::new(path, keyword, message));
    }

    fn schema(&mut self, schema: &Value, path: &str, depth: Depth) -> Value {
        if let Some(max) = self.rules.max_depth
            && depth.schemas > max
        {
            self.problem(
                path,
                "type",
                format!("schemas nested deeper than {max} levels"),
            );
            return Value::Object(Map::new());
        }
        let Value::Object(map) = schema else {
            self.problem(path, "type", self.rules.boolean_schema);
            return schema.clone();
        };
        let mut map = map.clone();
        merge_single_all_of(&mut map, path, &mut self.problems);
        match self.rules.refs {
            Refs::Inlined => {
                if let Some(reference) = map.get("$ref").cloned() {
                    return self.inline(&reference, &map, path, depth);
                }
            }
            Refs::InlinedWithSiblings => {
                if let Some(inlined) = self.inline_beside_siblings(&map, path) {
                    let out = self.schema(&inlined, path, depth.nested());
                    self.inlining.pop();
                    return out;
                }
            }
        }

        let object = is_object_schema(&map);
        let depth = if object {
            self.enter_object(path, depth)
        } else {
            depth
        };
        let mut out = Map::new();
        let mut described = Vec::new();
        for entry in &map {
            self.keyword(&map, entry, path, depth, &mut out, &mut described);
        }
        if object {
            self.close_object(&map, &mut out, path, depth);
        }
        if !self.rules.described.is_empty() {
            describe(&map, &mut out, &described);
        }
        Value::Object(out)
    }

    /// One more object around what is inside it; refused past the provider's nesting limit.
    fn enter_object(&mut self, path: &str, depth: Depth) -> Depth {
        let depth = Depth {
            objects: depth.objects + 1,
            ..depth
        };
        if let Some(limits) = self.rules.limits
            && depth.objects > limits.nesting
        {
            self.problem(
                path,
                "properties",
                format!(
                    "objects are nested deeper than strict mode's {} levels",
                    limits.nesting
                ),
            );
        }
        depth
    }

    /// One keyword of an object schema (`map`): written to `out`, walked, moved to `described`,
    /// dropped or refused.
    fn keyword<'m>(
        &mut self,
        map: &'m Map<String, Value>,
        (key, value): (&'m String, &'m Value),
        path: &str,
        depth: Depth,
        out: &mut Map<String, Value>,
        described: &mut Vec<(&'m str, &'m Value)>,
    ) {
        let at = child(path, key);
        let all_required = matches!(self.rules.properties, Properties::AllRequired(_));
        match key.as_str() {
            "type" => {
                if !names_json_types(value) {
                    self.problem(&at, "type", format!("unsupported type {value}"));
                }
                out.insert(key.clone(), value.clone());
            }
            // Written when the object is closed.
            "additionalProperties" => {}
            "properties" | "required" if all_required => {}
            // Written with the constraints moved into it.
            "description" if !self.rules.described.is_empty() => {}
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
                    return;
                }
                // `oneOf` becomes `anyOf`: the tool's own validation still applies `oneOf`.
                let branches = self.branches(value, &at, depth);
                out.insert("anyOf".to_owned(), branches);
            }
            "enum" | "const" => {
                self.enum_values(key, value, &at);
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
                // Every `$ref` inlined: the definitions are not sent.
                if matches!(self.rules.refs, Refs::InlinedWithSiblings) {
                    let defs = self.definitions(value, &at, depth);
                    out.insert(key.clone(), defs);
                }
            }
            "format" => {
                // Other formats are annotations (schemars' `uint32`, `double`, …): dropped, the
                // tool's validation is unchanged.
                if value
                    .as_str()
                    .is_some_and(|f| self.rules.formats.contains(&f))
                {
                    out.insert(key.clone(), value.clone());
                }
            }
            _ => self.listed_keyword(key, value, &at, out, described),
        }
    }

    /// A keyword the rules' lists decide: kept, moved to the description, dropped as an
    /// annotation, or refused.
    fn listed_keyword<'m>(
        &mut self,
        key: &'m str,
        value: &'m Value,
        at: &str,
        out: &mut Map<String, Value>,
        described: &mut Vec<(&'m str, &'m Value)>,
    ) {
        if key == "minItems"
            && let Some(max) = self.rules.max_min_items
        {
            if value.as_u64().is_some_and(|n| n <= max) {
                out.insert(key.to_owned(), value.clone());
            } else {
                described.push((key, value));
            }
        } else if self.rules.described.contains(&key) {
            described.push((key, value));
        } else if self.rules.kept.contains(&key) {
            out.insert(key.to_owned(), value.clone());
        } else if ANNOTATIONS.contains(&key) {
        } else if key == "allOf" {
            self.problem(at, key, self.rules.all_of);
        } else {
            self.problem(
                at,
                key,
                format!(
                    "`{key}` is not in {} strict subset of JSON Schema",
                    self.rules.subset
                ),
            );
        }
    }

    /// A `$ref`, inlined with its siblings over the target's keywords ([`Refs::Inlined`]);
    /// refused when it is not local or points back into a definition being inlined.
    fn inline(
        &mut self,
        reference: &Value,
        map: &Map<String, Value>,
        path: &str,
        depth: Depth,
    ) -> Value {
        let at = child(path, "$ref");
        let Some((reference, target)) = reference
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
        let out = self.schema(&merged, path, depth.nested());
        self.inlining.pop();
        out
    }

    /// A `$ref` with siblings, to inline ([`Refs::InlinedWithSiblings`]: strict mode refuses the
    /// siblings): the schema to walk instead, its `$ref` pushed on the inlining stack.
    fn inline_beside_siblings(&mut self, map: &Map<String, Value>, path: &str) -> Option<Value> {
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

    /// `properties` as written ([`Properties::AsWritten`]), each walked.
    fn properties(&mut self, value: &Value, at: &str, depth: Depth) -> Value {
        let Value::Object(properties) = value else {
            self.problem(at, "properties", "must be an object of schemas");
            return value.clone();
        };
        Value::Object(
            properties
                .iter()
                .map(|(name, schema)| {
                    let schema = self.schema(schema, &child(at, name), depth.nested());
                    (name.clone(), schema)
                })
                .collect(),
        )
    }

    fn items(&mut self, value: &Value, at: &str, depth: Depth) -> Value {
        match value {
            Value::Object(_) => self.schema(value, at, depth.nested()),
            Value::Array(_) => {
                self.problem(at, "items", self.rules.tuple_items);
                value.clone()
            }
            _ => {
                self.problem(at, "items", self.rules.other_items);
                value.clone()
            }
        }
    }

    fn branches(&mut self, value: &Value, at: &str, depth: Depth) -> Value {
        let Value::Array(branches) = value else {
            self.problem(at, "anyOf", "must be an array of schemas");
            return value.clone();
        };
        Value::Array(
            branches
                .iter()
                .enumerate()
                .map(|(i, b)| self.schema(b, &child(at, &i.to_string()), depth.nested()))
                .collect(),
        )
    }

    /// `$defs` walked ([`Refs::InlinedWithSiblings`]); a definition is not nested in the object
    /// that holds it.
    fn definitions(&mut self, value: &Value, at: &str, depth: Depth) -> Value {
        let Value::Object(defs) = value else {
            self.problem(at, "$defs", "must be an object of schemas");
            return value.clone();
        };
        let mut out = Map::new();
        let depth = Depth {
            schemas: depth.schemas + 1,
            objects: 0,
        };
        for (name, def) in defs {
            self.tally.string_chars += name.chars().count();
            out.insert(name.clone(), self.schema(def, &child(at, name), depth));
        }
        Value::Object(out)
    }

    /// `enum` and `const` values checked and counted as the dialect says.
    fn enum_values(&mut self, key: &str, value: &Value, at: &str) {
        match self.rules.enums {
            Enums::Primitive => {
                let values = match value {
                    Value::Array(values) if key == "enum" => values.as_slice(),
                    _ => std::slice::from_ref(value),
                };
                if values.iter().any(|v| v.is_object() || v.is_array()) {
                    self.problem(
                        at,
                        key,
                        "strict mode takes only strings, numbers, booleans and `null` here",
                    );
                }
            }
            Enums::Counted if key == "const" => {
                if let Value::String(s) = value {
                    self.tally.string_chars += s.chars().count();
                }
            }
            Enums::Counted => self.count_enum(value, at),
        }
    }

    fn count_enum(&mut self, value: &Value, at: &str) {
        let Value::Array(values) = value else {
            self.problem(at, "enum", "must be an array");
            return;
        };
        self.tally.enum_values += values.len();
        let chars: usize = values
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.chars().count())
            .sum();
        self.tally.string_chars += chars;
        if let Some(limits) = self.rules.limits
            && values.len() > limits.large_enum
            && chars > limits.large_enum_chars
        {
            self.problem(
                at,
                "enum",
                format!(
                    "an enum of more than {} values may total at most {} characters in strict mode (this one: {chars})",
                    limits.large_enum, limits.large_enum_chars
                ),
            );
        }
    }

    /// `additionalProperties: false` on every object; an object that takes other keys (a map,
    /// or one without `properties`) cannot be said in strict mode. With
    /// [`Properties::AllRequired`], every property is also walked and made required.
    fn close_object(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        depth: Depth,
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
        let declared = match self.rules.properties {
            Properties::AsWritten => {
                map.contains_key("properties") || map.contains_key("additionalProperties")
            }
            Properties::AllRequired(_) => {
                properties.is_some() || map.get("additionalProperties") == Some(&Value::Bool(false))
            }
        };
        if !declared {
            self.problem(
                path,
                "properties",
                "an object without `properties` accepts any keys, which strict mode cannot express; declare its properties",
            );
        }
        if let Properties::AllRequired(nullable) = self.rules.properties {
            let required = required_names(&Value::Object(map.clone()))
                .into_iter()
                .map(str::to_owned)
                .collect::<BTreeSet<_>>();
            let mut props_out = Map::new();
            let mut names = Vec::new();
            for (name, schema) in properties.into_iter().flatten() {
                self.tally.properties += 1;
                self.tally.string_chars += name.chars().count();
                let at = child(&child(path, "properties"), name);
                let converted = self.schema(schema, &at, depth.nested());
                let converted = if required.contains(name) || accepts_null(schema, self.root) {
                    converted
                } else {
                    nullable(converted)
                };
                props_out.insert(name.clone(), converted);
                names.push(Value::from(name.as_str()));
            }
            out.insert("properties".to_owned(), Value::Object(props_out));
            out.insert("required".to_owned(), Value::Array(names));
        }
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
    }

    /// The provider's limits on the schema as a whole.
    fn check_totals(&mut self) {
        let Some(limits) = self.rules.limits else {
            return;
        };
        if self.tally.properties > limits.properties {
            let n = self.tally.properties;
            self.problem(
                "",
                "properties",
                format!("{n} properties: strict mode allows {}", limits.properties),
            );
        }
        if self.tally.string_chars > limits.string_chars {
            let n = self.tally.string_chars;
            self.problem(
                "",
                "properties",
                format!(
                    "property names, definition names, enum and const values total {n} characters: strict mode allows {}",
                    limits.string_chars
                ),
            );
        }
        if self.tally.enum_values > limits.enum_values {
            let n = self.tally.enum_values;
            self.problem(
                "",
                "enum",
                format!("{n} enum values: strict mode allows {}", limits.enum_values),
            );
        }
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
