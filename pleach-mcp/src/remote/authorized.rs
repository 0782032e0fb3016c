//! The HTTP client of an OAuth-protected server: every MCP request carries the current token;
//! a 401 refreshes it (or signs in, from the challenge), a 403 `insufficient_scope` steps the
//! scopes up, and the request is sent again once. Tokens live in the [`OAuth`]'s store and in
//! rmcp's `AuthorizationManager`; none reaches a log line or an error message.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest,
    ClientCredentialsConfig, CredentialRefreshGuard, CredentialStore, OAuthClientConfig,
    OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRequest, OAuthState, OAuthTokenResponse,
    StoredCredentials,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};
use tokio::sync::Mutex;

use super::oauth::{ClientCredentials, OAuth, Proof};

type HttpError = StreamableHttpError<reqwest::Error>;

/// A token obtained with client credentials is fetched again this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_mins(1);

/// The sign-in state of one server, shared by its connections (a reconnection reuses it).
pub(super) struct SignIn {
    url: String,
    oauth: OAuth,
    grant: Mutex<Grant>,
}

// A `SignIn` is unwind-safe as the `McpRemote` holding it always was: its one changing part, the
// grant, is replaced whole under its lock (a panic while a request holds it leaves the last grant,
// at worst one that asks the server again), and the host's callbacks and store are asked through
// `&self` (see `OAuth`). The compiler cannot see that through `dyn` objects and rmcp's manager.
impl std::panic::UnwindSafe for SignIn {}
impl std::panic::RefUnwindSafe for SignIn {}

/// What the server accepted last.
enum Grant {
    /// Nothing yet: the store is read at the first request.
    Unknown,
    /// The store has no tokens and no sign-in happened: requests go without a token until the
    /// server's 401 says how to sign in.
    None,
    /// A person's sign-in (or tokens from the store): rmcp refreshes them.
    Person(Box<AuthorizationManager>),
    /// A machine's token, fetched again when it is about to expire.
    Machine {
        token: String,
        expires: Option<Instant>,
        scopes: Vec<String>,
    },
}

impl SignIn {
    pub(super) fn new(url: String, oauth: OAuth) -> SignIn {
        SignIn {
            url,
            oauth,
            grant: Mutex::new(Grant::Unknown),
        }
    }

    /// The token to send, refreshed first when it is about to expire; `None` when there is
    /// none yet (the server's 401 will start a sign-in).
    async fn token(&self) -> Result<Option<String>, AuthError> {
        let mut grant = self.grant.lock().await;
        if matches!(*grant, Grant::Unknown) {
            *grant = self.restore().await?;
        }
        match &*grant {
            Grant::Unknown | Grant::None => Ok(None),
            Grant::Person(manager) => match manager.get_access_token().await {
                Ok(token) => Ok(Some(token)),
                Err(AuthError::AuthorizationRequired) => Ok(None),
                Err(error) => Err(error),
            },
            Grant::Machine {
                token,
                expires,
                scopes,
            } => {
                if expires
                    .is_some_and(|at| at.saturating_duration_since(Instant::now()) < RENEW_BEFORE)
                    && let Some(credentials) = &self.oauth.client_credentials
                {
                    let scopes = scopes.clone();
                    let (renewed, machine) = self.machine(credentials, None, scopes).await?;
                    *grant = machine;
                    return Ok(Some(renewed));
                }
                Ok(Some(token.clone()))
            }
        }
    }

    /// The tokens of an earlier sign-in, from the store.
    async fn restore(&self) -> Result<Grant, AuthError> {
        let stored = self.oauth.store.load().await?;
        let Some(stored) = stored.filter(|stored| stored.token_response.is_some()) else {
            return Ok(Grant::None);
        };
        let mut manager = self.manager().await?;
        if !manager.initialize_from_store().await? {
            return Ok(Grant::None);
        }
        // Refreshing and stepping up need the client as it signed in: its redirect URI and,
        // for a pre-registered confidential client, its secret.
        let mut config =
            OAuthClientConfig::new(stored.client_id.clone(), self.oauth.redirect_uri.clone());
        if self.oauth.client_id.as_deref() == Some(stored.client_id.as_str())
            && let Some(secret) = &self.oauth.client_secret
        {
            config = config.with_client_secret(secret.clone());
        }
        manager.configure_client(config)?;
        tracing::debug!(server = %self.url, "OAuth tokens read from the store");
        Ok(Grant::Person(Box::new(manager)))
    }

