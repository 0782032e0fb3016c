//! [`CompiledSchema`]: a schema and its validator, compiled once (jsonschema, no remote `$ref`s),
//! and its violations as field-path [`ValidationError`]s whose messages name the values allowed.

use serde_json::Value;

use super::{ValidationError, ValidationResult};
use crate::error::{ErrorCode, ToolError};

/// A schema and its compiled validator, built once.
pub(crate) struct CompiledSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    /// Compiles `schema` (draft 2020-12 unless it names its own `$schema`). Remote `$ref`s are
    /// never fetched: jsonschema is built without its resolvers, so they fail here.
    pub(crate) fn compile(schema: Value) -> Result<Self, String> {
        let mut options = jsonschema::options();
        if schema.get("$schema").is_none() {
            options = options.with_draft(jsonschema::Draft::Draft202012);
        }
        let validator = options.build(&schema).map_err(|e| e.to_string())?;
        Ok(CompiledSchema { schema, validator })
    }

    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether `value` is valid, without collecting the violations.
    pub(crate) fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// Every violation of `value`, with its pointer and keyword.
    pub(crate) fn validate(&self, value: &Value) -> ValidationResult {
        ValidationResult::invalid(
            self.validator
                .iter_errors(value)
                .map(|e| ValidationError {
                    path: e.instance_path().as_str().to_owned(),
                    keyword: e.kind().keyword().to_owned(),
                    message: violation_message(&e, &self.schema),
                })
                .collect(),
        )
    }

    /// `Ok` for valid arguments; otherwise 1001 naming every violation.
    pub(crate) fn check_input(&self, value: &Value) -> Result<(), ToolError> {
        self.check(value, ErrorCode::InputInvalid, "invalid arguments")
    }

    /// `Ok` for a valid result; otherwise 1002 naming every violation.
    pub(crate) fn check_output(&self, value: &Value) -> Result<(), ToolError> {
        self.check(
            value,
            ErrorCode::OutputInvalid,
            "the tool's result does not match its output schema",
        )
    }

    fn check(&self, value: &Value, code: ErrorCode, what: &str) -> Result<(), ToolError> {
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let verdict = self.validate(value);
        let Some(first) = verdict.errors.first() else {
            return Ok(());
        };
        let all: Vec<String> = verdict.errors.iter().map(ToString::to_string).collect();
        Err(ToolError::new(code, format!("{what}: {}", all.join("; ")))
            .with_location(first.path.clone(), first.keyword.clone()))
    }
}

/// How many allowed values a message names before it says how many more there are.
const ALLOWED_VALUES_SHOWN: usize = 20;

/// What a violation says to the model: jsonschema's own words, except for a value outside a set
/// of allowed values. There the model needs the list to fix the call, and jsonschema names three
/// at most for an `enum` ("or 2 other candidates") and none for a `oneOf` or `anyOf` of `const`s
/// (the schema of an enum whose variants carry descriptions, or of an `Option` of one), so the
/// message names them, whichever way the schema spells the set. The keyword stays the one that
/// failed.
fn violation_message(error: &jsonschema::ValidationError<'_>, root: &Value) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;
    let allowed = match error.kind() {
        Kind::Enum { options } => options.as_array().cloned(),
        // The keyword's location holds its list of branches.
        Kind::OneOfNotValid { .. } | Kind::AnyOf { .. } => root
            .pointer(error.schema_path().as_str())
            .and_then(|branches| branch_values(branches, root, 0)),
        _ => None,
    };
    match allowed {
        Some(allowed) if !allowed.is_empty() => not_one_of(error.instance(), &allowed),
        _ => error.to_string(),
    }
}

/// `"x" is not one of "a", "b" or "c"`, naming [`ALLOWED_VALUES_SHOWN`] values at most and then
/// how many more there are.
fn not_one_of(instance: &Value, allowed: &[Value]) -> String {
    let shown: Vec<String> = allowed
        .iter()
        .take(ALLOWED_VALUES_SHOWN)
        .map(ToString::to_string)
        .collect();
    let list = match (shown.split_last(), allowed.len() - shown.len()) {
        (Some((last, rest)), 0) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        (_, 0) => shown.join(", "),
        (_, more) => format!("{} and {more} more", shown.join(", ")),
    };
    format!("{instance} is not one of {list}")
}

