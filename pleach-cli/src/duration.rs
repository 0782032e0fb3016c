//! Durations on the command line, one spelling for every flag that takes one (`--timeout`,
//! `chat`'s `--turn-timeout` and `--step-timeout`,
//! `--drain`, `--drain-notice`, `--session-ttl`, `--approval-expiry`): a number and a unit,
//! `500ms`, `30s`, `5m`, `2h`, `1d`, or several together (`1h30m`, `1m 30s`), as humantime reads
//! them. A number without a unit is refused (seconds or milliseconds? the reader cannot tell),
//! `0` aside.
//!
//! Each function is a clap value parser: its error becomes `invalid value '5x' for '--timeout
//! <DURATION>': …`, exit 2.

use std::time::Duration;

/// Any duration, zero included (`--drain 0s`: no wait).
pub(crate) fn any(text: &str) -> Result<Duration, String> {
    if could_reach_u64_max_seconds(text) {
        return Err("too long".to_owned());
    }
    humantime::parse_duration(text).map_err(|error| error.to_string())
}

/// A duration longer than zero (`--timeout 0s` would fail every call before it starts).
pub(crate) fn positive(text: &str) -> Result<Duration, String> {
    let duration = any(text)?;
    if duration.is_zero() {
        return Err("must be longer than 0".to_owned());
    }
    Ok(duration)
}

/// A whole number of seconds, at least one: what Redis keeps a key for (`--session-ttl`).
pub(crate) fn whole_seconds(text: &str) -> Result<Duration, String> {
    let duration = positive(text)?;
    if duration.subsec_nanos() != 0 {
        return Err(
            "not a whole number of seconds (Redis keeps a session for whole seconds)".to_owned(),
        );
    }
    Ok(duration)
}

/// humantime 2.4 panics, instead of returning its overflow error, when the seconds it adds up
/// reach exactly `u64::MAX` and a carry of nanoseconds follows (`18446744073709551615s 1000ms`).
/// This bounds the text's total from above, each number in the unit that follows it (a
/// sub-second unit counted as a whole second, an unknown one as a year, humantime's longest), so
/// such text is refused before humantime reads it. Nothing refused is shorter than 584 years.
fn could_reach_u64_max_seconds(text: &str) -> bool {
    const YEAR: u128 = 31_557_600;
    let mut total: u128 = 0;
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        rest = &rest[start..];
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let whole = rest[..number_end].split('.').next().unwrap_or_default();
        // The fraction, if any, adds less than one more of the unit.
        let count = whole.parse::<u128>().unwrap_or(u128::MAX).saturating_add(1);
        rest = rest[number_end..].trim_start();
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_end] {
            "nanos" | "nsec" | "ns" | "usec" | "us" | "µs" | "millis" | "msec" | "ms"
            | "seconds" | "second" | "secs" | "sec" | "s" => 1,
            "minutes" | "minute" | "min" | "mins" | "m" => 60,
            "hours" | "hour" | "hr" | "hrs" | "h" => 3_600,
            "days" | "day" | "d" => 86_400,
            "weeks" | "week" | "wk" | "wks" | "w" => 604_800,
            "months" | "month" | "M" => 2_630_016,
            _ => YEAR,
        };
        total = total.saturating_add(count.saturating_mul(seconds_per_unit));
        rest = &rest[unit_end..];
    }
    total >= u128::from(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{any, positive, whole_seconds};

    #[test]
    fn a_number_and_a_unit_or_several_are_read() {
        assert_eq!(any("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(any("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(any("1h30m"), Ok(Duration::from_mins(90)));
        assert_eq!(any("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(any("1.5s"), Ok(Duration::from_millis(1_500)));
        assert_eq!(any("1d"), Ok(Duration::from_hours(24)));
        assert_eq!(any("0s"), Ok(Duration::ZERO));
        assert_eq!(any("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn a_number_without_a_unit_or_with_a_wrong_one_is_refused_saying_why() {
        let no_unit = any("5000").unwrap_err();
        assert!(no_unit.contains("time unit needed"), "{no_unit}");
        let wrong_unit = any("5x").unwrap_err();
        assert!(
            wrong_unit.contains("unknown time unit \"x\""),
            "{wrong_unit}"
        );
        assert!(wrong_unit.contains("ms, sec, min"), "{wrong_unit}");
        assert!(any("").is_err());
        assert!(any("-1s").is_err());
        assert!(any("s").is_err());
        assert!(any("99999999999999999999999s").is_err());
    }

    #[test]
    fn what_would_make_humantime_panic_is_an_error() {
        for text in [
            "18446744073709551615s 1000ms",
            "18446744073709551615s 500ms 500ms",
            "18446744073709551614s 1s 1000ms",
            "584542046090y 1000ms",
        ] {
            assert!(any(text).is_err(), "{text}");
        }
        // Long but sane durations still pass.
        assert_eq!(any("100y"), Ok(Duration::from_hours(876_600)));
        assert_eq!(
            any("18446744073ms"),
            Ok(Duration::from_millis(18_446_744_073))
        );
    }

    #[test]
    fn zero_and_fractions_of_seconds_are_refused_where_they_mean_nothing() {
        assert_eq!(
            positive("0s").unwrap_err(),
            "must be longer than 0".to_owned()
        );
        assert_eq!(positive("1ms"), Ok(Duration::from_millis(1)));
        assert!(whole_seconds("0s").is_err());
        assert!(
            whole_seconds("1500ms")
                .unwrap_err()
                .contains("not a whole number of seconds")
        );
        assert_eq!(whole_seconds("1h"), Ok(Duration::from_hours(1)));
    }
}
