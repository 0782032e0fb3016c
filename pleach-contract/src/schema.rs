//! JSON Schema: generation from Rust types (schemars), validators compiled once (jsonschema, no
//! remote `$ref`s), and violations as field-path errors ([`ValidationResult`]).
//!
//! ```
//! use pleach_core::{define_tool, ToolError};
//! use serde_json::json;
//!
//! let tool = define_tool("search", "Searches.")
//!     .input_schema(json!({
//!         "type": "object",
//!         "properties": { "limit": { "type": "integer", "maximum": 50 } },
//!     }))
//!     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
//!     .unwrap();
//! let verdict = tool.validate_arguments(r#"{"limit":80}"#);
//! assert_eq!((verdict.errors[0].path.as_str(), verdict.errors[0].keyword.as_str()), ("/limit", "maximum"));
//! ```

use std::cell::RefCell;
use std::fmt;

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};

mod absent_nulls;

#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub use absent_nulls::{accepts_null, remove_absent_nulls, resolve_local};

/// The verdict on one call's arguments: the Rust form of the TypeScript spec's `useToolValidation`
/// result.
///
/// ```
/// use pleach_core::{ValidationError, ValidationResult};
///
/// let verdict = ValidationResult::invalid(vec![ValidationError {
///     path: "/limit".into(),
///     keyword: "maximum".into(),
///     message: "80 is greater than the maximum of 50".into(),
/// }]);
/// assert!(!verdict.valid);
/// assert_eq!(
///     serde_json::to_string(&verdict).unwrap(),
///     r#"{"valid":false,"errors":[{"path":"/limit","keyword":"maximum","message":"80 is greater than the maximum of 50"}]}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationResult {
    /// `true` when the arguments may be dispatched.
    pub valid: bool,
    /// Every violation found (empty when valid).
    pub errors: Vec<ValidationError>,
}

impl ValidationResult {
    /// A passing verdict.
    ///
    /// ```
    /// assert!(pleach_core::ValidationResult::ok().valid);
    /// ```
    pub fn ok() -> Self {
        ValidationResult {
            valid: true,
            errors: Vec::new(),
        }
    }

    /// A failing verdict (valid only if `errors` is empty).
    ///
    /// ```
    /// use pleach_core::ValidationResult;
    /// assert!(ValidationResult::invalid(Vec::new()).valid); // no errors: valid after all
    /// ```
    pub fn invalid(errors: Vec<ValidationError>) -> Self {
        ValidationResult {
            valid: errors.is_empty(),
            errors,
        }
    }
}

/// One violation: where (a JSON pointer into the arguments, `""` for the whole object), which rule
/// (a JSON Schema keyword, or one of `json`, `duplicateKey`, `unknownTool` for what comes before the
/// schema) and a message a model can act on.
///
/// ```
/// let e = pleach_core::ValidationError {
///     path: "/query".into(),
///     keyword: "type".into(),
///     message: "5 is not of type \"string\"".into(),
/// };
/// assert_eq!(e.to_string(), "at `/query`: 5 is not of type \"string\" (type)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationError {
    /// JSON pointer to the offending value.
    pub path: String,
    /// The rule that failed.
    pub keyword: String,
    /// What is wrong, for a model or a person.
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at the top level: {} ({})", self.message, self.keyword)
        } else {
            write!(f, "at `{}`: {} ({})", self.path, self.message, self.keyword)
        }
    }
}

impl ValidationError {
    /// The tool error for a call refused with this violation: 1005 for text that is not JSON or
    /// has a duplicate key, 1003 for an unknown tool, 1001 for a schema violation.
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn into_tool_error(self) -> ToolError {
        let code = match self.keyword.as_str() {
            KEYWORD_JSON | KEYWORD_DUPLICATE_KEY => ErrorCode::ArgumentsNotJson,
            KEYWORD_UNKNOWN_TOOL => ErrorCode::UnknownTool,
            _ => ErrorCode::InputInvalid,
        };
        ToolError::new(code, self.message).with_location(self.path, self.keyword)
    }
}

const KEYWORD_JSON: &str = "json";
const KEYWORD_DUPLICATE_KEY: &str = "duplicateKey";
pub(crate) const KEYWORD_UNKNOWN_TOOL: &str = "unknownTool";

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

