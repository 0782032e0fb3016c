//! The `datetime` tool: the current time, reading, formatting, span arithmetic and differences, in
//! any IANA time zone.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_tools::datetime::datetime;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let out = datetime::definition()
//!     .call(
//!         r#"{"operation": "add", "datetime": "2024-03-09T12:00:00", "span": "1 day",
//!             "time_zone": "America/New_York"}"#,
//!         ToolContext::new("call_1"),
//!     )
//!     .await
//!     .unwrap();
//! // The clocks went forward overnight: one day later is 23 hours later.
//! assert_eq!(out.value()["datetime"], "2024-03-10T12:00:00-04:00");
//! assert_eq!(out.value()["weekday"], "Sunday");
//!
//! let err = datetime::definition()
//!     .call(r#"{"operation": "now", "time_zone": "Europe/Pariss"}"#, ToolContext::new("call_2"))
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert!(err.message().contains("did you mean `Europe/Paris`?"));
//! # });
//! ```
//!
//! # One tool, an operation enum
//!
//! Six small tools would each repeat `datetime` and `time_zone`, and a model would have to pick
//! among names that differ by a word. One tool whose `operation` is an enum in the schema keeps the
//! shared arguments in one place and lets the description state once how text is read and in
//! which zone; an argument an operation does not use is refused, so a confused call is an error
//! rather than a silently ignored value.
//!
//! # The time zone database
//!
//! `jiff` reads the system's `/usr/share/zoneinfo` when it exists (updated with the OS), and this
//! crate enables its `tzdb-bundle-always` feature so that a machine without one (a slim container,
//! Windows) falls back to the copy embedded in the binary rather than knowing only UTC.
//!
//! Every step is checked: jiff's fallible constructors and `checked_add`, never the operators
//! that panic on overflow, so a result outside the supported range (instants from
//! `-009999-01-02T01:59:59Z` to `9999-12-30T22:00:00Z`, jiff's, so that every offset of such an
//! instant is a valid civil date) is an error a model can read.

/// The instants the tool can represent (jiff's `Timestamp::MIN` to `Timestamp::MAX`).
const RANGE: &str = "instants from -009999-01-02T01:59:59Z to 9999-12-30T22:00:00Z";

use jiff::civil::DateTime;
use jiff::fmt::{rfc2822, strtime};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, Unit, ZonedDateTime};
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::{Deserialize, Serialize};
use pleach_core::{ErrorCode, ToolError, tool};

use crate::suggest::{close_matches, one_of};

/// The longest `datetime`, `other` or `span` text accepted, in bytes.
const MAX_TEXT_BYTES: usize = 100;

/// The longest `format` accepted, in bytes: room for any sensible pattern, and a bound on the
/// output, which grows with the pattern.
const MAX_FORMAT_BYTES: usize = 200;

/// The longest `time_zone` accepted, in bytes: over every IANA name, and a bound on the "did you
/// mean" search.
const MAX_TIME_ZONE_BYTES: usize = 64;

/// Other layouts `datetime` and `other` may use, read as wall-clock times in `time_zone`. Only
/// unambiguous ones: `03/04/2024` is March in the US and April elsewhere, so it is not here.
const CIVIL_FORMATS: &[&str] = &[
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
    "%B %d, %Y %H:%M",
    "%B %d, %Y",
    "%d %B %Y %H:%M",
    "%d %B %Y",
];

/// What `datetime` does.
///
/// ```
/// use pleach_tools::datetime::{Operation, datetime};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // The fn is an ordinary fn too: `difference` measures from `datetime` to `other`.
/// let (start, end) = ("2024-03-09T00:00:00Z".to_owned(), "2024-03-10T06:00:00Z".to_owned());
/// let out = datetime(Operation::Difference, Some(start), "UTC".to_owned(), None, Some(end), None)
///     .await
///     .unwrap();
/// assert_eq!(out.span.as_deref(), Some("P1DT6H"));
/// assert_eq!(out.seconds, Some(30 * 3600));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "snake_case")]
// Set here so the input schema carries this line, not the Rust example above.
#[schemars(crate = "pleach_core::schemars", description = "What `datetime` does.")]
#[non_exhaustive]
pub enum Operation {
    /// The current date and time.
    Now,
    /// Reads `datetime` and returns it normalized.
    Parse,
    /// Writes `datetime` (or now) with the strftime pattern `format`.
    Format,
    /// `datetime` (or now) plus `span`.
    Add,
    /// `datetime` (or now) minus `span`.
    Subtract,
    /// The span from `datetime` (or now) to `other`.
    Difference,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Now => "now",
            Operation::Parse => "parse",
            Operation::Format => "format",
            Operation::Add => "add",
            Operation::Subtract => "subtract",
            Operation::Difference => "difference",
        }
    }
}

