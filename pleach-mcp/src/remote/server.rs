//! A connected MCP server: its tools as listed (offered, skipped, held back), listed again on
//! `tools/list_changed` while it or any of its tools is in use.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, Weak};

use super::connection::Connection;
use super::listing::{self, RemoteTool};
use super::pin::{self, DefinitionChange, PinnedTool};
use super::{Overrides, RemoteError, SkippedTool};
use pleach_core::plugin::PleachPlugin;
use pleach_core::tool::UnifiedToolDefinition;

/// A connected MCP server and the tools pleach took from it. Cheap to clone; the connection
/// closes when the last clone and the last of its tools are dropped (or on
/// [`close`](RemoteServer::close)).
#[derive(Clone)]
pub struct RemoteServer {
    inner: Arc<Inner>,
}

impl fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteServer")
            .field("label", &self.label())
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

struct Inner {
    connection: Arc<Connection>,
    lister: Arc<Lister>,
    listed: RwLock<Vec<RemoteTool>>,
    skipped: RwLock<Vec<SkippedTool>>,
    /// The definitions held back at the last listing.
    held: RwLock<Vec<DefinitionChange>>,
}

/// What listing a server takes: shared by the server and the task listing again on
/// `tools/list_changed`, which keeps the definitions a runtime holds up to date (refusing calls
/// to tools no longer listed or held back) after the `RemoteServer` is dropped.
struct Lister {
    overrides: Overrides,
    pins: pin::Pins,
    /// The server's names of the tools offered now and of those held back, shared with the
    /// definitions (which refuse calls to the others).
    names: listing::ListedNames,
}

/// What a listing offers, skips and holds back.
struct Relisted {
    tools: Vec<RemoteTool>,
    skipped: Vec<SkippedTool>,
    held: Vec<DefinitionChange>,
}

impl Lister {
    /// Lists the tools, screens them against the pins, and tells the definitions which are
    /// offered and which held back; warns about each one skipped (each one held back is warned
    /// about with its diff as it is screened).
    async fn list(&self, connection: &Arc<Connection>) -> Result<Relisted, String> {
        let raw = listing::list_raw(connection)
            .await
            .map_err(|error| error.message().to_owned())?;
        let listing::Listed { tools, skipped } =
            listing::definitions(&raw, connection, &self.overrides, &self.names);
        let label = connection.label();
        let pin::Screened {
            offered: tools,
            held,
        } = self.pins.screen(label, tools).await?;
        for skip in &skipped {
            tracing::warn!("MCP server `{label}`: tool {skip}; skipped");
        }
        self.names.replace(
            tools.iter().map(|tool| tool.remote_name.clone()),
            held.iter().map(|change| change.tool.clone()),
        );
        Ok(Relisted {
            tools,
            skipped,
            held,
        })
    }
}

impl Inner {
    /// Lists the tools again, warning about each one skipped, each one held back and each
    /// change.
    async fn relist(&self) -> Result<(), String> {
        let Relisted {
            tools,
            skipped,
            held,
        } = self.lister.list(&self.connection).await?;
        let label = self.connection.label();
        {
            let before = self.listed.read().unwrap_or_else(PoisonError::into_inner);
            let had: Vec<&str> = before.iter().map(|t| t.definition.name()).collect();
            let has: Vec<&str> = tools.iter().map(|t| t.definition.name()).collect();
            if !before.is_empty() && had != has {
                tracing::warn!(
                    "MCP server `{label}` changed its tools (now {}): a runtime built before \
                     keeps the tools it has; tools no longer listed fail their calls with 1003",
                    has.join(", ")
                );
            }
        }
        *self.listed.write().unwrap_or_else(PoisonError::into_inner) = tools;
        *self.skipped.write().unwrap_or_else(PoisonError::into_inner) = skipped;
        *self.held.write().unwrap_or_else(PoisonError::into_inner) = held;
        Ok(())
    }
}

/// Lists the tools again whenever the server says they changed or the connection is opened
/// again, while the server or any of its tools is in use.
fn watch_list(inner: &Arc<Inner>) {
    let server: Weak<Inner> = Arc::downgrade(inner);
    let connection: Weak<Connection> = Arc::downgrade(&inner.connection);
    let lister = Arc::clone(&inner.lister);
    let mut changes = inner.connection.relist();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let outcome = if let Some(inner) = server.upgrade() {
                inner.relist().await
            } else if let Some(connection) = connection.upgrade() {
                // Only a runtime's definitions are left: they hold the connection.
                lister.list(&connection).await.map(|_| ())
            } else {
                return;
            };
            if let Err(reason) = outcome {
                let label = connection
                    .upgrade()
                    .map(|connection| connection.label().to_owned())
                    .unwrap_or_default();
                tracing::warn!("MCP server `{label}`: listing its tools again failed: {reason}");
            }
        }
    });
}

impl RemoteServer {
    /// Lists the tools of a server just connected, then watches for changes.
    pub(super) async fn listed(
        connection: Arc<Connection>,
        overrides: Overrides,
        pins: pin::Pins,
        label: String,
    ) -> Result<RemoteServer, RemoteError> {
        let inner = Arc::new(Inner {
            connection,
            lister: Arc::new(Lister {
                overrides,
                pins,
                names: listing::ListedNames::default(),
            }),
            listed: RwLock::new(Vec::new()),
            skipped: RwLock::new(Vec::new()),
            held: RwLock::new(Vec::new()),
        });
        // Boxed: a listing's future (pages, pins, a host's prompt) would double `connect`'s.
        Box::pin(inner.relist())
            .await
            .map_err(|reason| RemoteError::List { label, reason })?;
        watch_list(&inner);
        Ok(RemoteServer { inner })
    }

