//! The `unit_convert` tool: a value from one unit to another of the same dimension.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_tools::unit_convert::unit_convert;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let out = unit_convert::definition()
//!     .call(r#"{"value": 100, "from": "degrees Celsius", "to": "F"}"#, ToolContext::new("call_1"))
//!     .await
//!     .unwrap();
//! assert_eq!(
//!     out,
//!     serde_json::json!({"value": 212.0, "from": "°C", "to": "°F", "dimension": "temperature"})
//! );
//!
//! let err = unit_convert::definition()
//!     .call(r#"{"value": 1, "from": "km", "to": "kg"}"#, ToolContext::new("call_2"))
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert!(err.message().starts_with("cannot convert `km` (length) to `kg` (mass)"));
//! # });
//! ```
//!
//! Every unit is one row of one table: a canonical symbol, a name, other spellings, its dimension,
//! and how many of the dimension's base unit it is (plus an offset for the temperature scales).
//! Converting is the same two lines for every dimension.

use std::fmt;

use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{ErrorCode, ToolError, tool};

use crate::number::{round_significant, show};
use crate::suggest::{close_matches, one_of};

/// The significant digits of a result: more than conversions are quoted to, few enough to drop
/// floating-point noise (100 °C is 212 °F, not 212.00000000000006).
const SIGNIFICANT_DIGITS: usize = 12;

/// The longest unit accepted, in bytes: well over any spelling in the table (a test checks), and a
/// bound on the "did you mean" search, whose cost grows with the text.
const MAX_UNIT_BYTES: usize = 64;

/// What a unit measures.
///
/// ```
/// use pleach_tools::unit_convert::Dimension;
/// assert_eq!(Dimension::DataSize.as_str(), "data_size");
/// assert_eq!(Dimension::Length.to_string(), "length");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "snake_case")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(crate = "pleach_core::schemars", description = "What a unit measures.")]
#[non_exhaustive]
pub enum Dimension {
    /// Base unit: metre.
    Length,
    /// Base unit: kilogram.
    Mass,
    /// Base unit: cubic metre.
    Volume,
    /// Base unit: square metre.
    Area,
    /// Base unit: kelvin.
    Temperature,
    /// Base unit: second.
    Time,
    /// Base unit: byte.
    DataSize,
    /// Base unit: metre per second.
    Speed,
    /// Base unit: pascal.
    Pressure,
    /// Base unit: joule.
    Energy,
}

impl Dimension {
    /// Every dimension, in the order the tool's description lists them.
    const ALL: [Dimension; 10] = [
        Dimension::Length,
        Dimension::Mass,
        Dimension::Volume,
        Dimension::Area,
        Dimension::Temperature,
        Dimension::Time,
        Dimension::DataSize,
        Dimension::Speed,
        Dimension::Pressure,
        Dimension::Energy,
    ];

    /// The name, as in the tool's output.
    ///
    /// ```
    /// assert_eq!(pleach_tools::unit_convert::Dimension::Speed.as_str(), "speed");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Length => "length",
            Dimension::Mass => "mass",
            Dimension::Volume => "volume",
            Dimension::Area => "area",
            Dimension::Temperature => "temperature",
            Dimension::Time => "time",
            Dimension::DataSize => "data_size",
            Dimension::Speed => "speed",
            Dimension::Pressure => "pressure",
            Dimension::Energy => "energy",
        }
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of `unit_convert`, e.g.
/// `{"value": 3.10685596119, "from": "km", "to": "mi", "dimension": "length"}` for 5 km in miles.
///
/// ```
/// use pleach_tools::unit_convert::{Dimension, unit_convert};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let out = unit_convert(1.0, "gibibyte".to_owned(), "MB".to_owned()).await.unwrap();
/// assert_eq!(out.value, 1073.741824);
/// assert_eq!((out.from, out.to), ("GiB", "MB")); // canonical symbols, whatever was written
/// assert_eq!(out.dimension, Dimension::DataSize);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `unit_convert`, e.g.\n`{\"value\": 3.10685596119, \"from\": \"km\", \"to\": \"mi\", \"dimension\": \"length\"}` for 5 km in miles."
)]
#[non_exhaustive]
pub struct UnitConversion {
    /// The converted value: a finite number, rounded to 12 significant digits.
    pub value: f64,
    /// The canonical symbol of the unit converted from.
    pub from: &'static str,
    /// The canonical symbol of the unit converted to.
    pub to: &'static str,
    /// What both units measure.
    pub dimension: Dimension,
}