/// The result of `datetime`, e.g. `{"datetime": "2024-03-10T12:00:00-04:00", "time_zone":
/// "America/New_York", "unix_seconds": 1710086400, "weekday": "Sunday"}`.
///
/// ```
/// use pleach_tools::datetime::{Operation, datetime};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let out = datetime(
///     Operation::Format,
///     Some("1710081000".to_owned()), // unix seconds: 14:30 UTC
///     "Europe/Paris".to_owned(),
///     None,
///     None,
///     Some("%A %d %B %Y, %H:%M".to_owned()),
/// )
/// .await
/// .unwrap();
/// assert_eq!(out.datetime, "2024-03-10T15:30:00+01:00");
/// assert_eq!(out.unix_seconds, 1_710_081_000);
/// assert_eq!(out.weekday, "Sunday");
/// assert_eq!(out.formatted.as_deref(), Some("Sunday 10 March 2024, 15:30"));
/// assert_eq!(out.span, None); // `difference` only
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `datetime`, e.g. `{\"datetime\": \"2024-03-10T12:00:00-04:00\", \"time_zone\":\n\"America/New_York\", \"unix_seconds\": 1710086400, \"weekday\": \"Sunday\"}`."
)]
#[non_exhaustive]
pub struct DateTimeOutput {
    /// The resulting date and time in RFC 3339, with the offset of `time_zone` at that moment.
    pub datetime: String,
    /// The IANA time zone `datetime` is expressed in.
    pub time_zone: String,
    /// The same moment as seconds since 1970-01-01T00:00:00Z (negative before it).
    pub unix_seconds: i64,
    /// The day of the week in `time_zone`, e.g. `Sunday`.
    pub weekday: String,
    /// `datetime` written with the `format` pattern, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formatted: Option<String>,
    /// For `difference`: the span from `datetime` to `other` in ISO 8601, e.g. `P1Y2M3DT4H`;
    /// negative (`-P1D`) when `other` is earlier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<String>,
    /// For `difference`: the seconds from `datetime` to `other`, negative when `other` is earlier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<i64>,
}

/// Works with dates and times in an IANA time zone; for example `{"operation": "add", "datetime":
/// "2024-03-09T12:00:00", "span": "1 day", "time_zone": "America/New_York"}` gives
/// `{"datetime": "2024-03-10T12:00:00-04:00", "time_zone": "America/New_York", "unix_seconds":
/// 1710086400, "weekday": "Sunday"}`.
///
/// Operations: now, parse, format, add, subtract, difference. `parse` needs `datetime`; `format`
/// needs `format`; `add` and `subtract` need `span`; `difference` needs `other` and returns the
/// span from `datetime` to `other` (and its length in seconds). Except for `parse`, a missing
/// `datetime` means now.
///
/// Everything happens in `time_zone` (default UTC): the result is written there, and calendar
/// arithmetic follows its clock changes (a day is 23 hours across a spring-forward). A `datetime`
/// with an offset or a `Z` (`2024-03-10T14:30:00+01:00`) is that moment, shown in `time_zone`; one
/// without (`2024-03-10T14:30`, `2024-03-10 14:30:00`, `2024-03-10`, `2024/03/10 14:30`,
/// `March 10, 2024`) is a wall-clock time in `time_zone`. RFC 2822 (`Sun, 10 Mar 2024 14:30:00
/// +0000`) and unix seconds (`1710081000`) work too.
///
/// A span is ISO 8601 (`P1DT2H`, `PT90M`, `-P1W`) or words (`2 hours 30 minutes`, `1 day`,
/// `3 weeks ago`). `format` is a strftime pattern, e.g. `%A %d %B %Y, %H:%M %Z`; `formatted` in
/// the result holds it, with any operation. Instants run from `-009999-01-02T01:59:59Z` to
/// `9999-12-30T22:00:00Z` (a year before 0 or after 9999 is written with a sign and six digits,
/// `-000044-03-15`); a date or result outside is an error.
#[tool]
pub async fn datetime(
    #[arg(description = "What to do: now, parse, format, add, subtract or difference")]
    operation: Operation,
    #[arg(
        description = "The date and time to work on, e.g. `2024-03-10T14:30:00Z` or `2024-03-10 14:30`; now if absent (except for `parse`)"
    )]
    datetime: Option<String>,
    #[arg(
        description = "The IANA time zone results are written in and offset-less times are read in, e.g. `Europe/Paris`",
        default = "UTC"
    )]
    time_zone: String,
    #[arg(
        description = "For add and subtract: ISO 8601 like `P1DT2H` or words like `2 hours 30 minutes`"
    )]
    span: Option<String>,
    #[arg(description = "For difference: the date and time to measure to, read like `datetime`")]
    other: Option<String>,
    #[arg(
        description = "A strftime pattern for `formatted`, e.g. `%Y-%m-%d %H:%M`; required by format"
    )]
    format: Option<String>,
) -> Result<DateTimeOutput, ToolError> {
    run(&Request {
        operation,
        datetime: datetime.as_deref(),
        time_zone: &time_zone,
        span: span.as_deref(),
        other: other.as_deref(),
        format: format.as_deref(),
    })
}

/// The arguments of one call, borrowed.
#[derive(Debug, Clone, Copy)]
struct Request<'a> {
    operation: Operation,
    datetime: Option<&'a str>,
    time_zone: &'a str,
    span: Option<&'a str>,
    other: Option<&'a str>,
    format: Option<&'a str>,
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

