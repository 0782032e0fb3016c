//! The session state a runtime persists: the
//! [`PersistentState`](crate::extensions::PersistentState) types named with
//! [`RuntimeBuilder::persist_state`](crate::RuntimeBuilder::persist_state), saved from a session
//! and restored into another ([`Session::save_state`], [`Session::restore_state`]).

use serde_json::{Map, Value};

use super::Session;

/// Saved state that could not be restored: the key and why.
///
/// ```rust
/// # use std::sync::Mutex;
/// use pleach_core::extensions::PersistentState;
/// use pleach_core::{Runtime, SessionOptions};
///
/// #[derive(Default)]
/// struct Count(Mutex<u64>);
/// impl PersistentState for Count {
///     const KEY: &'static str = "doc_restore_error::Count";
///     fn save(&self) -> serde_json::Value { (*self.0.lock().unwrap()).into() }
///     fn restore(&self, v: serde_json::Value) -> Result<(), String> {
///         *self.0.lock().unwrap() = v.as_u64().ok_or("not a count")?;
///         Ok(())
///     }
/// }
///
/// let runtime = Runtime::builder().persist_state::<Count>().build().unwrap();
/// let session = runtime.create_session(SessionOptions::default()).unwrap();
/// let mut saved = serde_json::Map::new();
/// saved.insert("doc_restore_error::Count".into(), "many".into());
/// let error = session.restore_state(&saved).unwrap_err();
/// assert_eq!(error.key, "doc_restore_error::Count");
/// assert_eq!(error.to_string(), "the saved `doc_restore_error::Count` cannot be restored: not a count");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the saved `{key}` cannot be restored: {reason}")]
pub struct RestoreError {
    /// The [`PersistentState::KEY`](crate::extensions::PersistentState::KEY) of the value.
    pub key: String,
    /// Why, as the type's [`restore`](crate::extensions::PersistentState::restore) said.
    pub reason: String,
}

impl Session {
    /// The session's persisted state (the types named with
    /// [`RuntimeBuilder::persist_state`](crate::RuntimeBuilder::persist_state)) as JSON, keyed by
    /// [`PersistentState::KEY`](crate::extensions::PersistentState::KEY); a type nothing created yet is left out. A host keeps it and
    /// hands it to [`restore_state`](Session::restore_state) of a session elsewhere.
    ///
    /// ```rust
    /// # use std::sync::Mutex;
    /// use pleach_core::extensions::PersistentState;
    /// use pleach_core::{Runtime, SessionOptions};
    ///
    /// /// The session's plan.
    /// #[derive(Default)]
    /// struct Plan(Mutex<String>);
    /// impl PersistentState for Plan {
    ///     const KEY: &'static str = "doc_save_state::Plan";
    ///     fn save(&self) -> serde_json::Value { self.0.lock().unwrap().clone().into() }
    ///     fn restore(&self, v: serde_json::Value) -> Result<(), String> {
    ///         *self.0.lock().unwrap() = v.as_str().ok_or("not a plan")?.to_owned();
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let runtime = Runtime::builder().persist_state::<Plan>().build().unwrap();
    /// let here = runtime.create_session(SessionOptions::default()).unwrap();
    /// assert!(here.save_state().is_empty());
    /// *here.state::<Plan>().0.lock().unwrap() = "read, then sum".into();
    /// let saved = here.save_state();
    ///
    /// let elsewhere = runtime.create_session(SessionOptions::default()).unwrap();
    /// elsewhere.restore_state(&saved).unwrap();
    /// assert_eq!(*elsewhere.state::<Plan>().0.lock().unwrap(), "read, then sum");
    /// ```
    pub fn save_state(&self) -> Map<String, Value> {
        let state = &self.inner.scope().state;
        self.inner
            .runtime
            .persisted
            .iter()
            .filter_map(|kind| kind.save(state).map(|saved| (kind.key().to_owned(), saved)))
            .collect()
    }

    /// Restores state [`save_state`](Session::save_state) gave. A key this runtime does not
    /// persist is ignored (state saved by a host that persisted more); each value restored
    /// replaces the session's.
    ///
    /// # Errors
    ///
    /// A value its type cannot restore ([`RestoreError`]); the values before it in key order are
    /// restored, that one and the rest are not.
    ///
    /// ```rust
    /// let runtime = pleach_core::Runtime::builder().build().unwrap();
    /// let session = runtime.create_session(pleach_core::SessionOptions::default()).unwrap();
    /// let mut saved = serde_json::Map::new();
    /// saved.insert("someone_else::State".into(), serde_json::json!([1, 2]));
    /// assert!(session.restore_state(&saved).is_ok()); // not persisted here: ignored
    /// ```
    pub fn restore_state(&self, saved: &Map<String, Value>) -> Result<(), RestoreError> {
        let state = &self.inner.scope().state;
        for kind in &self.inner.runtime.persisted {
            if let Some(value) = saved.get(kind.key()) {
                kind.restore(state, value.clone())
                    .map_err(|reason| RestoreError {
                        key: kind.key().to_owned(),
                        reason,
                    })?;
            }
        }
        Ok(())
    }
}
