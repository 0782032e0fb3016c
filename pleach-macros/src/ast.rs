//! A typed view of the annotated fn: its parameters (model-facing arguments, the injected context,
//! or one input type), its return type and its docs, each pointing at the original tokens.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{ToTokens, TokenStreamExt};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{
    Attribute, Block, FnArg, GenericArgument, Ident, Meta, Pat, PathArguments, ReturnType,
    Signature, Type, Visibility,
};

use crate::attr::{ArgAttrs, parse_arg_attr};
use crate::ctxt::Ctxt;

/// The helper attributes `#[tool]` reads on parameters (and removes, as the compiler requires).
const HELPER_ATTRS: &[&str] = &["arg", "input"];

/// The annotated fn, its signature parsed and its body kept as tokens (tracing-attributes'
/// `MaybeItemFn`). Everything the macro generates comes from the signature, so a body still being
/// typed does not stop the expansion: the fn is emitted with the body as written, and rustc
/// reports the body's syntax error where it is, once.
pub(crate) struct ItemFn {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    /// `{ … }`, as written.
    pub(crate) body: Group,
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let body: Group = input.parse()?;
        if body.delimiter() != Delimiter::Brace {
            return Err(syn::Error::new(
                body.span(),
                "expected the fn's body `{ … }`",
            ));
        }
        Ok(ItemFn {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ItemFn {
    /// Whether the body reads as complete Rust (an `ItemFn`'s block: inner attributes, then
    /// statements).
    pub(crate) fn body_parses(&self) -> bool {
        let block = |input: ParseStream<'_>| {
            input.call(Attribute::parse_inner)?;
            input.call(Block::parse_within)
        };
        block.parse2(self.body.stream()).is_ok()
    }
}

impl ToTokens for ItemFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.append_all(&self.attrs);
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

/// The fn as the macro sees it.
pub(crate) struct ToolFn {
    /// The fn with the helper attributes removed from its parameters; otherwise as written.
    pub(crate) item: ItemFn,
    pub(crate) params: Vec<Param>,
    pub(crate) output: Output,
    /// The doc comment, lines joined, if any.
    pub(crate) docs: Option<String>,
}

/// One parameter.
pub(crate) struct Param {
    /// The binding, as the fn spells it (used to pass the value).
    pub(crate) ident: Ident,
    /// The property name the model sees (the binding without `r#`).
    pub(crate) property: String,
    pub(crate) ty: Type,
    pub(crate) kind: ParamKind,
    /// Its `#[arg(…)]`s, as written.
    pub(crate) arg_attrs: Vec<syn::Attribute>,
    /// Its first `#[input]`, as written.
    pub(crate) input_attr: Option<syn::Attribute>,
    /// The whole parameter as written, so an error about it covers it from first to last token.
    pub(crate) tokens: TokenStream,
}

/// What a parameter is to the tool.
pub(crate) enum ParamKind {
    /// The injected `ToolContext`; never in the schema.
    Context,
    /// `#[input]`: the whole input in one type.
    Input,
    /// A model-facing argument.
    Argument {
        attrs: Box<ArgAttrs>,
        /// `Option<T>`: not required.
        optional: bool,
    },
}

/// What the fn returns.
pub(crate) enum Output {
    /// `T` (or nothing: `()`).
    Plain(Type),
    /// `Result<T, E>` or an alias ending in `Result<T>`: `ok` is `T`; `error_span` is `E`'s (or the
    /// alias's `Result`), where an unusable error type is reported.
    Result { ok: Type, error_span: Span },
}

/// Removes `#[arg]` / `#[input]` from the parameters of `item` (also for the fallback, so a mistake
/// elsewhere does not add "cannot find attribute" errors), with doc comments and `#[cfg_attr]`s
/// holding a helper, which `param_attrs_supported` reports in our words.
fn strip_helper_attrs(item: &mut ItemFn) {
    for input in &mut item.sig.inputs {
        if let FnArg::Typed(pat_type) = input {
            pat_type.attrs.retain(|a| {
                let reported = a.path().is_ident("doc")
                    || (a.path().is_ident("cfg_attr") && holds_helper_attr(a));
                !reported && !HELPER_ATTRS.iter().any(|h| a.path().is_ident(h))
            });
        }
    }
}

/// Attributes on a parameter that the macro cannot honour, each reported with what to write
/// instead (rustc's own errors for them point at generated code or list built-in attributes).
fn param_attrs_supported(attrs: &[syn::Attribute], errors: &Ctxt) {
    for attr in attrs {
        if attr.path().is_ident("doc") {
            // `///` on a parameter: what the user means is the argument's description.
            let text = match &attr.meta {
                Meta::NameValue(syn::MetaNameValue {
                    value:
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(text),
                            ..
                        }),
                    ..
                }) => text.value().trim().to_owned(),
                _ => "…".to_owned(),
            };
            errors.push(syn::Error::new_spanned(
                attr,
                format!(
                    "a doc comment cannot describe a parameter (Rust does not allow one there); write `#[arg(description = {text:?})]`"
                ),
            ));
        } else if attr.path().is_ident("cfg") {
            // The schema and the call are generated from the parameters as written, before `cfg`
            // removes any: they would disagree with the fn the compiler keeps.
            errors.push(syn::Error::new_spanned(
                attr,
                "a tool parameter cannot be `#[cfg]`'d: the schema and the call are generated from every parameter as written; put the `#[cfg]` on whole tools (one fn per configuration) or take an `Option<T>`",
            ));
        } else if attr.path().is_ident("cfg_attr") && holds_helper_attr(attr) {
            errors.push(syn::Error::new_spanned(
                attr,
                "`#[arg]` and `#[input]` cannot sit inside `#[cfg_attr]`: the macro reads them before `cfg_attr` applies; write them directly on the parameter",
            ));
        }
    }
}

