//! "Did you mean": the known names close to an unknown one, by the one rule every part of pleach
//! uses — the macros' compile errors on a misspelt key or safety tier, the runtime's unknown tool
//! names, and the catalog's unknown units, time zones, notes, files, functions and programs.
//!
//! [`close_matches`] holds the rule and returns every match, closest first; [`closest`] is its
//! first. How a suggestion reads is each caller's business: this crate finds, it does not word.
//!
//! ```
//! use pleach_suggest::{close_matches, closest};
//!
//! assert_eq!(closest("nmae", ["name", "description"]), Some("name"));
//! assert_eq!(closest("maximum", ["description", "default", "min", "max"]), Some("max"));
//! assert_eq!(closest("retries", ["name", "description"]), None);
//!
//! // An item travels with each spelling: here, the unit a spelling names.
//! let found = close_matches("KILOMTER", [("kilometer", "km"), ("kilogram", "kg")]);
//! assert_eq!(found, [("kilometer", "km")]);
//! ```

// Examples are held to the code's standard: a warning in one fails the doc tests.
#![doc(test(attr(deny(warnings))))]

/// The `candidates` close to `input`, closest first, each with its item.
///
/// The rule, the same for every "did you mean" of pleach:
///
/// 1. **Case is ignored**: both sides are compared lowercased (`SINE` finds `sin`); the spelling
///    returned is the candidate's own.
/// 2. **A typo**: a candidate within a small optimal-string-alignment distance of `input`
///    (an inserted, deleted or substituted character, or two adjacent ones swapped, is one edit
///    each: `nmae` is one edit from `name`). The edits allowed grow with the input's length in
///    characters: none for one character (anything is one edit from `x`), one up to four
///    characters, two up to eight, three beyond.
/// 3. **Failing any typo, another spelling of the same word**: a candidate that `input` is the
///    start of, or that is the start of `input`, the shorter of the two at least three characters
///    (`desc` → `description`, `maximum` → `max`: another library's spelling of a key). A typo
///    explains an input better, so these are offered only when no candidate is one.
/// 4. **Order**: by distance (for another spelling, the difference in length, which is its
///    distance), ties in the order the candidates came.
///
/// A candidate whose length is out of reach of the allowance is never compared, so a huge
/// `input` against short candidates costs a length count and a prefix check per candidate, not
/// length × length. An empty `input`, or a one-character one, matches nothing.
///
/// ```
/// use pleach_suggest::close_matches;
///
/// let functions = [("sinh", 1), ("sin", 2), ("cos", 3)];
/// assert_eq!(close_matches("SINE", functions), [("sinh", 1), ("sin", 2)]);
///
/// // A typo wins over another spelling: `logger_settings` starts with `logg`, but `log` is a typo.
/// let names = [("logger_settings", ()), ("log", ())];
/// assert_eq!(close_matches("logg", names), [("log", ())]);
///
/// // Nothing near enough: nothing at all.
/// assert!(close_matches("weather", [("wire_money", ())]).is_empty());
/// ```
pub fn close_matches<'a, T>(
    input: &str,
    candidates: impl IntoIterator<Item = (&'a str, T)>,
) -> Vec<(&'a str, T)> {
    let input = input.to_lowercase();
    let length = input.chars().count();
    let allowed = match length {
        0 | 1 => return Vec::new(),
        2..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut typos: Vec<(usize, &'a str, T)> = Vec::new();
    let mut other_spellings: Vec<(usize, &'a str, T)> = Vec::new();
    for (spelling, item) in candidates {
        let folded = spelling.to_lowercase();
        let folded_length = folded.chars().count();
        // Every edit changes the length by one at most: a spelling whose length is further off
        // cannot be a typo, and skipping it keeps a huge input from costing length × length.
        let apart = folded_length.abs_diff(length);
        if apart <= allowed {
            let distance = strsim::osa_distance(&input, &folded);
            if distance <= allowed {
                typos.push((distance, spelling, item));
            }
        } else if typos.is_empty() && length.min(folded_length) >= 3 {
            let (short, long) = if folded_length < length {
                (folded.as_str(), input.as_str())
            } else {
                (input.as_str(), folded.as_str())
            };
            if long.starts_with(short) {
                other_spellings.push((apart, spelling, item));
            }
        }
    }
    let mut found = if typos.is_empty() {
        other_spellings
    } else {
        typos
    };
    // Stable: equal distances keep the candidates' order.
    found.sort_by_key(|(distance, _, _)| *distance);
    found
        .into_iter()
        .map(|(_, spelling, item)| (spelling, item))
        .collect()
}

/// The closest of `candidates` to `input`, by [`close_matches`]' rule, or `None` when none is
/// close.
///
/// ```
/// use pleach_suggest::closest;
///
/// let tiers = ["critical", "standard", "advisory"];
/// assert_eq!(closest("critcal", tiers), Some("critical"));
/// assert_eq!(closest("Standart", tiers), Some("standard"));
/// assert_eq!(closest("zzz", tiers), None);
/// ```
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    close_matches(input, candidates.into_iter().map(|spelling| (spelling, ())))
        .into_iter()
        .next()
        .map(|(spelling, ())| spelling)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    const ARG_KEYS: [&str; 4] = ["description", "default", "min", "max"];

    #[test]
    fn typos_are_found_closest_first() {
        let units = [("kilometer", 1), ("kilogram", 2), ("meter", 3)];
        assert_eq!(close_matches("kilomter", units), [("kilometer", 1)]);
        assert_eq!(
            closest("safty_tier", ["id", "safety_tier"]),
            Some("safety_tier")
        );
        assert_eq!(closest("rt_ad", ["rt_sub", "rt_add"]), Some("rt_add"));
        // A transposition is one edit, so `nmae` is as close to `name` as `nam` is.
        assert_eq!(closest("nmae", ["description", "name"]), Some("name"));
        // Closer first, whatever the candidates' order.
        assert_eq!(
            close_matches("kilometr", [("kilometers", 'b'), ("kilometer", 'a')]),
            [("kilometer", 'a'), ("kilometers", 'b')]
        );
    }

    #[test]
    fn ties_keep_the_candidates_order() {
        assert_eq!(
            close_matches("sine", [("sinh", 1), ("sin", 2), ("sing", 3)]),
            [("sinh", 1), ("sin", 2), ("sing", 3)]
        );
        assert_eq!(closest("sine", ["sing", "sinh"]), Some("sing"));
    }

    #[test]
    fn case_is_ignored_and_the_candidates_spelling_returned() {
        assert_eq!(closest("readme.MD", ["README.md"]), Some("README.md"));
        assert_eq!(
            closest("Europe/PARIS", ["Europe/Paris"]),
            Some("Europe/Paris")
        );
        // Characters, not bytes: `ü` is one substitution from `u`.
        assert_eq!(closest("Zurich", ["Zürich"]), Some("Zürich"));
    }

    #[test]
    fn the_allowance_grows_with_the_input() {
        // One character: anything is one edit away, so nothing is suggested.
        assert_eq!(closest("x", ["e", "xy"]), None);
        assert_eq!(closest("", ["a", "ab"]), None);
        // Up to four characters, one edit.
        assert_eq!(closest("ab", ["abc"]), Some("abc"));
        assert_eq!(closest("abcd", ["abef"]), None);
        // Up to eight, two.
        assert_eq!(closest("abcdef", ["abcdxy"]), Some("abcdxy"));
        assert_eq!(closest("abcdef", ["abcxyz"]), None);
        // Beyond, three.
        assert_eq!(closest("abcdefghij", ["abcdefgxyz"]), Some("abcdefgxyz"));
        assert_eq!(closest("abcdefghij", ["abcdefwxyz"]), None);
        assert_eq!(closest("zzz", ["name", "description"]), None);
        assert_eq!(closest("retries", ["name", "description"]), None);
    }

    #[test]
    fn other_spellings_are_found_when_no_typo_is() {
        assert_eq!(closest("maximum", ARG_KEYS), Some("max"));
        assert_eq!(closest("minimum", ARG_KEYS), Some("min"));
        assert_eq!(closest("desc", ARG_KEYS), Some("description"));
        // The shorter side needs three characters.
        assert_eq!(closest("de", ARG_KEYS), None);
        assert_eq!(closest("mi", ["minimum"]), None);
        // Shortest difference first.
        assert_eq!(
            close_matches("log", [("logarithm", ()), ("log10", ())]),
            [("log10", ()), ("logarithm", ())]
        );
        // A typo beats them.
        assert_eq!(
            close_matches("maxi", [("maximum", 1), ("max", 2)]),
            [("max", 2)]
        );
        // Case is ignored here too.
        assert_eq!(closest("DESC", ARG_KEYS), Some("description"));
    }

    #[test]
    fn a_huge_input_is_compared_with_nothing_of_another_length() {
        let huge = "y".repeat(1_000_000);
        let keys: Vec<String> = (0..100).map(|i| format!("{i:0>128}")).collect();
        let started = Instant::now();
        assert!(close_matches(&huge, keys.iter().map(|k| (k.as_str(), ()))).is_empty());
        // A huge input that starts with a candidate is that candidate spelt longer; the check is
        // a prefix comparison, not a distance.
        let starts_with_a_key = format!("{}{huge}", keys[7]);
        assert_eq!(
            closest(&starts_with_a_key, keys.iter().map(String::as_str)),
            Some(keys[7].as_str())
        );
        // Length checks and prefix checks only: far under what 100 full comparisons of
        // 10^6 × 128 characters would take.
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn lengths_within_reach_are_still_compared() {
        // A deleted and an added character: two edits, in reach of an eight-character input.
        assert_eq!(
            close_matches("kilomter", [("kilometers", 1)]),
            [("kilometers", 1)]
        );
    }
}
