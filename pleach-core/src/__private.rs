//! Support for the code `#[tool]` and `#[unified_tool]` generate. **Not API**: anything here may
//! change in any release. Generated code reaches it through absolute `::pleach_core::__private`
//! paths, so a user's `Cargo.toml` lists `pleach-core` alone.

#![allow(missing_docs, unreachable_pub)]

use std::cell::Cell;
use std::fmt::{Debug, Display};
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

pub use linkme;
pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::registry::{TOOLS, ToolEntry};
pub use crate::tool::{Started, ToolFuture};

#[cfg(feature = "http")]
pub use crate::agent::http::tls_client_config;

use crate::error::ToolError;
use crate::safety::SafetyTier;
use crate::schema;
use crate::tool::{
    DefinitionError, DefinitionParts, DefinitionSite, ToolContext, ToolDefinition,
    UnifiedToolDefinition,
};

/// The code half of a generated definition.
#[derive(Clone, Copy)]
// Independent facts the macro proved about the code, each read on its own.
#[allow(clippy::struct_excessive_bools)]
pub struct Code {
    /// Arguments text in, a started tool out (the text read straight into the input).
    pub invoke: fn(&str, &mut Option<ToolContext>) -> Result<Started, ToolError>,
    /// The same reading without starting anything.
    pub check: fn(&str) -> Result<(), ToolError>,
    /// Whether a successful read implies the input schema accepts the text.
    pub checked_by_type: bool,
    /// Whether every value of the output type meets the derived output schema (integers,
    /// `bool`, `String`, and `Option` / `Vec` of them), so results need no output check.
    pub output_checked_by_type: bool,
    /// Whether the fn's body cannot suspend, so `invoke` runs it to the end.
    pub in_place: bool,
    /// Whether the fn takes a `ToolContext`.
    pub takes_context: bool,
}

/// Builds the definition of a `#[tool]` fn.
#[allow(clippy::too_many_arguments)]
pub fn definition(
    name: &str,
    description: &str,
    input_schema: Value,
    output_schema: Option<Value>,
    code: Code,
    file: &'static str,
    line: u32,
    column: u32,
) -> Result<ToolDefinition, DefinitionError> {
    ToolDefinition::from_parts(DefinitionParts {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
        output_schema,
        invoke: crate::tool::Invoke::Generated(code.invoke),
        check: Some(Arc::new(code.check)),
        checked_by_type: code.checked_by_type,
        output_checked_by_type: code.output_checked_by_type,
        in_place: code.in_place,
        takes_context: code.takes_context,
        site: DefinitionSite::new(file, line, column),
    })
}

/// An integer parameter type, read leniently: JSON Schema's `integer` accepts `2.0`, so the
/// typed reading does too (and refuses `2.5` and out-of-range values, as the schema does).
pub trait Integer: TryFrom<i64> + TryFrom<u64> {}

impl<T: TryFrom<i64> + TryFrom<u64>> Integer for T {}

pub struct Lenient<T>(T);

struct IntegerVisitor<T>(PhantomData<T>);

impl<T: Integer> serde::de::Visitor<'_> for IntegerVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an integer in range")
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
    }

    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<T, E> {
        let unexpected =
            || E::invalid_value(serde::de::Unexpected::Float(v), &"an integer in range");
        // Exact conversions only: a whole number inside the 64-bit ranges.
        let converted = if v.fract() != 0.0 || !v.is_finite() {
            None
        } else if (0.0..18_446_744_073_709_551_616.0).contains(&v) {
            T::try_from(v as u64).ok()
        } else if (-9_223_372_036_854_775_808.0..0.0).contains(&v) {
            T::try_from(v as i64).ok()
        } else {
            None
        };
        converted.ok_or_else(unexpected)
    }
}

impl<'de, T: Integer> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `deserialize_i64` reads any JSON number and hands it over as it is (`visit_u64`,
        // `visit_i64` or `visit_f64`), without the dispatch `deserialize_any` goes through.
        deserializer
            .deserialize_i64(IntegerVisitor(PhantomData))
            .map(Lenient)
    }
}

pub fn integer<'de, D: Deserializer<'de>, T: Integer>(deserializer: D) -> Result<T, D::Error> {
    Lenient::deserialize(deserializer).map(|Lenient(v)| v)
}

