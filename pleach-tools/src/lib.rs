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
//!     assert!(registry.contains(name));
//! }
//!
//! # #[cfg(feature = "unit-convert")]
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let convert = registry.definition("unit_convert").unwrap();
//! let out = convert
//!     .call(r#"{"value": 5, "from": "km", "to": "mi"}"#, ToolContext::new("call_1"))
//!     .await
//!     .unwrap();
//! assert_eq!(out.value()["value"], 3.10685596119);
//! assert_eq!(out.value()["dimension"], "length");
//! # });
//! ```
//!
//! ## Tools
//!
//! | tool | what it does | safety tier | batching | feature |
//! | --- | --- | --- | --- | --- |
//! | [`math`](fn@math::math) | evaluates an arithmetic expression to a finite number | none | parallel (pure) | `math` |
//! | [`unit_convert`](fn@unit_convert::unit_convert) | converts a value between units of one dimension | none | serial (inferred; it is pure: a host may hint it `parallel`) | `unit-convert` |
//! | [`datetime`](fn@datetime::datetime) | the current time, parsing, formatting, span arithmetic and differences in IANA time zones | none | serial (inferred; it is pure: a host may hint it `parallel`) | `datetime` |
//! | [`parse_structured`](fn@parse_structured::parse_structured) | reads JSON, YAML, TOML or CSV text into a JSON value, within size and depth limits | none | parallel (pure) | `parse` |
//! | [`scratchpad`](fn@scratchpad::scratchpad) | session-scoped notes: set, get, list, delete, within size limits | none | chunked on `key` (one note's calls in order) | `scratchpad` |
//! | [`text_search`](fn@text_search::text_search) | literal, regex or ranked fuzzy search of text or a scratchpad note, with byte and char offsets | none | chunked on `key` (serial without `scratchpad`: no resource key) | `text-search` |
//! | [`fs_read`](fn@fs::fs_read) | reads a UTF-8 text file (whole, or in parts) under the configured root | none | chunked on `path` | `fs` |
//! | [`fs_write`](fn@fs::fs_write) | writes a text file under the configured root, atomically | standard | chunked on `path` (one file's writes in order) | `fs` |
//! | [`fs_list`](fn@fs::fs_list) | lists a directory under the configured root | none | chunked on `path` | `fs` |
// The `shell` module exists only with its opt-in feature; without it, its names are not links.
#![cfg_attr(
    all(feature = "shell", unix),
    doc = "| [`shell_exec`](fn@shell::shell_exec) | runs an allowlisted program with an argument array, under the configured root, with a timeout | standard | serial | `shell` (opt-in, Unix) |"
)]
#![cfg_attr(
    not(all(feature = "shell", unix)),
    doc = "| `shell_exec` | runs an allowlisted program with an argument array, under the configured root, with a timeout | standard | serial | `shell` (opt-in, Unix) |"
)]
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
//! Every feature but `shell`, `url-fetch` and `http-request` is on by default. The network tools
//! go through one SSRF guard (the module `net`) and read their configuration (`UrlFetchConfig`,
//! `HttpRequestConfig`) from the runtime. With `default-features = false`, pick tools one by one;
//! the opt-in ones are always asked for by name:
//!
//! ```toml
//! pleach-tools = { version = "0.2", default-features = false, features = ["math", "shell"] }
//! ```
//!
//! Batching is what [`infer_batching_strategy`](https://docs.rs/pleach-core/latest/pleach_core/batch/fn.infer_batching_strategy.html) gives each
//! tool (a plugin's hint can override it). `math` and `parse_structured` start with a read-only
//! verb and run in parallel; `datetime` and `unit_convert` are pure too, but their names start
//! with no verb the rules know, so they get the safe default, serial, unless a host hints them
//! `parallel` (`PleachPlugin::batching_hints`). The `fs_*` tools and `scratchpad` are chunked on their resource (`path`, `key`):
//! calls on one file or note keep their order, others run side by side. `text_search` only reads,
//! but is chunked on `key` like the notes it searches (serial, the safe default, when built
//! without `scratchpad`); a host may hint it `parallel`. `shell_exec` has side effects: serial.
//! `url_fetch` and `http_request` are chunked on `url`.
//!
//! `fs_write` and `shell_exec` carry the `standard` safety tier: a call a host's detector flags
//! goes to the user for approval. Neither is `critical`, which would require every host that
//! enables them to cover them with a detector; their module docs say why their bounds suffice.
//!
//! ## Configuration
//!
//! The tools that reach the host take their configuration from the runtime, never from defaults:
//! [`fs::FsConfig`] (the root directory and size limits) and
#![cfg_attr(
    all(feature = "shell", unix),
    doc = "[`shell::ShellConfig`](shell::ShellConfig)"
)]
#![cfg_attr(not(all(feature = "shell", unix)), doc = "`shell::ShellConfig`")]
//! (the root, the allowed programs, the environment, the timeout, the output cap), given to
//! [`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide) or a plugin's
//! [`provide`](https://docs.rs/pleach-core/latest/pleach_core/plugin/struct.PleachPlugin.html#method.provide). Called without one, they fail with code 1008
//! and say what to configure. [`scratchpad::ScratchpadConfig`] changes the notes' limits, which
//! apply without it too.
//!
//! ```
//! # #[cfg(feature = "fs")] {
//! let root = tempfile::tempdir().unwrap();
//! # use pleach as pleach_core; // the runtime, for this example
//! let runtime = pleach_core::Runtime::builder()
//!     .provide(pleach_tools::fs::FsConfig::new(root.path()).unwrap().max_write_bytes(64 * 1024))
//!     .build()
//!     .unwrap();
//! # let _ = runtime;
//! # }
//! ```
//!
//! ## Errors
//!
//! Errors a model can fix by changing its arguments (a malformed expression, an unknown unit, a
//! path outside the root) are code 1001 with a message saying what is wrong and how to fix it.
//! Failures of the host (a file it may not read, a full disk) are 1008, with the underlying error
//! kept as operator detail that never reaches the model.