fn run(request: &Request<'_>) -> Result<DateTimeOutput, ToolError> {
    // Every problem of the arguments in one error, as the schema check reports them: each round
    // trip costs a model a step.
    let mut problems = check_arguments(request);
    let tz = find_time_zone(request.time_zone)
        .map_err(|error| problems.push(error))
        .ok();
    let read = |text: Option<&str>, argument: &str, problems: &mut Vec<ToolError>| {
        let (text, tz) = (text?, tz.as_ref()?);
        read_datetime(text, argument, tz)
            .map_err(|error| problems.push(error))
            .ok()
    };
    let start = read(request.datetime, "datetime", &mut problems);
    let other = match request.operation {
        Operation::Difference => read(request.other, "other", &mut problems),
        _ => None,
    };
    let parsed_span = match (request.operation, request.span) {
        (Operation::Add | Operation::Subtract, Some(text)) => {
            read_span(text).map_err(|error| problems.push(error)).ok()
        }
        _ => None,
    };
    if problems.len() == 1 {
        return Err(problems.remove(0));
    }
    if !problems.is_empty() {
        let messages: Vec<&str> = problems.iter().map(ToolError::message).collect();
        return Err(invalid(messages.join("; ")));
    }
    let Some(tz) = tz else {
        return Err(invalid("`time_zone` could not be read".to_owned()));
    };
    let start = start.unwrap_or_else(|| Timestamp::now().to_zoned_datetime(tz.clone()));
    let mut span = None;
    let mut seconds = None;
    let result = match request.operation {
        Operation::Now | Operation::Parse | Operation::Format => start,
        Operation::Add | Operation::Subtract => {
            let text = request.span.unwrap_or_default();
            let Some(mut parsed) = parsed_span else {
                return Err(invalid("`span` could not be read".to_owned()));
            };
            if request.operation == Operation::Subtract {
                parsed = parsed.negate();
            }
            start.checked_add(parsed).map_err(|err| {
                invalid(format!(
                    "{} `{text}` {} {} leaves the supported range ({RANGE}); use a smaller span \
                     ({err})",
                    if request.operation == Operation::Add {
                        "adding"
                    } else {
                        "subtracting"
                    },
                    if request.operation == Operation::Add {
                        "to"
                    } else {
                        "from"
                    },
                    rfc3339(&start)
                ))
            })?
        }
        Operation::Difference => {
            let Some(other) = other else {
                return Err(invalid("`other` could not be read".to_owned()));
            };
            let between = start.until((Unit::Year, &other)).map_err(|err| {
                invalid(format!(
                    "cannot measure from {} to {}: {err}",
                    rfc3339(&start),
                    rfc3339(&other)
                ))
            })?;
            span = Some(between.to_string());
            seconds = Some(other.timestamp().as_second() - start.timestamp().as_second());
            start
        }
    };
    let formatted = match request.format {
        Some(pattern) => Some(format_with(&result, pattern)?),
        None => None,
    };
    Ok(DateTimeOutput {
        datetime: rfc3339(&result),
        time_zone: result.time_zone().iana_name().unwrap_or("UTC").to_owned(),
        unix_seconds: result.timestamp().as_second(),
        weekday: format!("{:?}", result.weekday()),
        formatted,
        span,
        seconds,
    })
}

/// Each operation's required arguments are present, and `span` and `other` are given only to the
/// operations that read them (a model that passes one elsewhere has misread the tool): every
/// problem found.
fn check_arguments(request: &Request<'_>) -> Vec<ToolError> {
    let operation = request.operation;
    let name = operation.as_str();
    let missing = |argument: &str, example: &str| {
        invalid(format!(
            "`{name}` needs `{argument}`; pass one such as {example}"
        ))
    };
    let mut problems = Vec::new();
    match operation {
        Operation::Parse if request.datetime.is_none() => {
            problems.push(missing("datetime", "`2024-03-10T14:30:00Z`"));
        }
        Operation::Format if request.format.is_none() => {
            problems.push(missing("format", "`%Y-%m-%d %H:%M`"));
        }
        Operation::Add | Operation::Subtract if request.span.is_none() => {
            problems.push(missing("span", "`P1DT2H` or `2 hours`"));
        }
        Operation::Difference if request.other.is_none() => {
            problems.push(missing("other", "`2024-12-25T00:00:00Z`"));
        }
        _ => {}
    }
    if request.span.is_some() && !matches!(operation, Operation::Add | Operation::Subtract) {
        problems.push(invalid(format!(
            "`span` is only read by `add` and `subtract`, not `{name}`; leave it out or change \
             `operation`"
        )));
    }
    if request.other.is_some() && operation != Operation::Difference {
        problems.push(invalid(format!(
            "`other` is only read by `difference`, not `{name}`; leave it out or change \
             `operation`"
        )));
    }
    problems
}

/// The time zone named `name`, or an error with the closest names.
fn find_time_zone(name: &str) -> Result<TimeZone, ToolError> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err(invalid(
            "`time_zone` is empty; pass an IANA name such as `UTC` or `Europe/Paris`".to_owned(),
        ));
    }
    if trimmed.len() > MAX_TIME_ZONE_BYTES {
        return Err(invalid(format!(
            "`time_zone` is {} bytes long, over the limit of {MAX_TIME_ZONE_BYTES}; pass one IANA \
             name such as `Europe/Paris`",
            trimmed.len()
        )));
    }
    jiff::tz::db()
        .get(trimmed)
        .map_err(|_| unknown_time_zone(trimmed))
}

