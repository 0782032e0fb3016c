//! Elicitation: a question to the user with the form of its answer, and the answer. MCP
//! elicitation asks for a flat object of primitive properties (strings with an optional format,
//! numbers, integers, booleans, single- and multi-select enums, titled or not; defaults), so a
//! type's schema is reduced to that form here, or refused with the property that does not fit.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::error::{ErrorCode, ToolError};
use crate::schema::CompiledSchema;

/// A question to the user: the message they read and the schema of the form they fill in (a
/// flat object of primitive properties, as MCP elicitation allows). Made from a Rust type with
/// [`Elicitation::new`]; [`ToolContext::elicit`](crate::ToolContext::elicit) asks it.
///
/// ```
/// use pleach_core::client::Elicitation;
///
/// #[derive(schemars::JsonSchema)]
/// # #[allow(dead_code)]
/// struct Booking {
///     /// How many seats.
///     seats: u32,
///     /// Window seats if there are any.
///     window: Option<bool>,
/// }
///
/// let question = Elicitation::new::<Booking>("How many seats?").unwrap();
/// assert_eq!(question.schema["required"], serde_json::json!(["seats"]));
/// assert_eq!(question.schema["properties"]["window"]["type"], "boolean");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Elicitation {
    /// What the user reads.
    pub message: String,
    /// The form of the answer (MCP's `requestedSchema`).
    #[serde(rename = "requestedSchema")]
    pub schema: Value,
}

impl Elicitation {
    /// The question `message` with the form of `T`'s schema.
    ///
    /// # Errors
    ///
    /// `T`'s schema is not a flat object of primitive properties (a nested object, an array
    /// other than a multi-select enum, a `$ref` that resolves to neither): 1008 naming the
    /// property and what MCP elicitation takes.
    ///
    /// ```
    /// use pleach_core::client::Elicitation;
    ///
    /// #[derive(schemars::JsonSchema)]
    /// # #[allow(dead_code)]
    /// struct Address { city: String }
    /// #[derive(schemars::JsonSchema)]
    /// # #[allow(dead_code)]
    /// struct Person { name: String, address: Address }
    ///
    /// let refused = Elicitation::new::<Person>("Who?").unwrap_err();
    /// assert!(refused.message().contains("`address`"), "{}", refused.message());
    /// ```
    pub fn new<T: JsonSchema>(message: impl Into<String>) -> Result<Elicitation, ToolError> {
        let root = crate::schema::input_schema_for::<T>();
        let schema = flat_form(&root).map_err(|problem| {
            ToolError::new(
                ErrorCode::ToolFailed,
                format!(
                    "the answer type `{}` cannot be asked through elicitation: {problem}; \
                     elicitation takes a flat object of strings, numbers, integers, booleans \
                     and enums (single or multi-select)",
                    T::schema_name()
                ),
            )
            .with_recoverable(false)
        })?;
        Ok(Elicitation {
            message: message.into(),
            schema,
        })
    }