/// Whether `#[cfg_attr(predicate, …)]` names `arg` or `input` among its attributes.
fn holds_helper_attr(attr: &syn::Attribute) -> bool {
    let Meta::List(list) = &attr.meta else {
        return false;
    };
    list.tokens.clone().into_iter().any(|token| {
        matches!(&token, proc_macro2::TokenTree::Ident(ident) if HELPER_ATTRS.iter().any(|h| ident == h))
    })
}

/// Builds the typed view, collecting mistakes in the parameters into `errors`.
pub(crate) fn analyze(mut item: ItemFn, errors: &Ctxt) -> ToolFn {
    let mut params = Vec::new();
    for input in &item.sig.inputs {
        let FnArg::Typed(pat_type) = input else {
            // A receiver; `check::no_receiver` reports it.
            continue;
        };
        param_attrs_supported(&pat_type.attrs, errors);
        let ident = match &*pat_type.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                errors.push(syn::Error::new_spanned(
                    other,
                    "tool parameters must be plain names (the name is the argument the model sees); destructure inside the body",
                ));
                continue;
            }
        };
        let ty = (*pat_type.ty).clone();
        let arg_attrs: Vec<syn::Attribute> = pat_type
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("arg"))
            .cloned()
            .collect();
        let input_attr = pat_type
            .attrs
            .iter()
            .find(|a| a.path().is_ident("input"))
            .cloned();
        if let Some(attr) = &input_attr {
            input_marker_is_bare(attr, errors);
        }
        // `check` reports a helper that does not apply to the parameter's kind.
        let kind = if is_tool_context(&ty) {
            ParamKind::Context
        } else if input_attr.is_some() {
            ParamKind::Input
        } else {
            let mut attrs = ArgAttrs::default();
            for attr in &arg_attrs {
                parse_arg_attr(attr, &mut attrs, errors);
            }
            ParamKind::Argument {
                attrs: Box::new(attrs),
                optional: is_option(&ty),
            }
        };
        params.push(Param {
            property: ident.unraw().to_string(),
            ident,
            ty,
            kind,
            arg_attrs,
            input_attr,
            tokens: pat_type.to_token_stream(),
        });
    }
    strip_helper_attrs(&mut item);
    let output = match &item.sig.output {
        ReturnType::Default => Output::Plain(syn::parse_quote!(())),
        ReturnType::Type(_, ty) => match result_types(ty) {
            Some((ok, error_span)) => Output::Result { ok, error_span },
            None => Output::Plain((**ty).clone()),
        },
    };
    let docs = doc_comment(&item.attrs);
    ToolFn {
        item,
        params,
        output,
        docs,
    }
}

