//! How pleach signs in to an MCP server behind OAuth 2.1 (feature `http`): the configuration a
//! user gives [`McpRemote::oauth`](super::McpRemote::oauth), and where the tokens are kept.
//!
//! The protocol work is rmcp's (`rmcp::transport::auth`): discovery from the 401's
//! `WWW-Authenticate` (RFC 9728 protected-resource metadata, then RFC 8414 or OIDC discovery of
//! the authorization server), PKCE, the `resource` indicator (RFC 8707), client ID metadata
//! documents, dynamic registration, the RFC 9207 `iss` check, refresh. What pleach adds is in
//! `authorized.rs`: when to sign in, refresh, step up and retry.

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, CredentialStore, InMemoryCredentialStore, StoredCredentials,
};

/// The loopback redirect URI used when none is set: a port nobody listens on, so an
/// [`Authorize`] that reads the redirect's `Location` (a headless test, a pasted URL) works.
pub(crate) const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";

/// How pleach signs in to an OAuth-protected MCP server: as a person (the authorization code
/// grant with PKCE, through an [`Authorize`]) or as a machine ([`ClientCredentials`]), and where
/// the tokens are kept.
///
/// A server answers a request without a valid token with 401 and a `WWW-Authenticate` header;
/// pleach discovers the authorization server from it, identifies itself (a pre-registered
/// [`client_id`](OAuth::client_id), else a [client ID metadata
/// document](OAuth::client_metadata_url) when the server accepts them, else dynamic
/// registration), signs in, and retries. Tokens are refreshed before they expire and when the
/// server rejects one; a 403 `insufficient_scope` asks the [`Authorize`] again for the union
/// of the scopes. Without an [`Authorize`] or client credentials, a server that wants a
/// sign-in is an error naming the server: sign in beforehand (`pleach mcp login URL`) with a
/// [`token_file`](OAuth::token_file) the two share.
///
/// `Debug` shows no secret.
///
/// ```
/// use pleach_mcp::remote::{McpRemote, OAuth};
///
/// let oauth = OAuth::new()
///     .client_metadata_url("https://app.example.com/oauth/client.json")
///     .scopes(["issues:read"])
///     .authorize("http://127.0.0.1:8976/callback", |url: String| async move {
///         println!("open {url}");
///         // ... wait for the browser to come back to the redirect URI ...
///         Ok::<_, String>("http://127.0.0.1:8976/callback?code=…&state=…".to_owned())
///     });
/// let remote = McpRemote::http("https://mcp.example.com/mcp").oauth(oauth);
/// # let _ = remote;
/// ```
#[derive(Clone)]
pub struct OAuth {
    pub(crate) redirect_uri: String,
    pub(crate) authorizer: Option<Arc<dyn Authorize>>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) client_credentials: Option<ClientCredentials>,
    pub(crate) store: Arc<dyn CredentialStore>,
}

// An `OAuth` is a configuration: nothing in it changes after it is built, and the host's
// authorizer and credential store are asked through `&self` (a store that changes keeps its own
// lock). The compiler cannot see that through their `dyn` objects.
impl std::panic::UnwindSafe for OAuth {}
impl std::panic::RefUnwindSafe for OAuth {}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("authorize", &self.authorizer.is_some())
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| REDACTED),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("client_credentials", &self.client_credentials)
            .finish_non_exhaustive()
    }
}

/// What `Debug` shows for a secret.
const REDACTED: &str = "[redacted]";

impl Default for OAuth {
    fn default() -> OAuth {
        OAuth::new()
    }
}

impl OAuth {
    /// A sign-in with no way to ask a person yet: tokens from the [store](OAuth::token_file)
    /// are used and refreshed; add [`authorize`](OAuth::authorize) or
    /// [`client_credentials`](OAuth::client_credentials) to sign in.
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new();
    /// assert!(format!("{oauth:?}").contains("authorize: false"));
    /// ```
    pub fn new() -> OAuth {
        OAuth {
            redirect_uri: DEFAULT_REDIRECT_URI.to_owned(),
            authorizer: None,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "pleach".to_owned(),
            scopes: Vec::new(),
            client_credentials: None,
            store: Arc::new(InMemoryCredentialStore::new()),
        }
    }

