//! Cross-field rules, one small fn per rule. Each reports on the offending token and says how to
//! fix it; all of them run, so the user sees every mistake at once.

use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, LitStr, Signature, Type};

use crate::ast::{Output, Param, ParamKind, ToolFn, is_tool_context_ref};
use crate::attr::{ArgAttrs, ArgValue, Literal, Shape, ToolAttrs, tool_attribute};
use crate::ctxt::Ctxt;

/// What the checks settle: the tool's name and description.
pub(crate) struct Checked {
    pub(crate) name: String,
    pub(crate) description: String,
}

/// Runs every rule. Returns the settled name and description (placeholders when those are in
/// error: the errors are what matters then).
pub(crate) fn check(shape: Shape, attrs: &ToolAttrs, tool: &ToolFn, errors: &Ctxt) -> Checked {
    let sig = &tool.item.sig;
    async_fn(sig, errors);
    plain_fn(sig, errors);
    no_receiver(sig, errors);
    no_generics(sig, errors);
    no_impl_trait(sig, errors);
    no_nested_content_block(&tool.output, errors);
    one_tool_attribute(shape, &tool.item.attrs, errors);
    no_helpers_on_context(&tool.params, errors);
    no_arg_on_input(&tool.params, errors);
    one_context(&tool.params, errors);
    input_alone(&tool.params, errors);
    owned_arguments(&tool.params, errors);
    argument_bounds(&tool.params, errors);
    Checked {
        name: name(attrs.name.as_ref(), &sig.ident, errors),
        description: description(
            attrs.description.as_ref(),
            tool.docs.as_deref(),
            &sig.ident,
            shape,
            errors,
        ),
    }
}

/// Tools are awaited by the runtime, with the cancellation signal reaching every await point.
fn async_fn(sig: &Signature, errors: &Ctxt) {
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span,
            "a tool must be an `async fn`; add `async` (the runtime awaits it and can cancel it)",
        ));
    }
}

/// `const`, `unsafe`, `extern` and C variadics have no meaning for a model-callable fn.
fn plain_fn(sig: &Signature, errors: &Ctxt) {
    if let Some(token) = &sig.constness {
        errors.push(syn::Error::new(token.span, "a tool cannot be a `const fn`"));
    }
    if let Some(token) = &sig.unsafety {
        errors.push(syn::Error::new(
            token.span,
            "a tool cannot be an `unsafe fn`: a model cannot uphold its safety contract; keep the `unsafe` block inside a safe fn",
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(syn::Error::new_spanned(
            abi,
            "a tool cannot have an `extern` ABI",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new(
            variadic.span(),
            "a tool cannot be variadic",
        ));
    }
}

/// A model calls a tool by name with JSON arguments; there is no value to call a method on.
fn no_receiver(sig: &Signature, errors: &Ctxt) {
    for input in &sig.inputs {
        if let FnArg::Receiver(receiver) = input {
            errors.push(syn::Error::new_spanned(
                receiver,
                "a tool cannot take `self`: a model calls it by name with JSON arguments; make it a free `async fn` (keep shared state in a `static` or pass it in the arguments)",
            ));
        }
    }
}

/// The schema is generated once, at compile time, from concrete types.
fn no_generics(sig: &Signature, errors: &Ctxt) {
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "a tool cannot be generic: its JSON Schema is fixed at compile time; use concrete types",
        ));
    } else if let Some(where_clause) = &sig.generics.where_clause {
        errors.push(syn::Error::new(
            where_clause.span(),
            "a tool cannot have a `where` clause: its JSON Schema is fixed at compile time; use concrete types",
        ));
    }
}

/// `impl Trait` has no nameable type to derive a schema from.
fn no_impl_trait(sig: &Signature, errors: &Ctxt) {
    let mut types: Vec<&Type> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(pat_type) => Some(&*pat_type.ty),
            FnArg::Receiver(_) => None,
        })
        .collect();
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        types.push(ty);
    }
    for ty in types {
        visit_types(ty, &mut |ty| {
            if let Type::ImplTrait(impl_trait) = ty {
                errors.push(syn::Error::new_spanned(
                    impl_trait,
                    "a tool cannot use `impl Trait` in its signature: the JSON Schema is derived from concrete types; name the type",
                ));
                return false;
            }
            true
        });
    }
}