/// Converts a value from one unit to another of the same dimension; for example value 5 from
/// "km" to "mi" gives `{"value": 3.10685596119, "from": "km", "to": "mi", "dimension": "length"}`.
///
/// Units by dimension (names and plurals work too: "kilometers", "pounds", "degrees Celsius"):
/// - length: nm, µm, mm, cm, m, km, in, ft, yd, mi, nmi, au, ly
/// - mass: µg, mg, g, kg, t, oz, lb, st, ton, long ton
/// - volume: mL, cL, dL, L, m³, cm³, in³, ft³, tsp, tbsp, fl oz, cup, pt, qt, gal, imp pt, imp gal, bbl
/// - area: mm², cm², m², ha, km², in², ft², yd², ac, mi²
/// - temperature: K, °C, °F
/// - time: ns, µs, ms, s, min, h, d, wk, mo, yr
/// - data_size: bit, kbit, Mbit, Gbit, Tbit, B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB
/// - speed: m/s, km/h, mph, ft/s, kn
/// - pressure: Pa, hPa, kPa, MPa, bar, mbar, atm, psi, mmHg, inHg, Torr
/// - energy: J, kJ, MJ, cal, kcal, Wh, kWh, eV, BTU
///
/// Case is ignored unless it changes the unit (`Cal` is kcal). `m2`, `m^2` and `sq m` work for m²
/// (likewise cubes). Temperatures are readings, converted with their offsets, not differences.
/// kB, MB, GB… are decimal (1000) and KiB, MiB, GiB… binary (1024); bits are written bit, kbit,
/// Mbit. Volumes are US customary unless imperial (imp gal); ton is the US short ton, t the metric
/// tonne; yr is 365.2425 days and mo a twelfth of it. The result is rounded to 12 significant
/// digits.
#[expect(
    clippy::doc_markdown,
    reason = "the doc comment is the model's description: unit symbols, not code"
)]
#[tool]
pub async fn unit_convert(
    #[arg(description = "The number to convert, e.g. `5`")] value: f64,
    #[arg(description = "The unit of `value`: a symbol or a name, e.g. `km`, `kilometers`, `°F`")]
    from: String,
    #[arg(description = "The unit to convert to, of the same dimension as `from`, e.g. `mi`")]
    to: String,
) -> Result<UnitConversion, ToolError> {
    convert(value, &from, &to)
}

/// One unit: `value` in it is `(value + offset) * factor` of its dimension's base unit.
struct Unit {
    /// The canonical symbol: what the output names and the description lists.
    symbol: &'static str,
    name: &'static str,
    /// Other spellings. Plurals ending in `s` or `es` are found without being listed.
    aliases: &'static [&'static str],
    dimension: Dimension,
    factor: f64,
    /// Added before scaling; only the temperature scales have one.
    offset: f64,
}

impl Unit {
    const fn with_offset(self, offset: f64) -> Unit {
        Unit { offset, ..self }
    }

    fn spellings(&self) -> impl Iterator<Item = &'static str> {
        [self.symbol, self.name]
            .into_iter()
            .chain(self.aliases.iter().copied())
    }
}

const fn unit(
    symbol: &'static str,
    name: &'static str,
    dimension: Dimension,
    factor: f64,
    aliases: &'static [&'static str],
) -> Unit {
    Unit {
        symbol,
        name,
        aliases,
        dimension,
        factor,
        offset: 0.0,
    }
}

use Dimension as D;

/// Inches and US gallons by their exact definitions (NIST SP 811); the customary volumes are
/// fractions of the gallon.
const INCH: f64 = 0.0254;
const US_GALLON: f64 = 3.785_411_784e-3;
const IMPERIAL_GALLON: f64 = 4.546_09e-3;
/// The Gregorian year: 365.2425 days.
const YEAR: f64 = 31_556_952.0;

