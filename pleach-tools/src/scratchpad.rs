//! The `scratchpad` tool: notes a model keeps for itself during one session (set, get, list,
//! delete), within limits on their count and size.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_core::extensions::{Extensions, SessionState};
//! use pleach_tools::scratchpad::{Scratchpad, scratchpad};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // A session gives each call its state; by hand, `with_scope` does.
//! let session = SessionState::new();
//! let ctx = || ToolContext::new("call_1").with_scope(Extensions::new(), session.clone());
//!
//! let tool = scratchpad::definition();
//! tool.call(r#"{"operation": "set", "key": "plan", "value": "1. read 2. sum"}"#, ctx())
//!     .await
//!     .unwrap();
//! let out = tool.call(r#"{"operation": "get", "key": "plan"}"#, ctx()).await.unwrap();
//! assert_eq!(out.value()["value"], "1. read 2. sum");
//! // The host sees the same notes.
//! assert_eq!(session.get_or_default::<Scratchpad>().get("plan").as_deref(), Some("1. read 2. sum"));
//!
//! let err = tool.call(r#"{"operation": "get", "key": "plam"}"#, ctx()).await.unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert_eq!(err.message(), "there is no note `plam`; did you mean `plan`?");
//! # });
//! ```
//!
//! # Where the notes live
//!
//! In the session, as its [`Scratchpad`] ([`ToolContext::session_state`]): two sessions never see
//! each other's notes, and the notes go when the session does. Nothing is global, so a call made
//! outside a session (a bare [`ToolContext::new`]) has nowhere to keep notes and fails with code
//! 1008. The host reads and seeds a session's notes with `session.state::<Scratchpad>()`.
//!
//! # Limits
//!
//! [`ScratchpadConfig`], provided to the runtime like any configuration; without one the defaults
//! apply (the notes are bounded either way): 100 notes, keys up to 128 bytes, a note up to
//! 256 KiB, all keys and notes together up to 1 MiB.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use pleach_core::extensions::PersistentState;
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::{Deserialize, Serialize};
use pleach_core::serde_json::Value;
use pleach_core::{ErrorCode, ToolContext, ToolError, tool};

use crate::shorten::first_chars;
use crate::suggest::{close_matches, one_of};

/// How many characters of a note `list` shows.
const PREVIEW_CHARS: usize = 80;

/// The limits of each session's scratchpad. Provide one to change them
/// ([`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide) or
/// [`PleachPlugin::provide`](https://docs.rs/pleach-core/latest/pleach_core/plugin/struct.PleachPlugin.html#method.provide)); without one, the defaults apply.
///
/// ```
/// use pleach_tools::scratchpad::ScratchpadConfig;
///
/// let limits = ScratchpadConfig::default().max_notes(20).max_note_bytes(4096);
/// # use pleach as pleach_core; // the runtime, for this example
/// let runtime = pleach_core::Runtime::builder().provide(limits).build().unwrap();
/// # let _ = runtime;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchpadConfig {
    // Each field is the most allowed.
    notes: usize,
    key_bytes: usize,
    note_bytes: usize,
    total_bytes: usize,
}

impl Default for ScratchpadConfig {
    /// 100 notes, keys up to 128 bytes, a note up to 256 KiB, 1 MiB in all.
    fn default() -> Self {
        ScratchpadConfig {
            notes: 100,
            key_bytes: 128,
            note_bytes: 256 * 1024,
            total_bytes: 1024 * 1024,
        }
    }
}

impl ScratchpadConfig {
    /// At most `max` notes in one session (at least 1; default 100).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::scratchpad::{Operation, ScratchpadConfig, scratchpad};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limits = ScratchpadConfig::default().max_notes(1);
    /// let session = SessionState::new();
    /// let set = |key: &str, value: &str| {
    ///     let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(limits), session.clone());
    ///     scratchpad(ctx, Operation::Set, Some(key.to_owned()), Some(value.to_owned()))
    /// };
    ///
    /// set("plan", "1. read").await.unwrap();
    /// let err = set("todo", "sum").await.unwrap_err();
    /// assert_eq!(err.code().as_u16(), 1001);
    /// assert!(err.message().starts_with("the scratchpad is full"));
    /// assert_eq!(set("plan", "1. read 2. sum").await.unwrap().replaced, Some(true)); // a key it holds
    /// # }
    /// ```
    #[must_use]
    pub fn max_notes(mut self, max: usize) -> Self {
        self.notes = max.max(1);
        self
    }

