//! Whether a tool's body can suspend. A body with no suspension point finishes on its first poll,
//! so the runtime can run it in place instead of boxing its future.
//!
//! The scan reads tokens, macro arguments included, and is conservative: `.await` anywhere, or a
//! macro outside a short list of ones known never to await (formatting, assertions, logging,
//! `json!`), means "may suspend". A false "may suspend" only costs an allocation; the list keeps
//! a false "never suspends" out (such a tool would fail its calls cleanly, never hang).

use proc_macro2::{TokenStream, TokenTree};

/// Macros that expand to no `.await` of their own (their arguments are scanned like any code).
const NEVER_AWAIT: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "bail",
    "concat",
    "debug",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "ensure",
    "env",
    "eprint",
    "eprintln",
    "error",
    "format",
    "format_args",
    "info",
    "json",
    "matches",
    "panic",
    "print",
    "println",
    "stringify",
    "todo",
    "trace",
    "unimplemented",
    "unreachable",
    "vec",
    "warn",
    "write",
    "writeln",
];

/// Keywords that may stand right before a `!` that negates, so are not macro names (`if !(…)`).
const KEYWORDS: &[&str] = &[
    "if", "while", "match", "return", "in", "else", "break", "let", "mut", "move", "yield",
];

/// Whether `body` may suspend (see the module docs).
pub(crate) fn may_suspend(body: TokenStream) -> bool {
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    for (index, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                if name == "await" {
                    return true;
                }
                // `name ! (…)`: a macro call, unless `name` is a keyword (`if !(a && b)`).
                let bang = matches!(tokens.get(index + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                let group = matches!(tokens.get(index + 2), Some(TokenTree::Group(_)));
                if bang
                    && group
                    && !KEYWORDS.contains(&name.as_str())
                    && !NEVER_AWAIT.contains(&name.as_str())
                {
                    return true;
                }
            }
            TokenTree::Group(group) => {
                if may_suspend(group.stream()) {
                    return true;
                }
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::may_suspend;

    #[test]
    fn await_anywhere_may_suspend() {
        assert!(may_suspend(quote!({
            let x = f().await;
            x
        })));
        assert!(may_suspend(quote!({ g(async { h().await }) })));
        assert!(may_suspend(quote!({ format!("{}", f().await) })));
    }

    #[test]
    fn unknown_macros_may_suspend() {
        assert!(may_suspend(quote!({ tokio::join!(a(), b()) })));
        assert!(may_suspend(quote!({
            my_macro! { x }
        })));
        assert!(may_suspend(quote!({ select![x] })));
    }

    #[test]
    fn plain_bodies_never_suspend() {
        assert!(!may_suspend(quote!({ a + b })));
        assert!(!may_suspend(quote!({
            if !(a && b) {
                return Err(format!("bad {}", a));
            }
            tracing::info!(a, "ok");
            Ok(serde_json::json!({ "x": vec![1, 2] }))
        })));
        assert!(!may_suspend(quote!({ a != b })));
    }
}
