//! Session state that can leave its process: [`PersistentState`], saved as JSON and restored
//! into a session elsewhere (another replica behind a load balancer, a later process).

use std::any::Any;
use std::fmt;

use serde_json::Value;

use super::SessionState;

/// A [`SessionState`] type whose value can be saved as JSON and restored, so a session's state
/// outlives the process that holds it. A host saves it after a call and restores it before the
/// next one, wherever that runs: `pleach mcp --http --session-store redis://…` keeps the
/// scratchpad's notes in Redis so any replica answers a session's next call with them.
///
/// The value is shared by the calls of a session, so `restore` replaces it in place, through the
/// type's own interior mutability.
///
/// ```
/// use std::sync::Mutex;
/// use pleach_core::extensions::{PersistentState, SessionState};
/// use serde_json::{json, Value};
///
/// /// How many times this session greeted.
/// #[derive(Default)]
/// struct Greeted(Mutex<u64>);
///
/// impl PersistentState for Greeted {
///     const KEY: &'static str = "acme_tools::Greeted";
///     fn save(&self) -> Value {
///         json!(*self.0.lock().unwrap())
///     }
///     fn restore(&self, saved: Value) -> Result<(), String> {
///         let count = saved.as_u64().ok_or_else(|| format!("not a count: {saved}"))?;
///         *self.0.lock().unwrap() = count;
///         Ok(())
///     }
/// }
///
/// let here = SessionState::new();
/// *here.get_or_default::<Greeted>().0.lock().unwrap() = 3;
/// let saved = here.save::<Greeted>().unwrap();
///
/// let elsewhere = SessionState::new();
/// elsewhere.restore::<Greeted>(saved).unwrap();
/// assert_eq!(*elsewhere.get_or_default::<Greeted>().0.lock().unwrap(), 3);
/// assert!(elsewhere.restore::<Greeted>(json!("three")).is_err());
/// ```
pub trait PersistentState: Any + Send + Sync + Default {
    /// The name the saved JSON is stored under: unique among the types a host persists and
    /// stable across releases (a path such as `pleach_tools::scratchpad::Scratchpad`), so state
    /// saved by one version is found by the next.
    const KEY: &'static str;

    /// The value as JSON.
    fn save(&self) -> Value;

    /// Replaces the value with one [`save`](PersistentState::save) gave.
    ///
    /// # Errors
    ///
    /// `saved` is not such a value (saved by an incompatible version, say); the message says
    /// why, and the value is left as it was.
    fn restore(&self, saved: Value) -> Result<(), String>;
}

impl SessionState {
    /// The session's `T` as JSON, or `None` when nothing created it (so there is nothing to
    /// keep).
    ///
    /// ```
    /// # use std::sync::Mutex;
    /// # use pleach_core::extensions::{PersistentState, SessionState};
    /// # #[derive(Default)] struct Flag(Mutex<bool>);
    /// # impl PersistentState for Flag {
    /// #     const KEY: &'static str = "doc::Flag";
    /// #     fn save(&self) -> serde_json::Value { (*self.0.lock().unwrap()).into() }
    /// #     fn restore(&self, v: serde_json::Value) -> Result<(), String> {
    /// #         *self.0.lock().unwrap() = v.as_bool().ok_or("not a bool")?; Ok(()) }
    /// # }
    /// let state = SessionState::new();
    /// assert_eq!(state.save::<Flag>(), None);
    /// *state.get_or_default::<Flag>().0.lock().unwrap() = true;
    /// assert_eq!(state.save::<Flag>(), Some(serde_json::json!(true)));
    /// ```
    pub fn save<T: PersistentState>(&self) -> Option<Value> {
        self.get::<T>().map(|value| value.save())
    }

    /// Replaces the session's `T` with a saved one (creating it first if needed).
    ///
    /// # Errors
    ///
    /// What [`PersistentState::restore`] says: `saved` is not a saved `T`.
    ///
    /// ```
    /// # use std::sync::Mutex;
    /// # use pleach_core::extensions::{PersistentState, SessionState};
    /// # #[derive(Default)] struct Level(Mutex<u64>);
    /// # impl PersistentState for Level {
    /// #     const KEY: &'static str = "doc::Level";
    /// #     fn save(&self) -> serde_json::Value { (*self.0.lock().unwrap()).into() }
    /// #     fn restore(&self, v: serde_json::Value) -> Result<(), String> {
    /// #         *self.0.lock().unwrap() = v.as_u64().ok_or("not a level")?; Ok(()) }
    /// # }
    /// let state = SessionState::new();
    /// state.restore::<Level>(serde_json::json!(4)).unwrap();
    /// assert_eq!(*state.get_or_default::<Level>().0.lock().unwrap(), 4);
    /// ```
    pub fn restore<T: PersistentState>(&self, saved: Value) -> Result<(), String> {
        self.get_or_default::<T>().restore(saved)
    }
}

/// One [`PersistentState`] type as a runtime keeps it: its key, and how to save and restore it
/// without naming the type.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
#[derive(Clone, Copy)]
pub struct PersistedKind {
    key: &'static str,
    save: fn(&SessionState) -> Option<Value>,
    restore: fn(&SessionState, Value) -> Result<(), String>,
}

impl PersistedKind {
    /// The kind of `T`.
    pub fn of<T: PersistentState>() -> PersistedKind {
        PersistedKind {
            key: T::KEY,
            save: SessionState::save::<T>,
            restore: SessionState::restore::<T>,
        }
    }

    /// [`PersistentState::KEY`].
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// [`SessionState::save`] of the type.
    pub fn save(&self, state: &SessionState) -> Option<Value> {
        (self.save)(state)
    }

    /// [`SessionState::restore`] of the type.
    ///
    /// # Errors
    ///
    /// What the type's [`PersistentState::restore`] says.
    pub fn restore(&self, state: &SessionState, saved: Value) -> Result<(), String> {
        (self.restore)(state, saved)
    }
}

impl fmt::Debug for PersistedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key)
    }
}