/// The units: canonical symbol, name, dimension, base units per unit, other spellings. The tool's
/// description lists the symbols (a test keeps the two in step, and another that no spelling
/// names two units).
#[rustfmt::skip]
static UNITS: &[Unit] = &[
    unit("nm",       "nanometer",             D::Length,      1e-9,                     &["nanometre"]),
    unit("µm",       "micrometer",            D::Length,      1e-6,                     &["μm", "um", "micrometre", "micron"]),
    unit("mm",       "millimeter",            D::Length,      1e-3,                     &["millimetre"]),
    unit("cm",       "centimeter",            D::Length,      1e-2,                     &["centimetre"]),
    unit("m",        "meter",                 D::Length,      1.0,                      &["metre"]),
    unit("km",       "kilometer",             D::Length,      1e3,                      &["kilometre"]),
    unit("in",       "inch",                  D::Length,      INCH,                     &["″"]),
    unit("ft",       "foot",                  D::Length,      12.0 * INCH,              &["feet", "′"]),
    unit("yd",       "yard",                  D::Length,      36.0 * INCH,              &[]),
    unit("mi",       "mile",                  D::Length,      1_609.344,                &[]),
    unit("nmi",      "nautical mile",         D::Length,      1_852.0,                  &[]),
    unit("au",       "astronomical unit",     D::Length,      149_597_870_700.0,        &[]),
    unit("ly",       "light-year",            D::Length,      9_460_730_472_580_800.0,  &["light year"]),

    unit("µg",       "microgram",             D::Mass,        1e-9,                     &["μg", "ug", "mcg"]),
    unit("mg",       "milligram",             D::Mass,        1e-6,                     &[]),
    unit("g",        "gram",                  D::Mass,        1e-3,                     &["gramme"]),
    unit("kg",       "kilogram",              D::Mass,        1.0,                      &["kilo", "kilogramme"]),
    unit("t",        "tonne",                 D::Mass,        1e3,                      &["metric ton"]),
    unit("oz",       "ounce",                 D::Mass,        0.028_349_523_125,        &[]),
    unit("lb",       "pound",                 D::Mass,        0.453_592_37,             &["lbm"]),
    unit("st",       "stone",                 D::Mass,        6.350_293_18,             &[]),
    unit("ton",      "short ton",             D::Mass,        907.184_74,               &["US ton"]),
    unit("long ton", "imperial ton",          D::Mass,        1_016.046_908_8,          &["UK ton"]),

    unit("mL",       "milliliter",            D::Volume,      1e-6,                     &["ml", "millilitre"]),
    unit("cL",       "centiliter",            D::Volume,      1e-5,                     &["cl", "centilitre"]),
    unit("dL",       "deciliter",             D::Volume,      1e-4,                     &["dl", "decilitre"]),
    unit("L",        "liter",                 D::Volume,      1e-3,                     &["l", "litre"]),
    unit("m³",       "cubic meter",           D::Volume,      1.0,                      &["m3", "m^3", "cubic metre"]),
    unit("cm³",      "cubic centimeter",      D::Volume,      1e-6,                     &["cm3", "cm^3", "cc", "cubic centimetre"]),
    unit("in³",      "cubic inch",            D::Volume,      INCH * INCH * INCH,       &["in3", "in^3", "cu in"]),
    unit("ft³",      "cubic foot",            D::Volume,      1_728.0 * INCH * INCH * INCH, &["ft3", "ft^3", "cu ft", "cubic feet"]),
    unit("tsp",      "teaspoon",              D::Volume,      US_GALLON / 768.0,        &[]),
    unit("tbsp",     "tablespoon",            D::Volume,      US_GALLON / 256.0,        &[]),
    unit("fl oz",    "fluid ounce",           D::Volume,      US_GALLON / 128.0,        &["floz", "US fl oz"]),
    unit("cup",      "cup",                   D::Volume,      US_GALLON / 16.0,         &["US cup"]),
    unit("pt",       "pint",                  D::Volume,      US_GALLON / 8.0,          &["US pint"]),
    unit("qt",       "quart",                 D::Volume,      US_GALLON / 4.0,          &["US quart"]),
    unit("gal",      "gallon",                D::Volume,      US_GALLON,                &["US gallon"]),
    unit("imp pt",   "imperial pint",         D::Volume,      IMPERIAL_GALLON / 8.0,    &["UK pint"]),
    unit("imp gal",  "imperial gallon",       D::Volume,      IMPERIAL_GALLON,          &["UK gallon"]),
    unit("bbl",      "barrel",                D::Volume,      42.0 * US_GALLON,         &["oil barrel"]),

    unit("mm²",      "square millimeter",     D::Area,        1e-6,                     &["mm2", "mm^2", "sq mm", "square millimetre"]),
    unit("cm²",      "square centimeter",     D::Area,        1e-4,                     &["cm2", "cm^2", "sq cm", "square centimetre"]),
    unit("m²",       "square meter",          D::Area,        1.0,                      &["m2", "m^2", "sq m", "sqm", "square metre"]),
    unit("ha",       "hectare",               D::Area,        1e4,                      &[]),
    unit("km²",      "square kilometer",      D::Area,        1e6,                      &["km2", "km^2", "sq km", "square kilometre"]),
    unit("in²",      "square inch",           D::Area,        INCH * INCH,              &["in2", "in^2", "sq in"]),
    unit("ft²",      "square foot",           D::Area,        144.0 * INCH * INCH,      &["ft2", "ft^2", "sq ft", "sqft", "square feet"]),
    unit("yd²",      "square yard",           D::Area,        1_296.0 * INCH * INCH,    &["yd2", "yd^2", "sq yd"]),
    unit("ac",       "acre",                  D::Area,        4_046.856_422_4,          &[]),
    unit("mi²",      "square mile",           D::Area,        1_609.344 * 1_609.344,    &["mi2", "mi^2", "sq mi"]),

    unit("K",        "kelvin",                D::Temperature, 1.0,                      &[]),
    unit("°C",       "celsius",               D::Temperature, 1.0,                      &["C", "℃", "degC", "deg C", "centigrade", "degree celsius", "degrees celsius"])
        .with_offset(273.15),
    unit("°F",       "fahrenheit",            D::Temperature, 5.0 / 9.0,                &["F", "℉", "degF", "deg F", "degree fahrenheit", "degrees fahrenheit"])
        .with_offset(459.67),

    unit("ns",       "nanosecond",            D::Time,        1e-9,                     &[]),
    unit("µs",       "microsecond",           D::Time,        1e-6,                     &["μs", "us"]),
    unit("ms",       "millisecond",           D::Time,        1e-3,                     &[]),
    unit("s",        "second",                D::Time,        1.0,                      &["sec"]),
    unit("min",      "minute",                D::Time,        60.0,                     &[]),
    unit("h",        "hour",                  D::Time,        3_600.0,                  &["hr"]),
    unit("d",        "day",                   D::Time,        86_400.0,                 &[]),
    unit("wk",       "week",                  D::Time,        604_800.0,                &[]),
    unit("mo",       "month",                 D::Time,        YEAR / 12.0,              &[]),
    unit("yr",       "year",                  D::Time,        YEAR,                     &[]),

    unit("bit",      "bit",                   D::DataSize,    0.125,                    &[]),
    unit("kbit",     "kilobit",               D::DataSize,    125.0,                    &["Kbit"]),
    unit("Mbit",     "megabit",               D::DataSize,    125e3,                    &[]),
    unit("Gbit",     "gigabit",               D::DataSize,    125e6,                    &[]),
    unit("Tbit",     "terabit",               D::DataSize,    125e9,                    &[]),
    unit("B",        "byte",                  D::DataSize,    1.0,                      &[]),
    unit("kB",       "kilobyte",              D::DataSize,    1e3,                      &["KB"]),
    unit("MB",       "megabyte",              D::DataSize,    1e6,                      &[]),
    unit("GB",       "gigabyte",              D::DataSize,    1e9,                      &[]),
    unit("TB",       "terabyte",              D::DataSize,    1e12,                     &[]),
    unit("PB",       "petabyte",              D::DataSize,    1e15,                     &[]),
    unit("KiB",      "kibibyte",              D::DataSize,    1_024.0,                  &[]),
    unit("MiB",      "mebibyte",              D::DataSize,    1_048_576.0,              &[]),
    unit("GiB",      "gibibyte",              D::DataSize,    1_073_741_824.0,          &[]),
    unit("TiB",      "tebibyte",              D::DataSize,    1_099_511_627_776.0,      &[]),
    unit("PiB",      "pebibyte",              D::DataSize,    1_125_899_906_842_624.0,  &[]),

    unit("m/s",      "meter per second",      D::Speed,       1.0,                      &["m/sec", "meters per second", "metre per second", "metres per second"]),
    unit("km/h",     "kilometer per hour",    D::Speed,       1e3 / 3_600.0,            &["kph", "kmh", "kmph", "km/hr", "kilometers per hour", "kilometre per hour", "kilometres per hour"]),
    unit("mph",      "mile per hour",         D::Speed,       1_609.344 / 3_600.0,      &["mi/h", "miles per hour"]),
    unit("ft/s",     "foot per second",       D::Speed,       12.0 * INCH,              &["fps", "ft/sec", "feet per second"]),
    unit("kn",       "knot",                  D::Speed,       1_852.0 / 3_600.0,        &["kt"]),

    unit("Pa",       "pascal",                D::Pressure,    1.0,                      &[]),
    unit("hPa",      "hectopascal",           D::Pressure,    1e2,                      &[]),
    unit("kPa",      "kilopascal",            D::Pressure,    1e3,                      &[]),
    unit("MPa",      "megapascal",            D::Pressure,    1e6,                      &[]),
    unit("bar",      "bar",                   D::Pressure,    1e5,                      &[]),
    unit("mbar",     "millibar",              D::Pressure,    1e2,                      &[]),
    unit("atm",      "atmosphere",            D::Pressure,    101_325.0,                &[]),
    unit("psi",      "pound per square inch", D::Pressure,    6_894.757_293_168_361,    &["pounds per square inch"]),
    unit("mmHg",     "millimeter of mercury", D::Pressure,    133.322_387_415,          &["millimetre of mercury", "mm Hg"]),
    unit("inHg",     "inch of mercury",       D::Pressure,    3_386.389,                &["in Hg"]),
    unit("Torr",     "torr",                  D::Pressure,    101_325.0 / 760.0,        &[]),

    unit("J",        "joule",                 D::Energy,      1.0,                      &[]),
    unit("kJ",       "kilojoule",             D::Energy,      1e3,                      &[]),
    unit("MJ",       "megajoule",             D::Energy,      1e6,                      &[]),
    unit("cal",      "calorie",               D::Energy,      4.184,                    &["small calorie"]),
    unit("kcal",     "kilocalorie",           D::Energy,      4_184.0,                  &["Cal", "food calorie"]),
    unit("Wh",       "watt-hour",             D::Energy,      3_600.0,                  &["watt hour"]),
    unit("kWh",      "kilowatt-hour",         D::Energy,      3.6e6,                    &["kilowatt hour"]),
    unit("eV",       "electronvolt",          D::Energy,      1.602_176_634e-19,        &["electron volt"]),
    unit("BTU",      "British thermal unit",  D::Energy,      1_055.055_852_62,         &["Btu"]),
];

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

