//! Code generation. The user's fn is emitted as written (helper attributes removed); beside it a
//! handle type of the same name (type namespace) and a hidden `const _: () = { … };` block with the
//! arguments struct, the schema, the invoker and the registry entry. Every path into pleach-core
//! is a [`CratePath`].

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit};

use crate::ast::{self, ItemFn, Output, ParamKind, ToolFn};
use crate::attr::{self, ArgAttrs, ArgValue, SafetyTier, Shape, ToolAttrs};
use crate::check;
use crate::ctxt::Ctxt;
use crate::fallback;
use crate::handle::{Handle, HandleBodies};
use crate::paths::CratePath;

/// Expands `#[tool(args)]` (`Shape::Basic`) or `#[unified_tool(args)]` on `item`.
pub(crate) fn expand(shape: Shape, args: TokenStream, item: TokenStream) -> TokenStream {
    let errors = Ctxt::new();
    let attrs = attr::parse_tool_attrs(shape, args, &errors);
    let Ok(item_fn) = syn::parse2::<ItemFn>(item.clone()) else {
        let message = format!(
            "`{}` goes on an `async fn`: `{} async fn my_tool(…) -> … {{ … }}`",
            shape.attribute(),
            shape.attribute()
        );
        let mut error = if item.is_empty() {
            syn::Error::new(proc_macro2::Span::call_site(), message)
        } else {
            syn::Error::new_spanned(&item, message)
        };
        if let Err(attr_errors) = errors.check() {
            error.combine(attr_errors);
        }
        return fallback::emit(item, &error);
    };
    // `analyze` hands back the fn with the helper attributes removed, also when it finds
    // mistakes: that is what the fallback emits.
    let tool = ast::analyze(item_fn, &errors);
    let checked = check::check(shape, &attrs, &tool, &errors);
    match errors.check() {
        Ok(()) => generate(shape, &attrs, &tool, &checked),
        Err(errors) => fallback::emit_tool(shape, &tool.item, &checked.name, &errors),
    }
}

fn generate(
    shape: Shape,
    attrs: &ToolAttrs,
    tool: &ToolFn,
    checked: &check::Checked,
) -> TokenStream {
    let item = &tool.item;
    let fn_ident = &item.sig.ident;
    let name = &checked.name;
    let description = &checked.description;
    let (core, p) = (CratePath::public(), CratePath::private());

    let InputParts {
        items: input_items,
        schema: input_schema,
        parse: parse_fn,
        call_args,
        checked_by_type,
    } = input_parts(tool);
    let (output_ty, convert) = output_parts(&tool.output);
    let probes = probe_traits(&tool.output);
    let fn_span = fn_ident.span();
    let site = quote_spanned!(fn_span=> file!(), line!(), column!());
    // A body that cannot suspend runs in place when started; any other is boxed. The scan's "never"
    // holds only for a complete body (half typed, `.awa` is no `.await` yet), so a body that does
    // not parse counts as one that may suspend. The whole path carries the fn's span: a tool whose
    // future is not `Send` is reported on its name.
    let in_place = item.body_parses() && !crate::suspend::may_suspend(item.body.stream());
    // A body that cannot suspend is polled once as the fn's own future and its value converted
    // after: no `async` block of ours around it.
    let at_fn = p.at(fn_span);
    let started = if in_place {
        quote_spanned! {fn_span=>
            #at_fn::run_now(__pleach_future, |__pleach_ret| #convert)
        }
    } else {
        quote_spanned! {fn_span=>
            #at_fn::boxed(async move {
                let __pleach_ret = __pleach_future.await;
                #convert
            })
        }
    };

    let unified_fields = unified_fields(attrs);
    // The flag fields of the generated `Code`: what the macro proved about the tool.
    let output_checked_by_type = crate::ast::exact_output(&output_ty);
    let takes_context = tool
        .params
        .iter()
        .any(|param| matches!(param.kind, ParamKind::Context));
    let code_flags = quote! {
        checked_by_type: #checked_by_type,
        output_checked_by_type: #output_checked_by_type,
        in_place: #in_place,
        takes_context: #takes_context,
    };
    let handle = Handle { shape, item, name };
    let handle_declaration = handle.declaration();
    let handle_impl = handle.impl_block(&handle_bodies());

    quote! {
        // Tools must be `async` (the runtime awaits and cancels them), so a tool with no `.await`
        // is not a mistake of the user's.
        #[allow(clippy::unused_async)]
        #item

        #handle_declaration

        #[allow(clippy::all, clippy::pedantic, non_snake_case, unused_qualifications)]
        const _: () = {
            use #p::{
                OutputSchemaDerived as _, OutputSchemaNone as _, OutputSchemaStructured as _,
                #probes
            };

            #input_items

            fn __pleach_output_schema() -> ::core::option::Option<#p::serde_json::Value> {
                (&&&#p::OutputProbe::<#output_ty>::new()).output_schema()
            }

            #parse_fn

            fn __pleach_check(
                __pleach_arguments: &str,
            ) -> ::core::result::Result<(), #core::ToolError> {
                __pleach_parse(__pleach_arguments).map(::core::mem::drop)
            }

            fn __pleach_invoke(
                __pleach_arguments: &str,
                __pleach_ctx: &mut ::core::option::Option<#core::ToolContext>,
            ) -> ::core::result::Result<#p::Started, #core::ToolError> {
                let __pleach_args = __pleach_parse(__pleach_arguments)?;
                let __pleach_future = #fn_ident(#(#call_args),*);
                ::core::result::Result::Ok(#started)
            }

            #handle_impl

            // linkme's macros re-emit the static's initializer: a name keeps what they carry
            // small.
            const __PLEACH_TOOL: #p::ToolEntry = #p::ToolEntry {
                name: #name,
                description: #description,
                input_schema: #input_schema,
                output_schema: __pleach_output_schema,
                code: #p::Code {
                    invoke: __pleach_invoke,
                    check: __pleach_check,
                    #code_flags
                },
                unified: #unified_fields,
                site: (#site),
            };

            #[#p::linkme::distributed_slice(#p::TOOLS)]
            #[linkme(crate = #p::linkme)]
            #[allow(unsafe_code)]
            static __PLEACH_ENTRY: #p::ToolEntry = __PLEACH_TOOL;
        };
    }
}

