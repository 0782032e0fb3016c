//! The tests whose `#[tool]`s the compile-time registry refuses, in a binary of their own: the
//! registry of a binary holding such tools fails to build, and with it every runtime built from
//! it. These tests read their tools through the tools' handles, or read the registry's error.
//!
//! - `duplicates`: two crates' tools of one name (dup-a, dup-b); an input that is not an object.
//! - `verdicts`: bounds and defaults a definition cannot be built with (`unusual_bounds`).

mod duplicates;
mod verdicts;
