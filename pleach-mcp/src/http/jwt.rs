//! JWT access tokens from an external authorization server: the signature checked against the
//! server's published keys (JWKS), then `exp`, `nbf`, `iss` and `aud`.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use tokio::sync::Mutex;

/// How a server checks JWT access tokens: where the authorization server publishes its keys, and
/// the issuer and audience a token must name.
///
/// Only asymmetric signatures are accepted (RSA, RSA-PSS, ECDSA, `EdDSA`), with the algorithm
/// the key itself names when it names one: a token cannot pick `HS256` and sign with the public
/// key. `exp` is required; `nbf` is checked when present; clock skew up to
/// [`leeway`](JwtValidation::leeway) (60 s by default) is forgiven.
///
/// ```
/// use pleach_mcp::http::JwtValidation;
/// let jwt = JwtValidation::new(
///     "https://auth.example.com/.well-known/jwks.json",
///     "https://auth.example.com/",
///     "https://tools.example.com/mcp",
/// );
/// assert_eq!(jwt.audience(), "https://tools.example.com/mcp");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtValidation {
    jwks_url: String,
    issuer: String,
    audience: String,
    leeway: Duration,
}

impl JwtValidation {
    /// Tokens signed by a key of the set at `jwks_url`, issued by `issuer` (`iss`), for
    /// `audience` (`aud`: this server's resource URL, as MCP asks).
    ///
    /// ```
    /// let jwt = pleach_mcp::http::JwtValidation::new("http://127.0.0.1:9000/jwks", "me", "you");
    /// assert_eq!(jwt.issuer(), "me");
    /// ```
    pub fn new(
        jwks_url: impl Into<String>,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> JwtValidation {
        JwtValidation {
            jwks_url: jwks_url.into(),
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: Duration::from_mins(1),
        }
    }

    /// The clock skew forgiven on `exp` and `nbf`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let jwt = pleach_mcp::http::JwtValidation::new("http://127.0.0.1:9000/jwks", "me", "you")
    ///     .leeway(Duration::ZERO);
    /// assert_eq!(jwt.leeway_allowed(), Duration::ZERO);
    /// ```
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> JwtValidation {
        self.leeway = leeway;
        self
    }

    /// The clock skew forgiven.
    ///
    /// ```
    /// let jwt = pleach_mcp::http::JwtValidation::new("http://127.0.0.1:9000/jwks", "me", "you");
    /// assert_eq!(jwt.leeway_allowed().as_secs(), 60);
    /// ```
    pub fn leeway_allowed(&self) -> Duration {
        self.leeway
    }

    /// Where the keys are published.
    ///
    /// ```
    /// let jwt = pleach_mcp::http::JwtValidation::new("http://127.0.0.1:9000/jwks", "me", "you");
    /// assert_eq!(jwt.jwks_url(), "http://127.0.0.1:9000/jwks");
    /// ```
    pub fn jwks_url(&self) -> &str {
        &self.jwks_url
    }

    /// The `iss` a token must carry.
    ///
    /// ```
    /// let jwt = pleach_mcp::http::JwtValidation::new("http://127.0.0.1:9000/jwks", "me", "you");
    /// assert_eq!(jwt.issuer(), "me");
    /// ```
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The `aud` a token must carry.
    ///
    /// ```
    /// let jwt = pleach_mcp::http::JwtValidation::new("http://127.0.0.1:9000/jwks", "me", "you");
    /// assert_eq!(jwt.audience(), "you");
    /// ```
    pub fn audience(&self) -> &str {
        &self.audience
    }
}

/// Keys kept this long are fetched again on the next token.
const KEYS_MAX_AGE: Duration = Duration::from_mins(10);
/// A token naming a key the set lacks fetches the set again, at most this often (a stream of
/// forged `kid`s must not turn into a stream of fetches).
const REFETCH_AFTER: Duration = Duration::from_secs(30);
/// The longest a key set fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest key set read.
const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// Why a token was not accepted.
#[derive(Debug)]
pub(crate) enum JwtRejection {
    /// The token is bad: 401 with this reason.
    Invalid(String),
    /// The keys could not be had: the server cannot check any token now (503).
    KeysUnavailable(String),
}

/// Checks tokens, keeping the key set between them.
#[derive(Debug)]
pub(crate) struct JwtVerifier {
    validation: JwtValidation,
    client: reqwest::Client,
    keys: Mutex<Option<(JwkSet, Instant)>>,
}

impl JwtVerifier {
    pub(crate) fn new(validation: JwtValidation) -> Result<JwtVerifier, String> {
        reqwest::Url::parse(&validation.jwks_url)
            .map_err(|error| format!("the JWKS URL `{}`: {error}", validation.jwks_url))?;
        let client = pleach_core::http_client::client_builder()?
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|error| format!("the HTTP client for the JWKS: {error}"))?;
        Ok(JwtVerifier {
            validation,
            client,
            keys: Mutex::new(None),
        })
    }