/// The keywords that say nothing about which values a schema accepts.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "$comment",
    "deprecated",
    "examples",
    "default",
    "readOnly",
    "writeOnly",
];

/// Every value the branches of a `oneOf` / `anyOf` accept, when each branch is a fixed set of
/// values (see [`allowed_values`]); `None` when one is not.
fn branch_values(branches: &Value, root: &Value, depth: usize) -> Option<Vec<Value>> {
    let mut values: Vec<Value> = Vec::new();
    for branch in branches.as_array()? {
        for value in allowed_values(branch, root, depth)? {
            if !values.contains(&value) {
                values.push(value);
            }
        }
    }
    Some(values)
}

/// The values `schema` accepts when it is a fixed set of them: a `const`, an `enum`, `null`
/// alone (`"type": "null"`), a `oneOf` / `anyOf` of such sets, or a local `$ref` to one, beside
/// annotations and a `type` only. `None` for any other schema (it accepts values of some shape,
/// and the message of the keyword that failed says which).
fn allowed_values(schema: &Value, root: &Value, depth: usize) -> Option<Vec<Value>> {
    // References can form a cycle; a set of values is never nested this deep.
    if depth > 16 {
        return None;
    }
    let map = schema.as_object()?;
    let mut constraints = map
        .iter()
        .filter(|(key, _)| key.as_str() != "type" && !ANNOTATIONS.contains(&key.as_str()));
    let only = constraints.next();
    if constraints.next().is_some() {
        return None;
    }
    let Some((key, value)) = only else {
        // Annotations and a `type` alone: a set only when the type is `null`.
        let null = match map.get("type")? {
            Value::String(name) => name == "null",
            Value::Array(names) => names.len() == 1 && names[0] == "null",
            _ => false,
        };
        return null.then(|| vec![Value::Null]);
    };
    match key.as_str() {
        "const" => Some(vec![value.clone()]),
        "enum" => value.as_array().cloned(),
        "oneOf" | "anyOf" => branch_values(value, root, depth + 1),
        "$ref" => {
            let target = root.pointer(value.as_str()?.strip_prefix('#')?)?;
            allowed_values(target, root, depth + 1)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_carry_pointer_and_keyword() {
        let schema = CompiledSchema::compile(json!({
            "type": "object",
            "properties": {
                "limit": { "type": "integer", "minimum": 1, "maximum": 50 },
                "query": { "type": "string" }
            },
            "required": ["query"],
            "additionalProperties": false
        }))
        .unwrap();
        let verdict = schema.validate(&json!({ "limit": 80, "extra": true }));
        let mut found: Vec<(String, String)> = verdict
            .errors
            .iter()
            .map(|e| (e.path.clone(), e.keyword.clone()))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                (String::new(), "additionalProperties".to_owned()),
                (String::new(), "required".to_owned()),
                ("/limit".to_owned(), "maximum".to_owned()),
            ]
        );
        let err = schema.check_input(&json!({ "query": 5 })).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InputInvalid);
        assert_eq!(err.path(), Some("/query"));
        assert!(err.message().contains("string"), "{}", err.message());
    }

    /// The one violation of `value` at `/pick`, where `pick` has `schema` (beside `$defs`).
    fn pick_violation(pick: &Value, defs: &Value, value: &Value) -> ValidationError {
        let schema = CompiledSchema::compile(json!({
            "type": "object",
            "properties": { "pick": pick },
            "$defs": defs,
        }))
        .unwrap();
        let mut errors = schema.validate(&json!({ "pick": value })).errors;
        assert_eq!(errors.len(), 1, "{errors:?}");
        errors.remove(0)
    }

    /// Where, which keyword, and what it says.
    fn parts(error: &ValidationError) -> (&str, &str, &str) {
        (&error.path, &error.keyword, &error.message)
    }

    #[test]
    fn an_enum_violation_names_every_allowed_value() {
        let error = pick_violation(
            &json!({ "type": "string", "enum": ["food", "travel", "lodging", "other"] }),
            &json!({}),
            &json!("snacks"),
        );
        assert_eq!(
            parts(&error),
            (
                "/pick",
                "enum",
                r#""snacks" is not one of "food", "travel", "lodging" or "other""#
            )
        );
        // Numbers and `null` (an `Option` of an enum) are listed as JSON.
        let error = pick_violation(
            &json!({ "enum": [1, 2.5, "three", null] }),
            &json!({}),
            &json!(4),
        );
        assert_eq!(error.message, r#"4 is not one of 1, 2.5, "three" or null"#);
        let error = pick_violation(&json!({ "enum": ["only"] }), &json!({}), &json!("x"));
        assert_eq!(error.message, r#""x" is not one of "only""#);
    }

    #[test]
    fn a_long_list_names_twenty_values_and_counts_the_rest() {
        let values: Vec<Value> = (1..=25).map(|n| json!(format!("v{n}"))).collect();
        let error = pick_violation(&json!({ "enum": values }), &json!({}), &json!("x"));
        let twenty: Vec<String> = (1..=20).map(|n| format!("\"v{n}\"")).collect();
        assert_eq!(
            error.message,
            format!("\"x\" is not one of {} and 5 more", twenty.join(", "))
        );
        // Exactly twenty: all of them, no count.
        let values: Vec<Value> = (1..=20).map(|n| json!(format!("v{n}"))).collect();
        let error = pick_violation(&json!({ "enum": values }), &json!({}), &json!("x"));
        assert!(
            error.message.ends_with(r#""v19" or "v20""#),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_one_of_of_consts_names_its_values() {
        // What schemars derives for an enum whose variants carry doc comments, behind a `$ref`;
        // undocumented variants come grouped in one `enum` branch.
        let defs = json!({
            "Operation": {
                "description": "What to do.",
                "oneOf": [
                    { "type": "string", "const": "now", "description": "The current time." },
                    { "type": "string", "const": "parse", "title": "Parse" },
                    { "type": "string", "enum": ["add", "subtract"] },
                ],
            },
        });
        let error = pick_violation(
            &json!({ "$ref": "#/$defs/Operation" }),
            &defs,
            &json!("bogus"),
        );
        assert_eq!(
            parts(&error),
            (
                "/pick",
                "oneOf",
                r#""bogus" is not one of "now", "parse", "add" or "subtract""#
            )
        );
        // An `Option` of it: `anyOf` the reference and `null`.
        let error = pick_violation(
            &json!({ "anyOf": [{ "$ref": "#/$defs/Operation" }, { "type": "null" }] }),
            &defs,
            &json!(7),
        );
        assert_eq!(
            (error.keyword.as_str(), error.message.as_str()),
            (
                "anyOf",
                r#"7 is not one of "now", "parse", "add", "subtract" or null"#
            )
        );
        // Numbers, and a value two branches share, named once.
        let error = pick_violation(
            &json!({ "oneOf": [{ "const": 1 }, { "const": 2 }, { "enum": [2, 3] }] }),
            &json!({}),
            &json!(5),
        );
        assert_eq!(error.message, "5 is not one of 1, 2 or 3");
    }

    #[test]
    fn a_one_of_that_is_not_a_set_of_values_keeps_jsonschemas_message() {
        // A data-carrying variant beside unit ones: the value could also be an object.
        let error = pick_violation(
            &json!({ "oneOf": [
                { "type": "string", "const": "plain" },
                { "type": "object", "properties": { "sized": { "type": "integer" } }, "required": ["sized"] },
            ] }),
            &json!({}),
            &json!("bogus"),
        );
        assert_eq!(error.keyword, "oneOf");
        assert_eq!(
            error.message,
            r#""bogus" is not valid under any of the schemas listed in the 'oneOf' keyword"#
        );
        // A branch that constrains more than its values.
        let error = pick_violation(
            &json!({ "anyOf": [{ "const": "a" }, { "type": "string", "minLength": 5 }] }),
            &json!({}),
            &json!("b"),
        );
        assert!(error.message.contains("'anyOf'"), "{}", error.message);
        // A reference that loops on itself is no set of values (and no endless search).
        let root = json!({ "$defs": { "Loop": { "anyOf": [{ "$ref": "#/$defs/Loop" }] } } });
        assert_eq!(allowed_values(&root["$defs"]["Loop"], &root, 0), None);
    }
}