    async fn manager(&self) -> Result<AuthorizationManager, AuthError> {
        let http = OAuthHttp::new()?;
        let mut manager =
            AuthorizationManager::new_with_oauth_http_client(self.url.as_str(), Arc::new(http))
                .await?;
        manager.set_credential_store(SharedStore(Arc::clone(&self.oauth.store)));
        Ok(manager)
    }

    /// The server refused `sent` (401 with `challenge`): a refreshed token, else a new sign-in.
    async fn renew(&self, sent: Option<&str>, challenge: &str) -> Result<String, AuthError> {
        let mut grant = self.grant.lock().await;
        if let (Some(sent), Grant::Person(manager)) = (sent, &*grant)
            && let Ok(refreshed) = manager.refresh_token().await
        {
            let token = access_token(&refreshed);
            if token != sent {
                tracing::info!(server = %self.url, "OAuth token refreshed after the server refused it");
                return Ok(token);
            }
        }
        let (token, signed) = self.sign_in(Some(challenge), &[]).await?;
        *grant = signed;
        Ok(token)
    }

    /// The server wants `scope` as well (403 `insufficient_scope`): signs in again for the union
    /// of the scopes held and the scopes asked for (rmcp counts the attempts and stops).
    async fn step_up(&self, challenge: &str, scope: Option<&str>) -> Result<String, AuthError> {
        let Some(scope) = scope else {
            return Err(AuthError::AuthorizationFailed(
                "the server refused the token for its scope (403 insufficient_scope) without naming the scope it wants".to_owned(),
            ));
        };
        let mut grant = self.grant.lock().await;
        match &*grant {
            Grant::Person(manager) => {
                let Some(authorizer) = &self.oauth.authorizer else {
                    return Err(no_way_to_sign_in("more scopes"));
                };
                let url = manager.request_scope_upgrade(scope).await?;
                tracing::info!(server = %self.url, scope, "OAuth scope step-up");
                let redirected = authorizer
                    .authorize(url)
                    .await
                    .map_err(AuthError::AuthorizationFailed)?;
                let callback = AuthorizationCallback::from_redirect_url(&redirected)?;
                let response = manager
                    .exchange_code_for_token_with_issuer(
                        &callback.code,
                        &callback.csrf_token,
                        callback.issuer.as_deref(),
                    )
                    .await?;
                Ok(access_token(&response))
            }
            Grant::Machine { scopes, .. } => {
                let Some(credentials) = &self.oauth.client_credentials else {
                    return Err(no_way_to_sign_in("more scopes"));
                };
                let mut wanted = scopes.clone();
                for scope in scope.split_whitespace() {
                    if !wanted.iter().any(|held| held == scope) {
                        wanted.push(scope.to_owned());
                    }
                }
                if wanted.len() == scopes.len() {
                    return Err(AuthError::InvalidScope(format!(
                        "the server wants the scope `{scope}`, which the token already has"
                    )));
                }
                let (token, machine) = self.machine(credentials, Some(challenge), wanted).await?;
                *grant = machine;
                Ok(token)
            }
            Grant::Unknown | Grant::None => {
                let (token, signed) = self.sign_in(Some(challenge), &[scope.to_owned()]).await?;
                *grant = signed;
                Ok(token)
            }
        }
    }