    /// The question `message` with a form already written as MCP's `requestedSchema` (another
    /// MCP server's question, passed on): an object whose properties are each a string, number,
    /// integer, boolean, or a list (multi-select). The form is kept as given.
    ///
    /// # Errors
    ///
    /// `schema` is not an object schema, or a property is not one of those kinds: 1008 naming it.
    ///
    /// ```
    /// use pleach_core::client::Elicitation;
    /// use serde_json::json;
    ///
    /// let form = json!({
    ///     "type": "object",
    ///     "properties": { "name": { "type": "string", "default": "Ada" } },
    /// });
    /// let question = Elicitation::with_schema("Who?", form.clone()).unwrap();
    /// assert_eq!(question.schema, form);
    ///
    /// let nested = json!({
    ///     "type": "object",
    ///     "properties": { "address": { "type": "object" } },
    /// });
    /// let refused = Elicitation::with_schema("Where?", nested).unwrap_err();
    /// assert!(refused.message().contains("`address`"), "{}", refused.message());
    /// ```
    #[doc(alias = "requestedSchema")]
    pub fn with_schema(
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Elicitation, ToolError> {
        let refused = |problem: String| {
            ToolError::new(
                ErrorCode::ToolFailed,
                format!(
                    "the form cannot be asked through elicitation: {problem}; elicitation takes \
                     a flat object of strings, numbers, integers, booleans and enums"
                ),
            )
            .with_recoverable(false)
        };
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(refused("it is not an object schema".to_owned()));
        }
        let properties = match schema.get("properties") {
            None => None,
            Some(Value::Object(properties)) => Some(properties),
            Some(_) => return Err(refused("its `properties` is not an object".to_owned())),
        };
        for (name, property) in properties.into_iter().flatten() {
            let kind = property.get("type").and_then(Value::as_str);
            let choices = property.get("enum").is_some()
                || property.get("oneOf").is_some()
                || property.get("anyOf").is_some();
            match kind {
                Some("string" | "number" | "integer" | "boolean" | "array") => {}
                None if choices => {}
                Some(other) => {
                    return Err(refused(format!("property `{name}` has the type `{other}`")));
                }
                None => return Err(refused(format!("property `{name}` has no type"))),
            }
        }
        Ok(Elicitation {
            message: message.into(),
            schema,
        })
    }

    /// The user's accepted `content`, checked against the form and read as a `T`.
    pub(crate) fn read<T: DeserializeOwned>(&self, content: Value) -> Result<T, ToolError> {
        let unfit = |reason: String| {
            ToolError::new(
                ErrorCode::ToolFailed,
                format!("the user's answer does not fit the question's form: {reason}"),
            )
        };
        let compiled = CompiledSchema::compile(self.schema.clone()).map_err(unfit)?;
        let checked = compiled.validate(&content);
        if let Some(error) = checked.errors.first() {
            return Err(unfit(if error.path.is_empty() {
                error.message.clone()
            } else {
                format!("at `{}`: {}", error.path, error.message)
            }));
        }
        serde_json::from_value(content).map_err(|error| unfit(error.to_string()))
    }
}

/// The user's answer to an [`Elicitation`]: MCP's three actions, the accepted content typed.
///
/// ```
/// use pleach_core::client::Elicited;
///
/// let answer: Elicited<u32> = Elicited::Accept(2);
/// assert_eq!(answer.accepted(), Some(2));
/// assert_eq!(Elicited::<u32>::Decline.accepted(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user answered: the content of the form.
    Accept(T),
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

impl<T> Elicited<T> {
    /// The accepted content, if the user accepted.
    ///
    /// ```
    /// assert_eq!(pleach_core::client::Elicited::<u8>::Cancel.accepted(), None);
    /// ```
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accept(content) => Some(content),
            Elicited::Decline | Elicited::Cancel => None,
        }
    }

    /// The action's name as MCP writes it: `accept`, `decline` or `cancel`.
    ///
    /// ```
    /// assert_eq!(pleach_core::client::Elicited::<u8>::Decline.action(), "decline");
    /// ```
    pub fn action(&self) -> &'static str {
        match self {
            Elicited::Accept(_) => "accept",
            Elicited::Decline => "decline",
            Elicited::Cancel => "cancel",
        }
    }
}

/// The keys a primitive property keeps; the rest (schemars' `format: "uint32"`, `$ref`s resolved
/// away) are dropped.
const KEPT: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "enum",
    "enumNames",
];

/// The string formats MCP elicitation knows.
const FORMATS: &[&str] = &["email", "uri", "date", "date-time"];

