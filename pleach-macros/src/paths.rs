//! The one place generated code's paths into pleach-core are spelled (`serde_derive`'s
//! `private` token): absolute from `::pleach_core`, so a user's crate needs no other dependency
//! and no local item can shadow them.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote_spanned};

/// `::pleach_core` (the public API) or `::pleach_core::__private` (what only generated code uses),
/// every token at one span.
#[derive(Clone, Copy)]
pub(crate) struct CratePath {
    private: bool,
    span: Span,
}

impl CratePath {
    /// `::pleach_core`.
    pub(crate) fn public() -> Self {
        CratePath {
            private: false,
            span: Span::call_site(),
        }
    }

    /// `::pleach_core::__private`.
    pub(crate) fn private() -> Self {
        CratePath {
            private: true,
            span: Span::call_site(),
        }
    }

    /// The same path with every token at `span`: a trait bound of the item it leads to is then
    /// reported at `span` (the user's type, the fn's name), not on the attribute.
    pub(crate) fn at(self, span: Span) -> Self {
        CratePath { span, ..self }
    }

    /// `"::pleach_core::__private::{item}"`, for attributes that take a path as a string
    /// (`#[serde(crate = "…")]`, `#[serde(deserialize_with = "…")]`).
    pub(crate) fn string(self, item: &str) -> String {
        let path = self.to_token_stream().to_string().replace(' ', "");
        format!("{path}::{item}")
    }
}

impl ToTokens for CratePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let span = self.span;
        tokens.extend(if self.private {
            quote_spanned!(span=> ::pleach_core::__private)
        } else {
            quote_spanned!(span=> ::pleach_core)
        });
    }
}
