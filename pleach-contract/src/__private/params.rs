//! The input schema of a tool: its parameters as an object schema, or one `#[input]` type's.

use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;
use serde::Serialize;
use serde_json::{Map, Value};

use super::bounds::{compare, number_of};
use crate::schema;

/// A model-facing argument type. Implemented for every `JsonSchema` type; the bound is spelled
/// as a trait of ours so the error names the fix.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it has no JSON Schema",
    label = "this type does not implement `JsonSchema`",
    note = "put `#[pleach_core::input]` on its definition: it derives `Deserialize` and `JsonSchema` through pleach's re-exports, with the `crate` attributes those derives need"
)]
pub trait ToolArgument: JsonSchema {
    fn argument_schema(generator: &mut SchemaGenerator) -> Value;
}

impl<T: JsonSchema + ?Sized> ToolArgument for T {
    fn argument_schema(generator: &mut SchemaGenerator) -> Value {
        generator.subschema_for::<T>().to_value()
    }
}

/// Builds the object schema of a tool whose parameters are its arguments.
pub struct ParamsSchema {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<Value>,
}

impl Default for ParamsSchema {
    fn default() -> Self {
        ParamsSchema {
            generator: schema::generator(),
            properties: Map::new(),
            required: Vec::new(),
        }
    }
}

/// What `#[arg(…)]` says of one parameter.
#[derive(Default)]
pub struct ParamAttrs {
    pub description: Option<&'static str>,
    pub default: Option<Value>,
    pub minimum: Option<Value>,
    pub maximum: Option<Value>,
}

impl ParamsSchema {
    pub fn new() -> Self {
        ParamsSchema::default()
    }

    pub fn param<T: ToolArgument + ?Sized>(
        &mut self,
        name: &str,
        required: bool,
        attrs: ParamAttrs,
    ) -> &mut Self {
        let mut schema = T::argument_schema(&mut self.generator);
        integer_range(&mut schema);
        // A string's bounds are on its length, a list's on its size (`Measured`), in the
        // whole-number keywords JSON Schema has for them.
        let (minimum, maximum) = match measured_kind(&schema) {
            Some((min_key, max_key)) => (
                (min_key, attrs.minimum.map(|b| whole_bound(&b, f64::ceil))),
                (max_key, attrs.maximum.map(|b| whole_bound(&b, f64::floor))),
            ),
            None => (("minimum", attrs.minimum), ("maximum", attrs.maximum)),
        };
        let extra = [
            ("description", attrs.description.map(Value::from)),
            ("default", attrs.default),
            minimum,
            maximum,
        ];
        for (key, value) in extra {
            let Some(value) = value else { continue };
            match &mut schema {
                Value::Object(object) => {
                    // A bound looser than the integer type's range (`max = 300` on a `u8`) narrows
                    // nothing: the type's range stays, or the model is told 256 fits.
                    let looser = |kept: &Value, ordering| {
                        compare(number_of(&value)?, number_of(kept)?).map(|o| o == ordering)
                    };
                    let keep_range = match (key, object.get(key)) {
                        ("minimum", Some(kept)) => looser(kept, std::cmp::Ordering::Less),
                        ("maximum", Some(kept)) => looser(kept, std::cmp::Ordering::Greater),
                        _ => None,
                    };
                    if keep_range != Some(true) {
                        object.insert(key.to_owned(), value);
                    }
                }
                // `true` (anything) becomes an object schema so it can carry the keyword.
                other => {
                    let mut object = Map::new();
                    if *other == Value::Bool(false) {
                        object.insert("not".to_owned(), Value::Bool(true));
                    }
                    object.insert(key.to_owned(), value);
                    *other = Value::Object(object);
                }
            }
        }
        self.properties.insert(name.to_owned(), schema);
        if required {
            self.required.push(Value::from(name));
        }
        self
    }

    pub fn finish(&mut self) -> Value {
        let mut root = Map::new();
        root.insert("type".to_owned(), Value::from("object"));
        root.insert(
            "properties".to_owned(),
            Value::Object(std::mem::take(&mut self.properties)),
        );
        if !self.required.is_empty() {
            root.insert(
                "required".to_owned(),
                Value::Array(std::mem::take(&mut self.required)),
            );
        }
        root.insert("additionalProperties".to_owned(), Value::Bool(false));
        let definitions = self.generator.take_definitions(true);
        if !definitions.is_empty() {
            root.insert("$defs".to_owned(), Value::Object(definitions));
        }
        Value::Object(root)
    }
}

