//! [`RedisSessionStore`]: MCP sessions and their state in Redis (feature `redis`), so a
//! session survives its replica and works behind round robin.
//!
//! Two keys a session, both expiring after the store's time to live, renewed on each use:
//! `<prefix><id>`, what rmcp needs to restore the session on another replica (the client's
//! `initialize` parameters, as JSON), and `<prefix><id>:state`, a hash of the session's
//! persisted state ([`Session::save_state`](pleach_core::Session::save_state)): one field a
//! [`PersistentState::KEY`](pleach_core::extensions::PersistentState::KEY), its JSON the value. A
//! `DELETE` of the session removes both.

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::{Map, Value};

use crate::McpError;
use crate::defaults;

/// How long connecting to Redis, or one command, may take before it counts as a failure.
const REDIS_TIMEOUT: Duration = Duration::from_secs(5);

/// MCP sessions and their state kept in Redis, shared by every replica of a server: give it to
/// [`HttpOptions::session_store`](crate::http::HttpOptions::session_store).
///
/// A client that starts a session with `initialize` (MCP before 2026-07-28) can then reach any
/// replica: the one that answers restores the session from Redis, and each call runs with the
/// session's persisted state (the scratchpad's notes) as the last call left it, wherever that
/// ran. Clients of MCP 2026-07-28 have no sessions; their calls stay stateless.
///
/// Connections are reconnected with backoff; a command that fails or takes over 5 s fails the
/// request with the reason. `redis://`, `redis+unix://` and `unix://` URLs (with a password,
/// database and user as Redis URLs carry them); `rediss://` (TLS) is not in this build.
///
/// ```rust,no_run
/// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
/// use std::time::Duration;
/// use pleach_mcp::http::{HttpOptions, RedisSessionStore};
///
/// let store = RedisSessionStore::connect("redis://127.0.0.1:6379/0")
///     .await?
///     .ttl(Duration::from_secs(3600));
/// let options = HttpOptions::new("127.0.0.1:8080".parse().unwrap()).session_store(store);
/// # let _ = options;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisSessionStore {
    connection: ConnectionManager,
    /// Where it connects, with no password: for errors and logs.
    address: String,
    prefix: String,
    ttl: Duration,
}

impl fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("address", &self.address)
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// A failure of the store: what it was doing, where, and Redis's reason.
#[derive(Debug, thiserror::Error)]
#[error("the session store at {address} failed to {doing}: {reason}")]
pub(crate) struct StoreError {
    address: String,
    doing: &'static str,
    reason: String,
}