fn convert(value: f64, from: &str, to: &str) -> Result<UnitConversion, ToolError> {
    // The checks that do not depend on each other report together: a model fixes all at once.
    let finite = if value.is_finite() {
        Ok(())
    } else {
        Err(invalid(format!(
            "`value` must be a finite number, got {value}"
        )))
    };
    let (from_unit, to_unit) = match (finite, find_unit(from, "from"), find_unit(to, "to")) {
        (Ok(()), Ok(from_unit), Ok(to_unit)) => (from_unit, to_unit),
        (finite, from_unit, to_unit) => {
            let mut problems: Vec<ToolError> = [finite.err(), from_unit.err(), to_unit.err()]
                .into_iter()
                .flatten()
                .collect();
            if problems.len() == 1 {
                return Err(problems.remove(0));
            }
            let messages: Vec<&str> = problems.iter().map(ToolError::message).collect();
            return Err(invalid(messages.join("; ")));
        }
    };
    let dimension = from_unit.dimension;
    if to_unit.dimension != dimension {
        return Err(invalid(format!(
            "cannot convert `{}` ({dimension}) to `{}` ({}); `to` must be a unit of {dimension}: \
             {}",
            from_unit.symbol,
            to_unit.symbol,
            to_unit.dimension,
            symbols_of(dimension).join(", ")
        )));
    }
    let shifted = value + from_unit.offset;
    // Only temperatures have an offset, and only temperatures have a floor: absolute zero.
    if dimension == Dimension::Temperature && shifted < 0.0 {
        return Err(invalid(format!(
            "{} {} is below absolute zero ({} {}); pass a temperature reading at or above it",
            show(value),
            from_unit.symbol,
            show(0.0 - from_unit.offset),
            from_unit.symbol
        )));
    }
    // The ratio first, so converting a huge value to a unit of similar size cannot overflow
    // through the base unit.
    let converted = shifted * (from_unit.factor / to_unit.factor) - to_unit.offset;
    if !converted.is_finite() {
        return Err(invalid(format!(
            "{} {} in {} is beyond ±1.8e308, which a result cannot be; convert a smaller value \
             or to a larger unit",
            show(value),
            from_unit.symbol,
            to_unit.symbol
        )));
    }
    Ok(UnitConversion {
        value: round_significant(converted, SIGNIFICANT_DIGITS),
        from: from_unit.symbol,
        to: to_unit.symbol,
        dimension,
    })
}