/// `root` (a schemars object schema) as MCP elicitation's form, or which property does not fit.
fn flat_form(root: &Value) -> Result<Value, String> {
    let defs = root.get("$defs").and_then(Value::as_object);
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("it is not a struct (an object with named fields)".to_owned());
    }
    let mut properties = Map::new();
    if let Some(found) = root.get("properties").and_then(Value::as_object) {
        for (name, schema) in found {
            let property = primitive(schema, defs)
                .map_err(|problem| format!("property `{name}` {problem}"))?;
            properties.insert(name.clone(), property);
        }
    }
    let mut form = json!({ "type": "object", "properties": properties });
    if let Some(required) = root.get("required") {
        form["required"] = required.clone();
    }
    if let Some(description) = root.get("description") {
        form["description"] = description.clone();
    }
    Ok(form)
}

/// A `$ref` into `$defs`, resolved; anything else as it is.
fn resolve<'a>(schema: &'a Value, defs: Option<&'a Map<String, Value>>) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => defs?.get(reference.strip_prefix("#/$defs/")?),
        None => Some(schema),
    }
}

/// One property as an elicitation primitive.
fn primitive(schema: &Value, defs: Option<&Map<String, Value>>) -> Result<Value, String> {
    let resolved = resolve(schema, defs).ok_or("refers to a schema this form cannot hold")?;
    let mut out = Map::new();
    // The property's own title and description win over its type's.
    for source in [resolved, schema] {
        for key in ["title", "description", "default"] {
            if let Some(value) = source.get(key) {
                out.insert(key.to_owned(), value.clone());
            }
        }
    }
    // `Option<T>`: `"type": [T, "null"]`, or `anyOf: [T, {"type": "null"}]`.
    if let Some(branches) = resolved.get("anyOf").and_then(Value::as_array) {
        let kept: Vec<&Value> = branches
            .iter()
            .filter(|branch| branch.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if let [only] = kept.as_slice() {
            let mut inner = primitive(only, defs)?;
            if let Some(map) = inner.as_object_mut() {
                for (key, value) in out {
                    map.insert(key, value);
                }
            }
            return Ok(inner);
        }
        return Err("is a choice of several types".to_owned());
    }
    let kind = match resolved.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => {
            let kept: Vec<&str> = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|kind| *kind != "null")
                .collect();
            match kept.as_slice() {
                [only] => (*only).to_owned(),
                _ => return Err("is a choice of several types".to_owned()),
            }
        }
        // A unit enum whose variants carry doc comments: `oneOf` of `const`s.
        None if resolved.get("oneOf").is_some() => "string".to_owned(),
        _ => return Err("has no type".to_owned()),
    };
    match kind.as_str() {
        "string" => {
            if let Some(format) = resolved.get("format").and_then(Value::as_str) {
                if !FORMATS.contains(&format) {
                    return Err(format!(
                        "has the string format `{format}`; elicitation knows {}",
                        FORMATS.join(", ")
                    ));
                }
                out.insert("format".to_owned(), format.into());
            }
            if let Some(one_of) = resolved.get("oneOf") {
                out.insert("oneOf".to_owned(), titled(one_of)?);
            }
        }
        "number" | "integer" | "boolean" => {}
        "array" => {
            let items = resolved
                .get("items")
                .and_then(|items| resolve(items, defs))
                .ok_or("is a list of no known item type")?;
            let choices = if let Some(values) = items.get("enum") {
                json!({ "type": "string", "enum": values })
            } else if let Some(one_of) = items.get("oneOf") {
                json!({ "anyOf": titled(one_of)? })
            } else {
                return Err(
                    "is a list; elicitation takes lists only of enum values (multi-select)"
                        .to_owned(),
                );
            };
            out.insert("items".to_owned(), choices);
            for key in ["minItems", "maxItems"] {
                if let Some(value) = resolved.get(key) {
                    out.insert(key.to_owned(), value.clone());
                }
            }
        }
        "object" => return Err("is an object; elicitation takes no nested objects".to_owned()),
        other => return Err(format!("has the type `{other}`")),
    }
    for key in KEPT {
        if let Some(value) = resolved.get(*key)
            && !out.contains_key(*key)
        {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    out.insert("type".to_owned(), kind.into());
    Ok(Value::Object(out))
}

/// A `oneOf` of `const`s (each with the variant's doc comment as its `description`) as
/// SEP-1330's titled choices: `{ "const": …, "title": … }`.
fn titled(one_of: &Value) -> Result<Value, String> {
    let branches = one_of.as_array().ok_or("has an unreadable `oneOf`")?;
    branches
        .iter()
        .map(|branch| {
            let value = branch
                .get("const")
                .or_else(|| {
                    branch
                        .get("enum")
                        .and_then(Value::as_array)
                        .and_then(|values| values.first())
                })
                .ok_or("is an enum with a variant that carries data")?;
            let title = branch
                .get("title")
                .or_else(|| branch.get("description"))
                .cloned()
                .unwrap_or_else(|| value.clone());
            Ok(json!({ "const": value, "title": title }))
        })
        .collect::<Result<Vec<Value>, &str>>()
        .map(Value::Array)
        .map_err(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema, Debug, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Size {
        /// Small cup
        Small,
        /// Large cup
        Large,
    }

    #[derive(serde::Deserialize, JsonSchema, Debug, PartialEq)]
    enum Color {
        Red,
        Blue,
    }

    /// An order.
    #[derive(serde::Deserialize, JsonSchema, Debug, PartialEq)]
    struct Order {
        /// Your name.
        #[schemars(length(min = 1, max = 40))]
        name: String,
        /// Where to send the receipt.
        #[schemars(email)]
        email: Option<String>,
        #[schemars(range(min = 1, max = 9))]
        cups: u8,
        size: Size,
        colors: Vec<Color>,
        #[serde(default = "yes")]
        #[schemars(default = "yes")]
        sugar: bool,
    }

    fn yes() -> bool {
        true
    }

    #[test]
    fn a_flat_struct_becomes_a_form_of_primitives() {
        let form = Elicitation::new::<Order>("Order?").unwrap().schema;
        let properties = &form["properties"];
        assert_eq!(
            properties["name"],
            json!({ "type": "string", "description": "Your name.", "minLength": 1, "maxLength": 40 })
        );
        assert_eq!(properties["email"]["format"], "email");
        assert_eq!(properties["email"]["type"], "string");
        assert_eq!(properties["cups"]["minimum"], 1);
        assert_eq!(properties["cups"]["type"], "integer");
        assert!(properties["cups"].get("format").is_none(), "{form}");
        assert_eq!(
            properties["size"]["oneOf"],
            json!([{ "const": "small", "title": "Small cup" }, { "const": "large", "title": "Large cup" }])
        );
        assert_eq!(
            properties["colors"]["items"],
            json!({ "type": "string", "enum": ["Red", "Blue"] })
        );
        assert_eq!(properties["sugar"]["default"], true);
        let required = form["required"].as_array().unwrap();
        assert!(required.contains(&json!("name")) && !required.contains(&json!("email")));
        assert_eq!(form["description"], "An order.");
    }

    #[test]
    fn answers_are_checked_against_the_form_and_typed() {
        let question = Elicitation::new::<Order>("Order?").unwrap();
        let order: Order = question
            .read(json!({ "name": "Ann", "cups": 2, "size": "large", "colors": ["Red"] }))
            .unwrap();
        assert_eq!(order.size, Size::Large);
        assert!(order.sugar);
        let refused = question
            .read::<Order>(json!({ "name": "Ann", "cups": 12, "size": "large", "colors": [] }))
            .unwrap_err();
        assert!(refused.message().contains("/cups"), "{}", refused.message());
    }

    #[test]
    fn nested_objects_and_lists_of_values_are_refused_by_name() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Tags {
            tags: Vec<String>,
        }
        let refused = Elicitation::new::<Tags>("?").unwrap_err();
        assert!(
            refused.message().contains("`tags` is a list"),
            "{}",
            refused.message()
        );
        let refused = Elicitation::new::<u32>("?").unwrap_err();
        assert!(
            refused.message().contains("not a struct"),
            "{}",
            refused.message()
        );
    }
}
