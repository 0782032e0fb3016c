//! "Did you mean": the known spellings close to an unknown one.

/// The `candidates` whose spelling is within a small edit distance of `input`, case ignored,
/// closest first (ties keep the candidates' order).
///
/// The distance allowed grows with the input: none for one character (anything is one edit from
/// `x`), one up to four characters, two up to eight, three beyond.
pub(crate) fn close_matches<'a, T>(
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
    let mut matches: Vec<(usize, &'a str, T)> = candidates
        .into_iter()
        .filter_map(|(spelling, item)| {
            // Every edit changes the length by one at most: a spelling whose length is further
            // off cannot be close, and skipping it keeps a huge input from costing
            // length × length per candidate.
            if spelling.chars().count().abs_diff(length) > allowed {
                return None;
            }
            let distance = strsim::osa_distance(&input, &spelling.to_lowercase());
            (distance <= allowed).then_some((distance, spelling, item))
        })
        .collect();
    matches.sort_by_key(|(distance, _, _)| *distance);
    matches
        .into_iter()
        .map(|(_, spelling, item)| (spelling, item))
        .collect()
}

/// `items` as prose: "`a`", "`a` or `b`", "`a`, `b` or `c`".
pub(crate) fn one_of(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_spellings_are_found_closest_first() {
        let found = close_matches(
            "kilomter",
            [("kilometer", 1), ("kilogram", 2), ("meter", 3)],
        );
        assert_eq!(found, [("kilometer", 1)]);
        let found = close_matches("SINE", [("sinh", 1), ("sin", 2), ("cos", 3)]);
        assert_eq!(found, [("sinh", 1), ("sin", 2)]);
    }

    #[test]
    fn a_huge_input_is_compared_with_nothing_of_another_length() {
        let huge = "y".repeat(1_000_000);
        let keys: Vec<String> = (0..100).map(|i| format!("{i:0>128}")).collect();
        let started = std::time::Instant::now();
        assert!(close_matches(&huge, keys.iter().map(|k| (k.as_str(), ()))).is_empty());
        // Length checks only: far under what 100 full comparisons of 10^6 × 128 would take.
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // Lengths within reach are still compared: a deleted and an added character.
        assert_eq!(
            close_matches("kilomter", [("kilometers", 1)]),
            [("kilometers", 1)]
        );
    }

    #[test]
    fn one_character_matches_nothing() {
        assert!(close_matches("x", [("e", ())]).is_empty());
    }

    #[test]
    fn lists_read_as_prose() {
        let items = |names: &[&str]| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
        assert_eq!(one_of(&items(&["a"])), "`a`");
        assert_eq!(one_of(&items(&["a", "b"])), "`a` or `b`");
        assert_eq!(one_of(&items(&["a", "b", "c"])), "`a`, `b` or `c`");
    }
}