    /// Keys of at most `max` bytes (at least 1; default 128).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::scratchpad::{Operation, ScratchpadConfig, scratchpad};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limits = ScratchpadConfig::default().max_key_bytes(4);
    /// let session = SessionState::new();
    /// let set = |key: &str, value: &str| {
    ///     let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(limits), session.clone());
    ///     scratchpad(ctx, Operation::Set, Some(key.to_owned()), Some(value.to_owned()))
    /// };
    ///
    /// assert!(set("plan", "1. read").await.is_ok());
    /// let err = set("plans", "1. read").await.unwrap_err();
    /// assert_eq!(err.message(), "`key` is 5 bytes long, over the limit of 4; use a short name");
    /// # }
    /// ```
    #[must_use]
    pub fn max_key_bytes(mut self, max: usize) -> Self {
        self.key_bytes = max.max(1);
        self
    }

    /// Notes of at most `max` bytes each (default 256 KiB).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::scratchpad::{Operation, ScratchpadConfig, scratchpad};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limits = ScratchpadConfig::default().max_note_bytes(8);
    /// let session = SessionState::new();
    /// let set = |key: &str, value: &str| {
    ///     let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(limits), session.clone());
    ///     scratchpad(ctx, Operation::Set, Some(key.to_owned()), Some(value.to_owned()))
    /// };
    ///
    /// assert!(set("plan", "12345678").await.is_ok());
    /// let err = set("plan", "123456789").await.unwrap_err();
    /// assert!(err.message().starts_with("`value` is 9 bytes long, over the limit of 8 for one note"));
    /// # }
    /// ```
    #[must_use]
    pub fn max_note_bytes(mut self, max: usize) -> Self {
        self.note_bytes = max;
        self
    }

    /// At most `max` bytes of keys and notes together in one session (default 1 MiB).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::scratchpad::{Operation, ScratchpadConfig, scratchpad};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limits = ScratchpadConfig::default().max_total_bytes(10);
    /// let session = SessionState::new();
    /// let set = |key: &str, value: &str| {
    ///     let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(limits), session.clone());
    ///     scratchpad(ctx, Operation::Set, Some(key.to_owned()), Some(value.to_owned()))
    /// };
    ///
    /// assert_eq!(set("a", "123456789").await.unwrap().total_bytes, 10); // key and note
    /// let err = set("b", "1").await.unwrap_err();
    /// assert!(err.message().starts_with("the scratchpad would hold 12 bytes, over the limit of 10"));
    /// # }
    /// ```
    #[must_use]
    pub fn max_total_bytes(mut self, max: usize) -> Self {
        self.total_bytes = max;
        self
    }
}

/// One session's notes: the session state `scratchpad` keeps (and `text_search` reads, with the
/// `text-search` feature). The host reaches it through `session.state::<Scratchpad>()`.
///
/// ```
/// use pleach_tools::scratchpad::Scratchpad;
///
/// let pad = Scratchpad::default();
/// pad.insert("todo", "check the totals");
/// assert_eq!(pad.get("todo").as_deref(), Some("check the totals"));
/// assert_eq!(pad.keys(), ["todo"]);
/// ```
#[derive(Debug, Default)]
pub struct Scratchpad {
    notes: Mutex<BTreeMap<String, String>>,
}

impl Scratchpad {
    /// The note at `key`, if there is one.
    ///
    /// ```
    /// use pleach_tools::scratchpad::Scratchpad;
    ///
    /// let pad = Scratchpad::default();
    /// pad.insert("plan", "1. read");
    /// assert_eq!(pad.get("plan").as_deref(), Some("1. read"));
    /// assert_eq!(pad.get("Plan"), None); // keys are exact
    /// ```
    pub fn get(&self, key: &str) -> Option<String> {
        self.notes().get(key).cloned()
    }