/// Content blocks are not JSON: a tool returns them as its whole output (`ContentBlock`,
/// `Vec<ContentBlock>`) or beside a value (`ToolOutput<T>`), never inside another type, where they
/// would have to be written as JSON (and rustc would report serde's bound deep down, not the
/// shapes a tool can return). Read by name, as the macro sees types: a type of the user's own
/// called `ContentBlock`, inside another type in a tool's output, is refused too.
fn no_nested_content_block(output: &Output, errors: &Ctxt) {
    let (Output::Plain(ty) | Output::Result { ok: ty, .. }) = output;
    if is_content_block(ty) || vec_of_content_blocks(ty) {
        return;
    }
    let mut nested = None;
    visit_types(ty, &mut |inner| {
        if nested.is_none() && is_content_block(inner) {
            nested = Some(inner);
        }
        nested.is_none()
    });
    if let Some(block) = nested {
        errors.push(syn::Error::new_spanned(
            block,
            format!(
                "`{}` cannot be a tool's output: a tool returns a `Serialize` type, content blocks (`ContentBlock`, `Vec<ContentBlock>`), or both (`ToolOutput<T>`); a `ContentBlock` inside another type is not JSON: return the value as `ToolOutput<T>` with the blocks added (`ToolOutput::new(value).block(block)`)",
                type_text(ty)
            ),
        ));
    }
}

/// Whether `ty` names a `ContentBlock` (by its last path segment, without arguments).
fn is_content_block(ty: &Type) -> bool {
    match ty {
        Type::Paren(p) => is_content_block(&p.elem),
        Type::Group(g) => is_content_block(&g.elem),
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|last| last.ident == "ContentBlock" && last.arguments.is_none()),
        _ => false,
    }
}

/// Whether `ty` is `Vec<ContentBlock>`.
fn vec_of_content_blocks(ty: &Type) -> bool {
    let Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    last.ident == "Vec"
        && args.args.len() == 1
        && matches!(args.args.first(), Some(syn::GenericArgument::Type(inner)) if is_content_block(inner))
}

