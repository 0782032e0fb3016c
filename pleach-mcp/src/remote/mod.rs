//! Remote tools: an MCP server's tools in a pleach runtime, beside its `#[tool]` fns
//! (servers over Streamable HTTP need the `http` feature).
//!
//! [`McpRemote`] says where a server is (a command line for stdio, a URL for Streamable HTTP) and
//! how its tools are named and tiered; [`connect`](McpRemote::connect) starts it, runs the
//! handshake and lists its tools (every page); [`RemoteServer::plugin`] hands them to a
//! [`RuntimeBuilder`](pleach_core::RuntimeBuilder). From then on a remote tool is a tool like any
//! other:
//!
//! - **Names**: the server's, or `prefix__name` with [`McpRemote::prefix`]. The name rule and the
//!   duplicate-name error are the local tools' own; the error names the server (``the MCP
//!   server `github` (its tool `create_issue`)``) as the other definition's site. A tool
//!   pleach cannot accept (a name with spaces, an input schema that is not an object schema, a
//!   schema that does not compile) is skipped with a warning saying why
//!   ([`RemoteServer::skipped`]); the rest are served.
//! - **Input** is validated against the server's `inputSchema` before the call leaves the
//!   process (1001 with JSON pointers); the server never sees a call that does not fit.
//!   **Output**: `structuredContent` is the result, checked against `outputSchema` when the
//!   server gives one (1002); an `isError` result is the tool's own failure (1008) with the
//!   server's text; otherwise the result is the text content (or the content blocks when some
//!   are not text).
//! - **Tiers and batching**: `readOnlyHint` makes a tool's calls parallel (and idempotent for a
//!   durable engine); `idempotentHint` of a tool that writes declares whether a durable engine may
//!   run a call again after losing its worker (`docs/durable.md`); `destructiveHint`
//!   puts it in the `standard` tier ([`McpRemote::destructive_tier`] to choose another);
//!   [`McpRemote::default_tier`] and [`McpRemote::tier`] override per server and per tool.
//! - **Lifecycle**: a call's signal (cancel, the runtime's timeout) sends
//!   `notifications/cancelled`. A connection that fails fails the
//!   call with **1017** (recoverable) and is opened again by a later call, after a backoff that
//!   doubles from 250 ms to 30 s while attempts keep failing. `notifications/tools/list_changed`
//!   (and each reconnection) lists the tools again: a tool the server no longer lists fails its
//!   calls with 1003 without sending them, and [`RemoteServer::plugin`] gives the new list to a
//!   runtime built afterwards.
//! - **The server talking to the client** during a call reaches the calling tool's context, so
//!   its host: `notifications/progress` and `notifications/message` become the call's
//!   `tool.progress` and `tool.log` events; `elicitation/create` (form) and
//!   `sampling/createMessage` become `elicitation.requested` and `sampling.requested` events the
//!   host answers within the runtime's approval timeout (behind `pleach mcp`, the gateway's own
//!   client answers). A host that cannot answer refuses the server with a JSON-RPC error;
//!   cancelling the call withdraws the request. Which call a message belongs to: its progress
//!   token; over Streamable HTTP, the call's response stream a request came on; otherwise the
//!   one call running (docs/mcp.md, "Requests from remote servers").
//!   [`McpRemote::elicitation`] and [`McpRemote::sampling`] say what the client declares.
//! - **Pinned definitions**: the first listing is recorded (each tool's name, title,
//!   description, schemas and annotations, with a fingerprint) in memory, or in a lock that
//!   outlives the process ([`McpRemote::pin_file`], [`McpRemote::pin_store`]). A later
//!   definition that differs, or a tool first listed later, is held back (not listed, its calls
//!   refused with 1012) and logged with a diff until it is trusted ([`RemoteServer::trust`]),
//!   unless the [`PinPolicy`] accepts it or its [`TrustPrompt`] says yes;
//!   [`McpRemote::pin_definitions`] turns pinning off.
//! - **OAuth** (HTTP servers): `McpRemote::oauth` signs in when the server's 401 asks, as a
//!   person through an `Authorize` or as a machine with `ClientCredentials`, and keeps the
//!   token fresh (refresh, step-up on 403 `insufficient_scope`); see `OAuth`.
//!
//! ```rust,no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use pleach_mcp::remote::McpRemote;
//! use pleach_core::{Runtime, SessionOptions, ToolCall};
//!
//! let files = McpRemote::stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"])
//!     .prefix("files")
//!     .connect()
//!     .await?;
//! let runtime = Runtime::builder().plugin(files.plugin()).build()?;
//! let session = runtime.create_session(SessionOptions::all())?;
//! let outcome = session
//!     .call(ToolCall::new("c1", "files__list_directory", r#"{"path": "/srv/docs"}"#))
//!     .await
//!     .outcome;
//! println!("{outcome:?}");
//! # Ok(()) }
//! ```