    /// Every key, sorted.
    ///
    /// ```
    /// use pleach_tools::scratchpad::Scratchpad;
    ///
    /// let pad = Scratchpad::default();
    /// pad.insert("todo", "sum");
    /// pad.insert("plan", "1. read");
    /// assert_eq!(pad.keys(), ["plan", "todo"]);
    /// ```
    pub fn keys(&self) -> Vec<String> {
        self.notes().keys().cloned().collect()
    }

    /// Sets the note at `key` without the tool's limits (the host's own notes, a seed); returns
    /// the note it replaced.
    ///
    /// ```
    /// use pleach_tools::scratchpad::Scratchpad;
    ///
    /// let pad = Scratchpad::default();
    /// assert_eq!(pad.insert("plan", "1. read"), None);
    /// assert_eq!(pad.insert("plan", "1. read 2. sum").as_deref(), Some("1. read"));
    /// // The tool refuses keys over 128 bytes; the host's own notes are not held to that.
    /// assert_eq!(pad.insert("k".repeat(500), ""), None);
    /// ```
    pub fn insert(&self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        self.notes().insert(key.into(), value.into())
    }

    fn notes(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        // A panic elsewhere while holding the lock leaves a map that is still whole.
        self.notes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The notes as a JSON object of strings, so a host can keep a session's notes outside the
/// process: `pleach mcp --http --session-store redis://…` keeps them in Redis, and any replica
/// answers the session's next call with them.
///
/// ```
/// use pleach_core::extensions::PersistentState;
/// use pleach_tools::scratchpad::Scratchpad;
///
/// let pad = Scratchpad::default();
/// pad.insert("plan", "1. read");
/// let saved = pad.save();
/// assert_eq!(saved, serde_json::json!({"plan": "1. read"}));
///
/// let elsewhere = Scratchpad::default();
/// elsewhere.insert("old", "gone after the restore");
/// elsewhere.restore(saved).unwrap();
/// assert_eq!(elsewhere.keys(), ["plan"]);
/// assert!(elsewhere.restore(serde_json::json!({"plan": 1})).is_err());
/// ```
impl PersistentState for Scratchpad {
    const KEY: &'static str = "pleach_tools::scratchpad::Scratchpad";

    fn save(&self) -> Value {
        Value::Object(
            self.notes()
                .iter()
                .map(|(key, note)| (key.clone(), Value::String(note.clone())))
                .collect(),
        )
    }

    fn restore(&self, saved: Value) -> Result<(), String> {
        let notes: BTreeMap<String, String> = pleach_core::serde_json::from_value(saved)
            .map_err(|error| format!("the notes are not an object of strings: {error}"))?;
        *self.notes() = notes;
        Ok(())
    }
}

/// What `scratchpad` does.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::scratchpad::{Operation, Scratchpad, scratchpad};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let session = SessionState::new();
/// session.get_or_default::<Scratchpad>().insert("plan", "1. read"); // the host seeds a note
///
/// let operation: Operation = serde_json::from_str(r#""delete""#).unwrap(); // as a model writes it
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new(), session.clone());
/// let out = scratchpad(ctx, operation, Some("plan".to_owned()), None).await.unwrap();
/// assert_eq!(out.note_count, 0);
/// assert!(session.get_or_default::<Scratchpad>().keys().is_empty());
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "snake_case")]
// Set here so the input schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "What `scratchpad` does."
)]
#[non_exhaustive]
pub enum Operation {
    /// Writes `value` at `key`, replacing any note there.
    Set,
    /// Reads the note at `key`.
    Get,
    /// Lists the notes: each key, its size and the start of its text.
    List,
    /// Deletes the note at `key`.
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Set => "set",
            Operation::Get => "get",
            Operation::List => "list",
            Operation::Delete => "delete",
        }
    }
}