    /// Checks `token`: its claims when it is good.
    pub(crate) async fn verify(&self, token: &str) -> Result<serde_json::Value, JwtRejection> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|error| JwtRejection::Invalid(format!("not a JWT: {error}")))?;
        if !matches!(
            header.alg.family(),
            AlgorithmFamily::Rsa | AlgorithmFamily::Ec | AlgorithmFamily::Ed
        ) {
            return Err(JwtRejection::Invalid(format!(
                "the token is signed with {:?}; only asymmetric signatures are accepted",
                header.alg
            )));
        }
        let jwk = self.key(header.kid.as_deref(), header.alg).await?;
        if let Some(algorithm) = jwk.common.key_algorithm
            && !names(algorithm, header.alg)
        {
            return Err(JwtRejection::Invalid(format!(
                "the token says {:?} but its key is for {algorithm:?}",
                header.alg
            )));
        }
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|error| JwtRejection::Invalid(format!("the token's key: {error}")))?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = self.validation.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.validation.issuer]);
        validation.set_audience(&[&self.validation.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        jsonwebtoken::decode::<serde_json::Value>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|error| JwtRejection::Invalid(error.to_string()))
    }

    /// The key a token names (`kid`), or the one key of the set that fits its algorithm when it
    /// names none; the set is fetched when it is missing, old, or lacks the key.
    async fn key(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<Jwk, JwtRejection> {
        let mut keys = self.keys.lock().await;
        let fresh = keys
            .as_ref()
            .is_some_and(|(_, fetched)| fetched.elapsed() < KEYS_MAX_AGE);
        if !fresh {
            *keys = Some((self.fetch().await?, Instant::now()));
        }
        if let Some((set, _)) = keys.as_ref()
            && let Some(jwk) = pick(set, kid, algorithm)
        {
            return Ok(jwk.clone());
        }
        let may_refetch = keys
            .as_ref()
            .is_some_and(|(_, fetched)| fetched.elapsed() >= REFETCH_AFTER);
        if may_refetch {
            *keys = Some((self.fetch().await?, Instant::now()));
            if let Some((set, _)) = keys.as_ref()
                && let Some(jwk) = pick(set, kid, algorithm)
            {
                return Ok(jwk.clone());
            }
        }
        Err(JwtRejection::Invalid(match kid {
            Some(kid) => format!("no key `{kid}` in the authorization server's key set"),
            None => "the token names no key (`kid`) and the key set has no single key for its \
                     algorithm"
                .to_owned(),
        }))
    }

    async fn fetch(&self) -> Result<JwkSet, JwtRejection> {
        let unavailable = |detail: String| {
            JwtRejection::KeysUnavailable(format!(
                "the key set at {} could not be read: {detail}",
                self.validation.jwks_url
            ))
        };
        let mut response = self
            .client
            .get(&self.validation.jwks_url)
            .send()
            .await
            .map_err(|error| unavailable(error.to_string()))?;
        if !response.status().is_success() {
            return Err(unavailable(format!("HTTP {}", response.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| unavailable(error.to_string()))?
        {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(unavailable(format!("larger than {MAX_JWKS_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|error| unavailable(format!("not a JWKS: {error}")))
    }
}

/// Whether a key's `alg` is the signature algorithm `algorithm`.
fn names(key: KeyAlgorithm, algorithm: Algorithm) -> bool {
    Algorithm::try_from(key).is_ok_and(|named| named == algorithm)
}

fn pick<'a>(set: &'a JwkSet, kid: Option<&str>, algorithm: Algorithm) -> Option<&'a Jwk> {
    if let Some(kid) = kid {
        return set.find(kid);
    }
    let mut fitting = set.keys.iter().filter(|jwk| {
        jwk.common
            .key_algorithm
            .is_none_or(|named| names(named, algorithm))
    });
    let first = fitting.next()?;
    fitting.next().is_none().then_some(first)
}
