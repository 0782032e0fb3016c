//! `#[input]` on a struct or an enum: the derives an input type needs (`Deserialize`,
//! `JsonSchema`) and the crate attributes that point them at pleach-core's re-exports, so a crate
//! that names only pleach-core can write one. The user's attributes stay as written; the macro
//! adds only what is missing.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::punctuated::Punctuated;
use syn::{Attribute, Item, Meta, Token};

use crate::ctxt::Ctxt;
use crate::fallback;
use crate::paths::CratePath;

/// The derives `#[input]` adds, each with the crate whose `crate = "…"` attribute it reads.
const DERIVES: [(&str, &str); 2] = [("Deserialize", "serde"), ("JsonSchema", "schemars")];

/// Expands `#[input(args)]` on `item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let errors = Ctxt::new();
    if !args.is_empty() {
        errors.push(syn::Error::new_spanned(
            args,
            "`#[input]` takes no arguments; configure the type with `#[serde(…)]` and `#[schemars(…)]` beside it",
        ));
    }
    let mut item = match syn::parse2::<Item>(item.clone()) {
        Ok(item) => item,
        Err(error) => {
            // rustc parsed the item before calling the macro, so syn rarely refuses it; when it
            // does, the item goes back as written with syn's error.
            let mut combined = error;
            if let Err(more) = errors.check() {
                combined.combine(more);
            }
            return fallback::emit(item, &combined);
        }
    };
    let attrs = match &mut item {
        Item::Struct(item) => &mut item.attrs,
        Item::Enum(item) => &mut item.attrs,
        other => {
            let misplaced = syn::Error::new_spanned(
                item_head(other),
                "`#[input]` goes on a struct or an enum, the type of a tool's input: `#[input] struct Query { … }`; on a parameter of a `#[tool]` fn it marks that parameter as the whole input",
            );
            let errors = match errors.check() {
                Ok(()) => misplaced,
                Err(mut earlier) => {
                    earlier.combine(misplaced);
                    earlier
                }
            };
            return fallback::emit(other.to_token_stream(), &errors);
        }
    };
    add_derives(attrs);
    let out = item.into_token_stream();
    match errors.check() {
        Ok(()) => out,
        // Expanded anyway: the type keeps its derives, so its uses report nothing more.
        Err(errors) => fallback::emit(out, &errors),
    }
}

/// Puts the missing derives first (before any helper attribute that needs them) and the missing
/// `crate = "…"` attributes last (after every derive, the user's included: a `Serialize` the user
/// derives reads the same `#[serde(crate = …)]`).
fn add_derives(attrs: &mut Vec<Attribute>) {
    let core = CratePath::public();
    let listed = derived(attrs);
    let missing: Vec<TokenStream> = DERIVES
        .iter()
        .filter(|&&(name, _)| !listed.iter().any(|derived| derived == name))
        .map(|&(name, krate)| {
            let (krate, name) = (
                syn::Ident::new(krate, proc_macro2::Span::call_site()),
                syn::Ident::new(name, proc_macro2::Span::call_site()),
            );
            quote!(#core::#krate::#name)
        })
        .collect();
    let crate_attrs: Vec<Attribute> = DERIVES
        .iter()
        .filter(|&&(_, krate)| !names_crate(attrs, krate))
        .map(|&(_, krate)| {
            let helper = syn::Ident::new(krate, proc_macro2::Span::call_site());
            let path = core.string(krate);
            syn::parse_quote!(#[#helper(crate = #path)])
        })
        .collect();
    if !missing.is_empty() {
        attrs.insert(0, syn::parse_quote!(#[derive(#(#missing),*)]));
    }
    attrs.extend(crate_attrs);
}

/// The last path segment of every derive listed on the type (`serde::Deserialize` is
/// `Deserialize`).
fn derived(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("derive"))
        .filter_map(|attr| {
            attr.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .filter_map(|path| path.segments.last().map(|s| s.ident.to_string()))
        .collect()
}

/// Whether a `#[helper(…)]` attribute (`serde`, `schemars`) already says `crate = …`.
fn names_crate(attrs: &[Attribute], helper: &str) -> bool {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident(helper))
        .filter_map(|attr| match &attr.meta {
            Meta::List(list) => Some(list.tokens.clone()),
            _ => None,
        })
        .any(|tokens| {
            let tokens: Vec<_> = tokens.into_iter().collect();
            tokens.windows(2).any(|pair| {
                matches!(&pair[0], proc_macro2::TokenTree::Ident(ident) if ident == "crate")
                    && matches!(&pair[1], proc_macro2::TokenTree::Punct(punct) if punct.as_char() == '=')
            })
        })
}

/// The tokens that say what an item is (`fn name`, `union Name`, `impl`), where an error about
/// the item's kind belongs; the whole item for a kind without a keyword of its own.
fn item_head(item: &Item) -> TokenStream {
    match item {
        Item::Fn(item) => {
            let (fn_token, ident) = (&item.sig.fn_token, &item.sig.ident);
            quote!(#fn_token #ident)
        }
        Item::Union(item) => {
            let (union_token, ident) = (&item.union_token, &item.ident);
            quote!(#union_token #ident)
        }
        Item::Trait(item) => {
            let (trait_token, ident) = (&item.trait_token, &item.ident);
            quote!(#trait_token #ident)
        }
        Item::Type(item) => {
            let (type_token, ident) = (&item.type_token, &item.ident);
            quote!(#type_token #ident)
        }
        Item::Const(item) => {
            let (const_token, ident) = (&item.const_token, &item.ident);
            quote!(#const_token #ident)
        }
        Item::Static(item) => {
            let (static_token, ident) = (&item.static_token, &item.ident);
            quote!(#static_token #ident)
        }
        Item::Mod(item) => {
            let (mod_token, ident) = (&item.mod_token, &item.ident);
            quote!(#mod_token #ident)
        }
        Item::Impl(item) => item.impl_token.to_token_stream(),
        other => other.to_token_stream(),
    }
}