fn symbols_of(dimension: Dimension) -> Vec<&'static str> {
    UNITS
        .iter()
        .filter(|unit| unit.dimension == dimension)
        .map(|unit| unit.symbol)
        .collect()
}

enum Lookup {
    Found(&'static Unit),
    /// Case-insensitively, the spelling names several units.
    Ambiguous(Vec<&'static Unit>),
    Unknown,
}

/// The unit `text` (the argument named `argument`) spells, or an error a model can act on.
fn find_unit(text: &str, argument: &str) -> Result<&'static Unit, ToolError> {
    // Spacing is free: `sq  ft` is `sq ft` and `km / h` is `km/h`.
    let spelling = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" /", "/")
        .replace("/ ", "/");
    if spelling.is_empty() {
        return Err(invalid(format!(
            "`{argument}` is empty; pass a unit such as `km`, `kg` or `°C`"
        )));
    }
    if spelling.len() > MAX_UNIT_BYTES {
        return Err(invalid(format!(
            "`{argument}` is {} bytes long, over the limit of {MAX_UNIT_BYTES}; pass one unit, \
             as a symbol or a name such as `km` or `kilometers`",
            spelling.len()
        )));
    }
    match lookup(&spelling) {
        Lookup::Found(unit) => Ok(unit),
        Lookup::Ambiguous(units) => {
            let candidates: Vec<String> = units
                .iter()
                .map(|unit| format!("`{}` ({})", unit.symbol, unit.name))
                .collect();
            Err(invalid(format!(
                "`{argument}` unit `{spelling}` could be {}; write it with the exact case",
                one_of(&candidates)
            )))
        }
        Lookup::Unknown => Err(unknown_unit(&spelling, argument)),
    }
}

