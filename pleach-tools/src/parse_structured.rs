//! The `parse_structured` tool: JSON, YAML, TOML or CSV text in, one JSON value out, within limits
//! on size, nesting, alias expansion and field length.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_tools::parse_structured::parse_structured;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let out = parse_structured::definition()
//!     .call(r#"{"format": "csv", "text": "name,age\nAda,36\n"}"#, ToolContext::new("call_1"))
//!     .await
//!     .unwrap();
//! assert_eq!(out, serde_json::json!({"value": [{"name": "Ada", "age": "36"}]}));
//!
//! let err = parse_structured::definition()
//!     .call(r#"{"format": "json", "text": "{\"a\": 1, \"a\": 2}"}"#, ToolContext::new("call_2"))
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert!(err.message().starts_with("the json has the key `a` twice in one object"));
//! # });
//! ```
//!
//! # Crates
//!
//! `serde_json` (re-exported by `pleach-core`), `toml` and `csv` are the maintained standards. For
//! YAML, `serde_yaml` is deprecated and `serde_yml` is now a shim announcing its own end;
//! `serde_norway` (MIT OR Apache-2.0) is the maintained fork of `serde_yaml`, so it keeps its
//! guards: a limit on alias jumps and on recursion.
//!
//! # Limits
//!
//! Every format is read through one serde visitor that builds the JSON value and enforces the
//! limits as it goes: nesting depth (which also bounds the stack, since the visitor is what
//! recurses), a count of values (which bounds the memory a YAML alias bomb can claim, whatever the
//! parser's own jump limit allows), and unique object keys (JSON and YAML parsers would otherwise
//! keep the last of two, silently).

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::fmt;

use pleach_core::schemars::JsonSchema;
use pleach_core::serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use pleach_core::serde::{Deserialize, Serialize};
use pleach_core::serde_json::{Map, Number, Value};
use pleach_core::{ErrorCode, ToolError, tool};

/// The longest `text` accepted, in bytes (1 MiB).
const MAX_TEXT_BYTES: usize = 1024 * 1024;

/// The deepest nesting of arrays and objects accepted.
const MAX_DEPTH: usize = 64;

/// The most values (scalars, arrays and objects) one document may produce. Without aliases a
/// 1 MiB text cannot come near it; with them it is what stops a few lines standing for billions.
const MAX_VALUES: usize = 1_000_000;

/// The most JSON one document may produce, in bytes (8 MiB, the runtime's default limit on a
/// result): counted as values are built, so a document that expands (YAML aliases, a CSV header
/// repeated in every row) is refused before it takes the memory, not after.
const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

/// The longest single CSV field accepted, in bytes (64 KiB).
const MAX_CSV_FIELD_BYTES: usize = 64 * 1024;

/// The longest key a message quotes, in characters.
const MAX_QUOTED_KEY_CHARS: usize = 64;

/// The text format `parse_structured` reads.
///
/// ```
/// use pleach_tools::parse_structured::{Format, parse_structured};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let format: Format = serde_json::from_str(r#""toml""#).unwrap(); // as a model writes it
/// assert_eq!(format.to_string(), "toml");
/// let out = parse_structured(format, "[server]\nport = 8080\n".to_owned(), true).await.unwrap();
/// assert_eq!(out.value, serde_json::json!({"server": {"port": 8080}}));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "snake_case")]
// Set here so the input schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The text format `parse_structured` reads."
)]
#[non_exhaustive]
pub enum Format {
    /// JSON (RFC 8259).
    Json,
    /// YAML 1.1/1.2, one document.
    Yaml,
    /// TOML 1.0.
    Toml,
    /// Comma-separated values (RFC 4180).
    Csv,
}

