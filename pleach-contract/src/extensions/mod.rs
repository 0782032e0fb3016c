//! Typed values the host shares with its tools: [`Extensions`], configuration set once on the
//! runtime (a file root, an allowlist, a client), and [`SessionState`], state that lives as long as
//! one session (a scratchpad's notes). A tool reads both through its [`ToolContext`](crate::ToolContext):
//! [`ToolContext::get`](crate::ToolContext::get) and [`ToolContext::session_state`](crate::ToolContext::session_state).
//!
//! Both are keyed by type, so a tool family owns its keys by owning its types: two crates cannot
//! collide by picking the same string.
//!
//! ```rust
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Mutex;
//! use pleach_core::{tool, Runtime, SessionOptions, ToolCall, ToolContext, ToolError};
//!
//! /// The greeting every call starts with: runtime configuration.
//! struct Greeting(String);
//!
//! /// How many times this session greeted: session state.
//! #[derive(Default)]
//! struct Greeted(Mutex<u32>);
//!
//! /// Greets someone.
//! #[tool]
//! async fn greet(ctx: ToolContext, who: String) -> Result<String, ToolError> {
//!     let greeting = ctx.get::<Greeting>().map_or("Hello", |g| g.0.as_str());
//!     let greeted = ctx
//!         .session_state::<Greeted>()
//!         .ok_or_else(|| ToolError::failed("greet runs in a session"))?;
//!     let mut count = greeted.0.lock().unwrap();
//!     *count += 1;
//!     Ok(format!("{greeting}, {who} (#{count})"))
//! }
//!
//! let runtime = Runtime::builder().provide(Greeting("Hi".into())).build().unwrap();
//! let session = runtime.create_session(SessionOptions::enabled(["greet"])).unwrap();
//! let first = session.call(ToolCall::new("c1", "greet", r#"{"who":"Ada"}"#)).await.outcome.unwrap();
//! let second = session.call(ToolCall::new("c2", "greet", r#"{"who":"Alan"}"#)).await.outcome.unwrap();
//! assert_eq!(first.value(), "Hi, Ada (#1)");
//! assert_eq!(second.value(), "Hi, Alan (#2)");
//! assert_eq!(*session.state::<Greeted>().0.lock().unwrap(), 2);
//! # }
//! ```

mod persistent;

pub use persistent::{PersistedKind, PersistentState};

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

type Entry = Arc<dyn Any + Send + Sync>;

/// Configuration values keyed by their type, set on the runtime with
/// [`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide) and read by tools with
/// [`ToolContext::get`](crate::ToolContext::get). Cheap to clone.
///
/// ```
/// use pleach_core::extensions::Extensions;
///
/// struct Root(&'static str);
/// let extensions = Extensions::new().with(Root("/srv/data"));
/// assert_eq!(extensions.get::<Root>().map(|r| r.0), Some("/srv/data"));
/// assert!(extensions.get::<String>().is_none());
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    values: HashMap<TypeId, (Entry, &'static str)>,
}

impl Extensions {
    /// No values.
    ///
    /// ```
    /// let extensions = pleach_core::extensions::Extensions::new();
    /// assert!(extensions.get::<String>().is_none());
    /// ```
    pub fn new() -> Self {
        Extensions::default()
    }

    /// Adds `value`, replacing a value of the same type.
    ///
    /// ```
    /// let extensions = pleach_core::extensions::Extensions::new().with(1_u8).with(2_u8);
    /// assert_eq!(extensions.get::<u8>(), Some(&2));
    /// ```
    #[must_use]
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Adds `value`, replacing (and returning) a value of the same type.
    ///
    /// ```
    /// let mut extensions = pleach_core::extensions::Extensions::new();
    /// assert!(!extensions.insert(7_u32));
    /// assert!(extensions.insert(8_u32));
    /// ```
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) -> bool {
        self.values
            .insert(TypeId::of::<T>(), (Arc::new(value), type_name::<T>()))
            .is_some()
    }

    /// The value of type `T`, if one was provided.
    ///
    /// ```
    /// let extensions = pleach_core::extensions::Extensions::new().with(String::from("x"));
    /// assert_eq!(extensions.get::<String>().map(String::as_str), Some("x"));
    /// ```
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|(value, _)| value.downcast_ref())
    }

    /// Adds every value of `other`, replacing values of the same types.
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn extend(&mut self, other: &Extensions) {
        self.values
            .extend(other.values.iter().map(|(k, v)| (*k, v.clone())));
    }

    /// Whether there are no values.
    ///
    /// ```
    /// assert!(pleach_core::extensions::Extensions::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.values.values().map(|(_, name)| *name).collect();
        names.sort_unstable();
        f.debug_struct("Extensions").field("types", &names).finish()
    }
}

/// State that lives as long as one session, keyed by type: each type's value is created
/// (`T::default()`) the first time a tool or the host asks for it, and shared by every later
/// call of the session. Cheap to clone (clones share the state).
///
/// Types that change need their own interior mutability (a `Mutex` field, say): the value is
/// shared across calls that may run at the same time.
///
/// ```
/// use std::sync::Mutex;
/// use pleach_core::extensions::SessionState;
///
/// #[derive(Default)]
/// struct Notes(Mutex<Vec<String>>);
///
/// let state = SessionState::new();
/// state.get_or_default::<Notes>().0.lock().unwrap().push("first".into());
/// assert_eq!(state.get_or_default::<Notes>().0.lock().unwrap().len(), 1);
/// assert_eq!(SessionState::new().get_or_default::<Notes>().0.lock().unwrap().len(), 0);
/// ```
#[derive(Clone, Default)]
pub struct SessionState {
    values: Arc<Mutex<HashMap<TypeId, (Entry, &'static str)>>>,
}

impl SessionState {
    /// Empty state.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// let state = pleach_core::extensions::SessionState::new();
    /// assert_eq!(*state.get_or_default::<Mutex<u32>>().lock().unwrap(), 0);
    /// ```
    pub fn new() -> Self {
        SessionState::default()
    }

    /// The session's `T`, created with `T::default()` on first use.
    ///
    /// ```
    /// let state = pleach_core::extensions::SessionState::new();
    /// assert_eq!(*state.get_or_default::<u64>(), 0);
    /// ```
    pub fn get_or_default<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        let (entry, _) = values
            .entry(TypeId::of::<T>())
            .or_insert_with(|| (Arc::new(T::default()), type_name::<T>()));
        if let Ok(value) = entry.clone().downcast::<T>() {
            return value;
        }
        // Unreachable: the map's key is the value's type. Recover rather than panic.
        let value = Arc::new(T::default());
        *entry = value.clone();
        value
    }

    /// The session's `T` if something created it already.
    ///
    /// ```
    /// let state = pleach_core::extensions::SessionState::new();
    /// assert!(state.get::<u64>().is_none());
    /// state.get_or_default::<u64>();
    /// assert!(state.get::<u64>().is_some());
    /// ```
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        values
            .get(&TypeId::of::<T>())
            .and_then(|(value, _)| value.clone().downcast::<T>().ok())
    }
}

impl fmt::Debug for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        let mut names: Vec<&str> = values.values().map(|(_, name)| *name).collect();
        names.sort_unstable();
        f.debug_struct("SessionState")
            .field("types", &names)
            .finish()
    }
}

/// What a session hands each call's context: the runtime's extensions and its own state, in one
/// allocation made when the session is created.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
#[derive(Debug, Default)]
pub struct Scope {
    pub extensions: Extensions,
    pub state: SessionState,
}