    /// How messages name the server.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).prefix("s").connect().await?;
    /// assert_eq!(server.label(), "s");
    /// # Ok(()) }
    /// ```
    pub fn label(&self) -> &str {
        self.inner.connection.label()
    }

    /// The tools pleach took, as definitions to register (names prefixed, tiers set).
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use pleach_core::ToolRegistryBuilder;
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// let registry = ToolRegistryBuilder::new().register_all(server.tools()).build()?;
    /// # let _ = registry;
    /// # Ok(()) }
    /// ```
    pub fn tools(&self) -> Vec<UnifiedToolDefinition> {
        let listed = self
            .inner
            .listed
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        listed.iter().map(|tool| tool.definition.clone()).collect()
    }

    /// The names of the tools pleach took.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// println!("{}", server.tool_names().join(", "));
    /// # Ok(()) }
    /// ```
    pub fn tool_names(&self) -> Vec<String> {
        let listed = self
            .inner
            .listed
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        listed
            .iter()
            .map(|tool| tool.definition.name().to_owned())
            .collect()
    }

    /// The tools the server lists that pleach did not take, and why (each was logged as a
    /// warning).
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// for skipped in server.skipped() {
    ///     eprintln!("skipped {skipped}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn skipped(&self) -> Vec<SkippedTool> {
        self.inner
            .skipped
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The tools as a plugin named `mcp:<label>`: the definitions and a parallel batching hint
    /// for each read-only tool. `RuntimeBuilder::plugin(server.plugin())` adds them beside the
    /// runtime's other tools.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// let runtime = pleach_core::Runtime::builder().plugin(server.plugin()).build()?;
    /// # let _ = runtime;
    /// # Ok(()) }
    /// ```
    pub fn plugin(&self) -> PleachPlugin {
        let listed = self
            .inner
            .listed
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let hints: Vec<_> = listed.iter().filter_map(RemoteTool::hint).collect();
        let mut plugin = PleachPlugin::new(format!("mcp:{}", self.label()))
            .tools(self.tools())
            .batching_hints(hints);
        for tool in listed.iter() {
            if let Some(idempotent) = tool.idempotent {
                plugin = plugin.idempotent(tool.definition.name(), idempotent);
            }
        }
        plugin
    }

    /// Lists the tools again now (it also happens by itself on `tools/list_changed` and after a
    /// reconnection).
    ///
    /// # Errors
    ///
    /// [`RemoteError::List`]: the server did not list them.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// server.refresh().await?;
    /// # Ok(()) }
    /// ```
    pub async fn refresh(&self) -> Result<(), RemoteError> {
        self.inner
            .relist()
            .await
            .map_err(|reason| RemoteError::List {
                label: self.label().to_owned(),
                reason,
            })
    }

    /// The definitions held back at the last listing (changed since they were pinned, or new),
    /// each with its diff: not offered, their calls refused (1012), until
    /// [`trust`](RemoteServer::trust)ed.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// for change in server.held_back() {
    ///     eprintln!("{change}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn held_back(&self) -> Vec<DefinitionChange> {
        self.inner
            .held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Accepts the held-back definitions of the tools named (the server's names): records them,
    /// as [`held_back`](RemoteServer::held_back) shows them, as the pinned ones, and lists the
    /// tools again, which offers them. Resolves to the names recorded (a name not held back is
    /// left out).
    ///
    /// # Errors
    ///
    /// [`RemoteError::Pins`]: the pins cannot be written; [`RemoteError::List`]: listing
    /// again failed.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// let trusted = server.trust(["search"]).await?;
    /// assert!(trusted.iter().all(|name| name == "search"));
    /// # Ok(()) }
    /// ```
    pub async fn trust(
        &self,
        tools: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Vec<String>, RemoteError> {
        let wanted: Vec<String> = tools.into_iter().map(|t| t.as_ref().to_owned()).collect();
        let chosen: Vec<DefinitionChange> = self
            .held_back()
            .into_iter()
            .filter(|change| wanted.contains(&change.tool))
            .collect();
        if chosen.is_empty() {
            return Ok(Vec::new());
        }
        self.inner
            .lister
            .pins
            .record(&chosen)
            .map_err(|reason| RemoteError::Pins {
                label: self.label().to_owned(),
                reason,
            })?;
        for change in &chosen {
            tracing::info!(
                mcp.server = self.label(),
                mcp.tool = change.tool,
                "MCP server `{}`: the definition of `{}` is trusted",
                self.label(),
                change.tool
            );
        }
        self.refresh().await?;
        Ok(chosen.into_iter().map(|change| change.tool).collect())
    }

    /// The pinned tools (every tool pinned, listed now or not) with their fingerprints.
    ///
    /// # Errors
    ///
    /// [`RemoteError::Pins`]: the pins cannot be read.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// println!("{} tools pinned", server.pinned()?.len());
    /// # Ok(()) }
    /// ```
    pub fn pinned(&self) -> Result<Vec<PinnedTool>, RemoteError> {
        self.inner
            .lister
            .pins
            .pinned()
            .map_err(|reason| RemoteError::Pins {
                label: self.label().to_owned(),
                reason,
            })
    }

    /// Closes the connection now (a stdio server's process is stopped). Calls after it open it
    /// again.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::remote::RemoteError> {
    /// let server = pleach_mcp::remote::McpRemote::stdio("node", ["s.mjs"]).connect().await?;
    /// server.close().await;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) {
        self.inner.connection.close().await;
    }
}
