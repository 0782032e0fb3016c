//! The tool's handle: the struct named as the user's fn whose associated items are the tool's
//! definition (`my_tool::NAME`, `my_tool::definition()`, …). A tool that compiles (`expand`) and
//! one in error (`fallback`) emit the same handle with other bodies.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::ItemFn;
use crate::attr::Shape;
use crate::paths::CratePath;

/// The tool's handle: a struct named as the fn (the type namespace has room for it) whose
/// associated items are the tool's definition. A tool in error (`fallback`) gets the same public
/// shape with other bodies, so code using the handle reads the same either way.
pub(crate) struct Handle<'a> {
    pub(crate) shape: Shape,
    pub(crate) item: &'a ItemFn,
    /// The tool's name, as the model calls it.
    pub(crate) name: &'a str,
}

/// The bodies of the handle's fns, each an expression of the fn's return type.
pub(crate) struct HandleBodies {
    pub(crate) try_unified: TokenStream,
    pub(crate) unified: TokenStream,
    pub(crate) definition: TokenStream,
    pub(crate) entry: TokenStream,
}

impl Handle<'_> {
    /// `struct my_tool {}`, as visible as the fn.
    pub(crate) fn declaration(&self) -> TokenStream {
        let fn_ident = &self.item.sig.ident;
        let vis = &self.item.vis;
        let doc = format!(
            " The `{}` handle of [`{fn_ident}`](fn@{fn_ident}): the tool `{}`'s definition, for explicit registration and tests.",
            self.shape.attribute(),
            self.name
        );
        quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types)]
            #vis struct #fn_ident {}
        }
    }

    /// `impl my_tool { NAME, try_unified, unified, definition, __pleach_entry }`.
    pub(crate) fn impl_block(&self, bodies: &HandleBodies) -> TokenStream {
        let fn_ident = &self.item.sig.ident;
        let method_vis = match &self.item.vis {
            syn::Visibility::Inherited => quote!(pub(crate)),
            other => quote!(#other),
        };
        let name = self.name;
        let HandleBodies {
            try_unified,
            unified,
            definition,
            entry,
        } = bodies;
        let (core, p) = (CratePath::public(), CratePath::private());
        quote! {
        impl #fn_ident {
            /// The tool's name, as the model calls it.
            #method_vis const NAME: &'static str = #name;

            /// The registry-level definition, built once (schemas generated, validators
            /// compiled) and shared.
            #method_vis fn try_unified() -> ::core::result::Result<
                #core::UnifiedToolDefinition,
                #core::DefinitionError,
            > {
                #try_unified
            }

            /// The registry-level definition.
            ///
            /// # Panics
            ///
            /// If the definition is refused (an `#[input]` type whose schema is not an
            /// object); `try_unified` returns that error, and the registry reports it.
            #method_vis fn unified() -> #core::UnifiedToolDefinition {
                #unified
            }

            /// The basic definition (name, description, schemas, code).
            ///
            /// # Panics
            ///
            /// As `unified`.
            #method_vis fn definition() -> #core::ToolDefinition {
                #definition
            }

            #[doc(hidden)]
            #method_vis fn __pleach_entry() -> &'static #p::ToolEntry {
                #entry
            }
        }
        }
    }
}
