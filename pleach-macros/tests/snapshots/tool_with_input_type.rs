#[allow(clippy::unused_async)]
async fn greet_someone(greeting: Greeting) -> Greeted {
    make(greeting)
}
/// The `#[tool]` handle of [`greet_someone`](fn@greet_someone): the tool `greet`'s definition, for explicit registration and tests.
#[allow(non_camel_case_types)]
struct greet_someone {}
#[allow(clippy::all, clippy::pedantic, non_snake_case, unused_qualifications)]
const _: () = {
    use ::pleach_core::__private::{
        OutputSchemaDerived as _, OutputSchemaNone as _, OutputSchemaStructured as _,
        PlainOutputContent as _, PlainOutputOther as _, PlainOutputResult as _,
    };
    fn __pleach_output_schema() -> ::core::option::Option<
        ::pleach_core::__private::serde_json::Value,
    > {
        (&&&::pleach_core::__private::OutputProbe::<Greeted>::new()).output_schema()
    }
    fn __pleach_parse(
        __pleach_arguments: &str,
    ) -> ::core::result::Result<Greeting, ::pleach_core::ToolError> {
        ::pleach_core::__private::parse_input::<Greeting>(__pleach_arguments)
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
        let __pleach_future = greet_someone(__pleach_args);
        ::core::result::Result::Ok(
            ::pleach_core::__private::run_now(
                __pleach_future,
                |__pleach_ret| {
                    (&&&::pleach_core::__private::PlainProbe::<Greeted>::new())
                        .plain_output(__pleach_ret)
                },
            ),
        )
    }
    impl greet_someone {
        /// The tool's name, as the model calls it.
        pub(crate) const NAME: &'static str = "greet";
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
        name: "greet",
        description: "Greets someone.",
        input_schema: ::pleach_core::__private::input_schema::<Greeting>,
        output_schema: __pleach_output_schema,
        code: ::pleach_core::__private::Code {
            invoke: __pleach_invoke,
            check: __pleach_check,
            checked_by_type: false,
            output_checked_by_type: false,
            in_place: true,
            takes_context: false,
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
