//! What a session is created with ([`SessionOptions`]: the TypeScript spec's
//! `{ tools: { enabled: [...] } }`) and why creating one fails ([`SessionError`]).

use serde::Deserialize;

/// The TypeScript spec's session options: `{ tools: { enabled: [...] } }`.
///
/// ```
/// use pleach_core::SessionOptions;
/// let from_json: SessionOptions =
///     serde_json::from_str(r#"{ "tools": { "enabled": ["search_corpus", "calculator"] } }"#).unwrap();
/// assert_eq!(from_json, SessionOptions::enabled(["search_corpus", "calculator"]));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct SessionOptions {
    /// Which tools the session may call.
    #[serde(default)]
    pub tools: ToolsOptions,
}

/// The tools part of [`SessionOptions`].
///
/// ```
/// let options: pleach_core::SessionOptions =
///     serde_json::from_str(r#"{ "tools": { "enabled": ["math", "datetime"] } }"#).unwrap();
/// assert_eq!(options.tools.enabled, ["math", "datetime"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct ToolsOptions {
    /// Tool names; `"*"` enables every tool of the runtime.
    #[serde(default)]
    pub enabled: Vec<String>,
}

impl SessionOptions {
    /// Options enabling the tools named.
    ///
    /// ```
    /// let options = pleach_core::SessionOptions::enabled(["math", "datetime"]);
    /// assert_eq!(options.tools.enabled, ["math", "datetime"]);
    /// ```
    pub fn enabled<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        SessionOptions {
            tools: ToolsOptions {
                enabled: names.into_iter().map(Into::into).collect(),
            },
        }
    }

    /// Options enabling every tool of the runtime.
    ///
    /// ```
    /// assert_eq!(pleach_core::SessionOptions::all().tools.enabled, ["*"]);
    /// ```
    pub fn all() -> Self {
        SessionOptions::enabled(["*"])
    }
}

/// Why a session could not be created.
///
/// ```
/// use pleach_core::{Runtime, SessionError, SessionOptions, ToolRegistryBuilder};
///
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let err = runtime.create_session(SessionOptions::enabled(["search"])).unwrap_err();
/// assert!(matches!(err, SessionError::UnknownTools(ref names) if names.len() == 1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Enabled names that are not registered, each with a suggestion when one is close.
    #[error("unknown tools: {}", .0.join(", "))]
    UnknownTools(Vec<String>),
}
