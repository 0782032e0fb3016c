//! Every default of pleach-core that is a number, a size or a duration, in one place: each is
//! what its setting is when a host does not set it, and the setter's doc names it. On/off
//! defaults and empty ones (no detectors, no meter) are said in their setter's doc alone.
//!
//! | constant | the default of |
//! | --- | --- |
//! | [`TIMEOUT`], [`CANCEL_GRACE`], [`APPROVAL_TIMEOUT`], [`MAX_REPEATED_FAILURES`], [`MAX_CONCURRENCY`], [`MAX_IN_FLIGHT`] | the runtime ([`RuntimeBuilder`](crate::RuntimeBuilder)) |
//! | [`MAX_ARGUMENT_BYTES`], [`MAX_ARGUMENT_DEPTH`], [`MAX_RESULT_BYTES`] | a call's [`Limits`](crate::Limits) |
//! | [`MAX_HISTORY_CONTENT_BYTES`] | a durable worker ([`durable::Worker`](crate::durable::Worker)) |
//! | [`MAX_STEPS`], [`MAX_RESPONSE_BYTES`] | an agent run ([`AgentOptions`](crate::agent::AgentOptions)) |
//! | [`MAX_EVENT_BYTES`] | a streamed response's framing ([`providers::sse`](crate::providers::sse)) |
//! | `MAX_TOKENS` (feature `http`) | an Anthropic response's `max_tokens` |
//!
//! ```
//! use std::time::Duration;
//! use pleach_core::defaults;
//!
//! assert_eq!(defaults::TIMEOUT, Duration::from_secs(120));
//! assert_eq!(pleach_core::agent::AgentOptions::default().max_steps, defaults::MAX_STEPS);
//! ```

use std::time::Duration;

/// How long a call may run when neither its tool nor the runtime sets a timeout: the default of
/// [`RuntimeBuilder::default_timeout`](crate::RuntimeBuilder::default_timeout), 2 minutes.
///
/// ```
/// assert_eq!(pleach_core::defaults::TIMEOUT, std::time::Duration::from_secs(120));
/// ```
pub const TIMEOUT: Duration = Duration::from_mins(2);

/// How long a call may go on after its signal fires before it is dropped: the default of
/// [`RuntimeBuilder::cancel_grace`](crate::RuntimeBuilder::cancel_grace), 2 seconds.
///
/// ```
/// assert_eq!(pleach_core::defaults::CANCEL_GRACE, std::time::Duration::from_secs(2));
/// ```
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How long a call waits for the host's decision on its approval interrupt: the default of
/// [`RuntimeBuilder::approval_timeout`](crate::RuntimeBuilder::approval_timeout), 15 minutes.
///
/// ```
/// assert_eq!(pleach_core::defaults::APPROVAL_TIMEOUT, std::time::Duration::from_secs(15 * 60));
/// ```
pub const APPROVAL_TIMEOUT: Duration = Duration::from_mins(15);

/// How many times a call may fail recoverably with the same arguments in one user turn before the
/// next identical call fails as not recoverable: the default of
/// [`RuntimeBuilder::max_repeated_failures`](crate::RuntimeBuilder::max_repeated_failures), 3.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_REPEATED_FAILURES, 3);
/// ```
pub const MAX_REPEATED_FAILURES: u32 = 3;

/// How many calls of one turn (or of one durable step) run at once: the default of
/// [`RuntimeBuilder::max_concurrency`](crate::RuntimeBuilder::max_concurrency), of
/// [`BatchingConfig`](crate::BatchingConfig) and of
/// [`DurableOptions::max_concurrency`](crate::durable::DurableOptions::max_concurrency()), 16.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_CONCURRENCY, 16);
/// assert_eq!(pleach_core::BatchingConfig::default().max_concurrency, 16);
/// ```
pub const MAX_CONCURRENCY: usize = 16;

/// How many calls run at once across all of a runtime's sessions: the default of
/// [`RuntimeBuilder::max_in_flight`](crate::RuntimeBuilder::max_in_flight), 1024.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_IN_FLIGHT, 1024);
/// ```
pub const MAX_IN_FLIGHT: usize = 1024;

/// The longest arguments text a call may have, in bytes: the default of
/// [`Limits::max_argument_bytes`](crate::Limits::max_argument_bytes()), 1 MiB.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_ARGUMENT_BYTES, 1024 * 1024);
/// ```
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// The deepest nesting of arrays and objects a call's arguments may have: the default of
/// [`Limits::max_argument_depth`](crate::Limits::max_argument_depth()), 64.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_ARGUMENT_DEPTH, 64);
/// ```
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// The largest result a call may return, as JSON text, in bytes: the default of
/// [`Limits::max_result_bytes`](crate::Limits::max_result_bytes()), 8 MiB.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_RESULT_BYTES, 8 * 1024 * 1024);
/// ```
pub const MAX_RESULT_BYTES: usize = 8 * 1024 * 1024;

/// The most bytes of content blocks (images, audio, files) a durable conversation keeps in its
/// history for one call: the default of
/// [`Worker::max_history_content_bytes`](crate::durable::Worker::max_history_content_bytes),
/// 1 MiB (Temporal refuses a payload past 2 MiB, and base64 makes bytes a third larger).
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_HISTORY_CONTENT_BYTES, 1024 * 1024);
/// ```
pub const MAX_HISTORY_CONTENT_BYTES: usize = 1024 * 1024;

/// How many requests to the model an agent run makes at most: the default of
/// [`AgentOptions::max_steps`](crate::agent::AgentOptions::max_steps()) and of
/// [`DurableOptions::max_steps`](crate::durable::DurableOptions::max_steps()), 16.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_STEPS, 16);
/// ```
pub const MAX_STEPS: usize = 16;

/// How many bytes one model response may have: the default of
/// [`AgentOptions::max_response_bytes`](crate::agent::AgentOptions::max_response_bytes()),
/// 32 MiB.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_RESPONSE_BYTES, 32 * 1024 * 1024);
/// ```
pub const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// The largest Server-Sent Event or JSON line a framer takes, in bytes: what
/// [`SseFramer::new`](crate::providers::sse::SseFramer::new) and
/// [`JsonLines::new`](crate::providers::sse::JsonLines::new) allow, 8 MiB (a larger
/// one is an error, not an allocation).
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_EVENT_BYTES, 8 * 1024 * 1024);
/// ```
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// The most tokens an Anthropic response may have: the default of
/// [`AnthropicClient::max_tokens`](crate::agent::AnthropicClient::max_tokens), 4096.
///
/// ```
/// assert_eq!(pleach_core::defaults::MAX_TOKENS, 4096);
/// ```
#[cfg(feature = "http")]
pub const MAX_TOKENS: u32 = 4096;
