//! The compile-time contract of `#[tool]` and `#[unified_tool]`, proved through real compiler runs.
//!
//! - `fail/*.rs` (this test, through trybuild): one rule per file, named for the rule. Each case
//!   breaks exactly that rule and nothing else, and its `.stderr` is the reviewed diagnostic: one
//!   error, on the offending token, saying how to fix it (`every_mistake_reported.rs` makes several
//!   mistakes and shows that each is reported once). The user's fn is emitted beside
//!   `compile_error!`, helper attributes removed, and so is the tool's handle (with bodies that
//!   never run), so a mistake does not cascade into errors about `#[arg]`, the fn's callers or code
//!   using the handle. A body that does not parse yet (`half_typed_body.rs`) keeps the fn, the
//!   handle and the registration: the only error is the compiler's own.
//! - `pass/*.rs` (test targets of their own, `harness = false`, listed in `Cargo.toml`): the
//!   accepted forms (arguments with `#[arg]`, `Option<T>`, an `#[input]` struct derived by hand or
//!   by `#[input]` on the type, `ToolContext`, every return form, every `#[unified_tool]` key, raw
//!   identifiers, renamed and nested tools). Each is a program of its own, so its registry holds
//!   its tools alone; it runs, asserts what the registry or the tool's handle reports, and that the
//!   fn is still callable as written, with warnings denied.
//! - `pending/*.rs` (not run): rules whose diagnostic does not meet that bar yet; each file says
//!   what the compiler shows today and what would fix it. A case moves to `fail` with its fix.
//!
//! The cases depend on `pleach-core` alone (and tokio to run), the way a user's crate does: this
//! package has no other dependency, and trybuild compiles the fail cases in a crate of its own
//! whose dependencies are this package's. Only the fail cases go through trybuild: it checks them
//! all in one `cargo check` (its batch mode, which it uses only when no pass case is given), where
//! pass cases would make it build its copy of the dependencies in full (twice: its first build and
//! the cases' use different compiler flags) and then build and run each case one after another.
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p pleach-ui-tests --test ui`,
//! then review every diff.

#[test]
fn ui() {
    // trybuild resolves the glob against this package's directory (`CARGO_MANIFEST_DIR`).
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
}