impl Format {
    fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Toml => "toml",
            Format::Csv => "csv",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of `parse_structured`, e.g. `{"value": {"a": [1, 2]}}` for the JSON `{"a": [1, 2]}`.
///
/// ```
/// use pleach_tools::parse_structured::{Format, parse_structured};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let out = parse_structured(Format::Yaml, "a: [1, 2]\nb: ~\n".to_owned(), true).await.unwrap();
/// assert_eq!(out.value, json!({"a": [1, 2], "b": null}));
///
/// // Without a header row, CSV rows are arrays of strings.
/// let out = parse_structured(Format::Csv, "Ada,36\n".to_owned(), false).await.unwrap();
/// assert_eq!(out.value, json!([["Ada", "36"]]));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `parse_structured`, e.g. `{\"value\": {\"a\": [1, 2]}}` for the JSON `{\"a\": [1, 2]}`."
)]
#[non_exhaustive]
pub struct ParsedValue {
    /// The document as a JSON value.
    pub value: Value,
}

/// Reads JSON, YAML, TOML or CSV text into a JSON value and returns `{"value": <value>}`; for
/// example format "yaml" with text `a: [1, 2]` gives `{"value": {"a": [1, 2]}}`.
///
/// CSV gives an array with one object per row, keyed by the header row, all values strings
/// (`name,age\nAda,36` gives `[{"name": "Ada", "age": "36"}]`); with `header` false, an array of
/// arrays of strings. TOML dates and times become RFC 3339 strings. Object keys come out sorted.
///
/// Limits: text up to 1 MiB, arrays and objects nested at most 64 deep, at most 1,000,000 values
/// (YAML aliases count each time they repeat), CSV fields up to 64 KiB. A key twice in one object
/// is an error, as is YAML with several documents or a local tag (`!name value`; a `!!` tag is
/// dropped and its value read as written), and numbers JSON cannot hold (infinity, NaN).
#[tool]
pub async fn parse_structured(
    #[arg(description = "The format of `text`: json, yaml, toml or csv")] format: Format,
    #[arg(description = "The document to read, at most 1 MiB")] text: String,
    #[arg(
        description = "CSV only: whether the first row names the columns (rows become objects) or is data (rows become arrays)",
        default = true
    )]
    header: bool,
) -> Result<ParsedValue, ToolError> {
    parse(format, &text, header).map(|value| ParsedValue { value })
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

/// `text` read as `format`, or an error (code 1001) a model can act on.
fn parse(format: Format, text: &str, header: bool) -> Result<Value, ToolError> {
    check_size(format, text)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let limits = Limits::new(format);
    let seed = ValueSeed {
        limits: &limits,
        depth: 0,
    };
    let result = match format {
        Format::Json => {
            let mut deserializer = pleach_core::serde_json::Deserializer::from_str(text);
            seed.deserialize(&mut deserializer)
                .and_then(|value| deserializer.end().map(|()| value))
                .map_err(|err| err.to_string())
        }
        Format::Yaml => seed
            .deserialize(serde_norway::Deserializer::from_str(text))
            .map_err(|err| yaml_reason(&err.to_string())),
        Format::Toml => toml::de::Deserializer::parse(text)
            .and_then(|deserializer| seed.deserialize(deserializer))
            .map_err(|err| toml_reason(text, &err)),
        Format::Csv => return read_csv(text, header),
    };
    result.map_err(|reason| match limits.broken.take() {
        Some(message) => invalid(message),
        None => invalid(format!("the text is not valid {format}: {reason}")),
    })
}

/// The checks on the raw text, before any parsing.
fn check_size(format: Format, text: &str) -> Result<(), ToolError> {
    if text.trim().is_empty() {
        return Err(invalid(format!(
            "`text` is empty; pass the {format} document to read"
        )));
    }
    if text.len() <= MAX_TEXT_BYTES {
        return if format == Format::Yaml {
            check_yaml_brackets(text)
        } else {
            Ok(())
        };
    }
    let message = format!(
        "the text is {} bytes long, over the limit of {MAX_TEXT_BYTES} (1 MiB); pass the part of \
         the data you need",
        text.len()
    );
    // Said here too, or a model that shortens the text would meet the field limit next.
    if format == Format::Csv {
        let longest = longest_csv_run(text);
        if longest > MAX_CSV_FIELD_BYTES {
            return Err(invalid(format!(
                "{message}; one csv field is about {longest} bytes, and a field may be at most \
                 {MAX_CSV_FIELD_BYTES} bytes (64 KiB)"
            )));
        }
    }
    Err(invalid(message))
}

/// The most `[` and `{` a YAML text may leave open at once, counted on the raw text.
const MAX_OPEN_YAML_BRACKETS: usize = 2 * MAX_DEPTH;

/// Refuses YAML text that opens brackets far deeper than the depth limit, before the parser sees
/// it: `serde_norway`'s scanner costs time in proportion to the open flow collections for every
/// token, so 200,000 `{a: ` took two minutes in a release build before the depth limit (which
/// applies as values are built, after the whole text is scanned) could answer. The count ignores
/// quoting, so nothing can hide brackets from it; a text with more than 128 opening brackets
/// left unclosed inside its strings is refused too, which real documents do not have.
fn check_yaml_brackets(text: &str) -> Result<(), ToolError> {
    let mut open = 0_usize;
    for byte in text.bytes() {
        match byte {
            b'[' | b'{' => {
                open += 1;
                if open > MAX_OPEN_YAML_BRACKETS {
                    return Err(invalid(format!(
                        "the yaml opens more than {MAX_OPEN_YAML_BRACKETS} `[` or `{{` without \
                         closing them, so it nests deeper than the limit of {MAX_DEPTH} levels; \
                         flatten it or pass the part you need"
                    )));
                }
            }
            b']' | b'}' => open = open.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The longest run of bytes between commas and line breaks: a field's length, give or take quotes.
fn longest_csv_run(text: &str) -> usize {
    text.split([',', '\n', '\r'])
        .map(str::len)
        .max()
        .unwrap_or(0)
}

/// `serde_norway`'s message, with its alias-jump guard reworded: it is what answers a billion-laughs
/// document whose values stay under the count limit.
fn yaml_reason(reason: &str) -> String {
    if reason.contains("repetition limit exceeded") {
        "its aliases (`*name`) repeat too much (a billion-laughs expansion); expand fewer \
         aliases or write the data out"
            .to_owned()
    } else {
        reason.to_owned()
    }
}

/// toml's message on one line, with the line and column its span starts at.
fn toml_reason(text: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim().replace('\n', "; ");
    match err.span() {
        Some(span) => {
            // toml names neither key of a duplicate; its span covers the second.
            let message = match text.get(span.clone()) {
                Some(key) if message == "duplicate key" => format!("duplicate key `{key}`"),
                _ => message,
            };
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before
                .rsplit_once('\n')
                .map_or(before, |(_, line)| line)
                .chars()
                .count()
                + 1;
            format!("{message} at line {line} column {column}")
        }
        None => message,
    }
}

fn read_csv(text: &str, header: bool) -> Result<Value, ToolError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let not_csv = |err: csv::Error| {
        let reason = err.to_string();
        let reason = reason.strip_prefix("CSV error: ").unwrap_or(&reason);
        invalid(format!("the text is not valid csv: {reason}"))
    };
    let mut records = reader.records();
    let columns: Option<Vec<String>> = if header {
        match records.next() {
            None => return Ok(Value::Array(Vec::new())),
            Some(record) => {
                let record = record.map_err(not_csv)?;
                check_fields(&record, 1)?;
                let mut columns: Vec<String> = Vec::with_capacity(record.len());
                // A set, not a scan of the names so far: a 1 MiB header holds some 200,000
                // names, and comparing each with all before it took minutes.
                let mut seen: HashSet<&str> = HashSet::with_capacity(record.len());
                for name in &record {
                    if !seen.insert(name) {
                        return Err(invalid(format!(
                            "the csv header names the column `{}` twice; rename one, or pass \
                             `header: false` to read rows as arrays",
                            quoted_key(name)
                        )));
                    }
                    columns.push(name.to_owned());
                }
                Some(columns)
            }
        }
    } else {
        None
    };
    let limits = Limits::new(Format::Csv);
    let mut rows = Vec::new();
    for (index, record) in records.enumerate() {
        let record = record.map_err(not_csv)?;
        let row_number = index + 1 + usize::from(header);
        check_fields(&record, row_number)?;
        spend_row(&limits, &record, columns.as_deref())
            .map_err(|_: de::value::Error| invalid(limits.broken.take().unwrap_or_default()))?;
        let row = match &columns {
            Some(columns) => Value::Object(
                columns
                    .iter()
                    .zip(&record)
                    .map(|(name, field)| (name.clone(), Value::String(field.to_owned())))
                    .collect(),
            ),
            None => Value::Array(
                record
                    .iter()
                    .map(|field| Value::String(field.to_owned()))
                    .collect(),
            ),
        };
        rows.push(row);
    }
    Ok(Value::Array(rows))
}

/// Counts a CSV row against the limits before it is built: its cells as values, their text, and
/// with a header the column name each cell is written under.
fn spend_row<E: de::Error>(
    limits: &Limits,
    record: &csv::StringRecord,
    columns: Option<&[String]>,
) -> Result<(), E> {
    limits.count()?;
    for (index, field) in record.iter().enumerate() {
        limits.count()?;
        let name = columns.and_then(|columns| columns.get(index));
        limits.spend(field.len() + 2 + name.map_or(0, |name| name.len() + 3))?;
    }
    Ok(())
}

fn check_fields(record: &csv::StringRecord, row_number: usize) -> Result<(), ToolError> {
    match record
        .iter()
        .position(|field| field.len() > MAX_CSV_FIELD_BYTES)
    {
        Some(column) => Err(invalid(format!(
            "csv field {} of row {row_number} is {} bytes long, over the limit of \
             {MAX_CSV_FIELD_BYTES} (64 KiB) for one field; shorten it or pass it another way",
            column + 1,
            record.get(column).map_or(0, str::len)
        ))),
        None => Ok(()),
    }
}

/// `key` as a message quotes it: cut short if long.
fn quoted_key(key: &str) -> String {
    if key.chars().count() > MAX_QUOTED_KEY_CHARS {
        let start: String = key.chars().take(MAX_QUOTED_KEY_CHARS).collect();
        format!("{start}…")
    } else {
        key.to_owned()
    }
}

/// What one document's reading has used, and the first limit it broke, whose message replaces the
/// parser's (which would wrap it in its own words and positions).
struct Limits {
    format: Format,
    values: Cell<usize>,
    /// About how many bytes of JSON text the values built so far take.
    bytes: Cell<usize>,
    broken: RefCell<Option<String>>,
}

impl Limits {
    fn new(format: Format) -> Limits {
        Limits {
            format,
            values: Cell::new(0),
            bytes: Cell::new(0),
            broken: RefCell::new(None),
        }
    }

    /// Counts `bytes` more of output (a string's text and its quotes, a key, a separator).
    fn spend<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        let spent = self.bytes.get().saturating_add(bytes);
        self.bytes.set(spent);
        if spent <= MAX_OUTPUT_BYTES {
            return Ok(());
        }
        let format = self.format;
        let why = match format {
            Format::Yaml => {
                ": its aliases (`*name`) repeat what they point to, so a few lines can stand \
                 for gigabytes; expand fewer aliases or pass less data"
            }
            Format::Csv => {
                ": every row repeats the header's column names; pass fewer rows, or \
                 `header: false` to read rows as arrays"
            }
            Format::Json | Format::Toml => "; pass less data",
        };
        Err(self.refuse(format!(
            "the {format} makes over {MAX_OUTPUT_BYTES} bytes (8 MiB) of JSON{why}"
        )))
    }

    fn refuse<E: de::Error>(&self, message: String) -> E {
        let err = E::custom(&message);
        self.broken.borrow_mut().get_or_insert(message);
        err
    }

    /// Counts one more value (and a separator's byte of output).
    fn count<E: de::Error>(&self) -> Result<(), E> {
        self.spend(1)?;
        let values = self.values.get() + 1;
        self.values.set(values);
        if values <= MAX_VALUES {
            return Ok(());
        }
        let format = self.format;
        Err(self.refuse(if format == Format::Yaml {
            format!(
                "the yaml expands to over {MAX_VALUES} values: its aliases (`*name`) repeat \
                 what they point to, so a few lines can stand for billions of values; expand \
                 fewer aliases or pass less data"
            )
        } else {
            format!("the {format} has over {MAX_VALUES} values; pass less data")
        }))
    }
}

/// Builds a JSON value from any self-describing deserializer, enforcing the limits.
#[derive(Clone, Copy)]
struct ValueSeed<'l> {
    limits: &'l Limits,
    /// How many arrays and objects enclose the value.
    depth: usize,
}

impl ValueSeed<'_> {
    /// The seed for the values inside an array or object this seed is reading.
    fn inner<E: de::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            let format = self.limits.format;
            return Err(self.limits.refuse(format!(
                "the {format} nests arrays and objects more than {MAX_DEPTH} levels deep; \
                 flatten it or pass the part you need"
            )));
        }
        Ok(ValueSeed {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The key toml uses to pass a date or time through serde as a one-entry map.
const TOML_DATETIME_KEY: &str = "$__toml_private_datetime";

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value JSON can hold")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.limits.count()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.limits.count()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.limits.count()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.limits.count()?;
        if let Some(number) = Number::from_f64(v) {
            return Ok(Value::Number(number));
        }
        let format = self.limits.format;
        Err(self.limits.refuse(format!(
            "the {format} has the number {v}, which JSON cannot hold (it has no infinity or NaN); \
             write it as a string"
        )))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        // Counted before the copy: an alias of a long string costs nothing once over budget.
        self.limits.spend(v.len() + 2)?;
        self.limits.count()?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.limits.spend(v.len() + 2)?;
        self.limits.count()?;
        Ok(Value::String(v))
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Value, E> {
        let format = self.limits.format;
        Err(self.limits.refuse(format!(
            "the {format} has binary data, which JSON cannot hold; encode it as text"
        )))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.limits.count()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.limits.count()?;
        let inner = self.inner()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.limits.count()?;
        let inner = self.inner()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.limits))? {
            self.limits.spend(key.len() + 3)?;
            if object.contains_key(&key) {
                let format = self.limits.format;
                return Err(self.limits.refuse(format!(
                    "the {format} has the key `{}` twice in one object; which value is meant is \
                     ambiguous, so remove or rename one",
                    quoted_key(&key)
                )));
            }
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        // toml hands a date or time over as a map whose only key is its marker; a table that
        // merely has a key of that name among others stays a table, whole.
        let datetime = self.limits.format == Format::Toml
            && object.len() == 1
            && matches!(object.get(TOML_DATETIME_KEY), Some(Value::String(_)));
        if datetime && let Some(text) = object.remove(TOML_DATETIME_KEY) {
            return Ok(text);
        }
        Ok(Value::Object(object))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
        let format = self.limits.format;
        Err(self.limits.refuse(format!(
            "the {format} has a tagged value (such as `!name value`), which JSON cannot hold; \
             remove the tag"
        )))
    }
}