/// Abbreviations models reach for that are not IANA names (or name a fixed offset, not the place),
/// with the zone usually meant.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("PST", "America/Los_Angeles"),
    ("PDT", "America/Los_Angeles"),
    ("MDT", "America/Denver"),
    ("CST", "America/Chicago"),
    ("CDT", "America/Chicago"),
    ("EDT", "America/New_York"),
    ("BST", "Europe/London"),
    ("CEST", "Europe/Paris"),
    ("IST", "Asia/Kolkata"),
    ("JST", "Asia/Tokyo"),
    ("AEST", "Australia/Sydney"),
    ("AEDT", "Australia/Sydney"),
];

/// The time zone a bracketed annotation names (`…[America/New_York]`, `…[!Europe/Paris]`), if
/// the text has one; other annotations (`[u-ca=…]`) are `key=value` and name none.
fn zone_annotation(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once('[')?;
    let (inside, _) = rest.split_once(']')?;
    let name = inside.strip_prefix('!').unwrap_or(inside);
    (!name.contains('=')).then_some(name)
}

fn unknown_time_zone(name: &str) -> ToolError {
    if let Some((abbreviation, zone)) = ABBREVIATIONS
        .iter()
        .find(|(abbreviation, _)| abbreviation.eq_ignore_ascii_case(name))
    {
        return invalid(format!(
            "unknown time zone `{name}`: `{abbreviation}` is an abbreviation, not an IANA name; \
             did you mean `{zone}`? (abbreviations are ambiguous and ignore daylight saving)"
        ));
    }
    let names: Vec<String> = jiff::tz::db()
        .available()
        .map(|name| name.as_str().to_owned())
        .collect();
    // The full names, then each city alone, so `New York` finds `America/New_York`.
    let wanted = name.replace(' ', "_");
    let candidates = names
        .iter()
        .map(|full| (full.as_str(), full.as_str()))
        .chain(
            names
                .iter()
                .filter_map(|full| full.rsplit_once('/').map(|(_, city)| (city, full.as_str()))),
        );
    let mut suggestions: Vec<String> = Vec::new();
    for (_, full) in close_matches(&wanted, candidates) {
        let shown = format!("`{full}`");
        if !suggestions.contains(&shown) {
            suggestions.push(shown);
        }
    }
    suggestions.truncate(4);
    let hint = if suggestions.is_empty() {
        "use an IANA name such as `UTC`, `America/New_York`, `Europe/Paris` or `Asia/Tokyo`"
            .to_owned()
    } else {
        format!("did you mean {}?", one_of(&suggestions))
    };
    invalid(format!("unknown time zone `{name}`; {hint}"))
}

/// The moment `text` (the argument named `argument`) names, in `tz`.
fn read_datetime(text: &str, argument: &str, tz: &TimeZone) -> Result<ZonedDateTime, ToolError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(invalid(format!(
            "`{argument}` is empty; pass a date and time such as `2024-03-10T14:30:00Z`, or leave \
             it out for now"
        )));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(invalid(format!(
            "`{argument}` is {} bytes long, over the limit of {MAX_TEXT_BYTES}; pass one date and \
             time such as `2024-03-10T14:30:00Z`",
            text.len()
        )));
    }
    if let Ok(zoned) = text.parse::<ZonedDateTime>() {
        return Ok(zoned.timestamp().to_zoned_datetime(tz.clone()));
    }
    // A bracketed annotation (RFC 9557) names the zone the text is in. One that names no zone
    // would be dropped by the readings below, and a text without an offset placed in `time_zone`
    // instead: hours off, silently. (With an offset, the offset says the instant.)
    if let Some(annotation) = zone_annotation(text)
        && TimeZone::get(annotation).is_err()
    {
        return Err(unknown_time_zone(annotation));
    }
    let instant = text.parse::<Timestamp>();
    if let Ok(instant) = instant {
        return Ok(instant.to_zoned_datetime(tz.clone()));
    }
    if let Ok(zoned) = rfc2822::parse(text) {
        return Ok(zoned.timestamp().to_zoned_datetime(tz.clone()));
    }
    if let Some(seconds) = unix_seconds(text) {
        return Timestamp::from_second(seconds)
            .map(|instant| instant.to_zoned_datetime(tz.clone()))
            .map_err(|_| {
                invalid(format!(
                    "`{argument}` `{text}` as unix seconds is outside the supported range \
                     ({RANGE})"
                ))
            });
    }
    let civil = text.parse::<DateTime>().or_else(|err| {
        CIVIL_FORMATS
            .iter()
            .find_map(|format| strtime::parse(format, text).ok()?.to_datetime().ok())
            .ok_or(err)
    });
    match civil {
        Ok(civil) => civil.to_zoned_datetime(tz.clone()).map_err(|err| {
            invalid(format!(
                "`{argument}` `{text}` cannot be placed in `{}`: {err}{}",
                tz.iana_name().unwrap_or("UTC"),
                range_hint(&err.to_string())
            ))
        }),
        Err(civil_err) => {
            // The reason of the reader the text was closest to: with an offset, the RFC 3339 one.
            let reason = match instant {
                Err(err) if has_offset(text) => err.to_string(),
                _ => civil_err.to_string(),
            };
            let reason = if text.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
                format!(" ({reason}){}", range_hint(&reason))
            } else {
                String::new()
            };
            Err(invalid(format!(
                "cannot read `{argument}` `{text}` as a date and time{reason}; write RFC 3339 \
                 such as `2024-03-10T14:30:00Z` or `2024-03-10T14:30:00+01:00`, or a time in \
                 `time_zone` such as `2024-03-10 14:30` or `2024-03-10`"
            )))
        }
    }
}

