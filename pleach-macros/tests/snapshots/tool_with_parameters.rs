#[allow(clippy::unused_async)]
/// Free-text search over the host corpus.
pub async fn search_corpus(
    query: String,
    limit: u32,
    language: Option<String>,
    ctx: ToolContext,
) -> Result<Vec<String>, ToolError> {
    todo_body(query, limit, language, ctx)
}
/// The `#[tool]` handle of [`search_corpus`](fn@search_corpus): the tool `search_corpus`'s definition, for explicit registration and tests.
#[allow(non_camel_case_types)]
pub struct search_corpus {}
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
        #[serde(rename = "query")]
        query: String,
        #[serde(
            rename = "limit",
            default = "__pleach_default_limit",
            deserialize_with = "::pleach_core::__private::integer"
        )]
        limit: u32,
        #[serde(rename = "language")]
        language: Option<String>,
    }
    fn __pleach_default_limit() -> u32 {
        10
    }
    fn __pleach_input_schema() -> ::pleach_core::__private::serde_json::Value {
        let mut __pleach_schema = ::pleach_core::__private::ParamsSchema::new();
        __pleach_schema
            .param::<
                String,
            >(
                "query",
                true,
                ::pleach_core::__private::ParamAttrs {
                    description: ::core::option::Option::Some("What to look for"),
                    default: ::core::option::Option::None,
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                },
            );
        __pleach_schema
            .param::<
                u32,
            >(
                "limit",
                false,
                ::pleach_core::__private::ParamAttrs {
                    description: ::core::option::Option::None,
                    default: ::pleach_core::__private::json_value(
                        &__pleach_default_limit(),
                    ),
                    minimum: ::pleach_core::__private::bound_value(&(1)),
                    maximum: ::pleach_core::__private::bound_value(&(50)),
                },
            );
        __pleach_schema
            .param::<
                Option<String>,
            >(
                "language",
                false,
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
        (&&&::pleach_core::__private::OutputProbe::<Vec<String>>::new()).output_schema()
    }
    fn __pleach_parse(
        __pleach_arguments: &str,
    ) -> ::core::result::Result<__PleachArgs, ::pleach_core::ToolError> {
        let __pleach_args: __PleachArgs = ::pleach_core::__private::parse_input(
            __pleach_arguments,
        )?;
        if !::pleach_core::__private::at_least(&__pleach_args.limit, &(1)) {
            return ::core::result::Result::Err(
                ::pleach_core::__private::out_of_bounds("limit"),
            );
        }
        if !::pleach_core::__private::at_most(&__pleach_args.limit, &(50)) {
            return ::core::result::Result::Err(
                ::pleach_core::__private::out_of_bounds("limit"),
            );
        }
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
        let __pleach_future = search_corpus(
            __pleach_args.query,
            __pleach_args.limit,
            __pleach_args.language,
            ::pleach_core::__private::context(__pleach_ctx),
        );
        ::core::result::Result::Ok(
            ::pleach_core::__private::run_now(
                __pleach_future,
                |__pleach_ret| match __pleach_ret {
                    ::core::result::Result::Ok(__pleach_value) => {
                        (&&::pleach_core::__private::ShapeProbe::<Vec<String>>::new())
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
                },
            ),
        )
    }
    impl search_corpus {
        /// The tool's name, as the model calls it.
        pub const NAME: &'static str = "search_corpus";
        /// The registry-level definition, built once (schemas generated, validators
        /// compiled) and shared.
        pub fn try_unified() -> ::core::result::Result<
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
        pub fn unified() -> ::pleach_core::UnifiedToolDefinition {
            __PLEACH_ENTRY.unified()
        }
        /// The basic definition (name, description, schemas, code).
        ///
        /// # Panics
        ///
        /// As `unified`.
        pub fn definition() -> ::pleach_core::ToolDefinition {
            __PLEACH_ENTRY.definition()
        }
        #[doc(hidden)]
        pub fn __pleach_entry() -> &'static ::pleach_core::__private::ToolEntry {
            &__PLEACH_ENTRY
        }
    }
    const __PLEACH_TOOL: ::pleach_core::__private::ToolEntry = ::pleach_core::__private::ToolEntry {
        name: "search_corpus",
        description: "Free-text search over the host corpus.",
        input_schema: __pleach_input_schema,
        output_schema: __pleach_output_schema,
        code: ::pleach_core::__private::Code {
            invoke: __pleach_invoke,
            check: __pleach_check,
            checked_by_type: true,
            output_checked_by_type: true,
            in_place: true,
            takes_context: true,
        },
        unified: ::pleach_core::__private::UnifiedFields::NONE,
        site: (file!(), line!(), column!()),
    };
    #[::pleach_core::__private::linkme::distributed_slice(
        ::pleach_core::__private::TOOLS
    )]
    #[linkme(crate = ::pleach_core::__private::linkme)]
    #[allow(unsafe_code)]
    static __PLEACH_ENTRY: ::pleach_core::__private::ToolEntry = __PLEACH_TOOL;
};
