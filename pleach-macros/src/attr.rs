//! The keys each macro accepts, every value kept with its span, and every mistake collected.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

use crate::check::{Errors, did_you_mean};

/// Which macro is being expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `#[tool]`: the basic shape (`defineTool`).
    Basic,
    /// `#[unified_tool]`: the registry-level shape (`createUnifiedTool`).
    Unified,
}

impl Shape {
    pub(crate) fn attribute(self) -> &'static str {
        match self {
            Shape::Basic => "#[tool]",
            Shape::Unified => "#[unified_tool]",
        }
    }
}

/// Keys of the basic shape.
pub(crate) const BASIC_KEYS: &[&str] = &["name", "description"];
/// Keys only the registry-level shape has.
pub(crate) const UNIFIED_ONLY_KEYS: &[&str] = &[
    "id",
    "display_name",
    "category",
    "schema_key",
    "safety_tier",
];
/// The values of `safety_tier`.
pub(crate) const SAFETY_TIERS: &[&str] = &["critical", "standard", "advisory"];

/// The parsed attribute: each key's literal, with its span, when present.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) id: Option<LitStr>,
    pub(crate) display_name: Option<LitStr>,
    pub(crate) category: Option<LitStr>,
    pub(crate) schema_key: Option<LitStr>,
    pub(crate) safety_tier: Option<LitStr>,
}

impl ToolAttrs {
    fn slot(&mut self, key: &str) -> Option<&mut Option<LitStr>> {
        Some(match key {
            "name" => &mut self.name,
            "description" => &mut self.description,
            "id" => &mut self.id,
            "display_name" => &mut self.display_name,
            "category" => &mut self.category,
            "schema_key" => &mut self.schema_key,
            "safety_tier" => &mut self.safety_tier,
            _ => return None,
        })
    }
}

/// Parses the attribute's arguments for `shape`, collecting every mistake into `errors`.
pub(crate) fn parse_tool_attrs(shape: Shape, args: TokenStream, errors: &mut Errors) -> ToolAttrs {
    let mut attrs = ToolAttrs::default();
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(metas) => metas,
        Err(error) => {
            errors.push(error);
            return attrs;
        }
    };
    for meta in metas {
        let path = meta.path();
        let Some(ident) = path.get_ident() else {
            errors.push(syn::Error::new_spanned(
                path,
                format!(
                    "unknown key `{}` for `{}`; keys are plain names: {}",
                    path.to_token_stream().to_string().replace(' ', ""),
                    shape.attribute(),
                    keys_of(shape)
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            continue;
        };
        let key = ident.to_string();
        if !key_allowed(shape, &key, ident.span(), errors) {
            continue;
        }
        let Some(value) = string_value(&meta, &key, errors) else {
            continue;
        };
        let Some(slot) = attrs.slot(&key) else {
            continue;
        };
        if slot.is_some() {
            errors.push(syn::Error::new(
                ident.span(),
                format!("duplicate key `{key}`; give each key once"),
            ));
            continue;
        }
        *slot = Some(value);
    }
    attrs
}

fn keys_of(shape: Shape) -> Vec<&'static str> {
    match shape {
        Shape::Basic => BASIC_KEYS.to_vec(),
        Shape::Unified => BASIC_KEYS
            .iter()
            .chain(UNIFIED_ONLY_KEYS)
            .copied()
            .collect(),
    }
}

/// Whether `key` belongs to `shape`; if not, says why on the key's span.
fn key_allowed(shape: Shape, key: &str, span: Span, errors: &mut Errors) -> bool {
    let allowed = keys_of(shape);
    if allowed.contains(&key) {
        return true;
    }
    let message = if shape == Shape::Basic && UNIFIED_ONLY_KEYS.contains(&key) {
        // The Rust form of the TypeScript spec's excess-property error.
        format!(
            "`{key}` is not a field of the basic tool shape (`#[tool]` takes only `name` and `description`); use `#[unified_tool({key} = …)]` for the registry-level shape"
        )
    } else if key == "batching" {
        "`batching` is not a tool field; override the inferred strategy with a batching hint (`contribute_batching_hints` in a plugin), keyed by tool name".to_owned()
    } else if matches!(key, "timeout" | "timeout_ms") {
        format!(
            "`{key}` is not a tool field; per-tool timeouts are runtime or plugin configuration, keyed by tool name"
        )
    } else {
        let everything: Vec<&str> = BASIC_KEYS
            .iter()
            .chain(UNIFIED_ONLY_KEYS)
            .copied()
            .collect();
        let listed = allowed
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        match did_you_mean(key, &everything) {
            Some(near) if allowed.contains(&near) => format!(
                "unknown key `{key}` for `{}`; did you mean `{near}`?",
                shape.attribute()
            ),
            // The near miss is a key of the other macro: suggesting it bare would only lead to
            // the next error.
            Some(near) => format!(
                "unknown key `{key}` for `{}`; did you mean `{near}`? it is a key of the registry-level shape: `#[unified_tool({near} = …)]`",
                shape.attribute()
            ),
            None => format!(
                "unknown key `{key}` for `{}`; expected one of {listed}",
                shape.attribute()
            ),
        }
    };
    errors.push(syn::Error::new(span, message));
    false
}

/// The string literal of `key = "…"`.
fn string_value(meta: &Meta, key: &str, errors: &mut Errors) -> Option<LitStr> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Some(lit.clone()),
            other => {
                errors.push(syn::Error::new_spanned(
                    other,
                    format!("`{key}` takes a string literal: `{key} = \"…\"`"),
                ));
                None
            }
        },
        other => {
            errors.push(syn::Error::new_spanned(
                other,
                format!("`{key}` takes a value: `{key} = \"…\"`"),
            ));
            None
        }
    }
}