// Examples are held to the code's standard: a warning in one fails the doc tests.
#![doc(test(attr(deny(warnings))))]

#[cfg(feature = "datetime")]
pub mod datetime;
#[cfg(feature = "fs")]
pub mod fs;
#[cfg(feature = "http-request")]
pub mod http_request;
#[cfg(feature = "math")]
pub mod math;
#[cfg(any(feature = "url-fetch", feature = "http-request"))]
pub mod net;
#[cfg(feature = "parse")]
pub mod parse_structured;
#[cfg(feature = "scratchpad")]
pub mod scratchpad;
#[cfg(all(feature = "shell", unix))]
pub mod shell;
#[cfg(feature = "text-search")]
pub mod text_search;
#[cfg(feature = "unit-convert")]
pub mod unit_convert;
#[cfg(feature = "url-fetch")]
pub mod url_fetch;

#[cfg(any(feature = "math", feature = "unit-convert"))]
mod number;
#[cfg(any(feature = "fs", all(feature = "shell", unix)))]
mod sandbox;
#[cfg(any(
    feature = "scratchpad",
    feature = "text-search",
    feature = "fs",
    all(feature = "shell", unix),
))]
mod shorten;
#[cfg(any(
    feature = "math",
    feature = "unit-convert",
    feature = "datetime",
    feature = "scratchpad",
    feature = "fs",
    all(feature = "shell", unix),
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
        all(feature = "shell", unix),
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
/// assert!(pleach_core::tool_registry().contains("math"));
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
        #[cfg(all(feature = "shell", unix))]
        shell::shell_exec::__pleach_entry(),
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
        #[cfg(all(feature = "shell", unix))]
        shell::shell_exec::NAME,
        #[cfg(feature = "url-fetch")]
        url_fetch::url_fetch::NAME,
        #[cfg(feature = "http-request")]
        http_request::http_request::NAME,
    ]
}

/// The tools of this build that are safe to run twice: they read (`fs_read`, `fs_list`,
/// `text_search`, `url_fetch`) or only compute (`math`, `unit_convert`, `datetime`,
/// `parse_structured`), so a call whose first run's end is unknown (a durable worker died
/// mid-call) may run again. What a host declares with
/// [`RuntimeBuilder::idempotent`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.idempotent)
/// (`pleach` does for the catalog). The rest change something (`fs_write`, `shell_exec`,
/// `http_request`, `scratchpad`'s `set` and `delete`): a lost call of one ends with 1018.
///
/// ```
/// let safe: Vec<&str> = pleach_tools::idempotent_tool_names().collect();
/// # #[cfg(all(feature = "fs", feature = "math"))] {
/// assert!(safe.contains(&"fs_read") && safe.contains(&"math"));
/// assert!(!safe.contains(&"fs_write"));
/// # }
/// ```
pub fn idempotent_tool_names() -> impl Iterator<Item = &'static str> {
    const SAFE_TWICE: &[&str] = &[
        "math",
        "unit_convert",
        "datetime",
        "parse_structured",
        "text_search",
        "fs_read",
        "fs_list",
        "url_fetch",
    ];
    tool_names()
        .iter()
        .copied()
        .filter(|name| SAFE_TWICE.contains(name))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_idempotent_tools_are_the_reads_and_pure_ones_of_this_build() {
        let safe: Vec<&str> = super::idempotent_tool_names().collect();
        #[cfg(all(feature = "fs", feature = "math", feature = "datetime"))]
        for name in ["fs_read", "fs_list", "math", "datetime"] {
            assert!(safe.contains(&name), "{name}");
        }
        #[cfg(feature = "fs")]
        assert!(!safe.contains(&"fs_write"));
        assert!(!safe.contains(&"scratchpad"));
    }

    #[test]
    fn every_named_tool_is_registered_after_link() {
        super::link();
        let registry = pleach_core::tool_registry();
        for name in super::tool_names() {
            assert!(registry.contains(name), "{name} is not registered");
        }
    }
}