/// Calls `f` on `ty` and on each type nested in it (references, slices, arrays, tuples, generic
/// arguments) while `f` returns `true`.
fn visit_types<'a>(ty: &'a Type, f: &mut impl FnMut(&'a Type) -> bool) {
    if !f(ty) {
        return;
    }
    match ty {
        Type::Reference(r) => visit_types(&r.elem, f),
        Type::Paren(p) => visit_types(&p.elem, f),
        Type::Group(g) => visit_types(&g.elem, f),
        Type::Slice(s) => visit_types(&s.elem, f),
        Type::Array(a) => visit_types(&a.elem, f),
        Type::Tuple(t) => t.elems.iter().for_each(|e| visit_types(e, f)),
        Type::Path(p) => {
            for segment in &p.path.segments {
                if let syn::PathArguments::AngleBracketed(args) = &segment.arguments {
                    for arg in &args.args {
                        if let syn::GenericArgument::Type(t) = arg {
                            visit_types(t, f);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// Arguments are deserialized from the call's JSON text and moved into a `'static` future: a
/// borrow has nothing to borrow from (and, unreported, surfaces as a lifetime error in generated
/// code).
fn owned_arguments(params: &[Param], errors: &Ctxt) {
    for param in params {
        if matches!(param.kind, ParamKind::Context) || is_tool_context_ref(&param.ty) {
            continue;
        }
        visit_types(&param.ty, &mut |ty| match ty {
            Type::Reference(reference) => {
                let owned = match &*reference.elem {
                    Type::Path(path) if path.path.is_ident("str") => "String".to_owned(),
                    Type::Slice(slice) => format!("Vec<{}>", type_text(&slice.elem)),
                    other => type_text(other),
                };
                errors.push(syn::Error::new_spanned(
                    reference,
                    format!(
                        "a tool argument cannot be borrowed: it is read from the call's JSON and moved into the tool's future; take `{owned}` instead"
                    ),
                ));
                false
            }
            // Reported by `no_impl_trait`.
            Type::ImplTrait(_) => false,
            _ => true,
        });
    }
}

/// A fn is one tool: a second `#[tool]` / `#[unified_tool]` below this one would define its handle
/// and registry entry again, and rustc would report each generated item twice.
fn one_tool_attribute(shape: Shape, attrs: &[syn::Attribute], errors: &Ctxt) {
    for attr in attrs {
        let Some(other) = tool_attribute(attr) else {
            continue;
        };
        let message = if other == shape {
            format!("`{}` is applied twice; remove one", shape.attribute())
        } else {
            "a fn takes one of `#[tool]` and `#[unified_tool]`, not both; keep `#[unified_tool]` (it takes every key of `#[tool]`) and remove `#[tool]`".to_owned()
        };
        errors.push(syn::Error::new_spanned(attr, message));
    }
}

/// The runtime injects one context per call; a second one is a mistake, a borrowed one cannot
/// outlive the call's future.
fn one_context(params: &[Param], errors: &Ctxt) {
    let mut seen = false;
    for param in params {
        if matches!(param.kind, ParamKind::Context) {
            if seen {
                errors.push(syn::Error::new_spanned(
                    &param.tokens,
                    "a tool takes at most one `ToolContext` parameter; remove this one",
                ));
            }
            seen = true;
        } else if is_tool_context_ref(&param.ty) {
            errors.push(syn::Error::new_spanned(
                &param.ty,
                "a tool takes `ToolContext` by value, not by reference (the call owns it and it is cheap to move); write `ctx: ToolContext`",
            ));
        }
    }
}

/// `#[input]` means the whole input is one type; other model-facing parameters would be a second
/// source of properties. The first `#[input]` is taken as meant; each parameter besides it (and the
/// context) is one mistake, reported once, on that parameter.
fn input_alone(params: &[Param], errors: &Ctxt) {
    if !params.iter().any(|p| matches!(p.kind, ParamKind::Input)) {
        return;
    }
    let mut seen_input = false;
    for param in params {
        match param.kind {
            ParamKind::Argument { .. } if !is_tool_context_ref(&param.ty) => {
                errors.push(syn::Error::new_spanned(
                    &param.tokens,
                    "with an `#[input]` parameter, every other parameter must be the `ToolContext`; move this argument into the input type",
                ));
            }
            ParamKind::Input if seen_input => errors.push(syn::Error::new_spanned(
                &param.tokens,
                "a tool takes at most one `#[input]` parameter (it is the whole input); move these fields into the first input type",
            )),
            ParamKind::Input => seen_input = true,
            _ => {}
        }
    }
}

/// A type as the user would write it (`Vec<u8>`, not the token stream's `Vec < u8 >`).
fn type_text(ty: &Type) -> String {
    quote::ToTokens::to_token_stream(ty)
        .to_string()
        .replace(" :: ", "::")
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
}

/// The name every provider accepts: `^[A-Za-z0-9_-]{1,64}$`.
fn name(literal: Option<&LitStr>, ident: &syn::Ident, errors: &Ctxt) -> String {
    let (name, span) = match literal {
        Some(lit) => (lit.value(), lit.span()),
        None => (ident.unraw().to_string(), ident.span()),
    };
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        let fix = if literal.is_some() {
            "use 1 to 64 ASCII letters, digits, `_` or `-`"
        } else {
            "the name defaults to the fn's name; set `name = \"…\"` with 1 to 64 ASCII letters, digits, `_` or `-`"
        };
        errors.push(syn::Error::new(
            span,
            format!("tool name `{name}` does not match `^[A-Za-z0-9_-]{{1,64}}$`; {fix}"),
        ));
    }
    name
}

/// The model reads the description to decide when to call the tool; a tool without one is never
/// called well.
fn description(
    literal: Option<&LitStr>,
    docs: Option<&str>,
    ident: &syn::Ident,
    shape: Shape,
    errors: &Ctxt,
) -> String {
    if let Some(lit) = literal {
        let value = lit.value();
        if value.trim().is_empty() {
            errors.push(syn::Error::new(
                lit.span(),
                "the description is empty; say what the tool does (the model reads it to decide when to call the tool)",
            ));
        }
        return value;
    }
    if let Some(docs) = docs {
        return docs.to_owned();
    }
    let attribute = shape
        .attribute()
        .trim_start_matches("#[")
        .trim_end_matches(']');
    errors.push(syn::Error::new(
        ident.span(),
        format!(
            "tool `{}` has no description; add a doc comment (`/// …`) or `#[{attribute}(description = \"…\")]` — the model reads it to decide when to call the tool",
            ident.unraw()
        ),
    ));
    String::new()
}

/// Literal bounds the wrong way round: no value fits, so the schema refuses every call. Only when
/// `min` is positive: as a length's bounds (a negative `max` acts as 0) `min = 0, max = -1` still
/// admits the empty string, and the macro does not know which the parameter is. Returns whether
/// the bounds are in order (or not literals); out of order, a default cannot be checked against them.
fn bounds_in_order(attrs: &ArgAttrs, errors: &Ctxt) -> bool {
    let (Some(min), Some(max)) = (attrs.min.as_ref(), attrs.max.as_ref()) else {
        return true;
    };
    let (Some(low), Some(high)) = (min.number(), max.number()) else {
        return true;
    };
    let in_order = !(low > high && low > 0.0);
    if !in_order {
        errors.push(syn::Error::new_spanned(
            &max.expr,
            "`max` is below `min`: no value fits, so every call would be refused; swap the bounds \
             or widen them",
        ));
    }
    in_order
}

/// A literal `default` outside literal `min`/`max`: the schema would contradict itself, and every
/// call that leaves the argument out would be refused for a value the model never sent.
fn default_within_bounds(attrs: &ArgAttrs, errors: &Ctxt) {
    let Some(default) = attrs.default.as_ref() else {
        return;
    };
    // A number, or a string's length in characters (what its bounds measure).
    let (value, is_length) = match default.literal {
        #[allow(clippy::cast_precision_loss)] // a literal's length
        Some(Literal::Text { chars }) => (chars as f64, true),
        Some(Literal::Number(number)) => (number, false),
        None => return,
    };
    let bounds = [("min", &attrs.min, true), ("max", &attrs.max, false)];
    for (key, bound, lower) in bounds {
        let Some(mut limit) = bound.as_ref().and_then(ArgValue::number) else {
            continue;
        };
        if is_length && !lower {
            // As the schema's `maxLength`: a negative `max` acts as 0.
            limit = limit.max(0.0);
        }
        if (lower && value < limit) || (!lower && value > limit) {
            let side = match (lower, is_length) {
                (true, false) => "below",
                (false, false) => "above",
                (true, true) => "shorter than",
                (false, true) => "longer than",
            };
            errors.push(syn::Error::new_spanned(
                &default.expr,
                format!(
                    "the default is {side} `{key}`: a call that leaves the argument out would get a \
                     value its own bounds refuse; pick a default within `min` and `max`"
                ),
            ));
        }
    }
}

/// The bounds and default of each argument agree with each other (when they are literals).
fn argument_bounds(params: &[Param], errors: &Ctxt) {
    for param in params {
        if let ParamKind::Argument { attrs, .. } = &param.kind
            && bounds_in_order(attrs, errors)
        {
            default_within_bounds(attrs, errors);
        }
    }
}

/// `#[input]` and `#[arg]` describe model-facing input; on the injected context neither means
/// anything, and ignoring one silently would hide what the user meant.
fn no_helpers_on_context(params: &[Param], errors: &Ctxt) {
    for param in params {
        if !matches!(param.kind, ParamKind::Context) {
            continue;
        }
        if let Some(attr) = &param.input_attr {
            errors.push(syn::Error::new_spanned(
                attr,
                "the `ToolContext` is injected by the runtime, not the tool's input; remove `#[input]`",
            ));
        }
        for attr in &param.arg_attrs {
            errors.push(syn::Error::new_spanned(
                attr,
                "the `ToolContext` is injected by the runtime and is not in the schema; remove `#[arg]`",
            ));
        }
    }
}

/// Every `#[arg]` key would be ignored on an `#[input]` parameter: the input type's own schema is
/// the schema.
fn no_arg_on_input(params: &[Param], errors: &Ctxt) {
    for param in params {
        if !matches!(param.kind, ParamKind::Input) {
            continue;
        }
        for attr in &param.arg_attrs {
            errors.push(syn::Error::new_spanned(
                attr,
                "`#[arg]` does not apply to an `#[input]` parameter, whose type is the whole schema; remove it and describe the fields on the type (doc comments, `#[schemars(…)]`)",
            ));
        }
    }
}