pub fn optional_integer<'de, D: Deserializer<'de>, T: Integer>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    Option::<Lenient<T>>::deserialize(deserializer).map(|v| v.map(|Lenient(v)| v))
}

pub fn integer_list<'de, D: Deserializer<'de>, T: Integer>(
    deserializer: D,
) -> Result<Vec<T>, D::Error> {
    Vec::<Lenient<T>>::deserialize(deserializer)
        .map(|v| v.into_iter().map(|Lenient(v)| v).collect())
}

/// A number as `#[arg(min/max)]` compares it: exactly for integers, as `f64` otherwise. `None` for
/// values the bound does not apply to (an absent `Option`, a string), as JSON Schema's
/// `minimum` / `maximum` apply to numbers only.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
pub enum Number {
    Int(i128),
    Float(f64),
}

/// A bound of `#[arg(min/max)]`: a number.
#[diagnostic::on_unimplemented(
    message = "a bound of `#[arg(min/max)]` is a number, and `{Self}` is not one",
    label = "this is not a number",
    note = "`min = 1`, `max = 50`, `min = 0.5`: a number, or a constant of a number type"
)]
pub trait Bounded {
    fn number(&self) -> Option<Number>;
}

/// What `#[arg(min/max)]` bounds: a number's value, a string's length in characters (JSON
/// Schema's `minLength`/`maxLength` count Unicode code points, as `chars` does), a list's size.
#[diagnostic::on_unimplemented(
    message = "`#[arg(min/max)]` bounds a number, a string's length or a list's size, and `{Self}` is none of these",
    label = "not a number, a string or a list",
    note = "`min` and `max` become `minimum`/`maximum` on a number, `minLength`/`maxLength` on a string, `minItems`/`maxItems` on a list; for another constraint, take an `#[input]` struct and put `#[schemars(…)]` on its field"
)]
pub trait Measured {
    fn measure(&self) -> Option<Measure>;
}

/// A bounded value's measure.
#[derive(Clone, Copy, PartialEq)]
pub enum Measure {
    /// A number, compared with the bound.
    Number(Number),
    /// A length or a size, compared with the bound as the schema's whole-number keywords are
    /// (a fractional bound rounds inward; a negative `max` acts as 0).
    Length(usize),
}

impl<T: Bounded> Measured for T {
    fn measure(&self) -> Option<Measure> {
        self.number().map(Measure::Number)
    }
}

/// `Measured` for string types (length in characters) and list types (size).
macro_rules! measured {
    (text: $($text:ty),*; list: $($list:ty),*) => {
        $(impl Measured for $text {
            fn measure(&self) -> Option<Measure> {
                Some(Measure::Length(self.chars().count()))
            }
        })*
        $(impl<T> Measured for $list {
            fn measure(&self) -> Option<Measure> {
                Some(Measure::Length(self.len()))
            }
        })*
    };
}

measured!(
    text: String, str, Box<str>, std::sync::Arc<str>, std::borrow::Cow<'_, str>;
    list: Vec<T>, std::collections::VecDeque<T>, Box<[T]>
);

impl Measured for std::path::PathBuf {
    fn measure(&self) -> Option<Measure> {
        // Read from JSON, so UTF-8; a path built otherwise is measured as the schema would see
        // its lossy text.
        Some(Measure::Length(self.to_string_lossy().chars().count()))
    }
}

// A set keeps its items distinct by Rust's `Eq`, which can merge items JSON tells apart (`a/b` and
// `a//b` as paths): its bounds are the schema's `minItems`/`maxItems` on the array as sent, which
// the validator checks first (a set is never read on the typed path alone).
impl<T> Measured for std::collections::BTreeSet<T> {
    fn measure(&self) -> Option<Measure> {
        None
    }
}

impl<T, S> Measured for std::collections::HashSet<T, S> {
    fn measure(&self) -> Option<Measure> {
        None
    }
}

impl<T: Measured> Measured for Option<T> {
    fn measure(&self) -> Option<Measure> {
        self.as_ref().and_then(Measured::measure)
    }
}

macro_rules! bounded_int {
    ($($ty:ty),*) => {$(
        impl Bounded for $ty {
            fn number(&self) -> Option<Number> {
                // Every integer up to 64 bits fits; a `u128` past `i128` compares as a float.
                #[allow(clippy::cast_precision_loss, clippy::cast_lossless)]
                Some(i128::try_from(*self).map_or(Number::Float(*self as f64), Number::Int))
            }
        }
    )*};
}