/// The supported range, for a reason that says a value was out of range.
fn range_hint(reason: &str) -> String {
    // jiff's reasons for a date past its instants name the timestamp or the year; a bad field
    // (hour 25, month 13) names that field's own range.
    if reason.contains("timestamp") || reason.contains("'year'") {
        format!("; the supported range is {RANGE}")
    } else {
        String::new()
    }
}

/// `text` as a whole number of seconds, if it is one (an optional `-`, then digits).
fn unix_seconds(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Too many digits for an i64 is still unix seconds, just out of range.
    Some(text.parse::<i64>().unwrap_or(i64::MAX))
}

/// Whether `text` ends in an offset or `Z`, so the RFC 3339 reader's complaint is the relevant one.
fn has_offset(text: &str) -> bool {
    let time = text
        .rsplit_once(['T', 't', ' '])
        .map_or("", |(_, time)| time);
    time.ends_with(['Z', 'z']) || time.contains(['+', '-'])
}

fn read_span(text: &str) -> Result<Span, ToolError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(invalid(
            "`span` is empty; pass ISO 8601 like `P1DT2H` or words like `2 hours`".to_owned(),
        ));
    }
    if trimmed.len() > MAX_TEXT_BYTES {
        return Err(invalid(format!(
            "`span` is {} bytes long, over the limit of {MAX_TEXT_BYTES}; pass one span such as \
             `P1DT2H` or `2 hours 30 minutes`",
            trimmed.len()
        )));
    }
    trimmed.parse::<Span>().map_err(|err| {
        invalid(format!(
            "cannot read `span` `{trimmed}` ({err}); write ISO 8601 like `P1DT2H` or words like \
             `2 hours 30 minutes`, each unit within the supported range (at most 19998 years or \
             about 631 billion seconds)"
        ))
    })
}

fn format_with(zoned: &ZonedDateTime, pattern: &str) -> Result<String, ToolError> {
    if pattern.is_empty() {
        return Err(invalid(
            "`format` is empty; pass a strftime pattern such as `%Y-%m-%d %H:%M`".to_owned(),
        ));
    }
    if pattern.len() > MAX_FORMAT_BYTES {
        return Err(invalid(format!(
            "`format` is {} bytes long, over the limit of {MAX_FORMAT_BYTES}; pass a shorter \
             strftime pattern",
            pattern.len()
        )));
    }
    strtime::format(pattern, zoned).map_err(|err| {
        invalid(format!(
            "cannot format with `{pattern}` ({err}); use strftime directives such as %Y %m %d \
             %H %M %S %A %B %Z %z, and %% for a literal %"
        ))
    })
}

