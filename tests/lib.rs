//! pleach's integration tests live in this package's test targets: `main.rs`, a module per area,
//! and the areas that need a binary of their own (`refused_tools.rs`, `registry.rs`, `safety.rs`);
//! the library is empty. The macros' compile-fail and pass cases are the package `pleach-ui-tests`
//! (`ui/`).
