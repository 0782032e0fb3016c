//! # pleach-tools
//!
//! Ready-made tools for [pleach](pleach_core): each an ordinary `#[tool]` fn, behind a cargo
//! feature, registered in [`pleach_core::tool_registry()`] once this crate is linked.
//!
//! ## Quick start
//!
//! ```
//! use pleach_core::{ToolContext, tool_registry};
//!
//! // A crate nothing refers to can be left out by the linker, and its tools with it: call
//! // `link()` once, anywhere, to keep the catalog.
//! pleach_tools::link();
//!
//! let registry = tool_registry();
//! for name in pleach_tools::tool_names() {
//!     assert!(registry.has(name));
//! }
//!
//! # #[cfg(feature = "unit-convert")]
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let convert = registry.definition("unit_convert").unwrap();
//! let out = convert
//!     .call(r#"{"value": 5, "from": "km", "to": "mi"}"#, ToolContext::new("call_1"))
//!     .await
//!     .unwrap();
//! assert_eq!(out["value"], 3.10685596119);
//! assert_eq!(out["dimension"], "length");
//! # });
//! ```
//!
//! ## Tools
//!
//! | tool | what it does | safety tier | batching | feature |
//! | --- | --- | --- | --- | --- |
//! | [`math`](fn@math::math) | evaluates an arithmetic expression to a finite number | none | parallel (pure) | `math` |
//! | [`unit_convert`](fn@unit_convert::unit_convert) | converts a value between units of one dimension | none | parallel (pure) | `unit-convert` |
//! | [`datetime`](fn@datetime::datetime) | the current time, parsing, formatting, span arithmetic and differences in IANA time zones | none | parallel (pure) | `datetime` |
//! | [`parse_structured`](fn@parse_structured::parse_structured) | reads JSON, YAML, TOML or CSV text into a JSON value, within size and depth limits | none | parallel (pure) | `parse` |
//! | [`scratchpad`](fn@scratchpad::scratchpad) | session-scoped notes: set, get, list, delete, within size limits | none | chunked on `key` (one note's calls in order) | `scratchpad` |
//! | [`text_search`](fn@text_search::text_search) | literal, regex or ranked fuzzy search of text or a scratchpad note, with byte and char offsets | none | chunked on `key` (serial without `scratchpad`: no resource key) | `text-search` |
//! | [`fs_read`](fn@fs::fs_read) | reads a UTF-8 text file (whole, or in parts) under the configured root | none | chunked on `path` | `fs` |
//! | [`fs_write`](fn@fs::fs_write) | writes a text file under the configured root, atomically | standard | chunked on `path` (one file's writes in order) | `fs` |
//! | [`fs_list`](fn@fs::fs_list) | lists a directory under the configured root | none | chunked on `path` | `fs` |
//!
//! All four features are on by default. With `default-features = false`, pick tools one by one:
//!
//! ```toml
//! pleach-tools = { version = "0.1", default-features = false, features = ["math"] }
//! ```
//!
//! Errors a model can fix by changing its arguments (a malformed expression, an unknown unit)
//! are code 1001 with a message saying what is wrong and how to fix it.

#[cfg(feature = "datetime")]
pub mod datetime;
#[cfg(feature = "fs")]
pub mod fs;
#[cfg(feature = "math")]
pub mod math;
#[cfg(feature = "parse")]
pub mod parse_structured;
#[cfg(feature = "scratchpad")]
pub mod scratchpad;
#[cfg(feature = "text-search")]
pub mod text_search;
#[cfg(feature = "unit-convert")]
pub mod unit_convert;

#[cfg(any(feature = "math", feature = "unit-convert"))]
mod number;
#[cfg(any(feature = "fs", feature = "shell"))]
mod sandbox;
#[cfg(any(
    feature = "scratchpad",
    feature = "text-search",
    feature = "fs",
    feature = "shell",
))]
mod shorten;
#[cfg(any(
    feature = "math",
    feature = "unit-convert",
    feature = "datetime",
    feature = "scratchpad",
    feature = "fs",
    feature = "shell",
))]
mod suggest;
#[cfg(all(
    test,
    any(
        feature = "math",
        feature = "unit-convert",
        feature = "datetime",
        feature = "parse",
        feature = "scratchpad",
        feature = "text-search",
        feature = "fs",
        feature = "shell",
    )
))]
mod test_support;

/// Keeps every enabled tool of this crate in the binary, so [`pleach_core::tool_registry()`]
/// lists them. Call it once, anywhere (`main` is a good place); calling it again does nothing.
///
/// Tools register through link-time sections, and a linker leaves out the parts of a library
/// nothing refers to: without a reference, this crate's tools can silently vanish from the
/// registry. This fn refers to each tool's registry entry.
///
/// ```
/// pleach_tools::link();
/// # #[cfg(feature = "math")]
/// assert!(pleach_core::tool_registry().has("math"));
/// ```
pub fn link() {
    std::hint::black_box((
        #[cfg(feature = "math")]
        math::math::__pleach_entry(),
        #[cfg(feature = "unit-convert")]
        unit_convert::unit_convert::__pleach_entry(),
        #[cfg(feature = "datetime")]
        datetime::datetime::__pleach_entry(),
        #[cfg(feature = "parse")]
        parse_structured::parse_structured::__pleach_entry(),
        #[cfg(feature = "scratchpad")]
        scratchpad::scratchpad::__pleach_entry(),
        #[cfg(feature = "text-search")]
        text_search::text_search::__pleach_entry(),
        #[cfg(feature = "fs")]
        fs::fs_read::__pleach_entry(),
        #[cfg(feature = "fs")]
        fs::fs_write::__pleach_entry(),
        #[cfg(feature = "fs")]
        fs::fs_list::__pleach_entry(),
    ));
}

/// The names of the tools this build of the crate has (those of the enabled features), as a model
/// calls them.
///
/// ```
/// let names = pleach_tools::tool_names();
/// # #[cfg(all(feature = "math", feature = "unit-convert", feature = "datetime", feature = "parse"))]
/// assert!(names.starts_with(&["math", "unit_convert", "datetime", "parse_structured"]));
/// ```
pub fn tool_names() -> &'static [&'static str] {
    &[
        #[cfg(feature = "math")]
        math::math::NAME,
        #[cfg(feature = "unit-convert")]
        unit_convert::unit_convert::NAME,
        #[cfg(feature = "datetime")]
        datetime::datetime::NAME,
        #[cfg(feature = "parse")]
        parse_structured::parse_structured::NAME,
        #[cfg(feature = "scratchpad")]
        scratchpad::scratchpad::NAME,
        #[cfg(feature = "text-search")]
        text_search::text_search::NAME,
        #[cfg(feature = "fs")]
        fs::fs_read::NAME,
        #[cfg(feature = "fs")]
        fs::fs_write::NAME,
        #[cfg(feature = "fs")]
        fs::fs_list::NAME,
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_named_tool_is_registered_after_link() {
        super::link();
        let registry = pleach_core::tool_registry();
        for name in super::tool_names() {
            assert!(registry.has(name), "{name} is not registered");
        }
    }
}
