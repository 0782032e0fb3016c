//! "Did you mean": the nearest known name to one that is not known.

/// `; did you mean `x`?` for the closest of `names`, or nothing.
pub(crate) fn suggestion(name: &str, names: &[&str]) -> String {
    names
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(name, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len().max(name.len()) / 3).max(1))
        .min()
        .map_or_else(String::new, |(_, near)| format!("; did you mean `{near}`?"))
}