    /// Signs a person in: `authorizer` gets the authorization URL (to print, to open in a
    /// browser) and answers the URL the authorization server redirected to, `redirect_uri` with
    /// `code`, `state` and maybe `iss` (checked against the server's issuer, RFC 9207).
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new().authorize(
    ///     "http://127.0.0.1:8976/callback",
    ///     |url: String| async move { Err::<String, _>(format!("no browser here to open {url}")) },
    /// );
    /// # let _ = oauth;
    /// ```
    #[must_use]
    pub fn authorize(
        mut self,
        redirect_uri: impl Into<String>,
        authorizer: impl Authorize,
    ) -> OAuth {
        self.redirect_uri = redirect_uri.into();
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// A client the authorization server knows beforehand (pre-registration): used before any
    /// other way of identifying pleach.
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new().client_id("pleach-ci").client_secret("s3cret");
    /// assert!(!format!("{oauth:?}").contains("s3cret"));
    /// ```
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> OAuth {
        self.client_id = Some(client_id.into());
        self
    }

    /// The secret of the pre-registered [`client_id`](OAuth::client_id) (a confidential
    /// client).
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new().client_id("pleach-ci").client_secret("s3cret");
    /// # let _ = oauth;
    /// ```
    #[must_use]
    pub fn client_secret(mut self, secret: impl Into<String>) -> OAuth {
        self.client_secret = Some(secret.into());
        self
    }

    /// The HTTPS URL of pleach's client ID metadata document, used as the client ID by an
    /// authorization server that says `client_id_metadata_document_supported`.
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new()
    ///     .client_metadata_url("https://app.example.com/oauth/client.json");
    /// # let _ = oauth;
    /// ```
    #[doc(alias = "client_id_metadata_document")]
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> OAuth {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The `client_name` sent with dynamic registration (default `pleach`).
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new().client_name("acme assistant");
    /// # let _ = oauth;
    /// ```
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> OAuth {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for. Without them, the `scope` of the server's challenge, else its
    /// metadata's `scopes_supported`, else none.
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new().scopes(["repo:read", "issues:write"]);
    /// # let _ = oauth;
    /// ```
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> OAuth {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Signs in as a machine with the client credentials grant: no person, no browser (a
    /// worker, a gateway).
    ///
    /// ```
    /// use pleach_mcp::remote::{ClientCredentials, OAuth};
    /// let oauth = OAuth::new().client_credentials(ClientCredentials::secret("worker-7", "s3cret"));
    /// assert!(!format!("{oauth:?}").contains("s3cret"));
    /// ```
    #[must_use]
    pub fn client_credentials(mut self, credentials: ClientCredentials) -> OAuth {
        self.client_credentials = Some(credentials);
        self
    }

    /// Keeps the tokens in `path` (JSON, mode 0600 on Unix), read at the next connection and
    /// rewritten when they are refreshed: one file per server. The default keeps them in
    /// memory for the process's life.
    ///
    /// ```
    /// let oauth = pleach_mcp::remote::OAuth::new().token_file("/home/me/.config/pleach/mcp/github.json");
    /// # let _ = oauth;
    /// ```
    #[must_use]
    pub fn token_file(self, path: impl Into<PathBuf>) -> OAuth {
        self.credential_store(TokenFile::new(path))
    }

    /// Keeps the tokens in `store` (a keychain, a database): rmcp's credential store trait.
    ///
    /// ```
    /// use rmcp::transport::auth::InMemoryCredentialStore;
    /// let oauth = pleach_mcp::remote::OAuth::new().credential_store(InMemoryCredentialStore::new());
    /// # let _ = oauth;
    /// ```
    #[must_use]
    pub fn credential_store(mut self, store: impl CredentialStore + 'static) -> OAuth {
        self.store = Arc::new(store);
        self
    }
}

/// The person's part of a sign-in: show the authorization URL, return the URL the
/// authorization server redirected to. Implemented for every
/// `Fn(String) -> impl Future<Output = Result<String, E>>` with `E: Display`.
///
/// ```
/// use pleach_mcp::remote::Authorize;
/// fn takes(_: impl Authorize) {}
/// takes(|url: String| async move { Ok::<_, std::convert::Infallible>(url) });
/// ```
pub trait Authorize: Send + Sync + 'static {
    /// Sends the person to `url`; resolves to the redirect URL (with `code` and `state`), or
    /// why there is none.
    fn authorize(
        &self,
        url: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + '_>>;
}

impl<F, Fut, E> Authorize for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, E>> + Send + 'static,
    E: fmt::Display,
{
    fn authorize(
        &self,
        url: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + '_>> {
        let answer = self(url);
        Box::pin(async move { answer.await.map_err(|error| error.to_string()) })
    }
}

/// A machine's credentials for the client credentials grant: a shared secret, or a private key
/// that signs a JWT assertion (`private_key_jwt`, RFC 7523). `Debug` shows no secret.
///
/// ```
/// use pleach_mcp::remote::ClientCredentials;
/// let credentials = ClientCredentials::secret("worker-7", "s3cret");
/// assert_eq!(credentials.client_id(), "worker-7");
/// assert!(!format!("{credentials:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct ClientCredentials {
    pub(crate) client_id: String,
    pub(crate) proof: Proof,
}

/// How the client proves who it is at the token endpoint.
#[derive(Clone)]
pub(crate) enum Proof {
    /// `client_secret_basic` when the server takes it alone, else `client_secret_post`.
    Secret(String),
    /// A JWT signed with this PEM key.
    PrivateKeyJwt {
        key: jsonwebtoken::EncodingKey,
        algorithm: jsonwebtoken::Algorithm,
    },
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = match &self.proof {
            Proof::Secret(_) => "client_secret",
            Proof::PrivateKeyJwt { .. } => "private_key_jwt",
        };
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("method", &method)
            .finish_non_exhaustive()
    }
}

/// Why a private key cannot sign client assertions.
///
/// ```
/// use pleach_mcp::remote::ClientCredentials;
/// let error = ClientCredentials::private_key_jwt("worker-7", b"not a key", "RS256").unwrap_err();
/// assert!(error.to_string().contains("RS256"), "{error}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The algorithm is not one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384.
    #[error(
        "`{0}` is not a signing algorithm for client assertions (RS256, RS384, RS512, PS256, PS384, PS512, ES256 or ES384)"
    )]
    Algorithm(String),
    /// The PEM does not hold a key of the algorithm's kind.
    #[error("the private key is not a PEM {kind} key for {algorithm}: {reason}")]
    Key {
        /// `RSA` or `EC`.
        kind: &'static str,
        /// The algorithm asked for.
        algorithm: String,
        /// Why the key was refused.
        reason: String,
    },
}

impl ClientCredentials {
    /// A client ID and its shared secret.
    ///
    /// ```
    /// let credentials = pleach_mcp::remote::ClientCredentials::secret("worker-7", "s3cret");
    /// # let _ = credentials;
    /// ```
    pub fn secret(client_id: impl Into<String>, secret: impl Into<String>) -> ClientCredentials {
        ClientCredentials {
            client_id: client_id.into(),
            proof: Proof::Secret(secret.into()),
        }
    }

