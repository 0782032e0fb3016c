//! `#[input]` and `#[output]` on a struct or an enum: the derives a tool's input type
//! (`Deserialize`, `JsonSchema`) or output type (`Serialize`, `JsonSchema`) needs, and the crate
//! attributes that point them at pleach-core's re-exports, so a crate that names only pleach-core
//! can write one. The user's attributes stay as written; the macro adds only what is missing.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::punctuated::Punctuated;
use syn::{Attribute, Item, Meta, Token};

use crate::ctxt::Ctxt;
use crate::fallback;
use crate::paths::CratePath;

/// Which side of a tool the type is on.
#[derive(Clone, Copy)]
pub(crate) enum Role {
    /// `#[input]`: what a tool takes.
    Input,
    /// `#[output]`: what a tool returns.
    Output,
}

impl Role {
    /// The derives the attribute adds, each with the crate whose `crate = "…"` attribute it reads.
    fn derives(self) -> [(&'static str, &'static str); 2] {
        match self {
            Role::Input => [("Deserialize", "serde"), ("JsonSchema", "schemars")],
            Role::Output => [("Serialize", "serde"), ("JsonSchema", "schemars")],
        }
    }

    fn other(self) -> Role {
        match self {
            Role::Input => Role::Output,
            Role::Output => Role::Input,
        }
    }

    fn attribute(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
        }
    }

    /// What the attribute is for, in the error for an item that is not a type.
    fn placement(self) -> &'static str {
        match self {
            Role::Input => {
                "`#[input]` goes on a struct or an enum, the type of a tool's input: `#[input] struct Query { … }`; on a parameter of a `#[tool]` fn it marks that parameter as the whole input"
            }
            Role::Output => {
                "`#[output]` goes on a struct or an enum, the type a tool returns: `#[output] struct Answer { … }`"
            }
        }
    }
}

/// Expands `#[input(args)]` or `#[output(args)]` on `item`.
pub(crate) fn expand(role: Role, args: TokenStream, item: TokenStream) -> TokenStream {
    let errors = Ctxt::new();
    if !args.is_empty() {
        errors.push(syn::Error::new_spanned(
            args,
            format!(
                "`#[{}]` takes no arguments; configure the type with `#[serde(…)]` and `#[schemars(…)]` beside it",
                role.attribute()
            ),
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
            let misplaced = syn::Error::new_spanned(item_head(other), role.placement());
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
    // `#[input] #[output]` on one type: the first expands both (the second, left on the item,
    // would run after this one's derives and add `JsonSchema` twice).
    let other = role.other();
    let both = take_attribute(attrs, other.attribute());
    let mut derives: Vec<(&str, &str)> = role.derives().to_vec();
    if both {
        for derive in other.derives() {
            if !derives.contains(&derive) {
                derives.push(derive);
            }
        }
    }
    add_derives(attrs, &derives);
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
fn add_derives(attrs: &mut Vec<Attribute>, derives: &[(&str, &str)]) {
    let core = CratePath::public();
    let listed = derived(attrs);
    let missing: Vec<TokenStream> = derives
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
    let mut krates: Vec<&str> = derives.iter().map(|&(_, krate)| krate).collect();
    krates.sort_unstable();
    krates.dedup();
    let crate_attrs: Vec<Attribute> = krates
        .into_iter()
        .filter(|krate| !names_crate(attrs, krate))
        .map(|krate| {
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

/// Removes a bare `#[name]` (or `#[pleach_core::name]`) from `attrs`; whether there was one.
fn take_attribute(attrs: &mut Vec<Attribute>, name: &str) -> bool {
    let before = attrs.len();
    attrs.retain(|attr| {
        let is_it = matches!(attr.meta, Meta::Path(_))
            && attr.path().segments.last().is_some_and(|s| s.ident == name)
            && (attr.path().segments.len() == 1
                || attr
                    .path()
                    .segments
                    .first()
                    .is_some_and(|s| s.ident == "pleach_core"));
        !is_it
    });
    attrs.len() != before
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