/// `#[input]` is a marker; syn's own message for arguments ("unexpected token in attribute") does
/// not say what to write instead.
fn input_marker_is_bare(attr: &syn::Attribute, errors: &Ctxt) {
    let message = "`#[input]` takes no arguments; write `#[input]` and configure the type with `#[serde(…)]` and `#[schemars(…)]` on its definition";
    match &attr.meta {
        Meta::Path(_) => {}
        Meta::List(list) => errors.push(syn::Error::new(list.delimiter.span().join(), message)),
        Meta::NameValue(name_value) => {
            let (eq, value) = (&name_value.eq_token, &name_value.value);
            errors.push(syn::Error::new_spanned(quote::quote!(#eq #value), message));
        }
    }
}

/// The last path segment of a type, with its arguments.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

/// `ToolContext` (any path ending in it, without arguments).
pub(crate) fn is_tool_context(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "ToolContext" && s.arguments.is_none())
}

/// `&ToolContext` / `&mut ToolContext`: a context taken by reference.
pub(crate) fn is_tool_context_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if is_tool_context(&r.elem))
}

/// How a plain-data parameter is shaped, for reading it exactly as its schema reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlainShape {
    /// A JSON scalar or `String`.
    Scalar { integer: bool },
    /// `Option` of one.
    Optional { integer: bool },
    /// `Vec` of one.
    List { integer: bool },
}

impl PlainShape {
    /// Whether the scalar is an integer type (read leniently: JSON Schema counts `2.0` as an
    /// integer, serde does not).
    pub(crate) fn integer(self) -> bool {
        match self {
            PlainShape::Scalar { integer }
            | PlainShape::Optional { integer }
            | PlainShape::List { integer } => integer,
        }
    }
}

