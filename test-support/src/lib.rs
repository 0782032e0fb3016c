//! What pleach's tests share, in one place instead of `#[path]` includes across packages: a
//! loopback HTTP/1.1 server ([`http`]) and, on it, a scripted OpenAI-compatible model
//! ([`model`]). Not published: a dev-dependency of the packages whose tests use it (and of
//! `pleach-bench`, which measures against the same model).
//!
//! Written by hand rather than on a server framework: a few dozen lines keep a framework out of
//! the tests' dependency tree, and the tests need odd replies (a body cut short, one that never
//! ends, a server that never answers) that a framework would make awkward.

pub mod http;
pub mod model;
