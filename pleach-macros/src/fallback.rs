//! On error: the user's fn as written (helper attributes removed) next to `compile_error!`, and
//! beside them the tool's handle with the items of a tool that compiles (thiserror's
//! `impl/src/fallback.rs`). One mistake gives one error: calls to the fn and uses of
//! `my_tool::definition()` elsewhere still resolve and type-check, in rustc and in an IDE.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::FnArg;

use crate::ast::ItemFn;
use crate::attr::{Shape, tool_attribute};
use crate::handle::{Handle, HandleBodies};

/// The fn, its handle with bodies that are never run, and the errors.
pub(crate) fn emit_tool(
    shape: Shape,
    item: &ItemFn,
    name: &str,
    errors: &syn::Error,
) -> TokenStream {
    let mut out = emit(item.to_token_stream(), errors);
    if !handle_fits(item) {
        return out;
    }
    let handle = Handle { shape, item, name };
    // The crate does not compile while the error stands, so no program can reach these bodies; a
    // panic has every return type.
    let message = format!(
        "the tool `{}` did not compile: see the error on its `{}`",
        item.sig.ident,
        shape.attribute()
    );
    let never = quote!(::core::panic!(#message));
    out.extend(handle.declaration());
    out.extend(handle.impl_block(&HandleBodies {
        try_unified: never.clone(),
        unified: never.clone(),
        definition: never.clone(),
        entry: never,
    }));
    out
}

/// Whether this expansion should add the handle. Not for a fn taking `self`: it stands in an
/// `impl` or a trait, where a struct cannot (a second error). Not when another `#[tool]` or
/// `#[unified_tool]` stays on the emitted fn: that one expands next and adds the handle.
fn handle_fits(item: &ItemFn) -> bool {
    let takes_self = item
        .sig
        .inputs
        .iter()
        .any(|input| matches!(input, FnArg::Receiver(_)));
    let other_tool_attribute = item.attrs.iter().any(|attr| tool_attribute(attr).is_some());
    !takes_self && !other_tool_attribute
}

/// Any tokens and the errors.
pub(crate) fn emit(item: TokenStream, errors: &syn::Error) -> TokenStream {
    let mut out = errors.to_compile_error();
    out.extend(item);
    out
}
