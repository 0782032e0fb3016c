//! The keys each macro accepts, each value parsed once into a typed value that keeps its span (a
//! tier is a [`SafetyTier`], a literal bound its number). A key or value that cannot be read is an
//! error here; rules between values are `check`'s.

use pleach_suggest::closest;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

use crate::ctxt::Ctxt;

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

    /// The keys the macro takes.
    fn keys(self) -> impl Iterator<Item = Key> {
        Key::ALL.into_iter().filter(move |key| key.in_shape(self))
    }
}

/// Which of the two macros `attr` is (`tool` or `unified_tool`, bare or through `pleach_core::` or
/// `pleach_macros::`), if either.
pub(crate) fn tool_attribute(attr: &syn::Attribute) -> Option<Shape> {
    let segments: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let ([last] | ["pleach_core" | "pleach_macros", last]) =
        segments.iter().map(String::as_str).collect::<Vec<_>>()[..]
    else {
        return None;
    };
    match last {
        "tool" => Some(Shape::Basic),
        "unified_tool" => Some(Shape::Unified),
        _ => None,
    }
}

/// A key of `#[tool]` / `#[unified_tool]`, read once from its identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // `SchemaKey` is the key `schema_key`
enum Key {
    Name,
    Description,
    Id,
    DisplayName,
    Category,
    SchemaKey,
    SafetyTier,
}

impl Key {
    /// Every key, those of the basic shape first.
    const ALL: [Key; 7] = [
        Key::Name,
        Key::Description,
        Key::Id,
        Key::DisplayName,
        Key::Category,
        Key::SchemaKey,
        Key::SafetyTier,
    ];

    /// The key as written.
    fn text(self) -> &'static str {
        match self {
            Key::Name => "name",
            Key::Description => "description",
            Key::Id => "id",
            Key::DisplayName => "display_name",
            Key::Category => "category",
            Key::SchemaKey => "schema_key",
            Key::SafetyTier => "safety_tier",
        }
    }

    fn from_text(text: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|key| key.text() == text)
    }

    /// Whether the basic shape (`#[tool]`) has it; the others are registry-level.
    fn basic(self) -> bool {
        matches!(self, Key::Name | Key::Description)
    }

    fn in_shape(self, shape: Shape) -> bool {
        shape == Shape::Unified || self.basic()
    }
}

/// The values of `safety_tier`, as `pleach_core::SafetyTier` has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SafetyTier {
    Critical,
    Standard,
    Advisory,
}

impl SafetyTier {
    pub(crate) const ALL: [SafetyTier; 3] = [
        SafetyTier::Critical,
        SafetyTier::Standard,
        SafetyTier::Advisory,
    ];

    /// The value as written in the attribute.
    pub(crate) fn text(self) -> &'static str {
        match self {
            SafetyTier::Critical => "critical",
            SafetyTier::Standard => "standard",
            SafetyTier::Advisory => "advisory",
        }
    }
}

/// A `safety_tier` value and the span of its literal.
#[derive(Clone, Copy)]
pub(crate) struct Tier {
    pub(crate) value: SafetyTier,
    pub(crate) span: Span,
}

/// The parsed attribute: each key's value, with its span, when present.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) id: Option<LitStr>,
    pub(crate) display_name: Option<LitStr>,
    pub(crate) category: Option<LitStr>,
    pub(crate) schema_key: Option<LitStr>,
    pub(crate) safety_tier: Option<Tier>,
}

/// Parses the attribute's arguments for `shape`, collecting every mistake into `errors`.
pub(crate) fn parse_tool_attrs(shape: Shape, args: TokenStream, errors: &Ctxt) -> ToolAttrs {
    let mut attrs = ToolAttrs::default();
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(metas) => metas,
        Err(error) => {
            errors.push(error);
            return attrs;
        }
    };
    let mut seen = Vec::new();
    for meta in metas {
        let path = meta.path();
        let Some(ident) = path.get_ident() else {
            errors.push(syn::Error::new_spanned(
                path,
                format!(
                    "unknown key `{}` for `{}`; keys are plain names: {}",
                    path.to_token_stream().to_string().replace(' ', ""),
                    shape.attribute(),
                    listed(shape.keys().map(Key::text))
                ),
            ));
            continue;
        };
        let text = ident.to_string();
        let Some(key) = key_of(shape, &text, ident.span(), errors) else {
            continue;
        };
        let Some(value) = string_value(&meta, &text, errors) else {
            continue;
        };
        if seen.contains(&key) {
            errors.push(syn::Error::new(
                ident.span(),
                format!("duplicate key `{text}`; give each key once"),
            ));
            continue;
        }
        seen.push(key);
        match key {
            Key::Name => attrs.name = Some(value),
            Key::Description => attrs.description = Some(value),
            Key::Id => attrs.id = Some(value),
            Key::DisplayName => attrs.display_name = Some(value),
            Key::Category => attrs.category = Some(value),
            Key::SchemaKey => attrs.schema_key = Some(value),
            Key::SafetyTier => attrs.safety_tier = safety_tier(&value, errors),
        }
    }
    attrs
}