/// What `#[arg(…)]` says of one parameter.
#[derive(Default)]
pub(crate) struct ArgAttrs {
    pub(crate) description: Option<LitStr>,
    pub(crate) default: Option<Expr>,
    pub(crate) min: Option<Expr>,
    pub(crate) max: Option<Expr>,
}

/// Keys of `#[arg(…)]`.
pub(crate) const ARG_KEYS: &[&str] = &["description", "default", "min", "max"];

/// Parses one `#[arg(…)]` into `into`, collecting mistakes.
pub(crate) fn parse_arg_attr(attr: &syn::Attribute, into: &mut ArgAttrs, errors: &mut Errors) {
    // syn's own message for this ("expected attribute arguments in parentheses") names no key.
    if !matches!(attr.meta, Meta::List(_)) {
        errors.push(syn::Error::new_spanned(
            attr,
            "`#[arg]` takes keys in parentheses: `#[arg(description = \"…\", default = …, min = …, max = …)]`",
        ));
        return;
    }
    let metas = match attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
        Ok(metas) => metas,
        Err(error) => {
            errors.push(error);
            return;
        }
    };
    for meta in metas {
        let path = meta.path();
        let key = path.get_ident().map_or_else(
            || path.to_token_stream().to_string().replace(' ', ""),
            ToString::to_string,
        );
        let Meta::NameValue(nv) = &meta else {
            errors.push(syn::Error::new_spanned(
                &meta,
                format!("`{key}` takes a value: `#[arg({key} = …)]`"),
            ));
            continue;
        };
        let duplicate = match key.as_str() {
            "description" => {
                if let Expr::Lit(ExprLit {
                    lit: Lit::Str(lit), ..
                }) = &nv.value
                {
                    into.description.replace(lit.clone()).is_some()
                } else {
                    errors.push(syn::Error::new_spanned(
                        &nv.value,
                        "`description` takes a string literal: `#[arg(description = \"…\")]`",
                    ));
                    false
                }
            }
            "default" => into.default.replace(nv.value.clone()).is_some(),
            "min" => into.min.replace(nv.value.clone()).is_some(),
            "max" => into.max.replace(nv.value.clone()).is_some(),
            _ => {
                let hint = match did_you_mean(&key, ARG_KEYS) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => "expected one of `description`, `default`, `min`, `max`".to_owned(),
                };
                errors.push(syn::Error::new_spanned(
                    path,
                    format!("unknown key `{key}` for `#[arg]`; {hint}"),
                ));
                false
            }
        };
        if duplicate {
            errors.push(syn::Error::new_spanned(
                path,
                format!("duplicate key `{key}` in `#[arg]`; give each key once"),
            ));
        }
    }
}

/// A number literal, negated or not (`5`, `-2`, `0.5`), as `f64`; `None` for anything else.
fn literal_number(expr: &Expr) -> Option<f64> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int.base10_parse::<f64>().ok(),
        Expr::Lit(ExprLit {
            lit: Lit::Float(float),
            ..
        }) => float.base10_parse::<f64>().ok(),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => literal_number(expr).map(|n| -n),
        Expr::Paren(inner) => literal_number(&inner.expr),
        _ => None,
    }
}

/// Literal bounds the wrong way round: no value fits, so the schema refuses every call. Only when
/// `min` is positive: as a length's bounds (a negative `max` acts as 0) `min = 0, max = -1` still
/// admits the empty string, and the macro does not know which the parameter is. Returns whether
/// the bounds are in order (or not literals); out of order, a default cannot be checked against them.
pub(crate) fn bounds_in_order(attrs: &ArgAttrs, errors: &mut Errors) -> bool {
    let (Some(min_expr), Some(max_expr)) = (attrs.min.as_ref(), attrs.max.as_ref()) else {
        return true;
    };
    let (Some(min), Some(max)) = (literal_number(min_expr), literal_number(max_expr)) else {
        return true;
    };
    let in_order = !(min > max && min > 0.0);
    if !in_order {
        errors.push(syn::Error::new_spanned(
            max_expr,
            "`max` is below `min`: no value fits, so every call would be refused; swap the bounds \
             or widen them",
        ));
    }
    in_order
}

/// A literal `default` outside literal `min`/`max`: the schema would contradict itself, and every
/// call that leaves the argument out would be refused for a value the model never sent.
pub(crate) fn default_within_bounds(attrs: &ArgAttrs, errors: &mut Errors) {
    let Some(default) = attrs.default.as_ref() else {
        return;
    };
    // A number, or a string's length in characters (what its bounds measure).
    let (value, is_length) = match default {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => {
            #[allow(clippy::cast_precision_loss)] // a literal's length
            let length = text.value().chars().count() as f64;
            (length, true)
        }
        other => match literal_number(other) {
            Some(number) => (number, false),
            None => return,
        },
    };
    let bounds = [("min", &attrs.min, true), ("max", &attrs.max, false)];
    for (key, bound, lower) in bounds {
        let Some(mut limit) = bound.as_ref().and_then(literal_number) else {
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
                default,
                format!(
                    "the default is {side} `{key}`: a call that leaves the argument out would get a \
                     value its own bounds refuse; pick a default within `min` and `max`"
                ),
            ));
        }
    }
}
