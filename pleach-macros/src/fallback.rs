//! On error: the user's fn as written (helper attributes removed) next to `compile_error!`, so one
//! mistake gives one error and calls to the fn elsewhere still resolve.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// The fn and the errors.
pub(crate) fn emit_fn(item: &crate::ast::ItemFn, errors: &syn::Error) -> TokenStream {
    emit(item.to_token_stream(), errors)
}

/// Any tokens and the errors.
pub(crate) fn emit(item: TokenStream, errors: &syn::Error) -> TokenStream {
    let mut out = errors.to_compile_error();
    out.extend(item);
    out
}
