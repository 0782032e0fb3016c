//! Text a result or a message quotes, cut short on a character boundary.

/// The first `max` characters of `text`, and `…` if there were more.
pub(crate) fn first_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_on_characters() {
        assert_eq!(first_chars("short", 80), "short");
        assert_eq!(first_chars("exactly", 7), "exactly");
        assert_eq!(
            first_chars(&"é".repeat(100), 80),
            format!("{}…", "é".repeat(80))
        );
    }
}
