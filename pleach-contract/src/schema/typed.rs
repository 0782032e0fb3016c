//! A typed tool's schemas and values: schemas generated from its Rust types (schemars, draft
//! 2020-12), its arguments deserialized into its input (whole floats read as integers, as JSON
//! Schema reads them), and its output serialized.

use std::borrow::Cow;
use std::cell::Cell;

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde::de;
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};

/// The generator every pleach schema comes from: draft 2020-12, no `$schema` key (providers reject
/// it inside tool definitions).
pub(crate) fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .into_generator()
}

/// The input schema of a typed input.
pub(crate) fn input_schema_for<T: JsonSchema + ?Sized>() -> Value {
    root_schema(RootFns {
        name: T::schema_name,
        id: T::schema_id,
        schema: T::json_schema,
    })
}

/// The `JsonSchema` fns of one type, as pointers.
#[derive(Clone, Copy)]
struct RootFns {
    name: fn() -> Cow<'static, str>,
    id: fn() -> Cow<'static, str>,
    schema: fn(&mut SchemaGenerator) -> Schema,
}

thread_local! {
    /// The type [`ErasedRoot`] stands for while [`root_schema`] runs.
    static ROOT: Cell<Option<RootFns>> = const { Cell::new(None) };
}

/// A type whose `JsonSchema` fns are those of the type in [`ROOT`]: schemars' root-schema code
/// (its title, `$defs`, the guard against a type that contains itself) is generic over the type,
/// and through this one type it is compiled once, not once for every tool's input.
struct ErasedRoot;

impl ErasedRoot {
    fn fns() -> Option<RootFns> {
        ROOT.with(Cell::get)
    }
}

impl JsonSchema for ErasedRoot {
    fn schema_name() -> Cow<'static, str> {
        Self::fns().map_or(Cow::Borrowed("Input"), |fns| (fns.name)())
    }

    fn schema_id() -> Cow<'static, str> {
        Self::fns().map_or(Cow::Borrowed("Input"), |fns| (fns.id)())
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Self::fns().map_or_else(Schema::default, |fns| (fns.schema)(generator))
    }
}

/// The root schema of the type whose fns are `fns`, as `into_root_schema_for` builds it.
fn root_schema(fns: RootFns) -> Value {
    /// Puts back the type of an enclosing `root_schema`, also should a type's fn panic.
    struct Restore(Option<RootFns>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ROOT.with(|root| root.set(self.0));
        }
    }
    let _restore = Restore(ROOT.with(|root| root.replace(Some(fns))));
    generator().into_root_schema_for::<ErasedRoot>().to_value()
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
    // A `match` and a plain fn: a closure or `map_err` here is compiled once per input type.
    match serde_json::from_str(arguments) {
        Ok(input) => Ok(input),
        Err(error) => Err(input_error(&error)),
    }
}

/// Why arguments text did not deserialize into the tool's input.
fn input_error(error: &serde_json::Error) -> ToolError {
    ToolError::new(
        ErrorCode::InputInvalid,
        format!("the arguments do not fit the tool's input: {error}"),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The root schema through `ErasedRoot` is schemars' own, for a type with `$defs` and for one
    /// that contains itself.
    #[test]
    fn erased_root_schema_is_schemars_root_schema() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        /// A tree.
        struct Node {
            /// Its label.
            label: String,
            children: Vec<Node>,
            leaf: Option<Leaf>,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        enum Leaf {
            Small(u8),
            Named { name: String },
        }
        fn direct<T: JsonSchema>() -> Value {
            generator().into_root_schema_for::<T>().to_value()
        }
        assert_eq!(input_schema_for::<Node>(), direct::<Node>());
        assert_eq!(input_schema_for::<Leaf>(), direct::<Leaf>());
        assert_eq!(input_schema_for::<Vec<Node>>(), direct::<Vec<Node>>());
        assert_eq!(input_schema_for::<Node>()["children"], Value::Null);
        assert_eq!(
            input_schema_for::<Node>()["properties"]["children"]["items"]["$ref"],
            "#"
        );
    }
}
