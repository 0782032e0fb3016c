//! Integer parameters read leniently: `2.0` is an integer, as JSON Schema's `integer` says.

use std::marker::PhantomData;

use serde::{Deserialize, Deserializer};

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