    /// A client ID and the PEM private key (RSA or EC) that signs its assertions with
    /// `algorithm` (`RS256`, `ES256`, …).
    ///
    /// # Errors
    ///
    /// [`KeyError`]: an unknown algorithm, or a key that is not a PEM key of its kind.
    ///
    /// ```
    /// use pleach_mcp::remote::ClientCredentials;
    /// assert!(ClientCredentials::private_key_jwt("worker-7", b"-----BEGIN", "HS256").is_err());
    /// ```
    pub fn private_key_jwt(
        client_id: impl Into<String>,
        pem: &[u8],
        algorithm: &str,
    ) -> Result<ClientCredentials, KeyError> {
        use jsonwebtoken::{Algorithm, EncodingKey};
        let parsed = match algorithm {
            "RS256" => Algorithm::RS256,
            "RS384" => Algorithm::RS384,
            "RS512" => Algorithm::RS512,
            "PS256" => Algorithm::PS256,
            "PS384" => Algorithm::PS384,
            "PS512" => Algorithm::PS512,
            "ES256" => Algorithm::ES256,
            "ES384" => Algorithm::ES384,
            other => return Err(KeyError::Algorithm(other.to_owned())),
        };
        let (kind, key) = if algorithm.starts_with("ES") {
            ("EC", EncodingKey::from_ec_pem(pem))
        } else {
            ("RSA", EncodingKey::from_rsa_pem(pem))
        };
        let key = key.map_err(|error| KeyError::Key {
            kind,
            algorithm: algorithm.to_owned(),
            reason: error.to_string(),
        })?;
        Ok(ClientCredentials {
            client_id: client_id.into(),
            proof: Proof::PrivateKeyJwt {
                key,
                algorithm: parsed,
            },
        })
    }

