//! Numbers as the tools hand them to a model: rounded to drop floating-point noise, and written
//! readably in messages.

/// `value` rounded to `digits` significant decimal digits, with `-0` made `0`.
///
/// Rounding drops the noise binary floating point leaves in decimal results (`0.1 + 0.2` is
/// `0.30000000000000004`, 100 °C is `212.00000000000006` °F), which a model would otherwise
/// repeat. A finite value stays finite: if rounding up would pass `f64::MAX`, the value is kept.
pub(crate) fn round_significant(value: f64, digits: usize) -> f64 {
    let precision = digits.saturating_sub(1);
    let rounded = format!("{value:.precision$e}")
        .parse::<f64>()
        .unwrap_or(value);
    let rounded = if rounded.is_finite() { rounded } else { value };
    if rounded == 0.0 { 0.0 } else { rounded }
}

/// `value` as a message shows it: plain for everyday magnitudes, scientific for the rest (so
/// `1e308` is not written out in 309 digits).
pub(crate) fn show(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || (1e-6..1e15).contains(&magnitude) || !value.is_finite() {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_drops_binary_noise() {
        assert_eq!(
            round_significant(0.1 + 0.2, 15).to_bits(),
            0.3_f64.to_bits()
        );
        assert_eq!(
            round_significant(212.000_000_000_000_06, 12).to_bits(),
            212.0_f64.to_bits()
        );
        assert_eq!(round_significant(-0.0, 15).to_bits(), 0.0_f64.to_bits());
        assert_eq!(
            round_significant(f64::MAX, 15).to_bits(),
            f64::MAX.to_bits()
        );
        assert_eq!(
            round_significant(-f64::MAX, 15).to_bits(),
            (-f64::MAX).to_bits()
        );
        assert_eq!(
            round_significant(5e-324, 15).to_bits(),
            5e-324_f64.to_bits()
        );
    }

    #[test]
    fn large_and_small_numbers_are_shown_in_scientific_notation() {
        assert_eq!(show(1e308), "1e308");
        assert_eq!(show(1e-9), "1e-9");
        assert_eq!(show(-2.5), "-2.5");
        assert_eq!(show(0.0), "0");
        assert_eq!(show(10.0), "10");
    }
}