/// The shape of `ty` when serde (with lenient integers) checks everything its schema says: JSON
/// scalars, `String`, and one `Option` or `Vec` of those. `None` for anything else (a user type
/// may carry `#[schemars]` constraints serde ignores; a map may repeat a key): those go through
/// the generic validator.
pub(crate) fn plain_shape(ty: &Type) -> Option<PlainShape> {
    let segment = last_segment(ty)?;
    let name = segment.ident.to_string();
    match &segment.arguments {
        PathArguments::None => scalar(&name).map(|integer| PlainShape::Scalar { integer }),
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => {
            let Some(GenericArgument::Type(inner)) = args.args.first() else {
                return None;
            };
            let inner = last_segment(inner)?;
            if !inner.arguments.is_none() {
                return None;
            }
            let integer = scalar(&inner.ident.to_string())?;
            match name.as_str() {
                "Option" => Some(PlainShape::Optional { integer }),
                "Vec" => Some(PlainShape::List { integer }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether every value of output type `ty` serializes to JSON its derived schema accepts: the
/// integer types, `bool` and `String`, alone or in an `Option` or a `Vec`. Floats are left out
/// (NaN and the infinities serialize as `null`, which `"type": "number"` refuses).
pub(crate) fn exact_output(ty: &Type) -> bool {
    plain_shape(ty).is_some()
        && last_segment(ty).is_some_and(|segment| {
            let scalar = match &segment.arguments {
                PathArguments::AngleBracketed(args) => match args.args.first() {
                    Some(GenericArgument::Type(inner)) => last_segment(inner).map(|s| &s.ident),
                    _ => None,
                },
                _ => Some(&segment.ident),
            };
            scalar.is_some_and(|ident| ident != "f32" && ident != "f64")
        })
}

/// `Some(is_integer)` for the scalar type names serde reads as JSON scalars.
fn scalar(name: &str) -> Option<bool> {
    match name {
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => Some(true),
        "bool" | "f32" | "f64" | "String" => Some(false),
        _ => None,
    }
}

/// `Option<T>`.
fn is_option(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| {
        s.ident == "Option"
            && matches!(&s.arguments, PathArguments::AngleBracketed(a) if a.args.len() == 1)
    })
}

/// `T` of `Result<T, E>`, `io::Result<T>`, `anyhow::Result<T>`, …, and the span of `E` (of
/// `Result` for an alias without it).
fn result_types(ty: &Type) -> Option<(Type, Span)> {
    let segment = last_segment(ty)?;
    if segment.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    let GenericArgument::Type(ok) = args.args.first()? else {
        return None;
    };
    let error_span = match args.args.iter().nth(1) {
        Some(GenericArgument::Type(error)) => error.span(),
        _ => segment.ident.span(),
    };
    Some((ok.clone(), error_span))
}

/// The doc comment: `///` lines joined, common indentation removed, empty when blank.
fn doc_comment(attrs: &[syn::Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        // `"".lines()` is empty: a blank `///` line must still separate paragraphs.
        .flat_map(|s| {
            if s.is_empty() {
                vec![String::new()]
            } else {
                s.lines().map(str::to_owned).collect::<Vec<_>>()
            }
        })
        .collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let text = lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::{ItemFn, Type, exact_output};

    fn ty(text: &str) -> Type {
        syn::parse_str(text).expect("a type")
    }

    #[test]
    fn integers_bools_and_strings_meet_their_schema_by_type() {
        for text in [
            "i64",
            "u32",
            "bool",
            "String",
            "Option<u8>",
            "Vec<String>",
            "std::string::String",
        ] {
            assert!(exact_output(&ty(text)), "{text}");
        }
    }

    #[test]
    fn floats_and_other_types_are_checked() {
        for text in [
            "f64",
            "Option<f32>",
            "Vec<f64>",
            "Report",
            "Vec<Report>",
            "()",
            "(i64, i64)",
            "Option<Vec<i64>>",
        ] {
            assert!(!exact_output(&ty(text)), "{text}");
        }
    }

    fn item(text: &str) -> ItemFn {
        syn::parse_str(text).expect("a signature and a body")
    }

    #[test]
    fn a_body_that_does_not_parse_still_gives_the_fn() {
        let half_typed = item("async fn lookup(word: String) -> String { let meaning = ; word }");
        assert_eq!(half_typed.sig.ident, "lookup");
        assert!(!half_typed.body_parses());
        let half_match = item("async fn f(w: String) { match w.as_str() { \"\" => } }");
        assert!(!half_match.body_parses());
    }

    #[test]
    fn complete_bodies_parse_with_their_inner_attributes() {
        let complete = item("async fn f() -> u8 { #![allow(unused)] let x = 1; x }");
        assert!(complete.body_parses());
        assert!(item("async fn f() {}").body_parses());
    }

    #[test]
    fn a_signature_or_body_that_is_not_a_fn_is_refused() {
        assert!(syn::parse_str::<ItemFn>("async fn f(word: ) {}").is_err());
        assert!(syn::parse_str::<ItemFn>("async fn f();").is_err());
        assert!(syn::parse_str::<ItemFn>("async fn f() (x)").is_err());
        assert!(syn::parse_str::<ItemFn>("struct S {}").is_err());
    }
}