/// Reads an object key: a string, or a number or boolean written as one (YAML allows `1: a`).
#[derive(Clone, Copy)]
struct KeySeed<'l>(&'l Limits);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl KeySeed<'_> {
    fn refuse<E: de::Error>(self) -> E {
        let format = self.0.format;
        self.0.refuse(format!(
            "the {format} has an object key that is not a string, number or boolean; JSON keys \
             are strings, so write the key as one"
        ))
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Err(self.refuse())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.refuse())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.refuse())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::ToolContext;
    use serde_json::json;
    use std::fmt::Write as _;

    #[track_caller]
    fn ok(format: Format, text: &str) -> Value {
        match parse(format, text, true) {
            Ok(value) => value,
            Err(err) => panic!("{format} {text:?} failed: {}", err.message()),
        }
    }

    /// The message of the error the text must fail with (code 1001, lowercase first).
    #[track_caller]
    fn error(format: Format, text: &str) -> String {
        crate::test_support::refusal(parse(format, text, true), &(format, text))
    }

    #[track_caller]
    fn assert_error(format: Format, text: &str, needle: &str) {
        let message = error(format, text);
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }

    #[test]
    fn each_format_reads_the_same_data() {
        let expected = json!({"name": "pleach", "tags": ["a", "b"], "n": 3, "x": 1.5, "ok": true});
        assert_eq!(
            ok(
                Format::Json,
                r#"{"name": "pleach", "tags": ["a", "b"], "n": 3, "x": 1.5, "ok": true}"#
            ),
            expected
        );
        assert_eq!(
            ok(
                Format::Yaml,
                "name: pleach\ntags: [a, b]\nn: 3\nx: 1.5\nok: true\n"
            ),
            expected
        );
        assert_eq!(
            ok(
                Format::Toml,
                "name = \"pleach\"\ntags = [\"a\", \"b\"]\nn = 3\nx = 1.5\nok = true\n"
            ),
            expected
        );
    }

    #[test]
    fn yaml_and_toml_specifics() {
        assert_eq!(
            ok(Format::Yaml, "1: one\ntrue: yes\n"),
            json!({"1": "one", "true": "yes"})
        );
        assert_eq!(
            ok(Format::Yaml, "base: &b {a: 1}\ncopy: *b\n"),
            json!({"base": {"a": 1}, "copy": {"a": 1}})
        );
        assert_eq!(ok(Format::Yaml, "just text"), json!("just text"));
        assert_eq!(
            ok(
                Format::Toml,
                "[server]\nwhen = 1979-05-27T07:32:00Z\nday = 1979-05-27\n"
            ),
            json!({"server": {"when": "1979-05-27T07:32:00Z", "day": "1979-05-27"}})
        );
        assert_eq!(ok(Format::Json, "\u{feff}[null]"), json!([null]));
        // A key spelled like toml's date marker, among others, is an ordinary key.
        assert_eq!(
            ok(
                Format::Toml,
                "[server]\n\"$__toml_private_datetime\" = \"x\"\nport = 8080\n"
            ),
            json!({"server": {"$__toml_private_datetime": "x", "port": 8080}})
        );
    }

    #[test]
    fn output_that_would_pass_8_mib_is_refused_before_it_is_built() {
        // 120 KB of CSV whose two 30,000-byte column names every row repeats: 2.4 GB as JSON.
        let csv = format!(
            "{},{}\n{}",
            "A".repeat(30_000),
            "B".repeat(30_000),
            ",\n".repeat(20_000)
        );
        let started = std::time::Instant::now();
        assert_error(Format::Csv, &csv, "repeats the header's column names");
        // 60 KB of YAML: one long string, 20,000 aliases of it (a few jumps each, so the
        // parser's own jump limit lets it through).
        let yaml = format!(
            "a: &x \"{}\"\nb: [{}]\n",
            "x".repeat(60_000),
            vec!["*x"; 20_000].join(",")
        );
        assert_error(Format::Yaml, &yaml, "aliases (`*name`) repeat");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        // The same CSV read as arrays holds no names: it is small, and read.
        let Ok(Value::Array(rows)) = parse(Format::Csv, &csv, false) else {
            panic!("header: false reads it")
        };
        assert_eq!(rows.len(), 20_001);
    }

    #[test]
    fn csv_rows_become_objects_or_arrays() {
        assert_eq!(
            ok(Format::Csv, "name,age\nAda,36\n\"Hopper, G\",85\n"),
            json!([{"name": "Ada", "age": "36"}, {"name": "Hopper, G", "age": "85"}])
        );
        assert_eq!(ok(Format::Csv, "name,age\n"), json!([]));
        assert_eq!(
            parse(Format::Csv, "a,b\nc,d", false).unwrap(),
            json!([["a", "b"], ["c", "d"]])
        );
    }

    #[test]
    fn a_wide_csv_header_is_checked_in_linear_time() {
        // About 180,000 distinct column names in 1 MiB: a pairwise check is some 10^10
        // comparisons (171 s in a debug build), a set a few hundred milliseconds. The bound only
        // tells the two apart, with room for a slow, busy machine; it measures nothing.
        let mut header = String::new();
        for i in 0..180_000_u32 {
            let _ = write!(header, "{i:x},");
        }
        let header = header.trim_end_matches(',');
        assert!(header.len() <= MAX_TEXT_BYTES);
        let started = std::time::Instant::now();
        assert_eq!(ok(Format::Csv, header), json!([]));
        let elapsed = started.elapsed();
        assert!(elapsed < std::time::Duration::from_mins(1), "{elapsed:?}");
    }

    #[test]
    fn duplicate_keys_are_refused() {
        assert_error(
            Format::Json,
            r#"{"a": {"b": 1, "b": 2}}"#,
            "the json has the key `b` twice in one object; which value is meant is ambiguous",
        );
        assert_error(
            Format::Yaml,
            "a: 1\nb: 2\na: 3\n",
            "the yaml has the key `a` twice in one object",
        );
        assert_error(
            Format::Toml,
            "a = 1\na = 2\n",
            "the text is not valid toml:",
        );
        assert_error(
            Format::Csv,
            "id,name,id\n1,x,2\n",
            "the csv header names the column `id` twice",
        );
        let long_key = format!(r#"{{"{0}": 1, "{0}": 2}}"#, "k".repeat(500));
        let message = error(Format::Json, &long_key);
        assert!(message.len() < 400, "{message}");
    }

    #[test]
    fn malformed_text_says_where() {
        assert_error(
            Format::Json,
            "{\"a\": }",
            "the text is not valid json: expected value at line 1 column 7",
        );
        assert_error(Format::Json, "[1] [2]", "trailing characters");
        assert_error(Format::Yaml, "a: [1, 2\n", "the text is not valid yaml:");
        assert_error(
            Format::Toml,
            "a = \n",
            "the text is not valid toml: string values must be quoted",
        );
        assert_error(Format::Toml, "a = 1\nb = \n", "at line 2 column 5");
        assert_error(Format::Csv, "a,b\n1,2,3\n", "the text is not valid csv: ");
        assert_error(
            Format::Json,
            "  \n",
            "`text` is empty; pass the json document",
        );
    }

    #[test]
    fn values_json_cannot_hold_are_refused() {
        assert_error(
            Format::Yaml,
            "x: .inf\n",
            "the yaml has the number inf, which JSON",
        );
        assert_error(Format::Toml, "x = nan\n", "the toml has the number NaN");
        assert_error(Format::Yaml, "x: !custom 1\n", "tagged value");
        // A `!!` tag (YAML's own, or a language's such as `!!python/object`) is dropped, as the
        // tool's description says: the value is read as written, and nothing is constructed.
        assert_eq!(
            ok(
                Format::Yaml,
                "a: !!binary aGk=\nb: !!python/object:os.system ls\nc: !!str 3\n"
            ),
            json!({ "a": "aGk=", "b": "ls", "c": "3" })
        );
        assert_error(
            Format::Yaml,
            "? [a, b]\n: c\n",
            "an object key that is not a string, number or boolean",
        );
        assert_error(Format::Yaml, "~: x\n", "an object key that is not a string");
        assert_error(Format::Yaml, "a: 1\n---\nb: 2\n", "more than one document");
    }

    #[test]
    fn deep_nesting_is_refused_without_a_stack_overflow() {
        let deep = 100_000;
        let depth_error = "nests arrays and objects more than 64 levels deep";
        let json = format!("{}{}", "[".repeat(deep), "]".repeat(deep));
        assert_error(Format::Json, &json, depth_error);
        assert_error(Format::Yaml, &json, "opens more than 128 `[` or `{`");
        // Deep flow mappings cost the YAML scanner time per open level per token: refused on
        // the raw text, at once.
        let started = std::time::Instant::now();
        assert_error(Format::Yaml, &"{a: ".repeat(200_000), "nests deeper than");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // Between 64 and 128 open: the depth limit answers, as values are built.
        let over = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_error(Format::Yaml, &over, depth_error);
        // Brackets in strings are text: balanced or few, they pass.
        assert_eq!(
            ok(Format::Yaml, "a: \"[[[ {x} ]]]\"\nb: '{'\n"),
            json!({"a": "[[[ {x} ]]]", "b": "{"})
        );
        let toml = format!("a = {}{}", "[".repeat(deep), "]".repeat(deep));
        let message = error(Format::Toml, &toml);
        assert!(
            message.contains(depth_error) || message.contains("not valid toml"),
            "{message}"
        );
        let yaml_blocks: String = (0..100).map(|i| " ".repeat(i) + "k:\n").collect();
        assert_error(Format::Yaml, &yaml_blocks, depth_error);

        let at_limit = format!("{}{}", "[".repeat(64), "]".repeat(64));
        ok(Format::Json, &at_limit);
        let over = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert_error(Format::Json, &over, depth_error);
    }

    #[test]
    fn billion_laughs_is_refused_quickly() {
        let mut yaml = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            let refs = vec![format!("*{previous}"); 9].join(",");
            writeln!(yaml, "{name}: &{name} [{refs}]").unwrap();
        }
        let started = std::time::Instant::now();
        let message = error(Format::Yaml, &yaml);
        assert!(message.contains("aliases (`*name`) repeat"), "{message}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));

        // Few jumps, each a large subtree: the parser's jump limit allows it, the count does not.
        let wide: String = format!(
            "a: &a [{}]\nb: [{}]\n",
            vec!["1"; 20_000].join(","),
            vec!["*a"; 1_000].join(",")
        );
        assert_error(
            Format::Yaml,
            &wide,
            "the yaml expands to over 1000000 values",
        );
    }

    #[test]
    fn size_limits_are_specific() {
        let big = format!("[{}1]", "1,".repeat(MAX_TEXT_BYTES / 2));
        assert_error(
            Format::Json,
            &big,
            "bytes long, over the limit of 1048576 (1 MiB); pass the part",
        );

        let ten_mb_field = format!("a,b\n{},1\n", "x".repeat(10 * 1024 * 1024));
        assert_error(
            Format::Csv,
            &ten_mb_field,
            "over the limit of 1048576 (1 MiB); pass the part of the data you need; one csv field \
             is about 10485760 bytes, and a field may be at most 65536 bytes (64 KiB)",
        );

        let wide_field = format!("a,b\n1,\"{}\"\n", "x".repeat(100_000));
        assert_error(
            Format::Csv,
            &wide_field,
            "csv field 2 of row 2 is 100000 bytes long, over the limit of 65536 (64 KiB)",
        );
        let wide_header = format!("{},b\n1,2\n", "x".repeat(70_000));
        assert_error(Format::Csv, &wide_header, "csv field 1 of row 1");
    }

    /// Random text from the formats' punctuation: any input gives a value or an error.
    #[test]
    fn random_input_never_panics() {
        const PIECES: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            "\"",
            "'",
            "\n",
            " ",
            "  ",
            "-",
            "a",
            "1",
            "1.5e999",
            "&x",
            "*x",
            "!t",
            "---",
            "?",
            "=",
            "#",
            "true",
            "null",
            ".nan",
            "\\",
            "é",
            "\r",
            "1979-05-27",
            "[[t]]",
        ];
        const FORMATS: &[Format] = &[Format::Json, Format::Yaml, Format::Toml, Format::Csv];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % 1_000_003).unwrap_or(0)
        };
        for _ in 0..20_000 {
            let len = next() % 24;
            let text: String = (0..len).map(|_| PIECES[next() % PIECES.len()]).collect();
            let format = FORMATS[next() % FORMATS.len()];
            let header = next() % 2 == 0;
            if let Err(err) = parse(format, &text, header) {
                assert_eq!(err.code(), ErrorCode::InputInvalid, "{format} {text:?}");
            }
        }
    }

    #[tokio::test]
    async fn calls_go_through_the_schema() {
        let tool = parse_structured::definition();
        let call = |args: &'static str| tool.call(args, ToolContext::new("call_1"));

        assert_eq!(
            call(r#"{"format":"yaml","text":"a: [1, {b: null}]"}"#)
                .await
                .unwrap(),
            json!({"value": {"a": [1, {"b": null}]}})
        );
        assert_eq!(
            call(r#"{"format":"csv","text":"1,2","header":false}"#)
                .await
                .unwrap(),
            json!({"value": [["1", "2"]]})
        );

        let unknown = call(r#"{"format":"xml","text":"<a/>"}"#).await.unwrap_err();
        assert_eq!(unknown.code(), ErrorCode::InputInvalid);
        assert_eq!(unknown.path(), Some("/format"));

        let bad = call(r#"{"format":"toml","text":"a ="}"#).await.unwrap_err();
        assert_eq!(bad.code(), ErrorCode::InputInvalid);
        assert!(
            bad.message().starts_with("the text is not valid toml"),
            "{}",
            bad.message()
        );

        let schema = tool.input_schema();
        assert_eq!(schema["required"], json!(["format", "text"]));
        assert_eq!(schema["properties"]["header"]["default"], true);
    }
}
