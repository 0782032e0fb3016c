//! Two crates that define a tool of the same name, linked into one binary: the registry reports the
//! duplicate with both definition sites instead of silently keeping one. A definition the registry
//! cannot build is reported the same way.

use pleach_core::{RegistryProblem, schemars::JsonSchema, serde::Deserialize, tool};

/// An input whose schema is not an object: providers require object arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
#[allow(dead_code)]
enum Choice {
    Left,
    Right,
}

/// Picks a side.
#[tool]
async fn pick(#[input] choice: Choice) -> bool {
    matches!(choice, Choice::Left)
}

fn link_both() {
    // Referencing each crate's tool keeps it in the binary.
    std::hint::black_box((
        dup_a::shared_name::__pleach_entry(),
        dup_b::shared_name::__pleach_entry(),
    ));
}

#[test]
fn a_name_defined_in_two_crates_is_an_error_naming_both_sites() {
    link_both();
    let err = pleach_core::try_tool_registry().expect_err("the name is taken twice");
    let duplicate = err
        .problems()
        .iter()
        .find_map(|p| match p {
            RegistryProblem::DuplicateName {
                name,
                first,
                second,
            } if name == "shared_name" => Some((first.clone(), second.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no duplicate reported: {err}"));
    assert!(
        duplicate.0.file().ends_with("dup-a/src/lib.rs"),
        "{}",
        duplicate.0
    );
    assert!(
        duplicate.1.file().ends_with("dup-b/src/lib.rs"),
        "{}",
        duplicate.1
    );
    let text = err.to_string();
    assert!(
        text.contains("tool name `shared_name` is defined twice"),
        "{text}"
    );
    assert!(
        text.contains("dup-a/src/lib.rs:") && text.contains("dup-b/src/lib.rs:"),
        "{text}"
    );
}

/// The infallible accessors do not pick one of the two: they panic naming both sites, as axum
/// does for overlapping routes.
#[test]
fn the_infallible_accessors_refuse_the_duplicate_loudly() {
    link_both();
    for accessor in [
        (|| {
            let _ = pleach_core::tool_registry();
        }) as fn(),
        || {
            let _ = pleach_core::active_registry();
        },
        || {
            let _ = pleach_core::validate_tool_call(&pleach_core::ToolCall::new(
                "c1",
                "shared_name",
                "{}",
            ));
        },
    ] {
        let panic = std::panic::catch_unwind(accessor).expect_err("a duplicate is refused");
        let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            text.contains("tool name `shared_name` is defined twice")
                && text.contains("dup-a/src/lib.rs:")
                && text.contains("dup-b/src/lib.rs:")
                && text.contains("try_tool_registry()"),
            "{text}"
        );
    }
}

#[test]
fn a_definition_that_cannot_be_built_is_reported_not_dropped() {
    link_both();
    let err = pleach_core::try_tool_registry().expect_err("pick's input is not an object");
    let text = err.to_string();
    assert!(
        text.contains("tool `pick`: the input schema is invalid"),
        "{text}"
    );
    assert!(
        text.contains("duplicates.rs"),
        "the message names the definition site: {text}"
    );
    assert!(pick::try_unified().is_err());
}

#[test]
fn runtime_construction_refuses_the_duplicate() {
    link_both();
    let err = pleach_core::Runtime::builder()
        .build()
        .expect_err("the compile-time registry has a duplicate");
    let text = err.to_string();
    assert!(
        text.contains("tool name `shared_name` is defined twice"),
        "{text}"
    );
    assert!(
        text.contains("dup-a/src/lib.rs:") && text.contains("dup-b/src/lib.rs:"),
        "{text}"
    );
}
