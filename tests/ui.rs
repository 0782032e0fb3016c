//! The compile-time contract of `#[tool]` and `#[unified_tool]`, proved through real compiler runs
//! (trybuild).
//!
//! - `ui/fail/*.rs`: one rule per file, named for the rule. Each case breaks exactly that rule and
//!   nothing else, and its `.stderr` is the reviewed diagnostic: one error, on the offending token,
//!   saying how to fix it (`every_mistake_reported.rs` makes several mistakes and shows that each
//!   is reported once). The user's fn is emitted beside `compile_error!`, helper attributes
//!   removed, and so is the tool's handle (with bodies that never run), so a mistake does not
//!   cascade into errors about `#[arg]`, the fn's callers or code using the handle. A body that
//!   does not parse yet (`half_typed_body.rs`) keeps the fn, the handle and the registration: the
//!   only error is the compiler's own.
//! - `ui/pass/*.rs`: the accepted forms (arguments with `#[arg]`, `Option<T>`, an `#[input]`
//!   struct derived by hand or by `#[input]` on the type, `ToolContext`, every return form, every `#[unified_tool]` key, raw identifiers,
//!   renamed and nested tools). Each one runs and asserts what the registry or the tool's handle
//!   reports, and that the fn is still callable as written.
//! - `ui/pending/*.rs` (not run): rules whose diagnostic does not meet that bar yet; each file says
//!   what the compiler shows today and what would fix it. A case moves to `ui/fail` with its fix.
//!
//! The cases depend on `pleach-core` alone (and tokio to run), the way a user's crate does.
//! Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test -p pleach-tests --test main ui::`, then review every diff.

#[test]
fn ui() {
    // trybuild resolves these globs against this package's directory (`CARGO_MANIFEST_DIR`).
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*.rs");
    t.pass("ui/pass/*.rs");
}