impl RedisSessionStore {
    /// Connects to the Redis at `url` (and checks it answers), keeping sessions for
    /// [`defaults::SESSION_TTL`] under keys starting [`defaults::SESSION_KEY_PREFIX`].
    ///
    /// # Errors
    ///
    /// [`McpError::SessionStore`]: the URL is not a Redis URL this build takes, or Redis cannot
    /// be reached within 5 s.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_mcp::http::RedisSessionStore;
    /// let error = RedisSessionStore::connect("http://127.0.0.1:6379").await.unwrap_err();
    /// assert!(error.to_string().contains("not a Redis URL"), "{error}");
    /// # }
    /// ```
    pub async fn connect(url: &str) -> Result<RedisSessionStore, McpError> {
        let client = redis::Client::open(url).map_err(|error| {
            McpError::SessionStore(format!(
                "`{}` is not a Redis URL this build takes (redis://HOST:PORT/DB, \
                 redis+unix:///PATH): {error}",
                without_password(url)
            ))
        })?;
        let address = client.get_connection_info().addr().to_string();
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT))
            .set_number_of_retries(3)
            .set_max_delay(Duration::from_secs(2));
        let mut connection = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|error| {
                McpError::SessionStore(format!("cannot reach Redis at {address}: {error}"))
            })?;
        redis::cmd("PING")
            .query_async::<()>(&mut connection)
            .await
            .map_err(|error| {
                McpError::SessionStore(format!("Redis at {address} does not answer: {error}"))
            })?;
        Ok(RedisSessionStore {
            connection,
            address,
            prefix: defaults::SESSION_KEY_PREFIX.to_owned(),
            ttl: defaults::SESSION_TTL,
        })
    }

    /// Keeps a session and its state this long after their last use (at least a second; default
    /// [`defaults::SESSION_TTL`], a day).
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
    /// use std::time::Duration;
    /// let store = pleach_mcp::http::RedisSessionStore::connect("redis://127.0.0.1/")
    ///     .await?
    ///     .ttl(Duration::from_secs(600));
    /// assert!(format!("{store:?}").contains("ttl: 600s"));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> RedisSessionStore {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// Starts every key with `prefix` (default [`defaults::SESSION_KEY_PREFIX`], `pleach:mcp:`):
    /// servers of different tools sharing one Redis.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
    /// let store = pleach_mcp::http::RedisSessionStore::connect("redis://127.0.0.1/")
    ///     .await?
    ///     .prefix("acme:tools:");
    /// # let _ = store;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> RedisSessionStore {
        self.prefix = prefix.into();
        self
    }

    fn session_key(&self, session_id: &str) -> String {
        format!("{}{session_id}", self.prefix)
    }

    fn state_key(&self, session_id: &str) -> String {
        format!("{}{session_id}:state", self.prefix)
    }

    fn ttl_seconds(&self) -> u64 {
        self.ttl.as_secs().max(1)
    }

    fn error(&self, doing: &'static str, reason: impl fmt::Display) -> StoreError {
        StoreError {
            address: self.address.clone(),
            doing,
            reason: reason.to_string(),
        }
    }

    /// Whether session `session_id` is in the store (not ended by a `DELETE` on any replica, nor
    /// expired); if it is, its time to live starts again.
    pub(crate) async fn touch(&self, session_id: &str) -> Result<bool, StoreError> {
        let (session, _): (bool, bool) = redis::pipe()
            .cmd("EXPIRE")
            .arg(self.session_key(session_id))
            .arg(self.ttl_seconds())
            .cmd("EXPIRE")
            .arg(self.state_key(session_id))
            .arg(self.ttl_seconds())
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|error| self.error("look up a session", error))?;
        Ok(session)
    }

    /// The persisted state of session `session_id` (empty for a session with none yet).
    pub(crate) async fn load_state(
        &self,
        session_id: &str,
    ) -> Result<Map<String, Value>, StoreError> {
        let key = self.state_key(session_id);
        let fields: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|error| self.error("load the session's state", error))?;
        let mut state = Map::new();
        for (field, text) in fields {
            match serde_json::from_str(&text) {
                Ok(value) => {
                    state.insert(field, value);
                }
                // Not JSON: not written by pleach. Left out, so the state starts afresh.
                Err(error) => tracing::warn!(
                    "session state `{field}` in {key} is not JSON ({error}); starting it afresh"
                ),
            }
        }
        Ok(state)
    }

    /// Writes `changed` into session `session_id`'s state (the other fields are left as they
    /// are, so calls that changed different state do not undo each other) and renews its time to
    /// live.
    pub(crate) async fn save_state(
        &self,
        session_id: &str,
        changed: &Map<String, Value>,
    ) -> Result<(), StoreError> {
        let key = self.state_key(session_id);
        let mut pipe = redis::pipe();
        pipe.atomic();
        if !changed.is_empty() {
            let fields: Vec<(&str, String)> = changed
                .iter()
                .map(|(field, value)| (field.as_str(), value.to_string()))
                .collect();
            pipe.cmd("HSET").arg(&key).arg(fields).ignore();
        }
        pipe.cmd("EXPIRE")
            .arg(&key)
            .arg(self.ttl_seconds())
            .ignore();
        pipe.query_async::<()>(&mut self.connection.clone())
            .await
            .map_err(|error| self.error("save the session's state", error))
    }
}

#[async_trait::async_trait]
impl SessionStore for RedisSessionStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let key = self.session_key(session_id);
        let text: Option<String> = redis::cmd("GETEX")
            .arg(&key)
            .arg("EX")
            .arg(self.ttl_seconds())
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|error| self.error("load a session", error))?;
        let Some(text) = text else { return Ok(None) };
        match serde_json::from_str(&text) {
            Ok(state) => Ok(Some(state)),
            Err(error) => {
                // Not a session this version can restore: the client starts a new one.
                tracing::warn!("session {key} cannot be restored ({error}); it is unknown now");
                Ok(None)
            }
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let text = serde_json::to_string(state)?;
        redis::cmd("SET")
            .arg(self.session_key(session_id))
            .arg(text)
            .arg("EX")
            .arg(self.ttl_seconds())
            .query_async::<()>(&mut self.connection.clone())
            .await
            .map_err(|error| self.error("store a session", error).into())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        redis::cmd("DEL")
            .arg(self.session_key(session_id))
            .arg(self.state_key(session_id))
            .query_async::<()>(&mut self.connection.clone())
            .await
            .map_err(|error| self.error("delete a session", error).into())
    }
}

/// `url` with any password replaced by `***`, for messages.
fn without_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::without_password;

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            without_password("redis://app:s3cret@cache:6379/1"),
            "redis://app:***@cache:6379/1"
        );
        assert_eq!(
            without_password("redis://:s3cret@cache/"),
            "redis://:***@cache/"
        );
        assert_eq!(without_password("redis://cache:6379"), "redis://cache:6379");
        assert_eq!(without_password("not a url @ all"), "not a url @ all");
    }
}