/// One note as `list` shows it.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::scratchpad::{Operation, Scratchpad, scratchpad};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let session = SessionState::new();
/// session.get_or_default::<Scratchpad>().insert("plan", "x".repeat(100));
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new(), session);
///
/// let out = scratchpad(ctx, Operation::List, None, None).await.unwrap();
/// let note = &out.notes.unwrap()[0];
/// assert_eq!((note.key.as_str(), note.bytes), ("plan", 100));
/// assert_eq!(note.preview, format!("{}…", "x".repeat(80)));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "One note as `list` shows it."
)]
#[non_exhaustive]
pub struct NoteSummary {
    /// The note's key.
    pub key: String,
    /// Its length in bytes (UTF-8).
    pub bytes: usize,
    /// Its first 80 characters, with `…` when there is more.
    pub preview: String,
}

/// The result of `scratchpad`; which fields are present depends on the operation.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::scratchpad::{Operation, scratchpad};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let session = SessionState::new();
/// let ctx = || ToolContext::new("call_1").with_scope(Extensions::new(), session.clone());
/// let key = || Some("plan".to_owned());
///
/// let set = scratchpad(ctx(), Operation::Set, key(), Some("1. read".to_owned())).await.unwrap();
/// assert_eq!((set.replaced, set.note_count, set.total_bytes), (Some(false), 1, 11));
/// let get = scratchpad(ctx(), Operation::Get, key(), None).await.unwrap();
/// assert_eq!(get.value.as_deref(), Some("1. read"));
/// assert_eq!(get.notes, None); // `list` only
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `scratchpad`; which fields are present depends on the operation."
)]
#[non_exhaustive]
pub struct ScratchpadOutput {
    /// The key the operation worked on (all but `list`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// For `get`: the note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// For `set`: whether a note was replaced; for `delete`: always true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<bool>,
    /// For `list`: the notes, sorted by key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<NoteSummary>>,
    /// How many notes the session has now.
    pub note_count: usize,
    /// How many bytes of keys and notes the session holds now.
    pub total_bytes: usize,
}

