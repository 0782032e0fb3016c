//! `#[arg(min/max)]` checked on the typed value: numbers by value, strings and lists by length.

use serde_json::Value;

use crate::error::ToolError;

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

pub(super) fn compare(value: Number, bound: Number) -> Option<std::cmp::Ordering> {
    #[allow(clippy::cast_precision_loss)] // only for an integer against a fractional bound
    match (value, bound) {
        (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
        (Number::Int(a), Number::Float(b)) => (a as f64).partial_cmp(&b),
        (Number::Float(a), Number::Int(b)) => a.partial_cmp(&(b as f64)),
        (Number::Float(a), Number::Float(b)) => a.partial_cmp(&b),
    }
}

/// A JSON number as a `Number` to compare; `None` for anything else.
pub(super) fn number_of(value: &Value) -> Option<Number> {
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