#[cfg(feature = "http")]
mod authorized;
mod call;
mod connection;
mod diff;
mod listing;
#[cfg(feature = "http")]
mod oauth;
mod pin;
mod requests;
mod server;
mod span;
mod target;

#[cfg(feature = "http")]
pub use self::oauth::{Authorize, ClientCredentials, KeyError, OAuth, TokenFile};
pub use self::pin::{DefinitionChange, PinFile, PinPolicy, PinStore, PinnedTool, TrustPrompt};
pub use self::server::RemoteServer;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use self::connection::Connection;
use self::target::{StdioCommand, Target};
use crate::defaults;
use pleach_core::SafetyTier;

/// Where an MCP server is and how its tools join a runtime; [`connect`](McpRemote::connect)
/// to use them.
///
/// ```
/// use pleach_mcp::remote::McpRemote;
/// use pleach_core::SafetyTier;
///
/// let remote = McpRemote::stdio("python3", ["-m", "weather_server"])
///     .prefix("weather")
///     .tier("set_alert", SafetyTier::Standard);
/// assert_eq!(remote.label(), "weather");
/// ```
#[derive(Clone)]
pub struct McpRemote {
    target: Target,
    label: Option<String>,
    connect_timeout: Duration,
    overrides: Overrides,
    answers: requests::Answers,
    pinning: pin::Pinning,
}

impl fmt::Debug for McpRemote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpRemote")
            .field("target", &self.target.to_string())
            .field("label", &self.label())
            .field("prefix", &self.overrides.prefix)
            .field("pinning", &self.pinning)
            .finish_non_exhaustive()
    }
}

/// How a server's tools are named and tiered.
#[derive(Clone, Debug)]
pub(crate) struct Overrides {
    prefix: Option<String>,
    default_tier: Option<SafetyTier>,
    destructive_tier: SafetyTier,
    /// By the server's tool name or the prefixed name.
    tiers: Vec<(String, SafetyTier)>,
    max_tools: usize,
}

/// A tool a server lists that pleach did not take, and why.
///
/// ```
/// let skipped = pleach_mcp::remote::SkippedTool {
///     name: "bad name".into(),
///     reason: "tool name `bad name` is invalid".into(),
/// };
/// assert_eq!(skipped.to_string(), "`bad name`: tool name `bad name` is invalid");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// The name the server gave it (or `#index` when it gave none).
    pub name: String,
    /// Why it was skipped.
    pub reason: String,
}

impl fmt::Display for SkippedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.name, self.reason)
    }
}

/// Why a server could not be used.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_mcp::remote::{McpRemote, RemoteError};
/// let error = McpRemote::stdio("/no/such/server", Vec::<String>::new()).connect().await.unwrap_err();
/// assert!(matches!(error, RemoteError::Connect { .. }));
/// assert!(error.to_string().contains("/no/such/server"), "{error}");
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The server could not be started or reached, or the handshake failed.
    #[error("cannot connect to the MCP server `{label}` ({target}): {reason}")]
    Connect {
        /// How messages name the server.
        label: String,
        /// Its command line or URL.
        target: String,
        /// Why.
        reason: String,
    },
    /// The server did not list its tools.
    #[error("the MCP server `{label}` did not list its tools: {reason}")]
    List {
        /// How messages name the server.
        label: String,
        /// Why.
        reason: String,
    },
    /// A command line that cannot be split into words (an unclosed quote).
    #[error("cannot read the command line `{0}` (an unclosed quote?)")]
    CommandLine(String),
    /// The server's pinned definitions could not be read or written.
    #[error("the MCP server `{label}`: {reason}")]
    Pins {
        /// How messages name the server.
        label: String,
        /// Why.
        reason: String,
    },
}