/// `` `a`, `b`, `c` ``.
fn listed<'a>(words: impl Iterator<Item = &'a str>) -> String {
    words
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The key `text` names if `shape` takes it; if not, says why on the key's span.
fn key_of(shape: Shape, text: &str, span: Span, errors: &Ctxt) -> Option<Key> {
    let key = Key::from_text(text);
    if let Some(key) = key.filter(|key| key.in_shape(shape)) {
        return Some(key);
    }
    let message = if key.is_some() {
        // A registry-level key on `#[tool]`: the Rust form of the TypeScript
        // spec's excess-property error.
        format!(
            "`{text}` is not a field of the basic tool shape (`#[tool]` takes only `name` and `description`); use `#[unified_tool({text} = …)]` for the registry-level shape"
        )
    } else if text == "batching" {
        "`batching` is not a tool field; override the inferred strategy with a batching hint (`PleachPlugin::batching_hints`), keyed by tool name".to_owned()
    } else if matches!(text, "timeout" | "timeout_ms") {
        format!(
            "`{text}` is not a tool field; per-tool timeouts are runtime or plugin configuration, keyed by tool name"
        )
    } else {
        let everything = Key::ALL.map(Key::text);
        match closest(text, everything).and_then(Key::from_text) {
            Some(near) if near.in_shape(shape) => format!(
                "unknown key `{text}` for `{}`; did you mean `{}`?",
                shape.attribute(),
                near.text()
            ),
            // The near miss is a key of the other macro: suggesting it bare would only lead to
            // the next error.
            Some(near) => format!(
                "unknown key `{text}` for `{}`; did you mean `{near}`? it is a key of the registry-level shape: `#[unified_tool({near} = …)]`",
                shape.attribute(),
                near = near.text()
            ),
            None => format!(
                "unknown key `{text}` for `{}`; expected one of {}",
                shape.attribute(),
                listed(shape.keys().map(Key::text))
            ),
        }
    };
    errors.push(syn::Error::new(span, message));
    None
}

/// `safety_tier = "…"` as one of the TypeScript spec's three values.
fn safety_tier(literal: &LitStr, errors: &Ctxt) -> Option<Tier> {
    let text = literal.value();
    if let Some(value) = SafetyTier::ALL.into_iter().find(|t| t.text() == text) {
        return Some(Tier {
            value,
            span: literal.span(),
        });
    }
    let hint = match closest(&text, SafetyTier::ALL.map(SafetyTier::text)) {
        Some(near) => format!("; did you mean `{near}`?"),
        None => String::new(),
    };
    errors.push(syn::Error::new(
        literal.span(),
        format!(
            "unknown safety tier `{text}`; expected one of {}{hint}",
            listed(SafetyTier::ALL.into_iter().map(SafetyTier::text))
        ),
    ));
    None
}

/// The string literal of `key = "…"`.
fn string_value(meta: &Meta, key: &str, errors: &Ctxt) -> Option<LitStr> {
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
    pub(crate) default: Option<ArgValue>,
    pub(crate) min: Option<ArgValue>,
    pub(crate) max: Option<ArgValue>,
}

/// A `default`, `min` or `max`: the expression as written (emitted as is, so the compiler checks
/// it against the parameter's type) and, when it is a literal, its value.
pub(crate) struct ArgValue {
    pub(crate) expr: Expr,
    pub(crate) literal: Option<Literal>,
}

/// A literal the macro can compare with another before the compiler sees either.
#[derive(Clone, Copy)]
pub(crate) enum Literal {
    /// A number, negated or not (`5`, `-2`, `0.5`).
    Number(f64),
    /// A string literal, by its length in characters (what a string's bounds measure).
    Text { chars: usize },
}

impl ArgValue {
    fn new(expr: &Expr) -> Self {
        let literal = match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Str(text),
                ..
            }) => Some(Literal::Text {
                chars: text.value().chars().count(),
            }),
            other => literal_number(other).map(Literal::Number),
        };
        ArgValue {
            expr: expr.clone(),
            literal,
        }
    }

    /// The value when it is a number literal.
    pub(crate) fn number(&self) -> Option<f64> {
        match self.literal {
            Some(Literal::Number(number)) => Some(number),
            _ => None,
        }
    }
}

/// Keys of `#[arg(…)]`.
pub(crate) const ARG_KEYS: &[&str] = &["description", "default", "min", "max"];

/// Parses one `#[arg(…)]` into `into`, collecting mistakes.
pub(crate) fn parse_arg_attr(attr: &syn::Attribute, into: &mut ArgAttrs, errors: &Ctxt) {
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
            "default" => into.default.replace(ArgValue::new(&nv.value)).is_some(),
            "min" => into.min.replace(ArgValue::new(&nv.value)).is_some(),
            "max" => into.max.replace(ArgValue::new(&nv.value)).is_some(),
            _ => {
                let hint = match closest(&key, ARG_KEYS.iter().copied()) {
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