/// The generator every pleach schema comes from: draft 2020-12, no `$schema` key (providers reject
/// it inside tool definitions).
pub(crate) fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .into_generator()
}

/// The input schema of a typed input.
pub(crate) fn input_schema_for<T: JsonSchema + ?Sized>() -> Value {
    generator().into_root_schema_for::<T>().to_value()
}

/// The output schema of a typed output; `None` when it accepts anything (`serde_json::Value`).
pub(crate) fn output_schema_for<T: JsonSchema + ?Sized>() -> Option<Value> {
    let mut schema = generator().into_root_schema_for::<T>().to_value();
    // schemars titles every root (`"double"`, `"Array_of_string"`); only a struct's name says
    // something to a reader.
    if let Some(map) = schema.as_object_mut()
        && map.get("type").and_then(Value::as_str) != Some("object")
    {
        map.remove("title");
    }
    let accepts_anything = match &schema {
        Value::Bool(true) => true,
        Value::Object(map) => map
            .keys()
            .all(|k| matches!(k.as_str(), "title" | "description")),
        _ => false,
    };
    (!accepts_anything).then_some(schema)
}

/// Deserializes arguments text straight into the tool's input.
pub(crate) fn deserialize_input<T: de::DeserializeOwned>(arguments: &str) -> Result<T, ToolError> {
    serde_json::from_str(arguments).map_err(|e| {
        ToolError::new(
            ErrorCode::InputInvalid,
            format!("the arguments do not fit the tool's input: {e}"),
        )
    })
}

/// The integer a float stands for (`3.0`, `1e2`), when it is whole and an `i64` or `u64` holds
/// it exactly; `None` for any other number, integers included.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn whole_float_as_integer(number: &serde_json::Number) -> Option<Value> {
    let float = number.as_f64().filter(|_| number.is_f64())?;
    if float.fract() != 0.0 || !float.is_finite() {
        return None;
    }
    // 2^63 and 2^64 are exact as floats; below them every whole float converts exactly.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&float) {
        Some(Value::from(float as i64))
    } else if (0.0..18_446_744_073_709_551_616.0).contains(&float) {
        Some(Value::from(float as u64))
    } else {
        None
    }
}

/// `value` as JSON text with every number that is a whole float (`3.0`, `1e2`) written as an
/// integer, or `None` when it has none. JSON Schema counts such numbers as integers; serde reads
/// them into no integer type.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn integral_floats_as_integers(value: &Value) -> Option<String> {
    fn has(value: &Value) -> bool {
        match value {
            Value::Number(number) => whole_float_as_integer(number).is_some(),
            Value::Array(items) => items.iter().any(has),
            Value::Object(map) => map.values().any(has),
            _ => false,
        }
    }
    fn convert(value: &Value) -> Value {
        match value {
            Value::Number(number) => {
                whole_float_as_integer(number).unwrap_or_else(|| value.clone())
            }
            Value::Array(items) => Value::Array(items.iter().map(convert).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| (key.clone(), convert(item)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    has(value).then(|| convert(value).to_string())
}

/// Serializes a tool's result; a result that cannot be JSON is the tool's fault (1002).
pub(crate) fn output_to_value<T: Serialize + ?Sized>(output: &T) -> Result<Value, ToolError> {
    serde_json::to_value(output).map_err(|e| {
        ToolError::new(
            ErrorCode::OutputInvalid,
            "the tool's result could not be written as JSON",
        )
        .with_detail(e.to_string())
    })
}

/// Parses arguments text into a value, refusing duplicate object keys (`serde_json` keeps the last
/// one silently, so a reviewer and the tool could see different values). Nesting is bounded by
/// `serde_json`'s recursion limit (128), so hostile input cannot overflow the stack.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn parse_arguments(text: &str) -> Result<Value, ValidationError> {
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = CheckedValue {
        pointer: &mut String::new(),
        duplicate: &duplicate,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|e| match duplicate.into_inner() {
        Some((path, key)) => duplicate_key(path, &key),
        None => not_json(e),
    })
}

/// The violation for arguments that are not JSON, `reason` saying where and why.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn not_json(reason: impl fmt::Display) -> ValidationError {
    ValidationError {
        path: String::new(),
        keyword: KEYWORD_JSON.to_owned(),
        message: format!("the arguments are not valid JSON: {reason}"),
    }
}

/// The violation for an object, at JSON pointer `path`, that repeats `key`.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn duplicate_key(path: String, key: &str) -> ValidationError {
    ValidationError {
        message: format!(
            "the arguments repeat the key `{key}`{}; send each key once",
            if path.is_empty() {
                String::new()
            } else {
                format!(" in `{path}`")
            }
        ),
        path,
        keyword: KEYWORD_DUPLICATE_KEY.to_owned(),
    }
}