impl McpRemote {
    /// A server started as `program args…`, speaking MCP on its stdin and stdout (its stderr is
    /// pleach's own).
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["server.mjs"]);
    /// assert_eq!(remote.label(), "node");
    /// ```
    pub fn stdio(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> McpRemote {
        McpRemote::new(Target::Stdio(StdioCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            dir: None,
        }))
    }

    /// A stdio server from one command line, split as a POSIX shell splits words (quotes and
    /// backslashes; no variables, globs or pipes): `"python3 -m weather_server --units metric"`.
    ///
    /// # Errors
    ///
    /// [`RemoteError::CommandLine`]: an unclosed quote, or no words at all.
    ///
    /// ```
    /// use pleach_mcp::remote::McpRemote;
    /// let remote = McpRemote::command_line(r#"node "my server.mjs" --port 0"#).unwrap();
    /// assert_eq!(remote.label(), "node");
    /// assert!(McpRemote::command_line(r#"node "unclosed"#).is_err());
    /// ```
    pub fn command_line(line: &str) -> Result<McpRemote, RemoteError> {
        let words = shlex::split(line)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| RemoteError::CommandLine(line.to_owned()))?;
        let mut words = words.into_iter();
        let program = words.next().unwrap_or_default();
        Ok(McpRemote::stdio(program, words))
    }

    /// A server at a Streamable HTTP `url` (feature `http`).
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::http("https://mcp.example.com/mcp");
    /// assert_eq!(remote.label(), "mcp.example.com");
    /// ```
    #[cfg(feature = "http")]
    pub fn http(url: impl Into<String>) -> McpRemote {
        McpRemote::new(Target::Http(target::HttpTarget {
            url: url.into(),
            token: None,
            headers: Vec::new(),
            oauth: None,
        }))
    }

    fn new(target: Target) -> McpRemote {
        McpRemote {
            target,
            label: None,
            connect_timeout: defaults::CONNECT_TIMEOUT,
            overrides: Overrides {
                prefix: None,
                default_tier: None,
                destructive_tier: SafetyTier::Standard,
                tiers: Vec::new(),
                max_tools: defaults::MAX_TOOLS,
            },
            answers: requests::Answers::default(),
            pinning: pin::Pinning::default(),
        }
    }

    /// Sends `Authorization: Bearer <token>` with every request (HTTP servers).
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::http("https://mcp.example.com/mcp")
    ///     .bearer_token("secret");
    /// # let _ = remote;
    /// ```
    #[cfg(feature = "http")]
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> McpRemote {
        if let Target::Http(http) = &mut self.target {
            http.token = Some(token.into());
        }
        self
    }

    /// Signs in to the server with OAuth 2.1 when it asks (HTTP servers): see [`OAuth`]. Its
    /// tokens are sent, refreshed and stepped up for every request; a static
    /// [`bearer_token`](McpRemote::bearer_token) is then not sent.
    ///
    /// ```
    /// use pleach_mcp::remote::{ClientCredentials, McpRemote, OAuth};
    /// let remote = McpRemote::http("https://mcp.example.com/mcp")
    ///     .oauth(OAuth::new().client_credentials(ClientCredentials::secret("worker-7", "s3cret")));
    /// # let _ = remote;
    /// ```
    #[cfg(feature = "http")]
    #[must_use]
    pub fn oauth(mut self, oauth: OAuth) -> McpRemote {
        if let Target::Http(http) = &mut self.target {
            http.oauth = Some(Arc::new(authorized::SignIn::new(http.url.clone(), oauth)));
        }
        self
    }

    /// Sends the header `name: value` with every request (HTTP servers). Repeatable.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::http("https://mcp.example.com/mcp")
    ///     .header("X-Team", "infra");
    /// # let _ = remote;
    /// ```
    #[cfg(feature = "http")]
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> McpRemote {
        if let Target::Http(http) = &mut self.target {
            http.headers.push((name.into(), value.into()));
        }
        self
    }

    /// Sets the variable `key` to `value` in the server's environment (stdio servers).
    /// Repeatable.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["server.mjs"])
    ///     .env("LOG_LEVEL", "warn");
    /// # let _ = remote;
    /// ```
    #[must_use]
    // Without `http` a stdio target is the only kind.
    #[cfg_attr(not(feature = "http"), allow(irrefutable_let_patterns))]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> McpRemote {
        if let Target::Stdio(command) = &mut self.target {
            command.env.push((key.into(), value.into()));
        }
        self
    }

    /// Starts the server in `dir` (stdio servers).
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["server.mjs"])
    ///     .current_dir("/srv/tools");
    /// # let _ = remote;
    /// ```
    #[must_use]
    // Without `http` a stdio target is the only kind.
    #[cfg_attr(not(feature = "http"), allow(irrefutable_let_patterns))]
    pub fn current_dir(mut self, dir: impl Into<std::path::PathBuf>) -> McpRemote {
        if let Target::Stdio(command) = &mut self.target {
            command.dir = Some(dir.into());
        }
        self
    }

    /// Names every tool `prefix__name` (a server's tools kept apart from others of the same
    /// name); the prefix also names the server in messages.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["gh.mjs"]).prefix("github");
    /// assert_eq!(remote.label(), "github");
    /// ```
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> McpRemote {
        self.overrides.prefix = Some(prefix.into());
        self
    }

    /// How messages, warnings and definition sites name the server (default: the prefix, else
    /// the program's name or the URL's host).
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["gh.mjs"]).name("github tools");
    /// assert_eq!(remote.label(), "github tools");
    /// ```
    #[must_use]
    pub fn name(mut self, label: impl Into<String>) -> McpRemote {
        self.label = Some(label.into());
        self
    }

    /// The tier of every tool of this server, unless [`tier`](McpRemote::tier) names it: what
    /// the annotations would give is not used.
    ///
    /// ```
    /// use pleach_mcp::remote::McpRemote;
    /// use pleach_core::SafetyTier;
    /// let remote = McpRemote::stdio("node", ["bank.mjs"]).default_tier(SafetyTier::Standard);
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn default_tier(mut self, tier: SafetyTier) -> McpRemote {
        self.overrides.default_tier = Some(tier);
        self
    }

    /// The tier of the tools whose annotations say `destructiveHint: true` (default
    /// [`SafetyTier::Standard`]).
    ///
    /// ```
    /// use pleach_mcp::remote::McpRemote;
    /// use pleach_core::SafetyTier;
    /// let remote = McpRemote::stdio("node", ["fs.mjs"]).destructive_tier(SafetyTier::Advisory);
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn destructive_tier(mut self, tier: SafetyTier) -> McpRemote {
        self.overrides.destructive_tier = tier;
        self
    }

    /// The tier of one tool, by the server's name for it or the prefixed name. Repeatable.
    ///
    /// ```
    /// use pleach_mcp::remote::McpRemote;
    /// use pleach_core::SafetyTier;
    /// let remote = McpRemote::stdio("node", ["bank.mjs"]).tier("transfer", SafetyTier::Critical);
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn tier(mut self, tool: impl Into<String>, tier: SafetyTier) -> McpRemote {
        self.overrides.tiers.push((tool.into(), tier));
        self
    }

    /// How long starting the server and the handshake may take (default
    /// [`defaults::CONNECT_TIMEOUT`], 30 s); also bounds each reconnection.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"])
    ///     .connect_timeout(std::time::Duration::from_secs(5));
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> McpRemote {
        self.connect_timeout = timeout;
        self
    }

    /// Whether the server may ask for elicitation (form mode) during a call: declared in the
    /// handshake, and each question passed to the calling tool's host (default: yes). Turn it
    /// off where no host ever answers (a batch job), so the server knows not to ask.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).elicitation(false);
    /// # let _ = remote;
    /// ```
    #[doc(alias = "elicitation/create")]
    #[must_use]
    pub fn elicitation(mut self, answers: bool) -> McpRemote {
        self.answers.elicitation = answers;
        self
    }

    /// Whether the server may ask for sampling (a completion of the client's model) during a
    /// call: declared in the handshake, and each request passed to the calling tool's host
    /// (default: yes). Turn it off where no host ever answers.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).sampling(false);
    /// # let _ = remote;
    /// ```
    #[doc(alias = "sampling/createMessage")]
    #[must_use]
    pub fn sampling(mut self, answers: bool) -> McpRemote {
        self.answers.sampling = answers;
        self
    }

    /// Uses at most `max` of the server's tools (default [`defaults::MAX_TOOLS`], 1000); the rest are
    /// skipped with a warning. A model chooses poorly among thousands, and providers cap how
    /// many tools a request may carry.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).max_tools(50);
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn max_tools(mut self, max: usize) -> McpRemote {
        self.overrides.max_tools = max;
        self
    }

    /// Keeps the pinned definitions in the lock file at `path` (created at the first listing),
    /// so they outlive the process: a definition changed between two runs is held back too.
    /// Without it (or [`pin_store`](McpRemote::pin_store)) they are kept in memory, from each
    /// connection's first listing.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"])
    ///     .pin_file("/home/me/.config/pleach/mcp-pins/example.json");
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn pin_file(self, path: impl Into<std::path::PathBuf>) -> McpRemote {
        self.pin_store(PinFile::new(path))
    }

    /// Keeps the pinned definitions in `store` (a database, a secret manager, …).
    ///
    /// ```
    /// use pleach_mcp::remote::{McpRemote, PinFile};
    /// let remote = McpRemote::stdio("node", ["s.mjs"]).pin_store(PinFile::new("pins.json"));
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn pin_store(mut self, store: impl PinStore) -> McpRemote {
        self.pinning.store(Arc::new(store));
        self
    }

    /// What happens to a definition that differs from the pinned one, or to a new tool (default
    /// [`PinPolicy::HoldBack`]).
    ///
    /// ```
    /// use pleach_mcp::remote::{McpRemote, PinPolicy};
    /// let remote = McpRemote::stdio("node", ["s.mjs"]).pin_policy(PinPolicy::Accept);
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn pin_policy(mut self, policy: PinPolicy) -> McpRemote {
        self.pinning.policy(policy);
        self
    }

    /// Who decides about a changed or new definition under [`PinPolicy::Ask`]; without one, a
    /// change is held back.
    ///
    /// ```
    /// use pleach_mcp::remote::{DefinitionChange, McpRemote, PinPolicy};
    /// let remote = McpRemote::stdio("node", ["s.mjs"])
    ///     .pin_policy(PinPolicy::Ask)
    ///     .trust_prompt(|change: DefinitionChange| async move { change.pinned.is_none() });
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn trust_prompt(mut self, prompt: impl TrustPrompt) -> McpRemote {
        self.pinning.prompt(Arc::new(prompt));
        self
    }

    /// Whether the tools' definitions are pinned (default `true`); `false` offers whatever the
    /// server lists.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).pin_definitions(false);
    /// # let _ = remote;
    /// ```
    #[must_use]
    pub fn pin_definitions(mut self, pinned: bool) -> McpRemote {
        self.pinning.enable(pinned);
        self
    }

    /// How messages name the server.
    ///
    /// ```
    /// let remote = pleach_mcp::remote::McpRemote::stdio("/opt/bin/weather", ["--stdio"]);
    /// assert_eq!(remote.label(), "weather");
    /// ```
    pub fn label(&self) -> String {
        if let Some(label) = self.label.as_ref().or(self.overrides.prefix.as_ref()) {
            return label.clone();
        }
        match &self.target {
            Target::Stdio(command) => std::path::Path::new(&command.program)
                .file_name()
                .map_or_else(
                    || command.program.clone(),
                    |name| name.to_string_lossy().into_owned(),
                ),
            #[cfg(feature = "http")]
            Target::Http(http) => reqwest::Url::parse(&http.url)
                .ok()
                .and_then(|url| url.host_str().map(str::to_owned))
                .unwrap_or_else(|| http.url.clone()),
        }
    }

    /// Starts or reaches the server, runs the MCP handshake and lists its tools.
    ///
    /// # Errors
    ///
    /// [`RemoteError::Connect`]: the process cannot start, the URL cannot be reached or refuses
    /// (401 without a token), or no handshake within the connect timeout;
    /// [`RemoteError::List`]: `tools/list` failed.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["server.mjs"]).connect().await?;
    /// for tool in server.tools() {
    ///     println!("{}", tool.name());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn connect(self) -> Result<RemoteServer, RemoteError> {
        let label = self.label();
        let target = self.target.to_string();
        let connection = Arc::new(Connection::new(
            self.target,
            label.clone(),
            self.connect_timeout,
            self.answers,
        ));
        connection
            .peer()
            .await
            .map_err(|error| RemoteError::Connect {
                label: label.clone(),
                target,
                reason: error.message().to_owned(),
            })?;
        RemoteServer::listed(connection, self.overrides, self.pinning.connected(), label).await
    }
}