/// The length keywords of a string or list schema (`type` `"string"` or `"array"`, maybe with
/// `"null"` beside it for an `Option`); `None` for anything else.
fn measured_kind(schema: &Value) -> Option<(&'static str, &'static str)> {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if types.contains(&"string") {
        Some(("minLength", "maxLength"))
    } else if types.contains(&"array") {
        Some(("minItems", "maxItems"))
    } else {
        None
    }
}

/// A bound as a length keyword's non-negative whole number, rounded inward by `round` (a length
/// of at least 1.5 is at least 2).
fn whole_bound(bound: &Value, round: fn(f64) -> f64) -> Value {
    match bound.as_u64() {
        Some(whole) => Value::from(whole),
        None if bound.as_i64().is_some() => Value::from(0),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        // `as` saturates: a bound past `u64::MAX` is `u64::MAX`, a negative one 0.
        None => match bound.as_f64() {
            Some(float) => Value::from(round(float).max(0.0) as u64),
            // NaN and the infinities serialize as `null`: kept, so the schema fails to compile
            // and the definition says so, as it does for a number's bound.
            None => bound.clone(),
        },
    }
}

/// Adds the range of a fixed-width integer (`"format": "uint32"`, …) to its schema, so the schema
/// refuses what the Rust type cannot hold instead of accepting it and failing later.
fn integer_range(schema: &mut Value) {
    let targets: Vec<&mut Map<String, Value>> = match schema {
        Value::Object(object) => {
            if object
                .get("type")
                .is_some_and(|t| t.as_str() == Some("array"))
            {
                match object.get_mut("items") {
                    Some(Value::Object(items)) => vec![items],
                    _ => Vec::new(),
                }
            } else {
                vec![object]
            }
        }
        _ => Vec::new(),
    };
    for object in targets {
        let range: Option<(Value, Value)> = match object.get("format").and_then(Value::as_str) {
            // `usize` and `isize`, at this target's width.
            Some("uint") => Some((0.into(), usize::MAX.into())),
            Some("int") => Some((isize::MIN.into(), isize::MAX.into())),
            Some("int8") => Some((i8::MIN.into(), i8::MAX.into())),
            Some("int16") => Some((i16::MIN.into(), i16::MAX.into())),
            Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
            Some("int64") => Some((i64::MIN.into(), i64::MAX.into())),
            Some("uint8") => Some((0.into(), u8::MAX.into())),
            Some("uint16") => Some((0.into(), u16::MAX.into())),
            Some("uint32") => Some((0.into(), u32::MAX.into())),
            Some("uint64") => Some((0.into(), u64::MAX.into())),
            _ => None,
        };
        if let Some((minimum, maximum)) = range {
            object.entry("minimum").or_insert(minimum);
            object.entry("maximum").or_insert(maximum);
        }
    }
}

/// The input schema of a tool that takes one `#[input]` type.
pub fn input_schema<T: ToolArgument>() -> Value {
    schema::input_schema_for::<T>()
}

/// A parameter type that a string-literal `#[arg(default = "…")]` can build.
#[diagnostic::on_unimplemented(
    message = "a string default cannot build a `{Self}`",
    label = "this default is a string, the parameter is not",
    note = "give a default of the parameter's type (`default = 10`, `default = true`), or make the parameter a string type (`String`, `Option<String>`, `PathBuf`, …)"
)]
pub trait DefaultFromStr {
    fn default_from_str(text: &'static str) -> Self;
}

// Listed rather than blanket over `From<&str>`: the error then names these, not every `From`
// impl of the parameter type in the dependency graph.
macro_rules! default_from_str {
    ($($ty:ty),*) => {$(
        impl DefaultFromStr for $ty {
            fn default_from_str(text: &'static str) -> Self {
                <$ty>::from(text)
            }
        }
    )*};
}

default_from_str!(
    String,
    &'static str,
    Box<str>,
    Arc<str>,
    std::borrow::Cow<'static, str>,
    std::path::PathBuf
);

impl<T: DefaultFromStr> DefaultFromStr for Option<T> {
    fn default_from_str(text: &'static str) -> Self {
        Some(T::default_from_str(text))
    }
}

/// Serializes a `#[arg(default/min/max = …)]` value for the schema.
pub fn json_value<T: Serialize + ?Sized>(value: &T) -> Option<Value> {
    serde_json::to_value(value).ok()
}

/// Serializes a `#[arg(min/max)]` bound: an integer past 64 bits becomes a float (as the typed
/// check compares it) instead of no bound at all.
pub fn bound_value<T: Serialize + ?Sized>(value: &T) -> Option<Value> {
    serde_json::to_value(value).ok().or_else(|| {
        serde_json::to_string(value)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
    })
}
