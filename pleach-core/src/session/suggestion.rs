//! "Did you mean" for an unknown tool name, worded for the runtime's messages; the rule is
//! pleach-suggest's, shared with the macros and the catalog.

/// `; did you mean `x`?` for the closest of `names`, or nothing.
pub(crate) fn suggestion(name: &str, names: &[&str]) -> String {
    pleach_suggest::closest(name, names.iter().copied())
        .map_or_else(String::new, |near| format!("; did you mean `{near}`?"))
}
