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
#![cfg_attr(
    feature = "url-fetch",
    doc = "| [`url_fetch`](fn@url_fetch::url_fetch) | GETs a public http or https URL behind the SSRF guard: status, headers, body within caps | none | chunked by `url` | `url-fetch` (opt-in) |"
)]
#![cfg_attr(
    not(feature = "url-fetch"),
    doc = "| [`url_fetch`](https://docs.rs/pleach-tools/latest/pleach_tools/url_fetch/fn.url_fetch.html) | GETs a public http or https URL behind the SSRF guard: status, headers, body within caps | none | chunked by `url` | `url-fetch` (opt-in) |"
)]
#![cfg_attr(
    feature = "http-request",
    doc = "| [`http_request`](fn@http_request::http_request) | sends GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS with headers and a body to an allowlisted host, behind the same guard | standard | chunked by `url` | `http-request` (opt-in) |"
)]
#![cfg_attr(
    not(feature = "http-request"),
    doc = "| [`http_request`](https://docs.rs/pleach-tools/latest/pleach_tools/http_request/fn.http_request.html) | sends GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS with headers and a body to an allowlisted host, behind the same guard | standard | chunked by `url` | `http-request` (opt-in) |"
)]
//!
//! The features of the first four are on by default. The network tools are opt-in: both go
//! through one SSRF guard (the module `net`) and read their configuration (`UrlFetchConfig`,
//! `HttpRequestConfig`) from the runtime. With `default-features = false`, pick tools one by one:
//!
//! ```toml
//! pleach-tools = { version = "0.1", default-features = false, features = ["math"] }
//! ```
//!
//! Errors a model can fix by changing its arguments (a malformed expression, an unknown unit)
//! are code 1001 with a message saying what is wrong and how to fix it.
//!
//! The batching column is what [`infer_batching_strategy`](pleach_core::infer_batching_strategy)
//! gives each tool (a read-only verb first is parallel; a `url` argument chunks by URL).

#[cfg(feature = "datetime")]
pub mod datetime;
#[cfg(feature = "http-request")]
pub mod http_request;
#[cfg(feature = "math")]
pub mod math;
#[cfg(any(feature = "url-fetch", feature = "http-request"))]
pub mod net;
#[cfg(feature = "parse")]
pub mod parse_structured;
#[cfg(feature = "unit-convert")]
pub mod unit_convert;
#[cfg(feature = "url-fetch")]
pub mod url_fetch;

#[cfg(any(feature = "math", feature = "unit-convert"))]
mod number;
#[cfg(any(feature = "math", feature = "unit-convert", feature = "datetime"))]
mod suggest;
#[cfg(all(
    test,
    any(
        feature = "math",
        feature = "unit-convert",
        feature = "datetime",
        feature = "parse",
        feature = "url-fetch",
        feature = "http-request"
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
        #[cfg(feature = "url-fetch")]
        url_fetch::url_fetch::__pleach_entry(),
        #[cfg(feature = "http-request")]
        http_request::http_request::__pleach_entry(),
    ));
}

/// The names of the tools this build of the crate has (those of the enabled features), as a model
/// calls them.
///
/// ```
/// let names = pleach_tools::tool_names();
/// # #[cfg(all(feature = "math", feature = "unit-convert", feature = "datetime", feature = "parse"))]
/// assert!(names.starts_with(&["math", "unit_convert", "datetime", "parse_structured"])); // the defaults
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
        #[cfg(feature = "url-fetch")]
        url_fetch::url_fetch::NAME,
        #[cfg(feature = "http-request")]
        http_request::http_request::NAME,
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