/// Keeps notes for the rest of the session: `set` a note at a key, `get` it back, `list` the
/// notes, `delete` one. For example `{"operation": "set", "key": "plan", "value": "1. read the
/// report"}`, then `{"operation": "get", "key": "plan"}` gives `{"key": "plan", "value": "1. read
/// the report", "note_count": 1, "total_bytes": 22}`.
///
/// Notes last as long as the session and are seen by no other session. Limits (the host may
/// change them): 100 notes, keys of 1 to 128 bytes, a note up to 256 KiB, 1 MiB in all; a `set`
/// over a limit is refused and changes nothing.
#[tool]
pub async fn scratchpad(
    ctx: ToolContext,
    #[arg(description = "What to do: set, get, list or delete")] operation: Operation,
    #[arg(description = "The note's name, e.g. `plan`; required by set, get and delete")]
    key: Option<String>,
    #[arg(description = "For set: the text to keep")] value: Option<String>,
) -> Result<ScratchpadOutput, ToolError> {
    let pad = ctx.session_state::<Scratchpad>().ok_or_else(|| {
        ToolError::failed(
            "scratchpad keeps its notes in a session, and this call has none; call it through a \
             pleach session",
        )
        .with_recoverable(false)
    })?;
    let limits = ctx.get::<ScratchpadConfig>().copied().unwrap_or_default();
    run(&pad, &limits, operation, key.as_deref(), value)
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

fn run(
    pad: &Scratchpad,
    limits: &ScratchpadConfig,
    operation: Operation,
    key: Option<&str>,
    value: Option<String>,
) -> Result<ScratchpadOutput, ToolError> {
    let name = operation.as_str();
    if value.is_some() && operation != Operation::Set {
        return Err(invalid(format!(
            "`value` is only read by `set`, not `{name}`; leave it out or change `operation`"
        )));
    }
    let mut notes = pad.notes();
    let mut output = ScratchpadOutput {
        key: None,
        value: None,
        replaced: None,
        notes: None,
        note_count: 0,
        total_bytes: 0,
    };
    match (operation, key) {
        (Operation::List, None) => {
            output.notes = Some(
                notes
                    .iter()
                    .map(|(key, note)| NoteSummary {
                        key: key.clone(),
                        bytes: note.len(),
                        preview: first_chars(note, PREVIEW_CHARS),
                    })
                    .collect(),
            );
        }
        (Operation::List, Some(_)) => {
            return Err(invalid(
                "`list` lists every note and takes no `key`; leave it out, or `get` that note"
                    .to_owned(),
            ));
        }
        (Operation::Set, key) => {
            let key = check_key(key, name, limits)?;
            let value = value.ok_or_else(|| {
                invalid("`set` needs `value`: the text to keep at `key`".to_owned())
            })?;
            check_room(&notes, limits, key, &value)?;
            output.replaced = Some(notes.insert(key.to_owned(), value).is_some());
            output.key = Some(key.to_owned());
        }
        (Operation::Get, key) => {
            let key = check_key(key, name, limits)?;
            let note = notes.get(key).ok_or_else(|| no_note(key, notes.keys()))?;
            output.value = Some(note.clone());
            output.key = Some(key.to_owned());
        }
        (Operation::Delete, key) => {
            let key = check_key(key, name, limits)?;
            notes
                .remove(key)
                .ok_or_else(|| no_note(key, notes.keys()))?;
            output.replaced = Some(true);
            output.key = Some(key.to_owned());
        }
    }
    output.note_count = notes.len();
    output.total_bytes = total_bytes(&notes);
    Ok(output)
}

/// The key as given, once it is known to be present, not blank and within the limit.
fn check_key<'k>(
    key: Option<&'k str>,
    operation: &str,
    limits: &ScratchpadConfig,
) -> Result<&'k str, ToolError> {
    let key = key.ok_or_else(|| {
        invalid(format!(
            "`{operation}` needs `key`: the note's name, e.g. `plan`"
        ))
    })?;
    if key.trim().is_empty() {
        return Err(invalid(
            "`key` is empty; name the note, e.g. `plan`".to_owned(),
        ));
    }
    if key.len() > limits.key_bytes {
        return Err(invalid(format!(
            "`key` is {} bytes long, over the limit of {}; use a short name",
            key.len(),
            limits.key_bytes
        )));
    }
    Ok(key)
}

/// Whether `value` fits at `key`: the note's own size, the count of notes and the total.
fn check_room(
    notes: &BTreeMap<String, String>,
    limits: &ScratchpadConfig,
    key: &str,
    value: &str,
) -> Result<(), ToolError> {
    if value.len() > limits.note_bytes {
        return Err(invalid(format!(
            "`value` is {} bytes long, over the limit of {} for one note; keep a shorter note or \
             split it across keys",
            value.len(),
            limits.note_bytes
        )));
    }
    let replaced = notes.get(key);
    if replaced.is_none() && notes.len() >= limits.notes {
        return Err(invalid(format!(
            "the scratchpad is full: it holds {} notes, the limit; `delete` one or `set` an \
             existing key",
            notes.len()
        )));
    }
    let freed = replaced.map_or(0, |old| key.len() + old.len());
    let total = total_bytes(notes) - freed + key.len() + value.len();
    if total > limits.total_bytes {
        return Err(invalid(format!(
            "the scratchpad would hold {total} bytes, over the limit of {}; `delete` notes you no \
             longer need or keep a shorter one",
            limits.total_bytes
        )));
    }
    Ok(())
}

fn total_bytes(notes: &BTreeMap<String, String>) -> usize {
    notes.iter().map(|(key, note)| key.len() + note.len()).sum()
}

