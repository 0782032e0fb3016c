#[allow(clippy::unused_async)]
/// Looks up an account.
pub(crate) async fn dangerous_lookup(account_id: String) -> std::io::Result<String> {
    lookup(account_id).await
}
/// The `#[unified_tool]` handle of [`dangerous_lookup`](fn@dangerous_lookup): the tool `dangerous_lookup`'s definition, for explicit registration and tests.
#[allow(non_camel_case_types)]
pub(crate) struct dangerous_lookup {}
#[allow(clippy::all, clippy::pedantic, non_snake_case, unused_qualifications)]
const _: () = {
    use ::pleach_core::__private::{
        OutputSchemaDerived as _, OutputSchemaNone as _, OutputSchemaStructured as _,
        ErrorViaDebug as _, ErrorViaDisplay as _, ErrorViaInto as _,
        ErrorViaNothing as _, ErrorViaStdError as _, ShapeContent as _, ShapeJson as _,
    };
    #[derive(::pleach_core::__private::serde::Deserialize)]
    #[serde(crate = "::pleach_core::__private::serde", deny_unknown_fields)]
    struct __PleachArgs {
        #[serde(rename = "account_id")]
        account_id: String,
    }
    fn __pleach_input_schema() -> ::pleach_core::__private::serde_json::Value {
        let mut __pleach_schema = ::pleach_core::__private::ParamsSchema::new();
        __pleach_schema
            .param::<
                String,
            >(
                "account_id",
                true,
                ::pleach_core::__private::ParamAttrs {
                    description: ::core::option::Option::None,
                    default: ::core::option::Option::None,
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                },
            );
        __pleach_schema.finish()
    }
    fn __pleach_output_schema() -> ::core::option::Option<
        ::pleach_core::__private::serde_json::Value,
    > {
        (&&&::pleach_core::__private::OutputProbe::<String>::new()).output_schema()
    }
    fn __pleach_parse(
        __pleach_arguments: &str,
    ) -> ::core::result::Result<__PleachArgs, ::pleach_core::ToolError> {
        let __pleach_args: __PleachArgs = ::pleach_core::__private::parse_input(
            __pleach_arguments,
        )?;
        ::core::result::Result::Ok(__pleach_args)
    }
    fn __pleach_check(
        __pleach_arguments: &str,
    ) -> ::core::result::Result<(), ::pleach_core::ToolError> {
        __pleach_parse(__pleach_arguments).map(::core::mem::drop)
    }
    fn __pleach_invoke(
        __pleach_arguments: &str,
        __pleach_ctx: &mut ::core::option::Option<::pleach_core::ToolContext>,
    ) -> ::core::result::Result<
        ::pleach_core::__private::Started,
        ::pleach_core::ToolError,
    > {
        let __pleach_args = __pleach_parse(__pleach_arguments)?;
        let __pleach_future = dangerous_lookup(__pleach_args.account_id);
        ::core::result::Result::Ok(
            ::pleach_core::__private::boxed(async move {
                let __pleach_ret = __pleach_future.await;
                match __pleach_ret {
                    ::core::result::Result::Ok(__pleach_value) => {
                        (&&::pleach_core::__private::ShapeProbe::<String>::new())
                            .tool_output(__pleach_value)
                    }
                    ::core::result::Result::Err(__pleach_error) => {
                        ::core::result::Result::Err(
                            (&&&&&::pleach_core::__private::ErrorProbe::new(
                                __pleach_error,
                            ))
                                .tool_error(),
                        )
                    }
                }
            }),
        )
    }
    impl dangerous_lookup {
        /// The tool's name, as the model calls it.
        pub(crate) const NAME: &'static str = "dangerous_lookup";
        /// The registry-level definition, built once (schemas generated, validators
        /// compiled) and shared.
        pub(crate) fn try_unified() -> ::core::result::Result<
            ::pleach_core::UnifiedToolDefinition,
            ::pleach_core::DefinitionError,
        > {
            __PLEACH_ENTRY.try_unified()
        }
        /// The registry-level definition.
        ///
        /// # Panics
        ///
        /// If the definition is refused (an `#[input]` type whose schema is not an
        /// object); `try_unified` returns that error, and the registry reports it.
        pub(crate) fn unified() -> ::pleach_core::UnifiedToolDefinition {
            __PLEACH_ENTRY.unified()
        }
        /// The basic definition (name, description, schemas, code).
        ///
        /// # Panics
        ///
        /// As `unified`.
        pub(crate) fn definition() -> ::pleach_core::ToolDefinition {
            __PLEACH_ENTRY.definition()
        }
        #[doc(hidden)]
        pub(crate) fn __pleach_entry() -> &'static ::pleach_core::__private::ToolEntry {
            &__PLEACH_ENTRY
        }
    }
    const __PLEACH_TOOL: ::pleach_core::__private::ToolEntry = ::pleach_core::__private::ToolEntry {
        name: "dangerous_lookup",
        description: "Looks up an account.",
        input_schema: __pleach_input_schema,
        output_schema: __pleach_output_schema,
        code: ::pleach_core::__private::Code {
            invoke: __pleach_invoke,
            check: __pleach_check,
            checked_by_type: true,
            output_checked_by_type: true,
            in_place: false,
            takes_context: false,
        },
        unified: ::pleach_core::__private::UnifiedFields {
            id: ::core::option::Option::Some("dangerous_lookup"),
            display_name: ::core::option::Option::Some("Dangerous Lookup"),
            category: ::core::option::Option::Some("analysis"),
            schema_key: ::core::option::Option::Some("DangerousLookupInput"),
            safety_tier: ::core::option::Option::Some(
                ::pleach_core::SafetyTier::Critical,
            ),
        },
        site: (file!(), line!(), column!()),
    };
    #[::pleach_core::__private::linkme::distributed_slice(
        ::pleach_core::__private::TOOLS
    )]
    #[linkme(crate = ::pleach_core::__private::linkme)]
    #[allow(unsafe_code)]
    static __PLEACH_ENTRY: ::pleach_core::__private::ToolEntry = __PLEACH_TOOL;
};