    /// Signs in as configured: client credentials, else a person through the authorizer.
    async fn sign_in(
        &self,
        challenge: Option<&str>,
        scopes: &[String],
    ) -> Result<(String, Grant), AuthError> {
        let mut wanted = self.oauth.scopes.clone();
        wanted.extend(scopes.iter().cloned());
        if let Some(credentials) = &self.oauth.client_credentials {
            return self.machine(credentials, challenge, wanted).await;
        }
        let Some(authorizer) = &self.oauth.authorizer else {
            return Err(no_way_to_sign_in("a sign-in"));
        };
        let mut state = OAuthState::Unauthorized(self.manager().await?);
        let mut request = AuthorizationRequest::new(self.oauth.redirect_uri.clone())
            .with_client_name(self.oauth.client_name.clone());
        if !wanted.is_empty() {
            request = request.with_scopes(wanted);
        }
        if let Some(client_id) = &self.oauth.client_id {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = &self.oauth.client_secret {
                request = request.with_client_secret(secret.clone());
            }
        }
        if let Some(url) = &self.oauth.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge.to_owned());
        }
        state.start_authorization(request).await?;
        let url = state.get_authorization_url().await?;
        tracing::info!(server = %self.url, "OAuth sign-in: waiting for the authorization");
        let redirected = authorizer
            .authorize(url)
            .await
            .map_err(AuthError::AuthorizationFailed)?;
        let callback = AuthorizationCallback::from_redirect_url(&redirected)?;
        state
            .handle_callback_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await?;
        let manager = state.into_authorization_manager().ok_or_else(|| {
            AuthError::InternalError("the sign-in ended without an authorization".to_owned())
        })?;
        let token = manager.get_access_token().await?;
        tracing::info!(server = %self.url, "OAuth sign-in complete");
        Ok((token, Grant::Person(Box::new(manager))))
    }

    /// A token for `credentials` (the client credentials grant) with `scopes`.
    async fn machine(
        &self,
        credentials: &ClientCredentials,
        challenge: Option<&str>,
        scopes: Vec<String>,
    ) -> Result<(String, Grant), AuthError> {
        let mut manager = self.manager().await?;
        let resolution = manager.resolve_metadata_from_challenge(challenge).await?;
        let metadata = resolution.metadata;
        let response = match &credentials.proof {
            Proof::Secret(secret) => {
                manager.set_metadata(metadata);
                let config = ClientCredentialsConfig::ClientSecret {
                    client_id: credentials.client_id.clone(),
                    client_secret: secret.clone(),
                    scopes: scopes.clone(),
                    resource: Some(self.url.clone()),
                };
                manager.validate_client_credentials_metadata(&config)?;
                manager.configure_client_credentials(&config)?;
                manager.exchange_client_credentials(&config).await?
            }
            Proof::PrivateKeyJwt { key, algorithm } => {
                let audience = metadata
                    .issuer
                    .clone()
                    .unwrap_or_else(|| metadata.token_endpoint.clone());
                let assertion = assertion(&credentials.client_id, &audience, key, *algorithm)?;
                let mut form = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    (
                        "client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                    ),
                    ("client_assertion", assertion),
                    ("resource", self.url.clone()),
                ];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                let response = token_request(&metadata.token_endpoint, &form).await?;
                self.oauth
                    .store
                    .save(StoredCredentials::new(
                        credentials.client_id.clone(),
                        Some(response.clone()),
                        scopes.clone(),
                        Some(now_epoch_secs()),
                    ))
                    .await?;
                response
            }
        };
        let token = access_token(&response);
        let expires =
            oauth2::TokenResponse::expires_in(&response).map(|after| Instant::now() + after);
        tracing::info!(server = %self.url, client_id = %credentials.client_id, "OAuth client credentials accepted");
        Ok((
            token.clone(),
            Grant::Machine {
                token,
                expires,
                scopes,
            },
        ))
    }
}

/// Why a server that asks for `what` cannot get it.
fn no_way_to_sign_in(what: &str) -> AuthError {
    AuthError::AuthorizationFailed(format!(
        "the server asks for {what} and this connection cannot sign in (no tokens stored, no \
         person to ask, no client credentials): sign in first (`pleach mcp login URL`), or give \
         client credentials or a bearer token"
    ))
}

fn access_token(response: &OAuthTokenResponse) -> String {
    oauth2::TokenResponse::access_token(response)
        .secret()
        .clone()
}

fn now_epoch_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A client assertion (RFC 7523): the client signs who it is, for whom, until when.
fn assertion(
    client_id: &str,
    audience: &str,
    key: &jsonwebtoken::EncodingKey,
    algorithm: jsonwebtoken::Algorithm,
) -> Result<String, AuthError> {
    let now = now_epoch_secs();
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti)
        .map_err(|error| AuthError::InternalError(format!("no randomness: {error}")))?;
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": jti.iter().fold(String::new(), |mut hex, byte| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{byte:02x}");
            hex
        }),
    });
    jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, key).map_err(|error| {
        AuthError::ClientCredentialsError(format!("cannot sign the client assertion: {error}"))
    })
}