/// The error for a key with no note, with the closest keys.
pub(crate) fn no_note<'a>(key: &str, keys: impl IntoIterator<Item = &'a String>) -> ToolError {
    let keys: Vec<&String> = keys.into_iter().collect();
    // Quoted short: the key may be any length (`text_search` takes it as given).
    let asked = crate::shorten::first_chars(key, 64);
    if keys.is_empty() {
        return invalid(format!(
            "there is no note `{asked}`: the scratchpad is empty; `set` one first"
        ));
    }
    let close: Vec<String> = close_matches(key, keys.iter().map(|k| (k.as_str(), ())))
        .into_iter()
        .take(3)
        .map(|(spelling, ())| format!("`{spelling}`"))
        .collect();
    if close.is_empty() {
        invalid(format!(
            "there is no note `{asked}`; `list` shows the {} notes there are",
            keys.len()
        ))
    } else {
        invalid(format!(
            "there is no note `{asked}`; did you mean {}?",
            one_of(&close)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::extensions::{Extensions, SessionState};
    use serde_json::{Value, json};

    fn small() -> ScratchpadConfig {
        ScratchpadConfig::default()
            .max_notes(3)
            .max_key_bytes(8)
            .max_note_bytes(10)
            .max_total_bytes(24)
    }

    #[track_caller]
    fn ok(pad: &Scratchpad, operation: Operation, key: Option<&str>, value: Option<&str>) -> Value {
        match run(pad, &small(), operation, key, value.map(str::to_owned)) {
            Ok(out) => serde_json::to_value(out).unwrap(),
            Err(err) => panic!("{operation:?} {key:?} failed: {}", err.message()),
        }
    }

    /// The message of the refusal (code 1001, lowercase first).
    #[track_caller]
    fn error(
        pad: &Scratchpad,
        operation: Operation,
        key: Option<&str>,
        value: Option<&str>,
    ) -> String {
        let outcome = run(pad, &small(), operation, key, value.map(str::to_owned));
        crate::test_support::refusal(outcome, &(operation, key, value))
    }

    #[test]
    fn set_get_list_delete() {
        let pad = Scratchpad::default();
        assert_eq!(
            ok(&pad, Operation::Set, Some("plan"), Some("read")),
            json!({"key": "plan", "replaced": false, "note_count": 1, "total_bytes": 8})
        );
        assert_eq!(
            ok(&pad, Operation::Set, Some("plan"), Some("read, sum")),
            json!({"key": "plan", "replaced": true, "note_count": 1, "total_bytes": 13})
        );
        ok(&pad, Operation::Set, Some("ünï"), Some(""));
        assert_eq!(
            ok(&pad, Operation::Get, Some("plan"), None)["value"],
            "read, sum"
        );
        assert_eq!(
            ok(&pad, Operation::List, None, None)["notes"],
            json!([
                {"key": "plan", "bytes": 9, "preview": "read, sum"},
                {"key": "ünï", "bytes": 0, "preview": ""},
            ])
        );
        assert_eq!(
            ok(&pad, Operation::Delete, Some("plan"), None),
            json!({"key": "plan", "replaced": true, "note_count": 1, "total_bytes": 5})
        );
        assert_eq!(pad.keys(), ["ünï"]);
    }

    #[test]
    fn arguments_each_operation_does_not_read_are_refused() {
        let pad = Scratchpad::default();
        for (operation, key, value, needle) in [
            (Operation::Get, None, None, "`get` needs `key`"),
            (Operation::Delete, None, None, "`delete` needs `key`"),
            (Operation::Set, Some("k"), None, "`set` needs `value`"),
            (Operation::Set, None, Some("v"), "`set` needs `key`"),
            (
                Operation::Get,
                Some("k"),
                Some("v"),
                "`value` is only read by `set`, not `get`",
            ),
            (
                Operation::List,
                Some("k"),
                None,
                "`list` lists every note and takes no `key`",
            ),
            (
                Operation::List,
                None,
                Some("v"),
                "`value` is only read by `set`, not `list`",
            ),
            (Operation::Set, Some("  "), Some("v"), "`key` is empty"),
        ] {
            let message = error(&pad, operation, key, value);
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
    }

    #[test]
    fn missing_notes_suggest_keys() {
        let pad = Scratchpad::default();
        let message = error(&pad, Operation::Get, Some("plan"), None);
        assert_eq!(
            message,
            "there is no note `plan`: the scratchpad is empty; `set` one first"
        );
        ok(&pad, Operation::Set, Some("plans"), Some("x"));
        ok(&pad, Operation::Set, Some("other"), Some("y"));
        let message = error(&pad, Operation::Delete, Some("plan"), None);
        assert_eq!(message, "there is no note `plan`; did you mean `plans`?");
        let message = error(&pad, Operation::Get, Some("zzzz"), None);
        assert_eq!(
            message,
            "there is no note `zzzz`; `list` shows the 2 notes there are"
        );
    }

    #[test]
    fn limits_refuse_and_change_nothing() {
        let pad = Scratchpad::default();
        let message = error(&pad, Operation::Set, Some("123456789"), Some("v"));
        assert!(
            message.contains("`key` is 9 bytes long, over the limit of 8"),
            "{message}"
        );
        let message = error(&pad, Operation::Set, Some("k"), Some("12345678901"));
        assert!(
            message.contains("`value` is 11 bytes long, over the limit of 10 for one note"),
            "{message}"
        );

        ok(&pad, Operation::Set, Some("a"), Some("1234567"));
        ok(&pad, Operation::Set, Some("b"), Some("1234567"));
        // 16 bytes held; 9 more would make 25, over 24.
        let message = error(&pad, Operation::Set, Some("c"), Some("12345678"));
        assert!(
            message.contains("would hold 25 bytes, over the limit of 24"),
            "{message}"
        );
        // Replacing frees the old note's bytes first.
        ok(&pad, Operation::Set, Some("b"), Some("123456789"));
        ok(&pad, Operation::Set, Some("c"), Some("1"));
        let message = error(&pad, Operation::Set, Some("d"), Some(""));
        assert!(
            message.contains("the scratchpad is full: it holds 3 notes"),
            "{message}"
        );
        // A full pad still takes a new value for an existing key.
        ok(&pad, Operation::Set, Some("c"), Some("2"));
        assert_eq!(pad.keys(), ["a", "b", "c"]);
        assert_eq!(pad.get("b").as_deref(), Some("123456789"));
    }

    #[tokio::test]
    async fn notes_live_in_the_session_and_nowhere_else() {
        let tool = scratchpad::definition();
        let first = SessionState::new();
        let second = SessionState::new();
        let ctx = |state: &SessionState| {
            ToolContext::new("call_1").with_scope(Extensions::new(), state.clone())
        };
        tool.call(
            r#"{"operation":"set","key":"k","value":"one"}"#,
            ctx(&first),
        )
        .await
        .unwrap();
        let out = tool
            .call(r#"{"operation":"get","key":"k"}"#, ctx(&first))
            .await
            .unwrap();
        assert_eq!(out.value()["value"], "one");
        let err = tool
            .call(r#"{"operation":"get","key":"k"}"#, ctx(&second))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InputInvalid);

        // Outside a session there is nowhere to keep notes: a clear failure, not a global.
        let err = tool
            .call(r#"{"operation":"list"}"#, ToolContext::new("call_2"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(!err.is_recoverable());
        assert!(
            err.message().contains("call it through a pleach session"),
            "{}",
            err.message()
        );
    }

    #[tokio::test]
    async fn the_host_configures_the_limits() {
        let state = SessionState::new();
        let ctx = ToolContext::new("call_1").with_scope(
            Extensions::new().with(ScratchpadConfig::default().max_note_bytes(3)),
            state,
        );
        let err = scratchpad::definition()
            .call(r#"{"operation":"set","key":"k","value":"four"}"#, ctx)
            .await
            .unwrap_err();
        assert!(
            err.message().contains("over the limit of 3"),
            "{}",
            err.message()
        );
    }

    #[tokio::test]
    async fn calls_go_through_the_schema() {
        let tool = scratchpad::definition();
        let ctx = ToolContext::new("call_1").with_scope(Extensions::new(), SessionState::new());
        let err = tool
            .call(r#"{"operation":"append","key":"k"}"#, ctx)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InputInvalid);
        assert_eq!(err.path(), Some("/operation"));
        assert_eq!(tool.input_schema()["required"], json!(["operation"]));
        assert_eq!(
            pleach::infer_batching_strategy(&tool),
            pleach::BatchingStrategy::Chunked { key: "key".into() }
        );
    }
}
