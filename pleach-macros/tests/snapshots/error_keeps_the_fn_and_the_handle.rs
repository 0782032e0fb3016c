::core::compile_error! {
    "`safety_tier` is not a field of the basic tool shape (`#[tool]` takes only `name` and `description`); use `#[unified_tool(safety_tier = …)]` for the registry-level shape"
}
/// Deletes an account.
async fn delete_account(id: String) {}
/// The `#[tool]` handle of [`delete_account`](fn@delete_account): the tool `x`'s definition, for explicit registration and tests.
#[allow(non_camel_case_types)]
struct delete_account {}
impl delete_account {
    /// The tool's name, as the model calls it.
    pub(crate) const NAME: &'static str = "x";
    /// The registry-level definition, built once (schemas generated, validators
    /// compiled) and shared.
    pub(crate) fn try_unified() -> ::core::result::Result<
        ::pleach_core::UnifiedToolDefinition,
        ::pleach_core::DefinitionError,
    > {
        ::core::panic!(
            "the tool `delete_account` did not compile: see the error on its `#[tool]`"
        )
    }
    /// The registry-level definition.
    ///
    /// # Panics
    ///
    /// If the definition is refused (an `#[input]` type whose schema is not an
    /// object); `try_unified` returns that error, and the registry reports it.
    pub(crate) fn unified() -> ::pleach_core::UnifiedToolDefinition {
        ::core::panic!(
            "the tool `delete_account` did not compile: see the error on its `#[tool]`"
        )
    }
    /// The basic definition (name, description, schemas, code).
    ///
    /// # Panics
    ///
    /// As `unified`.
    pub(crate) fn definition() -> ::pleach_core::ToolDefinition {
        ::core::panic!(
            "the tool `delete_account` did not compile: see the error on its `#[tool]`"
        )
    }
    #[doc(hidden)]
    pub(crate) fn __pleach_entry() -> &'static ::pleach_core::__private::ToolEntry {
        ::core::panic!(
            "the tool `delete_account` did not compile: see the error on its `#[tool]`"
        )
    }
}