bounded_int!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);

impl Bounded for f32 {
    fn number(&self) -> Option<Number> {
        Some(Number::Float(f64::from(*self)))
    }
}

impl Bounded for f64 {
    fn number(&self) -> Option<Number> {
        Some(Number::Float(*self))
    }
}

impl<T: Bounded + ?Sized> Bounded for Box<T> {
    fn number(&self) -> Option<Number> {
        (**self).number()
    }
}

fn compare(value: Number, bound: Number) -> Option<std::cmp::Ordering> {
    #[allow(clippy::cast_precision_loss)] // only for an integer against a fractional bound
    match (value, bound) {
        (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
        (Number::Int(a), Number::Float(b)) => (a as f64).partial_cmp(&b),
        (Number::Float(a), Number::Int(b)) => a.partial_cmp(&(b as f64)),
        (Number::Float(a), Number::Float(b)) => a.partial_cmp(&b),
    }
}

/// A JSON number as a `Number` to compare; `None` for anything else.
fn number_of(value: &Value) -> Option<Number> {
    value
        .as_i64()
        .map(|n| Number::Int(n.into()))
        .or_else(|| value.as_u64().map(|n| Number::Int(n.into())))
        .or_else(|| value.as_f64().map(Number::Float))
}

/// A length as a number to compare with a bound.
fn length(length: usize) -> Number {
    i128::try_from(length).map_or(Number::Float(f64::INFINITY), Number::Int)
}

/// Whether `value` stands to `bound` as `holds` accepts; true when the bound does not apply (no
/// value, or a bound that is no number), false when the two do not compare (NaN). A length
/// compares as the schema's whole-number keywords, which cannot be negative: a negative bound
/// acts as 0 (for a `min` that changes nothing, a length never being negative).
fn within<T: Measured + ?Sized, B: Bounded>(
    value: &T,
    bound: &B,
    holds: fn(std::cmp::Ordering) -> bool,
) -> bool {
    let (Some(measure), Some(bound)) = (value.measure(), bound.number()) else {
        return true;
    };
    let (value, bound) = match measure {
        Measure::Number(number) => (number, bound),
        Measure::Length(count) => {
            let bound = match bound {
                Number::Int(b) => Number::Int(b.max(0)),
                // NaN stays NaN (and compares with nothing), as for a number.
                Number::Float(b) if b < 0.0 => Number::Float(0.0),
                float @ Number::Float(_) => float,
            };
            (length(count), bound)
        }
    };
    compare(value, bound).is_some_and(holds)
}

/// `value >= minimum`, or the bound does not apply.
pub fn at_least<T: Measured + ?Sized, B: Bounded>(value: &T, minimum: &B) -> bool {
    within(value, minimum, std::cmp::Ordering::is_ge)
}

/// `value <= maximum`, or the bound does not apply.
pub fn at_most<T: Measured + ?Sized, B: Bounded>(value: &T, maximum: &B) -> bool {
    within(value, maximum, std::cmp::Ordering::is_le)
}

/// The error of a value outside its `#[arg]` bounds (the runtime explains it with the validator).
pub fn out_of_bounds(property: &str) -> ToolError {
    ToolError::new(
        crate::error::ErrorCode::InputInvalid,
        format!("`{property}` is out of its bounds"),
    )
    .with_location(format!("/{property}"), "bounds")
}

/// The registry-level fields of a `#[unified_tool]`; `None` keeps the default.
pub struct UnifiedFields {
    pub id: Option<&'static str>,
    pub display_name: Option<&'static str>,
    pub category: Option<&'static str>,
    pub schema_key: Option<&'static str>,
    pub safety_tier: Option<SafetyTier>,
}

pub fn unified(definition: ToolDefinition, fields: &UnifiedFields) -> UnifiedToolDefinition {
    let mut tool = UnifiedToolDefinition::from(definition);
    if let Some(id) = fields.id {
        tool = tool.with_id(id);
    }
    if let Some(display_name) = fields.display_name {
        tool = tool.with_display_name(display_name);
    }
    if let Some(category) = fields.category {
        tool = tool.with_category(category);
    }
    if let Some(schema_key) = fields.schema_key {
        tool = tool.with_schema_key(schema_key);
    }
    if let Some(tier) = fields.safety_tier {
        tool = tool.with_safety_tier(tier);
    }
    tool
}

/// A model-facing argument type. Implemented for every `JsonSchema` type; the bound is spelled
/// as a trait of ours so the error names the fix.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it has no JSON Schema",
    label = "this type does not implement `JsonSchema`",
    note = "derive it next to `Deserialize`: `#[derive(Deserialize, JsonSchema)]`; through pleach's re-exports (`pleach_core::serde`, `pleach_core::schemars`) add `#[serde(crate = \"pleach_core::serde\")]` and `#[schemars(crate = \"pleach_core::schemars\")]` too"
)]
pub trait ToolArgument: JsonSchema {
    fn argument_schema(generator: &mut SchemaGenerator) -> Value;
}