/// `zoned` in RFC 3339: the moment with its offset, no bracketed zone.
fn rfc3339(zoned: &ZonedDateTime) -> String {
    zoned
        .timestamp()
        .display_with_offset(zoned.offset())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::ToolContext;
    use serde_json::json;

    fn request(operation: Operation) -> Request<'static> {
        Request {
            operation,
            datetime: None,
            time_zone: "UTC",
            span: None,
            other: None,
            format: None,
        }
    }

    #[track_caller]
    fn ok(request: &Request<'_>) -> DateTimeOutput {
        match run(request) {
            Ok(out) => out,
            Err(err) => panic!("{request:?} failed: {}", err.message()),
        }
    }

    /// The message of the error the request must fail with (code 1001, lowercase first).
    #[track_caller]
    fn error(request: &Request<'_>) -> String {
        crate::test_support::refusal(run(request), request)
    }

    #[track_caller]
    fn assert_error(request: &Request<'_>, needle: &str) {
        let message = error(request);
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }

    #[test]
    fn every_problem_of_the_arguments_is_in_one_error() {
        // What a small model sent under strict mode: `other` filled in, a time zone misspelt,
        // a date that is no date. All three, in one 1001.
        let message = error(&Request {
            datetime: Some("next blursday"),
            time_zone: "Europe/Pariss",
            other: Some("2024-12-25T00:00:00Z"),
            ..request(Operation::Parse)
        });
        assert!(
            message.contains("`other` is only read by `difference`"),
            "{message}"
        );
        assert!(message.contains("Europe/Paris"), "{message}");
        assert!(message.contains("; "), "{message}");
        let message = error(&Request {
            span: Some("2 fortnights and a bit"),
            other: Some("2024-12-25T00:00:00Z"),
            time_zone: "Mars/Olympus",
            ..request(Operation::Add)
        });
        assert!(
            message.contains("`other` is only read by `difference`"),
            "{message}"
        );
        assert!(message.contains("Mars/Olympus"), "{message}");
        assert!(message.contains("2 fortnights"), "{message}");
        // One problem keeps its own error as it was.
        let message = error(&Request {
            other: Some("2024-12-25T00:00:00Z"),
            ..request(Operation::Now)
        });
        assert_eq!(
            message,
            "`other` is only read by `difference`, not `now`; leave it out or change `operation`"
        );
    }

    fn parse(text: &'static str, time_zone: &'static str) -> DateTimeOutput {
        ok(&Request {
            datetime: Some(text),
            time_zone,
            ..request(Operation::Parse)
        })
    }

    #[test]
    fn parse_reads_common_forms() {
        let expected = "2024-03-10T14:30:00Z";
        for text in [
            "2024-03-10T14:30:00Z",
            "2024-03-10T15:30:00+01:00",
            "2024-03-10T10:30:00-04:00[America/New_York]",
            "2024-03-10T14:30:00",
            "2024-03-10 14:30",
            "2024-03-10T14:30",
            "2024/03/10 14:30",
            "March 10, 2024 14:30",
            "10 March 2024 14:30",
            "Sun, 10 Mar 2024 14:30:00 +0000",
            "1710081000",
        ] {
            let out = parse(text, "UTC");
            assert_eq!(out.datetime.replace("+00:00", "Z"), expected, "{text}");
            assert_eq!(out.unix_seconds, 1_710_081_000, "{text}");
        }
        assert_eq!(parse("2024-03-10", "UTC").unix_seconds, 1_710_028_800);
        assert_eq!(parse("March 10, 2024", "UTC").unix_seconds, 1_710_028_800);
    }

    #[test]
    fn parse_reads_offsetless_times_in_the_zone() {
        let out = parse("2024-07-01 09:00", "Europe/Paris");
        assert_eq!(out.datetime, "2024-07-01T09:00:00+02:00");
        assert_eq!(out.time_zone, "Europe/Paris");
        assert_eq!(out.weekday, "Monday");
        let out = parse("2024-07-01T09:00:00Z", "Asia/Tokyo");
        assert_eq!(out.datetime, "2024-07-01T18:00:00+09:00");
    }

    #[test]
    fn a_zone_annotation_is_read_or_refused_never_dropped() {
        // The annotation's zone places an offsetless text, whatever `time_zone` says.
        let out = parse("2024-01-01T00:00[America/New_York]", "UTC");
        assert_eq!(out.datetime, "2024-01-01T05:00:00+00:00");
        // A misspelled zone is an error with the name meant, not a time hours off.
        let message = error(&Request {
            datetime: Some("2024-01-01T00:00[America/New_Yrok]"),
            ..request(Operation::Parse)
        });
        assert!(
            message.contains("unknown time zone `America/New_Yrok`"),
            "{message}"
        );
        assert!(message.contains("`America/New_York`"), "{message}");
        // An annotation that names no zone changes nothing.
        let out = parse("2024-01-01T00:00[u-ca=iso8601]", "UTC");
        assert_eq!(out.datetime, "2024-01-01T00:00:00+00:00");
    }

    #[test]
    fn add_and_subtract_follow_the_clock() {
        let add = |datetime, span| {
            ok(&Request {
                datetime: Some(datetime),
                span: Some(span),
                time_zone: "America/New_York",
                ..request(Operation::Add)
            })
            .datetime
        };
        assert_eq!(
            add("2024-03-09T12:00:00", "1 day"),
            "2024-03-10T12:00:00-04:00"
        );
        assert_eq!(
            add("2024-03-09T12:00:00", "PT24H"),
            "2024-03-10T13:00:00-04:00"
        );
        assert_eq!(
            add("2024-01-31T00:00:00", "P1M"),
            "2024-02-29T00:00:00-05:00"
        );
        assert_eq!(
            add("2024-01-01T00:00:00", "2 hours 30 minutes"),
            "2024-01-01T02:30:00-05:00"
        );
        assert_eq!(
            add("2024-01-01T00:00:00", "3 days ago"),
            "2023-12-29T00:00:00-05:00"
        );
        let out = ok(&Request {
            datetime: Some("2024-01-01T00:00:00Z"),
            span: Some("P1DT2H"),
            ..request(Operation::Subtract)
        });
        assert_eq!(out.datetime, "2023-12-30T22:00:00+00:00");
    }

    #[test]
    fn difference_gives_a_span_and_seconds() {
        let out = ok(&Request {
            datetime: Some("2024-01-01T00:00:00Z"),
            other: Some("2025-03-02T04:00:00Z"),
            ..request(Operation::Difference)
        });
        assert_eq!(out.span.as_deref(), Some("P1Y2M1DT4H"));
        assert_eq!(out.seconds, Some(36_820_800));
        let out = ok(&Request {
            datetime: Some("2024-01-02"),
            other: Some("2024-01-01"),
            ..request(Operation::Difference)
        });
        assert_eq!(out.span.as_deref(), Some("-P1D"));
        assert_eq!(out.seconds, Some(-86_400));
    }

    #[test]
    fn format_and_now() {
        let out = ok(&Request {
            datetime: Some("2024-03-10T14:30:00Z"),
            format: Some("%A %d %B %Y, %H:%M %Z"),
            time_zone: "Europe/London",
            ..request(Operation::Format)
        });
        assert_eq!(
            out.formatted.as_deref(),
            Some("Sunday 10 March 2024, 14:30 GMT")
        );
        let before = Timestamp::now().as_second();
        let now = ok(&request(Operation::Now));
        assert!((before..before + 60).contains(&now.unix_seconds));
        assert_eq!(now.time_zone, "UTC");
        assert!(now.formatted.is_none() && now.span.is_none());
    }

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        assert_error(
            &Request {
                datetime: Some("9999-12-30T00:00:00Z"),
                span: Some("P100000Y"),
                ..request(Operation::Add)
            },
            "cannot read `span` `P100000Y`",
        );
        assert_error(
            &Request {
                datetime: Some("9999-12-30T00:00:00Z"),
                span: Some("P19998Y"),
                ..request(Operation::Add)
            },
            "adding `P19998Y` to 9999-12-30T00:00:00+00:00 leaves the supported range",
        );
        assert_error(
            &Request {
                datetime: Some("-009999-01-03T00:00:00Z"),
                span: Some("3 days"),
                ..request(Operation::Subtract)
            },
            "subtracting `3 days` from -009999-01-03T00:00:00+00:00 leaves",
        );
        assert_error(
            &Request {
                span: Some("1000000000000000000 seconds"),
                ..request(Operation::Add)
            },
            "within the supported range",
        );
        assert_error(
            &Request {
                span: Some("PT1000000000000000000S"),
                ..request(Operation::Add)
            },
            "cannot read `span`",
        );
        assert_error(
            &Request {
                datetime: Some("99999999999999999999"),
                ..request(Operation::Parse)
            },
            "as unix seconds is outside the supported range",
        );
    }

    #[test]
    fn unknown_time_zones_get_suggestions() {
        let long = "A".repeat(100);
        let zone = |time_zone| Request {
            time_zone,
            ..request(Operation::Now)
        };
        assert_error(
            &zone("Europe/Pariss"),
            "unknown time zone `Europe/Pariss`; did you mean `Europe/Paris`?",
        );
        assert_error(&zone("New York"), "did you mean `America/New_York`");
        assert_error(
            &zone("pst"),
            "`PST` is an abbreviation, not an IANA name; did you mean `America/Los_Angeles`?",
        );
        assert_error(
            &zone("Mars/Olympus"),
            "unknown time zone `Mars/Olympus`; use an IANA name such as `UTC`",
        );
        assert_error(&zone(""), "`time_zone` is empty");
        assert_error(&zone(&long), "over the limit of 64");
        assert_eq!(ok(&zone("europe/paris")).time_zone, "Europe/Paris");
    }

    #[test]
    fn bad_text_is_an_error_not_a_panic() {
        let parse_error = |datetime| Request {
            datetime: Some(datetime),
            ..request(Operation::Parse)
        };
        assert_error(
            &parse_error("yesterday"),
            "cannot read `datetime` `yesterday` as a date and time; write RFC 3339",
        );
        assert_error(
            &parse_error("2024-02-30"),
            "cannot read `datetime` `2024-02-30` as a date and time (parsed date is not valid",
        );
        // Past the last instant: the error says where the range ends; its edges work.
        for past_the_end in [
            "9999-12-31T23:59:59Z",
            "9999-12-31",
            "9999-12-31T00:00:00+01:00",
        ] {
            assert_error(
                &parse_error(past_the_end),
                "the supported range is instants from -009999-01-02T01:59:59Z to \
                 9999-12-30T22:00:00Z",
            );
        }
        // A bad field names its own range, not the instants'.
        for bad_field in [
            "2024-03-10T25:00:00Z",
            "2024-13-01",
            "2024-02-30",
            "2024-01-01T10:61:00",
        ] {
            let refused = run(&parse_error(bad_field)).unwrap_err();
            assert!(
                !refused.message().contains("the supported range is"),
                "{bad_field}: {}",
                refused.message()
            );
        }
        assert!(
            ok(&parse_error("9999-12-30T22:00:00Z"))
                .datetime
                .starts_with("9999-12-30T22:00:00")
        );
        assert!(
            ok(&parse_error("-009999-01-02T01:59:59Z"))
                .datetime
                .starts_with("-009999-01-02T01:59:59")
        );
        assert_error(&parse_error("2024-03-10T25:00:00Z"), "(");
        assert_error(&parse_error("  "), "`datetime` is empty");
        assert_error(&parse_error(&"1".repeat(200)), "over the limit of 100");
        assert_error(
            &Request {
                span: Some("two fortnights"),
                ..request(Operation::Add)
            },
            "cannot read `span` `two fortnights`",
        );
        assert_error(
            &Request {
                span: Some(""),
                ..request(Operation::Add)
            },
            "`span` is empty",
        );
        assert_error(
            &Request {
                format: Some("%Q %"),
                ..request(Operation::Format)
            },
            "cannot format with `%Q %`",
        );
        assert_error(
            &Request {
                format: Some(""),
                ..request(Operation::Format)
            },
            "`format` is empty",
        );
        assert_error(
            &Request {
                other: Some("soon"),
                ..request(Operation::Difference)
            },
            "cannot read `other` `soon`",
        );
    }

    #[test]
    fn arguments_match_the_operation() {
        assert_error(&request(Operation::Parse), "`parse` needs `datetime`");
        assert_error(&request(Operation::Format), "`format` needs `format`");
        assert_error(&request(Operation::Add), "`add` needs `span`");
        assert_error(&request(Operation::Subtract), "`subtract` needs `span`");
        assert_error(
            &request(Operation::Difference),
            "`difference` needs `other`",
        );
        assert_error(
            &Request {
                span: Some("1 day"),
                ..request(Operation::Now)
            },
            "`span` is only read by `add` and `subtract`, not `now`",
        );
        assert_error(
            &Request {
                other: Some("2024-01-01"),
                span: Some("1 day"),
                ..request(Operation::Add)
            },
            "`other` is only read by `difference`, not `add`",
        );
    }

    /// Random arguments from pieces of dates, spans and zones: any call gives a result or an error.
    #[test]
    fn random_input_never_panics() {
        const TEXTS: &[&str] = &[
            "2024-03-10T14:30:00Z",
            "9999-12-31T23:59:59Z",
            "-009999-01-01",
            "2024-02-29",
            "1710081000",
            "-99999999999",
            "P19998Y",
            "PT631107417600S",
            "-P1D",
            "2 hours",
            "1 day ago",
            "%Y %z %Q %::z %",
            "%-5000Y",
            "",
            "é",
            "Z",
            "T",
            "+",
            "24:00",
            "[America/New_York]",
            "9",
            " ",
        ];
        const ZONES: &[&str] = &["UTC", "America/New_York", "Australia/Lord_Howe", "Nowhere"];
        const OPERATIONS: &[Operation] = &[
            Operation::Now,
            Operation::Parse,
            Operation::Format,
            Operation::Add,
            Operation::Subtract,
            Operation::Difference,
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % 1_000_003).unwrap_or(0)
        };
        let text = |next: &mut dyn FnMut() -> usize| -> Option<String> {
            let len = next() % 4;
            (len > 0).then(|| (0..len).map(|_| TEXTS[next() % TEXTS.len()]).collect())
        };
        for _ in 0..3_000 {
            let datetime = text(&mut next);
            let span = text(&mut next);
            let other = text(&mut next);
            let format = text(&mut next);
            let request = Request {
                operation: OPERATIONS[next() % OPERATIONS.len()],
                datetime: datetime.as_deref(),
                time_zone: ZONES[next() % ZONES.len()],
                span: span.as_deref(),
                other: other.as_deref(),
                format: format.as_deref(),
            };
            if let Err(err) = run(&request) {
                assert_eq!(err.code(), ErrorCode::InputInvalid, "{request:?}");
            }
        }
    }

    #[tokio::test]
    async fn calls_go_through_the_schema() {
        let tool = datetime::definition();
        let call = |args: &'static str| tool.call(args, ToolContext::new("call_1"));

        assert_eq!(
            call(r#"{"operation":"difference","datetime":"2024-01-01","other":"2024-01-02T06:00:00Z"}"#)
                .await
                .unwrap(),
            json!({
                "datetime": "2024-01-01T00:00:00+00:00",
                "time_zone": "UTC",
                "unix_seconds": 1_704_067_200,
                "weekday": "Monday",
                "span": "P1DT6H",
                "seconds": 108_000,
            })
        );

        let unknown = call(r#"{"operation":"yesterday"}"#).await.unwrap_err();
        assert_eq!(unknown.code(), ErrorCode::InputInvalid);
        assert_eq!(unknown.path(), Some("/operation"));

        let overflow =
            call(r#"{"operation":"add","datetime":"9999-01-01T00:00:00Z","span":"P2Y"}"#)
                .await
                .unwrap_err();
        assert_eq!(overflow.code(), ErrorCode::InputInvalid);
        assert!(
            overflow.message().contains("supported range"),
            "{}",
            overflow.message()
        );

        let extra = call(r#"{"operation":"now","precision":3}"#)
            .await
            .unwrap_err();
        assert_eq!(extra.code(), ErrorCode::InputInvalid);
    }

    #[test]
    fn the_schema_lists_the_operations_and_defaults_to_utc() {
        let tool = datetime::definition();
        let schema = tool.input_schema();
        assert_eq!(schema["properties"]["time_zone"]["default"], "UTC");
        assert_eq!(schema["required"], json!(["operation"]));
        let text = schema.to_string();
        for operation in ["now", "parse", "format", "add", "subtract", "difference"] {
            assert!(text.contains(&format!("\"{operation}\"")), "{operation}");
        }
        let output = tool.output_schema().unwrap();
        assert_eq!(
            output["required"],
            json!(["datetime", "time_zone", "unix_seconds", "weekday"])
        );
    }
}