/// The handle's bodies of a tool that compiles: each reads the tool's entry, whose definition
/// pleach-contract builds and keeps.
fn handle_bodies() -> HandleBodies {
    HandleBodies {
        try_unified: quote!(__PLEACH_ENTRY.try_unified()),
        unified: quote!(__PLEACH_ENTRY.unified()),
        definition: quote!(__PLEACH_ENTRY.definition()),
        entry: quote!(&__PLEACH_ENTRY),
    }
}

/// What the parameters turn into.
struct InputParts {
    /// The arguments struct, its default fns and its schema fn (nothing for `#[input]`).
    items: TokenStream,
    /// The `fn() -> Value` building the input schema: `input_schema::<T>` itself for an
    /// `#[input]` type, else a fn of the expansion's.
    schema: TokenStream,
    /// `fn __pleach_parse(&str) -> Result<Input, ToolError>`: the text read into the input, with
    /// the `#[arg]` bounds serde does not enforce.
    parse: TokenStream,
    /// What is passed to the fn, in order.
    call_args: Vec<TokenStream>,
    /// Whether a successful `__pleach_parse` implies the input schema accepts the text, so the
    /// runtime may skip the generic validator (it still runs it to explain a failure).
    checked_by_type: bool,
}

/// The arguments struct (or nothing, for `#[input]`), the schema expression, the statement that
/// parses the arguments, and the expressions passed to the fn.
fn input_parts(tool: &ToolFn) -> InputParts {
    let (core, p) = (CratePath::public(), CratePath::private());
    let mut bound_checks = Vec::new();
    let mut checked_by_type = true;
    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    let mut schema_params = Vec::new();
    let mut call_args = Vec::new();
    let mut input_type = None;

    for param in &tool.params {
        match &param.kind {
            ParamKind::Context => call_args.push(quote!(#p::context(__pleach_ctx))),
            ParamKind::Input => {
                input_type = Some(param.ty.clone());
                call_args.push(quote!(__pleach_args));
            }
            ParamKind::Argument { attrs, optional } => {
                let argument = argument_parts(param, attrs, *optional);
                checked_by_type &= argument.plain;
                fields.push(argument.field);
                defaults.extend(argument.default_fn);
                schema_params.push(argument.schema);
                bound_checks.extend(argument.bound_checks);
                let ident = &param.ident;
                call_args.push(quote!(__pleach_args.#ident));
            }
        }
    }

    if let Some(ty) = input_type {
        // Every token carries the type's span: a missing trait is reported on the type.
        let at_ty = p.at(ty.span());
        let schema = quote_spanned!(ty.span()=> #at_ty::input_schema::<#ty>);
        let read = quote_spanned!(ty.span()=> #at_ty::parse_input::<#ty>(__pleach_arguments));
        let parse = quote! {
            fn __pleach_parse(
                __pleach_arguments: &str,
            ) -> ::core::result::Result<#ty, #core::ToolError> {
                #read
            }
        };
        // A user type may carry schema constraints (ranges, patterns) serde does not check.
        return InputParts {
            items: TokenStream::new(),
            schema,
            parse,
            call_args,
            checked_by_type: false,
        };
    }

    let serde_crate = p.string("serde");
    let items = quote! {
        #[derive(#p::serde::Deserialize)]
        #[serde(crate = #serde_crate, deny_unknown_fields)]
        struct __PleachArgs {
            #(#fields,)*
        }

        #(#defaults)*

        fn __pleach_input_schema() -> #p::serde_json::Value {
            let mut __pleach_schema = #p::ParamsSchema::new();
            #(#schema_params)*
            __pleach_schema.finish()
        }
    };
    let schema = quote!(__pleach_input_schema);
    let parse = quote! {
        fn __pleach_parse(
            __pleach_arguments: &str,
        ) -> ::core::result::Result<__PleachArgs, #core::ToolError> {
            let __pleach_args: __PleachArgs = #p::parse_input(__pleach_arguments)?;
            #(#bound_checks)*
            ::core::result::Result::Ok(__pleach_args)
        }
    };
    InputParts {
        items,
        schema,
        parse,
        call_args,
        checked_by_type,
    }
}

/// What one model-facing parameter turns into.
struct ArgumentParts {
    /// Its field of the arguments struct, with its serde attributes.
    field: TokenStream,
    /// The fn giving its `#[arg(default)]`, if any.
    default_fn: Option<TokenStream>,
    /// Its entry in the input schema.
    schema: TokenStream,
    /// Its `#[arg(min/max)]` checks on the read value.
    bound_checks: Vec<TokenStream>,
    /// Whether serde checks everything its schema says.
    plain: bool,
}

fn argument_parts(param: &ast::Param, attrs: &ArgAttrs, optional: bool) -> ArgumentParts {
    let p = CratePath::private();
    let ident = &param.ident;
    let ty = &param.ty;
    let property = &param.property;
    let mut serde_attrs = vec![quote!(rename = #property)];
    let (default_fn, default_value) = match &attrs.default {
        Some(default) => {
            let name = format_ident!("__pleach_default_{}", param.property);
            let name_text = name.to_string();
            // A string literal goes through our conversion (its error names the fix); anything
            // else is an expression of the parameter's type.
            let value = match &default.expr {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(lit), ..
                }) => {
                    let at_lit = p.at(lit.span());
                    quote_spanned!(lit.span()=> <#ty as #at_lit::DefaultFromStr>::default_from_str(#lit))
                }
                other => quote_spanned!(other.span()=> #other),
            };
            serde_attrs.push(quote!(default = #name_text));
            (
                Some(quote! {
                    fn #name() -> #ty {
                        #value
                    }
                }),
                quote!(#p::json_value(&#name())),
            )
        }
        None => (None, quote!(::core::option::Option::None)),
    };
    let shape = ast::plain_shape(ty);
    if let Some(shape) = shape.filter(|shape| shape.integer()) {
        let reader = match shape {
            ast::PlainShape::Scalar { .. } => "integer",
            ast::PlainShape::Optional { .. } => "optional_integer",
            ast::PlainShape::List { .. } => "integer_list",
        };
        let reader = p.string(reader);
        serde_attrs.push(quote!(deserialize_with = #reader));
        // `deserialize_with` loses serde's "a missing `Option` is `None`".
        if matches!(shape, ast::PlainShape::Optional { .. }) && attrs.default.is_none() {
            serde_attrs.push(quote!(default));
        }
    }
    let field = quote! {
        #[serde(#(#serde_attrs),*)]
        #ident: #ty
    };

    let required = !optional && attrs.default.is_none();
    let description = option(attrs.description.as_ref());
    let bound = |value: &Option<ArgValue>| {
        value.as_ref().map_or_else(
            || quote!(::core::option::Option::None),
            |value| {
                let expr = &value.expr;
                quote!(#p::bound_value(&(#expr)))
            },
        )
    };
    let (minimum, maximum) = (bound(&attrs.min), bound(&attrs.max));
    // The bound check sits on the parameter's type: a type without a schema is reported there,
    // with the fix.
    let param_call = quote_spanned!(ty.span()=> __pleach_schema.param::<#ty>);
    let schema = quote! {
        #param_call(
            #property,
            #required,
            #p::ParamAttrs {
                description: #description,
                default: #default_value,
                minimum: #minimum,
                maximum: #maximum,
            },
        );
    };

    let bound_checks = [
        (&attrs.min, quote!(at_least)),
        (&attrs.max, quote!(at_most)),
    ]
    .into_iter()
    .filter_map(|(limit, check)| {
        limit.as_ref().map(|ArgValue { expr: limit, .. }| {
            // Spanned so that a type the bound cannot apply to is reported on the parameter's
            // type, and a bound that is not a number on the bound.
            let value = quote_spanned!(ty.span()=> &__pleach_args.#ident);
            let limit = quote_spanned!(limit.span()=> &(#limit));
            let check = quote_spanned!(ty.span()=> #p::#check);
            quote! {
                if !#check(#value, #limit) {
                    return ::core::result::Result::Err(#p::out_of_bounds(#property));
                }
            }
        })
    })
    .collect();
    ArgumentParts {
        field,
        default_fn,
        schema,
        bound_checks,
        plain: shape.is_some(),
    }
}

/// The output type (for the output schema) and the statement turning `__pleach_ret` into the
/// call's result.
fn output_parts(output: &Output) -> (syn::Type, TokenStream) {
    match output {
        Output::Plain(ty) => {
            // Through the probe: a `Result` behind an alias of another name is refused there.
            let p = CratePath::private().at(ty.span());
            let convert = quote_spanned!(ty.span()=>
                (&&&#p::PlainProbe::<#ty>::new()).plain_output(__pleach_ret)
            );
            (ty.clone(), convert)
        }
        Output::Result { ok, error_span } => {
            let p = CratePath::private();
            let at_ok = p.at(ok.span());
            let to_output = quote_spanned!(ok.span()=>
                (&&#at_ok::ShapeProbe::<#ok>::new()).tool_output(__pleach_value)
            );
            // On the return type: an error type that cannot be reported is shown there.
            let at_error = p.at(*error_span);
            let to_error = quote_spanned! {*error_span=>
                (&&&&&#at_error::ErrorProbe::new(__pleach_error)).tool_error()
            };
            let convert = quote! {
                match __pleach_ret {
                    ::core::result::Result::Ok(__pleach_value) => #to_output,
                    ::core::result::Result::Err(__pleach_error) => ::core::result::Result::Err(#to_error),
                }
            };
            (ok.clone(), convert)
        }
    }
}

/// The autoref probes' traits the conversion of `output` calls methods of (imported `as _`), and
/// only those.
fn probe_traits(output: &Output) -> TokenStream {
    match output {
        Output::Plain(_) => quote! {
            PlainOutputContent as _, PlainOutputOther as _, PlainOutputResult as _
        },
        Output::Result { .. } => quote! {
            ErrorViaDebug as _, ErrorViaDisplay as _, ErrorViaInto as _, ErrorViaNothing as _,
            ErrorViaStdError as _, ShapeContent as _, ShapeJson as _
        },
    }
}

/// `UnifiedFields { … }`: the registry-level keys given (only `#[unified_tool]` takes them), or
/// `UnifiedFields::NONE` when none is.
fn unified_fields(attrs: &ToolAttrs) -> TokenStream {
    let p = CratePath::private();
    if attrs.id.is_none()
        && attrs.display_name.is_none()
        && attrs.category.is_none()
        && attrs.schema_key.is_none()
        && attrs.safety_tier.is_none()
    {
        // Every `#[tool]`, and a `#[unified_tool]` with no key: one name, not five `None`s.
        return quote!(#p::UnifiedFields::NONE);
    }
    let (id, display_name, category, schema_key) = (
        option(attrs.id.as_ref()),
        option(attrs.display_name.as_ref()),
        option(attrs.category.as_ref()),
        option(attrs.schema_key.as_ref()),
    );
    let tier = option(attrs.safety_tier.map(|tier| {
        let variant = match tier.value {
            SafetyTier::Critical => "Critical",
            SafetyTier::Standard => "Standard",
            SafetyTier::Advisory => "Advisory",
        };
        let variant = syn::Ident::new(variant, tier.span);
        let core = CratePath::public().at(tier.span);
        quote_spanned!(tier.span=> #core::SafetyTier::#variant)
    }));
    quote! {
        #p::UnifiedFields {
            id: #id,
            display_name: #display_name,
            category: #category,
            schema_key: #schema_key,
            safety_tier: #tier,
        }
    }
}

/// `Some(value)` / `None` as tokens.
fn option<T: quote::ToTokens>(value: Option<T>) -> TokenStream {
    value.map_or_else(
        || quote!(::core::option::Option::None),
        |value| quote!(::core::option::Option::Some(#value)),
    )
}