impl<T: JsonSchema + ?Sized> ToolArgument for T {
    fn argument_schema(generator: &mut SchemaGenerator) -> Value {
        generator.subschema_for::<T>().to_value()
    }
}

/// A tool's output type: anything `Serialize`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's output: it does not implement `Serialize`",
    label = "the tool returns this type, which cannot be written as JSON",
    note = "derive it: `#[derive(Serialize)]` (through pleach's re-export `pleach_core::serde::Serialize`, add `#[serde(crate = \"pleach_core::serde\")]` too), or return a type that is already `Serialize`"
)]
pub trait ToolOutput {
    fn to_output(&self) -> Result<Value, ToolError>;
}

impl<T: Serialize + ?Sized> ToolOutput for T {
    fn to_output(&self) -> Result<Value, ToolError> {
        schema::output_to_value(self)
    }
}

/// The result of a tool that returns `T`.
pub fn output<T: ToolOutput + ?Sized>(value: &T) -> Result<Value, ToolError> {
    value.to_output()
}

// A return type the macro did not read as a `Result`, by autoref specialization:
// `(&&PlainProbe::<T>::new()).plain_output(&value)` is `output(&value)`, unless `T` is a `Result`
// after all (behind an alias of another name), which is a compile error: serialized, its `Err`
// would reach the model as a successful `{"Err": …}`.

pub struct PlainProbe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> PlainProbe<T> {
    pub const fn new() -> Self {
        PlainProbe(PhantomData)
    }
}

impl<T: ?Sized> Default for PlainProbe<T> {
    fn default() -> Self {
        PlainProbe::new()
    }
}

/// Never implemented: the bound that reports a `Result` return type the macro could not see.
#[diagnostic::on_unimplemented(
    message = "this tool returns `{Self}` behind an alias the macro cannot read as a `Result`; write `Result<…, …>` in the signature",
    label = "a `Result` under another name",
    note = "the macro fails the call on `Err` when the return type is spelled `Result<T, E>` or is an alias named `Result` (`io::Result<T>`, `anyhow::Result<T>`); under another name the `Err` would be sent to the model as a successful result"
)]
pub trait ResultSpelledOut {}

pub trait PlainOutputResult<T, E> {
    fn plain_output(&self, value: &Result<T, E>) -> Result<Value, ToolError>
    where
        Result<T, E>: ResultSpelledOut;
}

impl<T, E> PlainOutputResult<T, E> for &PlainProbe<Result<T, E>> {
    fn plain_output(&self, _: &Result<T, E>) -> Result<Value, ToolError>
    where
        Result<T, E>: ResultSpelledOut,
    {
        Err(lost())
    }
}

pub trait PlainOutputOther<T: ?Sized> {
    fn plain_output(&self, value: &T) -> Result<Value, ToolError>
    where
        T: ToolOutput;
}

