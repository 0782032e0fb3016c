//! pleach's integration and compile-fail tests live in this package's test targets
//! (`ui.rs`, `registry.rs`, `duplicates.rs`, `validation.rs`, `tools.rs`); the library is empty.
