//! "Did you mean": which known spellings are close to an unknown one is pleach-suggest's rule,
//! the one the macros and the runtime use too; how the catalog lists them is here.

pub(crate) use pleach_suggest::close_matches;

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
    fn lists_read_as_prose() {
        let items = |names: &[&str]| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
        assert_eq!(one_of(&items(&["a"])), "`a`");
        assert_eq!(one_of(&items(&["a", "b"])), "`a` or `b`");
        assert_eq!(one_of(&items(&["a", "b", "c"])), "`a`, `b` or `c`");
    }
}