    /// The client ID.
    ///
    /// ```
    /// assert_eq!(pleach_mcp::remote::ClientCredentials::secret("w", "s").client_id(), "w");
    /// ```
    pub fn client_id(&self) -> &str {
        &self.client_id
    }
}

/// Tokens kept in a JSON file, readable by its owner alone (mode 0600 on Unix): what
/// [`OAuth::token_file`] uses, and what `pleach mcp login` writes.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_mcp::remote::TokenFile;
/// use rmcp::transport::auth::CredentialStore;
/// let dir = std::env::temp_dir().join(format!("pleach-doc-{}", std::process::id()));
/// let file = TokenFile::new(dir.join("server.json"));
/// assert!(file.load().await.unwrap().is_none());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    /// The store at `path` (created, with its folder, at the first sign-in).
    ///
    /// ```
    /// let file = pleach_mcp::remote::TokenFile::new("/tmp/tokens.json");
    /// assert_eq!(file.path(), std::path::Path::new("/tmp/tokens.json"));
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> TokenFile {
        TokenFile { path: path.into() }
    }

    /// Where the tokens are.
    ///
    /// ```
    /// let file = pleach_mcp::remote::TokenFile::new("/tmp/tokens.json");
    /// assert!(file.path().ends_with("tokens.json"));
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn store_error(&self, what: &str, error: &dyn fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(format!(
            "cannot {what} the token file {}: {error}",
            self.path.display()
        ))
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let bytes = match tokio::fs::read(&self.path).await {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(self.store_error("read", &error)),
        };
        // The parser's message would quote the file, tokens and all: say where, not what.
        serde_json::from_slice(&bytes).map(Some).map_err(|error| {
            self.store_error(
                "read",
                &format_args!(
                    "not JSON credentials (line {}, column {})",
                    error.line(),
                    error.column()
                ),
            )
        })
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let json = serde_json::to_vec_pretty(&credentials)
            .map_err(|error| self.store_error("write", &error))?;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || write_private(&path, &json))
            .await
            .map_err(|error| self.store_error("write", &error))?
            .map_err(|error| self.store_error("write", &error))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match tokio::fs::remove_file(&self.path).await {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(self.store_error("remove", &error)),
        }
    }
}

/// Writes `bytes` to `path` through a file only its owner can read, renamed into place, so a
/// reader never sees half a file and the tokens are never world-readable.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_holds_no_secret() {
        let oauth = OAuth::new()
            .client_id("id-1")
            .client_secret("secret-abc")
            .client_credentials(ClientCredentials::secret("id-2", "secret-def"));
        let shown = format!("{oauth:?} {oauth:#?}");
        assert!(
            !shown.contains("secret-abc") && !shown.contains("secret-def"),
            "{shown}"
        );
        assert!(shown.contains("id-1") && shown.contains("id-2"), "{shown}");
    }

    #[test]
    fn an_unknown_algorithm_or_a_bad_key_is_an_error_not_a_panic() {
        assert!(matches!(
            ClientCredentials::private_key_jwt("c", b"x", "HS256"),
            Err(KeyError::Algorithm(_))
        ));
        assert!(matches!(
            ClientCredentials::private_key_jwt(
                "c",
                b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "ES256"
            ),
            Err(KeyError::Key { kind: "EC", .. })
        ));
    }

    #[tokio::test]
    async fn the_token_file_round_trips_and_only_its_owner_reads_it() {
        let dir = std::env::temp_dir().join(format!("pleach-token-file-{}", std::process::id()));
        let file = TokenFile::new(dir.join("nested").join("server.json"));
        assert!(file.load().await.unwrap().is_none());
        let credentials =
            StoredCredentials::new("client-1".into(), None, vec!["a".into()], Some(7));
        file.save(credentials).await.unwrap();
        let loaded = file.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client-1");
        assert_eq!(loaded.granted_scopes, ["a"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        file.clear().await.unwrap();
        assert!(file.load().await.unwrap().is_none());
        file.clear().await.unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_corrupt_token_file_is_named_without_its_content() {
        let dir = std::env::temp_dir().join(format!("pleach-token-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("server.json");
        std::fs::write(&path, "{\"access_token\": \"tok-SECRET\", oops").unwrap();
        let error = TokenFile::new(&path).load().await.unwrap_err().to_string();
        assert!(error.contains("server.json"), "{error}");
        assert!(!error.contains("tok-SECRET"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