/// An exact spelling first, then one whose case differs if only one unit has it; each for the
/// text as given and then without a plural ending.
fn lookup(spelling: &str) -> Lookup {
    let singulars = if spelling.chars().count() >= 3 {
        [spelling.strip_suffix('s'), spelling.strip_suffix("es")]
    } else {
        [None, None]
    };
    for form in std::iter::once(spelling).chain(singulars.into_iter().flatten()) {
        if let Some(unit) = UNITS
            .iter()
            .find(|unit| unit.spellings().any(|s| s == form))
        {
            return Lookup::Found(unit);
        }
        let folded = form.to_lowercase();
        let matches: Vec<&'static Unit> = UNITS
            .iter()
            .filter(|unit| unit.spellings().any(|s| s.to_lowercase() == folded))
            .collect();
        match matches.as_slice() {
            [] => {}
            &[unit] => return Lookup::Found(unit),
            _ => return Lookup::Ambiguous(matches),
        }
    }
    Lookup::Unknown
}

fn unknown_unit(spelling: &str, argument: &str) -> ToolError {
    let spellings = UNITS
        .iter()
        .flat_map(|unit| unit.spellings().map(move |s| (s, unit)));
    let mut suggestions: Vec<String> = Vec::new();
    let mut seen: Vec<&Unit> = Vec::new();
    for (close, unit) in close_matches(spelling, spellings) {
        if seen.iter().any(|known| std::ptr::eq(*known, unit)) {
            continue;
        }
        seen.push(unit);
        suggestions.push(if close == unit.symbol {
            format!("`{close}` ({}, {})", unit.name, unit.dimension)
        } else {
            format!("`{close}` ({}, {})", unit.symbol, unit.dimension)
        });
    }
    suggestions.truncate(4);
    let hint = if suggestions.is_empty() {
        let dimensions: Vec<&str> = Dimension::ALL.iter().map(|d| d.as_str()).collect();
        format!(
            "use a symbol or a name such as `km`, `kg`, `°C`, `GiB`, `km/h`, `kPa` or `kWh` \
             (dimensions: {})",
            dimensions.join(", ")
        )
    } else {
        format!("did you mean {}?", one_of(&suggestions))
    };
    invalid(format!("unknown `{argument}` unit `{spelling}`; {hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::ToolContext;
    use serde_json::json;

    #[track_caller]
    fn assert_converts(value: f64, from: &str, to: &str, expected: f64) {
        let out = match convert(value, from, to) {
            Ok(out) => out,
            Err(err) => panic!("{value} {from} -> {to} failed: {}", err.message()),
        };
        let tolerance = 1e-11 * expected.abs().max(1e-300);
        assert!(
            (out.value - expected).abs() <= tolerance,
            "{value} {from} -> {to} gave {}, expected {expected}",
            out.value
        );
    }

    /// The message of the error the conversion must fail with (code 1001, lowercase first).
    #[track_caller]
    fn error(value: f64, from: &str, to: &str) -> String {
        crate::test_support::refusal(convert(value, from, to), &(value, from, to))
    }

    #[track_caller]
    fn assert_error(value: f64, from: &str, to: &str, needle: &str) {
        let message = error(value, from, to);
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }

    #[test]
    fn every_unreadable_argument_is_in_one_error() {
        let message = error(f64::NAN, "kilomter", "mille");
        assert!(
            message.contains("`value` must be a finite number"),
            "{message}"
        );
        assert!(message.contains("kilomter"), "{message}");
        assert!(message.contains("mille"), "{message}");
        let message = error(1.0, "kilomter", "zzzzzz");
        assert!(
            message.contains("kilomter") && message.contains("zzzzzz"),
            "{message}"
        );
    }

    #[test]
    fn length_mass_volume_area() {
        assert_converts(5.0, "km", "mi", 3.106_855_961_19);
        assert_converts(1.0, "mi", "km", 1.609_344);
        assert_converts(12.0, "in", "ft", 1.0);
        assert_converts(1.0, "nmi", "m", 1_852.0);
        assert_converts(1.0, "kg", "lb", 2.204_622_621_85);
        assert_converts(16.0, "oz", "lb", 1.0);
        assert_converts(1.0, "t", "kg", 1_000.0);
        assert_converts(1.0, "gal", "L", 3.785_411_784);
        assert_converts(1.0, "cup", "tbsp", 16.0);
        assert_converts(1.0, "imp gal", "L", 4.546_09);
        assert_converts(1.0, "m³", "L", 1_000.0);
        assert_converts(1.0, "ft²", "in²", 144.0);
        assert_converts(1.0, "ha", "m²", 10_000.0);
        assert_converts(640.0, "ac", "mi²", 1.0);
    }

    #[test]
    fn temperatures_use_offsets() {
        assert_converts(100.0, "C", "F", 212.0);
        assert_converts(-40.0, "°C", "°F", -40.0);
        assert_converts(32.0, "F", "K", 273.15);
        assert_converts(0.0, "K", "°C", -273.15);
        assert_converts(300.0, "K", "K", 300.0);
        assert_converts(-273.15, "°C", "K", 0.0);
        // Rounding drops the binary noise a model would otherwise repeat.
        assert_eq!(
            convert(100.0, "C", "F").map(|o| o.value.to_bits()),
            Ok(212.0_f64.to_bits())
        );
        assert_error(
            -300.0,
            "°C",
            "K",
            "-300 °C is below absolute zero (-273.15 °C)",
        );
        assert_error(-1.0, "K", "°C", "-1 K is below absolute zero (0 K)");
    }

    #[test]
    fn time_data_speed_pressure_energy() {
        assert_converts(1.0, "h", "s", 3_600.0);
        assert_converts(1.0, "yr", "d", 365.2425);
        assert_converts(1.0, "GiB", "MB", 1_073.741_824);
        assert_converts(1_000.0, "MB", "GB", 1.0);
        assert_converts(1.0, "MiB", "KiB", 1_024.0);
        assert_converts(8.0, "bit", "B", 1.0);
        assert_converts(1.0, "Gbit", "MB", 125.0);
        assert_converts(36.0, "km/h", "m/s", 10.0);
        assert_converts(60.0, "mph", "km/h", 96.560_64);
        assert_converts(1.0, "kn", "km/h", 1.852);
        assert_converts(1.0, "atm", "kPa", 101.325);
        assert_converts(1.0, "bar", "psi", 14.503_773_773);
        assert_converts(760.0, "Torr", "atm", 1.0);
        assert_converts(1.0, "kWh", "J", 3.6e6);
        assert_converts(1.0, "kcal", "kJ", 4.184);
    }

    #[test]
    fn names_plurals_case_and_spacing() {
        for (spelling, symbol) in [
            ("kilometers", "km"),
            ("Kilometre", "km"),
            ("KM", "km"),
            ("miles", "mi"),
            ("inches", "in"),
            ("feet", "ft"),
            ("lbs", "lb"),
            ("pounds", "lb"),
            ("degrees Celsius", "°C"),
            ("℃", "°C"),
            ("fahrenheit", "°F"),
            ("sq  ft", "ft²"),
            ("m^2", "m²"),
            ("km / h", "km/h"),
            ("KPH", "km/h"),
            ("mb", "MB"),
            ("kb", "kB"),
            ("KB", "kB"),
            ("gib", "GiB"),
            ("bytes", "B"),
            ("hrs", "h"),
            ("μm", "µm"),
            (" kg ", "kg"),
        ] {
            let Ok(unit) = find_unit(spelling, "from") else {
                panic!("{spelling:?} is not found");
            };
            assert_eq!(unit.symbol, symbol, "{spelling:?}");
        }
    }

    #[test]
    fn exact_case_wins_and_case_alone_cannot_pick() {
        assert_eq!(
            find_unit("Cal", "from").map(|u| u.symbol).ok(),
            Some("kcal")
        );
        assert_eq!(find_unit("cal", "from").map(|u| u.symbol).ok(), Some("cal"));
        assert_error(
            1.0,
            "CAL",
            "J",
            "`from` unit `CAL` could be `cal` (calorie) or `kcal` (kilocalorie); write it with \
             the exact case",
        );
    }

    #[test]
    fn unknown_units_get_suggestions() {
        assert_error(
            1.0,
            "km",
            "kilomter",
            "unknown `to` unit `kilomter`; did you mean `kilometer` (km, length)?",
        );
        assert_error(1.0, "gallns", "L", "did you mean `gallon` (gal, volume)?");
        assert_error(1.0, "kmm", "m", "did you mean");
        assert_error(
            1.0,
            "xyzzy",
            "m",
            "unknown `from` unit `xyzzy`; use a symbol or a name such as `km`",
        );
        assert_error(1.0, "", "m", "`from` is empty");
        assert_error(1.0, "m", "   ", "`to` is empty");
    }

    #[test]
    fn odd_text_is_an_error_not_a_panic() {
        for text in [
            "s", "es", "ß", "🙂", "/", " / ", "İ", "\u{0}", "m/", "/s", "ses", "²",
        ] {
            if let Err(err) = find_unit(text, "from") {
                assert_eq!(err.code(), ErrorCode::InputInvalid, "{text:?}");
            }
        }
        assert_error(
            1.0,
            &"m".repeat(10_000),
            "m",
            "`from` is 10000 bytes long, over the limit of 64",
        );
        assert_converts(1.0, "m", &format!("{}km", " ".repeat(10_000)), 1e-3);
    }

    #[test]
    fn dimensions_must_match() {
        let message = error(1.0, "km", "kg");
        assert!(
            message.starts_with("cannot convert `km` (length) to `kg` (mass); `to` must be a unit of length: nm, µm, mm"),
            "{message}"
        );
        assert_error(1.0, "°C", "J", "(temperature) to `J` (energy)");
    }

    #[test]
    fn values_and_results_must_be_finite() {
        assert_error(
            f64::NAN,
            "m",
            "km",
            "`value` must be a finite number, got NaN",
        );
        assert_error(f64::INFINITY, "m", "km", "got inf");
        assert_error(1e308, "ly", "nm", "1e308 ly in nm is beyond ±1.8e308");
        // The ratio is taken first: a huge value converts between units of similar size.
        assert_converts(1e308, "mi", "mi", 1e308);
        assert_converts(1e308, "nm", "ly", 1e308 * 1e-9 / 9_460_730_472_580_800.0);
    }

    #[test]
    fn the_table_is_consistent() {
        let mut seen = std::collections::HashMap::new();
        for unit in UNITS {
            assert!(
                unit.factor.is_finite() && unit.factor > 0.0,
                "{}",
                unit.symbol
            );
            assert!(unit.offset == 0.0 || unit.dimension == Dimension::Temperature);
            let mut spellings: Vec<&str> = unit.spellings().collect();
            spellings.dedup(); // `cup` is its own name
            for spelling in spellings {
                assert!(spelling.len() <= MAX_UNIT_BYTES / 2, "`{spelling}` is long");
                let previous = seen.insert(spelling, unit.symbol);
                assert!(
                    previous.is_none(),
                    "`{spelling}` names {previous:?} and {}",
                    unit.symbol
                );
                // Every spelling finds its own unit: an exact match beats any other.
                assert!(
                    matches!(lookup(spelling), Lookup::Found(found) if std::ptr::eq(found, unit)),
                    "`{spelling}` does not find {}",
                    unit.symbol
                );
            }
        }
        for dimension in Dimension::ALL {
            assert!(!symbols_of(dimension).is_empty(), "{dimension}");
        }
    }

    #[test]
    fn spellings_differing_only_in_case_are_known() {
        let mut collisions = Vec::new();
        for (i, a) in UNITS.iter().enumerate() {
            for b in &UNITS[i + 1..] {
                for x in a.spellings() {
                    if b.spellings().any(|y| y.to_lowercase() == x.to_lowercase()) {
                        collisions.push((a.symbol, b.symbol));
                    }
                }
            }
        }
        assert_eq!(
            collisions,
            [("cal", "kcal")],
            "each is an ambiguity a model meets"
        );
    }

    #[test]
    fn the_description_lists_every_unit() {
        let description = unit_convert::definition().description().to_owned();
        for dimension in Dimension::ALL {
            let prefix = format!("- {dimension}: ");
            let line = description
                .lines()
                .find_map(|line| line.strip_prefix(&prefix));
            assert_eq!(
                line.map(|line| line.split(", ").collect::<Vec<_>>()),
                Some(symbols_of(dimension)),
                "{dimension}"
            );
        }
    }

    #[tokio::test]
    async fn calls_go_through_the_schema() {
        let tool = unit_convert::definition();
        let call = |args: &'static str| tool.call(args, ToolContext::new("call_1"));

        assert_eq!(
            call(r#"{"value": 1, "from": "GiB", "to": "MB"}"#)
                .await
                .unwrap(),
            json!({"value": 1_073.741_824, "from": "GiB", "to": "MB", "dimension": "data_size"})
        );

        let missing = call(r#"{"value": 1, "to": "m"}"#).await.unwrap_err();
        assert_eq!(missing.code(), ErrorCode::InputInvalid);

        let wrong_type = call(r#"{"value": "5", "from": "km", "to": "m"}"#)
            .await
            .unwrap_err();
        assert_eq!(wrong_type.code(), ErrorCode::InputInvalid);
        assert_eq!(wrong_type.path(), Some("/value"));

        let across = call(r#"{"value": 1, "from": "km", "to": "kg"}"#)
            .await
            .unwrap_err();
        assert_eq!(across.code(), ErrorCode::InputInvalid);
        assert!(
            across.message().contains("(length) to `kg` (mass)"),
            "{}",
            across.message()
        );

        // JSON has no infinity: a literal too large for f64 never reaches the tool.
        let huge = call(r#"{"value": 1e400, "from": "km", "to": "m"}"#)
            .await
            .unwrap_err();
        assert!(!huge.message().is_empty());
    }

    #[tokio::test]
    async fn the_fn_is_still_an_ordinary_fn() {
        let out = unit_convert(5.0, "km".to_owned(), "m".to_owned())
            .await
            .unwrap();
        assert_eq!(out.value.to_bits(), 5_000.0_f64.to_bits());
        assert_eq!(
            (out.from, out.to, out.dimension),
            ("km", "m", Dimension::Length)
        );
    }

    #[test]
    fn the_output_schema_lists_the_dimensions() {
        let tool = unit_convert::definition();
        let schema = tool.output_schema().unwrap().to_string();
        for dimension in Dimension::ALL {
            assert!(
                schema.contains(&format!("\"{dimension}\"")),
                "{dimension} in {schema}"
            );
        }
        assert!(
            !schema.contains("```"),
            "a Rust example leaked into {schema}"
        );
    }
}