/// Posts a token request; the answer's error code and description, never its body, make the
/// error.
async fn token_request(
    endpoint: &str,
    form: &[(&str, String)],
) -> Result<OAuthTokenResponse, AuthError> {
    let client = pleach_core::http_client::client_builder()
        .and_then(|builder| builder.build().map_err(|error| error.to_string()))
        .map_err(|error| AuthError::InternalError(format!("no HTTP client: {error}")))?;
    let mut encoder = reqwest::Url::parse("http://localhost/")?;
    encoder.query_pairs_mut().extend_pairs(form);
    let body = encoder.query().unwrap_or_default().to_owned();
    let response = client
        .post(endpoint)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    if !status.is_success() {
        let reason = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|value| {
                let code = value.get("error")?.as_str()?.to_owned();
                let description = value
                    .get("error_description")
                    .and_then(|d| d.as_str())
                    .unwrap_or("");
                Some(format!("{code} {description}").trim().to_owned())
            })
            .unwrap_or_else(|| format!("HTTP {status}"));
        return Err(AuthError::ClientCredentialsError(format!(
            "the token endpoint refused: {reason}"
        )));
    }
    serde_json::from_slice(&body).map_err(|error| {
        AuthError::ClientCredentialsError(format!(
            "the token endpoint's answer is not a token response (line {}, column {})",
            error.line(),
            error.column()
        ))
    })
}

/// The largest answer of an OAuth endpoint read (metadata, registration, tokens).
const MAX_OAUTH_BODY: usize = 1 << 20;

/// rmcp's OAuth requests on pleach's HTTP client (rustls with ring, no proxy from the
/// environment, never a redirect followed: discovery that meets a redirect fails).
struct OAuthHttp {
    client: reqwest::Client,
}

impl OAuthHttp {
    fn new() -> Result<OAuthHttp, AuthError> {
        let client = pleach_core::http_client::client_builder()
            .and_then(|builder| builder.build().map_err(|error| error.to_string()))
            .map_err(|error| AuthError::InternalError(format!("no HTTP client: {error}")))?;
        Ok(OAuthHttp { client })
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let timeout = request.timeout;
            let mut request = reqwest::Request::try_from(request.request)?;
            if let Some(timeout) = timeout {
                *request.timeout_mut() = Some(timeout);
            }
            let mut response = self.client.execute(request).await?;
            let mut answer = oauth2::http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_OAUTH_BODY {
                    return Err(format!("an OAuth answer past {MAX_OAUTH_BODY} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(answer.body(body)?)
        })
    }
}

/// The [`OAuth`]'s store, handed to rmcp's manager (which takes a store by value).
struct SharedStore(Arc<dyn CredentialStore>);

#[async_trait::async_trait]
impl CredentialStore for SharedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.0.load().await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0.save(credentials).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.0.on_refresh_token_rejected(credentials).await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        self.0.acquire_refresh_guard().await
    }
}

/// pleach's HTTP client with the server's sign-in: what the Streamable HTTP transport sends
/// through.
#[derive(Clone)]
pub(super) struct Authorized {
    pub(super) http: reqwest::Client,
    pub(super) sign_in: Arc<SignIn>,
}

impl Authorized {
    /// Runs `call` with the current token; after a 401 or a 403 `insufficient_scope`, once more
    /// with a renewed or stepped-up one.
    async fn with_token<T, F, Fut>(&self, call: F) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let token = self.sign_in.token().await?;
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                let renewed = self
                    .sign_in
                    .renew(token.as_deref(), &challenge.www_authenticate_header)
                    .await?;
                call(Some(renewed)).await
            }
            Err(StreamableHttpError::InsufficientScope(refusal)) => {
                let stepped = self
                    .sign_in
                    .step_up(
                        &refusal.www_authenticate_header,
                        refusal.get_required_scope(),
                    )
                    .await?;
                call(Some(stepped)).await
            }
            answer => answer,
        }
    }
}

