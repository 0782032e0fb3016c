//! The body is emitted as written, not re-printed: inner attributes, items, labelled loops, an early
//! `return` and macros keep their meaning, whether the tool runs in place (no `.await`) or boxed.
#![deny(warnings)]

use pleach_core::{ToolContext, serde_json::json, tool};

/// Counts the vowels of a word, stopping at the first digit.
#[tool]
async fn vowels(word: String) -> usize {
    #![allow(clippy::needless_return)]
    fn is_vowel(c: char) -> bool {
        matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u')
    }
    let mut count = 0;
    'chars: for c in word.chars() {
        if c.is_ascii_digit() {
            break 'chars;
        }
        count += usize::from(is_vowel(c));
    }
    return count;
}

/// Waits, then counts the vowels of a word.
#[tool]
async fn vowels_later(word: String) -> usize {
    #![allow(clippy::needless_return)]
    tokio::task::yield_now().await;
    return vowels(word).await;
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for definition in [vowels::definition(), vowels_later::definition()] {
        let out = definition
            .call(r#"{"word":"Education7aa"}"#, ToolContext::new("c1"))
            .await;
        assert_eq!(out.unwrap(), json!(5), "{}", definition.name());
    }
    assert_eq!(vowels("pleach".into()).await, 2);
}