/// Appends `segment` to a JSON pointer, escaped as RFC 6901 says (`~` as `~0`, `/` as `~1`).
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn push_pointer_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    for c in segment.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// The deepest nesting of arrays and objects in `text`, by a scan that skips strings: cheap
/// enough to run before parsing, so hostile nesting is refused without building anything.
/// (On text that is not JSON the number is meaningless but finite; the parser reports the error.)
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in text.as_bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A `Value` deserializer that tracks its JSON pointer and refuses duplicate keys.
struct CheckedValue<'a> {
    pointer: &'a mut String,
    duplicate: &'a RefCell<Option<(String, String)>>,
}

impl CheckedValue<'_> {
    fn child(&mut self, segment: &str) -> (CheckedValue<'_>, usize) {
        let len = self.pointer.len();
        push_pointer_segment(self.pointer, segment);
        (
            CheckedValue {
                pointer: self.pointer,
                duplicate: self.duplicate,
            },
            len,
        )
    }
}

impl<'de> DeserializeSeed<'de> for CheckedValue<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CheckedValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            let (child, len) = self.child(&items.len().to_string());
            let next = seq.next_element_seed(child)?;
            self.pointer.truncate(len);
            match next {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some((self.pointer.clone(), key.clone()));
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let (child, len) = self.child(&key);
            let value = map.next_value_seed(child)?;
            self.pointer.truncate(len);
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_like_serde_json() {
        for text in [
            "{}",
            r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}]}"#,
            r#"{"big":18446744073709551615,"neg":-9223372036854775808}"#,
            r#"{"esc":"\u00e9\n\"","a/b~c":1}"#,
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_arguments(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_pointer() {
        let err = parse_arguments(r#"{"a":{"x/y":[{"k":1,"k":2}]}}"#).unwrap_err();
        assert_eq!(err.keyword, "duplicateKey");
        assert_eq!(err.path, "/a/x~1y/0");
        assert!(err.message.contains("`k`"), "{}", err.message);
        assert_eq!(err.into_tool_error().code(), ErrorCode::ArgumentsNotJson);
    }

    #[test]
    fn bad_json_is_refused() {
        for text in [
            "",
            "{",
            r#"{"a":1} trailing"#,
            "\u{feff}{}",
            r#"{"s":"\ud800"}"#,
        ] {
            let err = parse_arguments(text).unwrap_err();
            assert_eq!(err.keyword, "json", "{text:?}");
        }
    }

    #[test]
    fn nesting_depth_skips_strings() {
        assert_eq!(nesting_depth("{}"), 1);
        assert_eq!(nesting_depth(r#"{"a":[1,{"b":[]}]}"#), 4);
        assert_eq!(nesting_depth(r#"{"a":"[[[[{{{{\"]]]"}"#), 1);
        assert_eq!(nesting_depth("1"), 0);
        assert_eq!(nesting_depth(&"[".repeat(1000)), 1000);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = parse_arguments(&text).unwrap_err();
        assert!(err.message.contains("recursion limit"), "{}", err.message);
    }

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

    #[test]
    fn generated_schemas_have_no_meta_schema_key() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Input {
            a: u8,
        }
        let schema = input_schema_for::<Input>();
        assert!(schema.get("$schema").is_none(), "{schema}");
        assert_eq!(schema["type"], "object");
        assert_eq!(output_schema_for::<Value>(), None);
        assert_eq!(output_schema_for::<i64>().unwrap()["type"], "integer");
    }
}