/// The transport sends through `post_message_with_response_limits` and
/// `get_stream_with_max_sse_event_size`; the other methods are the trait's required ones.
impl StreamableHttpClient for Authorized {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.with_token(|token| {
            self.http.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.with_token(|token| {
            self.http.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.with_token(|token| {
            self.http.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.with_token(|token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.with_token(|token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pleach_test_support::http::{LoopbackServer, Recorded, Reply};
    use serde_json::json;

    use crate::remote::{ClientCredentials, McpRemote, OAuth};

    const TOKEN: &str = "tok-SECRET-7d1f";
    const CLIENT_SECRET: &str = "client-SECRET-93ab";

    /// An authorization server and a resource server on one port: metadata, a token endpoint
    /// that grants `TOKEN` (or refuses when `grant` is false), and an MCP endpoint that refuses
    /// every token.
    async fn server(grant: bool) -> LoopbackServer {
        LoopbackServer::start(move |request: &Recorded, _| {
            let base = format!(
                "http://{}",
                request.header("host").unwrap_or("127.0.0.1")
            );
            let path = request.target.split('?').next().unwrap_or_default();
            match (request.method.as_str(), path) {
                ("GET", "/.well-known/oauth-protected-resource/mcp" | "/.well-known/oauth-protected-resource") => {
                    Reply::json(200, json!({
                        "resource": format!("{base}/mcp"),
                        "authorization_servers": [base],
                    }).to_string())
                }
                ("GET", "/.well-known/oauth-authorization-server") => Reply::json(200, json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_post"],
                }).to_string()),
                ("POST", "/token") if grant => Reply::json(200, json!({
                    "access_token": TOKEN,
                    "token_type": "Bearer",
                    "expires_in": 3600,
                }).to_string()),
                ("POST", "/token") => Reply::json(401, json!({
                    "error": "invalid_client",
                    "error_description": "unknown client",
                }).to_string()),
                ("POST", "/mcp") => Reply::with(
                    401,
                    &[(
                        "www-authenticate",
                        &format!(r#"Bearer error="invalid_token", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#),
                    )],
                    "",
                ),
                _ => Reply::with(404, &[], ""),
            }
        })
        .await
    }

    fn remote(server: &LoopbackServer) -> McpRemote {
        McpRemote::http(server.url("/mcp"))
            .connect_timeout(Duration::from_secs(10))
            .oauth(
                OAuth::new().client_credentials(ClientCredentials::secret("worker", CLIENT_SECRET)),
            )
    }

    #[tokio::test]
    async fn a_token_is_asked_for_this_server_sent_renewed_once_and_named_nowhere() {
        let server = server(true).await;
        let error = remote(&server).connect().await.unwrap_err().to_string();
        assert!(
            !error.contains(TOKEN) && !error.contains(CLIENT_SECRET),
            "{error}"
        );
        let requests = server.requests();
        let tokens: Vec<_> = requests.iter().filter(|r| r.target == "/token").collect();
        // The first request had no token; after each 401, one new grant and one retry.
        assert!(!tokens.is_empty(), "{requests:?}");
        let form = String::from_utf8_lossy(&tokens[0].body).into_owned();
        assert!(form.contains("grant_type=client_credentials"), "{form}");
        let mut encoded = reqwest::Url::parse("http://localhost/").unwrap();
        encoded
            .query_pairs_mut()
            .append_pair("resource", &server.url("/mcp"));
        let resource = encoded.query().unwrap().to_owned();
        assert!(form.contains(&resource), "no RFC 8707 resource: {form}");
        let bearer = format!("Bearer {TOKEN}");
        assert!(
            requests
                .iter()
                .any(|r| r.target == "/mcp" && r.header("authorization") == Some(bearer.as_str())),
            "the MCP request never carried the token: {requests:?}"
        );
        assert!(
            requests.iter().filter(|r| r.target == "/mcp").count() <= 4,
            "{requests:?}"
        );
    }

    #[tokio::test]
    async fn a_refused_client_says_what_the_token_endpoint_said_and_not_its_secret() {
        let server = server(false).await;
        let error = remote(&server).connect().await.unwrap_err().to_string();
        assert!(
            error.contains("invalid_client") || error.contains("unknown client"),
            "{error}"
        );
        assert!(!error.contains(CLIENT_SECRET), "{error}");
    }
}
