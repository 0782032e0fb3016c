//! Expansion snapshots: the code each macro generates for representative inputs, pretty-printed
//! and compared to files under `tests/snapshots/`. A change in generated code shows up as a diff to
//! review; `UPDATE_EXPECT=1 cargo test -p pleach-macros` rewrites the files.

use expect_test::{ExpectFile, expect_file};
use quote::quote;

use crate::attr::Shape;
use crate::expand::expand;

fn check(
    shape: Shape,
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
    expected: &ExpectFile,
) {
    assert_pretty(expand(shape, args, item), expected);
}

fn assert_pretty(tokens: proc_macro2::TokenStream, expected: &ExpectFile) {
    let file: syn::File = syn::parse2(tokens).expect("the expansion is valid Rust");
    expected.assert_eq(&prettyplease::unparse(&file));
}

#[test]
fn tool_with_parameters() {
    check(
        Shape::Basic,
        quote!(),
        quote! {
            /// Free-text search over the host corpus.
            pub async fn search_corpus(
                #[arg(description = "What to look for")] query: String,
                #[arg(default = 10, min = 1, max = 50)] limit: u32,
                language: Option<String>,
                ctx: ToolContext,
            ) -> Result<Vec<String>, ToolError> {
                todo_body(query, limit, language, ctx)
            }
        },
        &expect_file!["../tests/snapshots/tool_with_parameters.rs"],
    );
}

#[test]
fn tool_with_input_type() {
    check(
        Shape::Basic,
        quote!(name = "greet", description = "Greets someone."),
        quote! {
            async fn greet_someone(#[input] greeting: Greeting) -> Greeted {
                make(greeting)
            }
        },
        &expect_file!["../tests/snapshots/tool_with_input_type.rs"],
    );
}

#[test]
fn unified_tool_with_every_key() {
    check(
        Shape::Unified,
        quote!(
            id = "dangerous_lookup",
            display_name = "Dangerous Lookup",
            category = "analysis",
            schema_key = "DangerousLookupInput",
            safety_tier = "critical"
        ),
        quote! {
            /// Looks up an account.
            pub(crate) async fn dangerous_lookup(account_id: String) -> std::io::Result<String> {
                lookup(account_id).await
            }
        },
        &expect_file!["../tests/snapshots/unified_tool_with_every_key.rs"],
    );
}

/// On error: one `compile_error!` per mistake, the fn as written (helper attributes removed) and
/// the handle with the items of a tool that compiles, its bodies never run.
#[test]
fn error_keeps_the_fn_and_the_handle() {
    check(
        Shape::Basic,
        quote!(name = "x", safety_tier = "critical"),
        quote! {
            /// Deletes an account.
            async fn delete_account(#[arg(description = "Which")] id: String) {}
        },
        &expect_file!["../tests/snapshots/error_keeps_the_fn_and_the_handle.rs"],
    );
}

/// A body that does not parse cannot be pretty-printed; what matters is that the expansion is the
/// full one (no error of ours), with the body as written, run boxed.
#[test]
fn half_typed_body_keeps_the_handle_and_the_entry() {
    let tokens = expand(
        Shape::Basic,
        quote!(),
        quote! {
            /// Looks a word up.
            async fn lookup(word: String) -> String {
                let meaning = ;
                word
            }
        },
    )
    .to_string();
    assert!(!tokens.contains("compile_error"), "{tokens}");
    for part in [
        "{ let meaning = ; word }",
        "struct lookup { }",
        "impl lookup",
        "fn definition ()",
        "static __PLEACH_ENTRY",
        // The scan finds no `.await`, but it cannot vouch for a body still being typed.
        "in_place : false",
    ] {
        assert!(tokens.contains(part), "no `{part}` in {tokens}");
    }
}

/// Where a struct cannot stand beside the fn (it takes `self`, so sits in an `impl`), or where
/// another tool attribute left on the fn adds the handle when it expands, the error comes alone.
#[test]
fn error_adds_no_second_handle() {
    for item in [
        quote! {
            /// Counts.
            async fn count(&self, step: u32) -> u32 { step }
        },
        quote! {
            /// Counts.
            #[unified_tool]
            async fn count(step: u32) -> u32 { step }
        },
    ] {
        let tokens = expand(Shape::Basic, quote!(), item).to_string();
        assert!(tokens.contains("compile_error"), "{tokens}");
        assert!(!tokens.contains("struct"), "{tokens}");
    }
}

/// `#[input]`: the two derives first, the type's attributes as written, the crate attributes
/// last (after the user's `Serialize`, which reads them too).
#[test]
fn input_type() {
    assert_pretty(
        crate::input::expand(
            crate::input::Role::Input,
            quote!(),
            quote! {
                /// How to travel.
                #[serde(rename_all = "snake_case")]
                #[derive(Debug, Serialize)]
                pub enum Mode {
                    /// On foot.
                    Walk,
                    Cycle,
                }
            },
        ),
        &expect_file!["../tests/snapshots/input_type.rs"],
    );
}

/// A derive or crate attribute the type already has is not added again.
#[test]
fn input_type_with_its_own_derive() {
    assert_pretty(
        crate::input::expand(
            crate::input::Role::Input,
            quote!(),
            quote! {
                #[derive(serde::Deserialize)]
                #[serde(deny_unknown_fields, crate = "pleach_core::serde")]
                struct Query {
                    text: String,
                }
            },
        ),
        &expect_file!["../tests/snapshots/input_type_with_its_own_derive.rs"],
    );
}

/// `#[output]` with `#[input]` below it: one expansion for both, `JsonSchema` once, each crate
/// attribute once.
#[test]
fn output_and_input_type() {
    assert_pretty(
        crate::input::expand(
            crate::input::Role::Output,
            quote!(),
            quote! {
                /// What a receipt is for.
                #[input]
                #[derive(Debug)]
                pub enum Category {
                    Food,
                    Travel,
                }
            },
        ),
        &expect_file!["../tests/snapshots/output_and_input_type.rs"],
    );
}

/// On a fn, or with arguments: one error each, on the token, and the item as written.
#[test]
fn input_errors() {
    let on_fn = crate::input::expand(
        crate::input::Role::Input,
        quote!(),
        quote!(
            async fn find(text: String) {}
        ),
    )
    .to_string();
    assert!(on_fn.contains("compile_error"), "{on_fn}");
    assert!(on_fn.contains("async fn find"), "{on_fn}");
    assert!(!on_fn.contains("derive"), "{on_fn}");
    let with_args = crate::input::expand(
        crate::input::Role::Input,
        quote!(flatten),
        quote!(
            struct Query {}
        ),
    )
    .to_string();
    assert!(with_args.contains("takes no arguments"), "{with_args}");
    assert!(
        with_args.contains("JsonSchema"),
        "expanded all the same: {with_args}"
    );
}