impl<T: ?Sized> PlainOutputOther<T> for PlainProbe<T> {
    fn plain_output(&self, value: &T) -> Result<Value, ToolError>
    where
        T: ToolOutput,
    {
        value.to_output()
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

/// Reads the arguments text into the tool's input.
pub fn parse_input<T: DeserializeOwned>(arguments: &str) -> Result<T, ToolError> {
    schema::deserialize_input(arguments)
}

/// The context a `#[tool]` fn that takes one receives (always provided for it by the runtime).
/// Taken only once the arguments were read: a refusal leaves it for another reading.
pub fn context(ctx: &mut Option<ToolContext>) -> ToolContext {
    ctx.take().unwrap_or_else(ToolContext::detached)
}

/// Boxes a tool's future; the `Send` bound is spelled here so a non-`Send` tool is reported on
/// its name (generated code calls this with the fn's span).
pub fn boxed<F>(future: F) -> Started
where
    F: std::future::Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    Started::Running(Box::pin(future))
}

/// Runs a tool whose body cannot suspend (the macro found no `.await` in it, and no macro that
/// could hide one) to completion on the caller's stack: one poll, no allocation. Same bounds as
/// [`boxed`], so a tool compiles (or not) the same whichever way it is run.
pub fn run_now<F>(future: F) -> Started
where
    F: std::future::Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(outcome) => Started::Ready(outcome),
        // Unreachable for a body with no suspension point; should a macro the scan trusted hide
        // an `.await` after all, the call fails cleanly rather than hang.
        std::task::Poll::Pending => Started::Ready(Err(crate::tool::not_finished_in_place())),
    }
}

// Output schema, by autoref specialization: `(&&OutputProbe::<T>::new()).output_schema()` is the
// derived schema when `T: JsonSchema`, and none otherwise.

pub struct OutputProbe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> OutputProbe<T> {
    pub const fn new() -> Self {
        OutputProbe(PhantomData)
    }
}

impl<T: ?Sized> Default for OutputProbe<T> {
    fn default() -> Self {
        OutputProbe::new()
    }
}

pub trait OutputSchemaDerived {
    fn output_schema(&self) -> Option<Value>;
}

impl<T: JsonSchema + ?Sized> OutputSchemaDerived for &OutputProbe<T> {
    fn output_schema(&self) -> Option<Value> {
        schema::output_schema_for::<T>()
    }
}

pub trait OutputSchemaNone {
    fn output_schema(&self) -> Option<Value>;
}

impl<T: ?Sized> OutputSchemaNone for OutputProbe<T> {
    fn output_schema(&self) -> Option<Value> {
        None
    }
}

// Error conversion, by autoref specialization on the concrete error type a tool returns:
// `(&&&&&ErrorProbe::new(e)).tool_error()` prefers `Into<ToolError>` (a `ToolError`, a user's own
// `From` impl), then `std::error::Error` (message + source chain), then `Display`, then `Debug`.

pub struct ErrorProbe<E>(Cell<Option<E>>);

impl<E> ErrorProbe<E> {
    pub fn new(error: E) -> Self {
        ErrorProbe(Cell::new(Some(error)))
    }

    fn take(&self) -> Option<E> {
        self.0.take()
    }
}

fn lost() -> ToolError {
    ToolError::failed("the tool failed")
}

/// What a tool's error type must offer; reached only when it offers none of it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error type: it implements neither `Into<ToolError>`, `std::error::Error`, `Display` nor `Debug`",
    label = "the tool returns `Err` of this type",
    note = "derive `Debug` on it, implement `Display` (the model reads that text), or implement `From<{Self}> for pleach_core::ToolError`"
)]
pub trait ToolErrorSource {}

impl<E: Debug> ToolErrorSource for E {}

pub trait ErrorViaInto {
    fn tool_error(&self) -> ToolError;
}

impl<E: Into<ToolError>> ErrorViaInto for &&&&ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take().map_or_else(lost, Into::into)
    }
}

pub trait ErrorViaStdError {
    fn tool_error(&self) -> ToolError;
}

impl<E: std::error::Error + 'static> ErrorViaStdError for &&&ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take().map_or_else(lost, |e| ToolError::from_error(&e))
    }
}

pub trait ErrorViaDisplay {
    fn tool_error(&self) -> ToolError;
}

impl<E: Display> ErrorViaDisplay for &&ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take()
            .map_or_else(lost, |e| ToolError::failed(e.to_string()))
    }
}

pub trait ErrorViaDebug {
    fn tool_error(&self) -> ToolError;
}

impl<E: Debug> ErrorViaDebug for &ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take()
            .map_or_else(lost, |e| ToolError::failed(format!("{e:?}")))
    }
}

pub trait ErrorViaNothing<E> {
    fn tool_error(&self) -> ToolError
    where
        E: ToolErrorSource;
}

impl<E> ErrorViaNothing<E> for ErrorProbe<E> {
    // Chosen only when every level above failed; the method's bound then reports the error with
    // `ToolErrorSource`'s message instead of "no method named `tool_error`".
    fn tool_error(&self) -> ToolError
    where
        E: ToolErrorSource,
    {
        lost()
    }
}
