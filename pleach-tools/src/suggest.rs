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
    let allowed = match input.chars().count() {
        0 | 1 => return Vec::new(),
        2..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut matches: Vec<(usize, &'a str, T)> = candidates
        .into_iter()
        .filter_map(|(spelling, item)| {
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
