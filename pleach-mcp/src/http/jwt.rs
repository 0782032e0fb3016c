//! JWT access tokens from an external authorization server: the signature checked against the
//! server's published keys (JWKS), then `exp`, `nbf`, `iss` and `aud`.

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};

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
/// The longest a key set fetch may take, and the longest a token waits for the key set.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// A fetch that failed answers the tokens that need the key set this long (503) before the set
/// is fetched again: while it is down, a stream of tokens is not a stream of fetches.
const FAILURE_KEPT: Duration = Duration::from_secs(5);
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
///
/// One fetch at a time: the tokens that need the key set while it is being fetched wait for that
/// fetch and are answered together by its outcome, the failure too, which answers the tokens
/// that follow for [`FAILURE_KEPT`]. No token waits longer than the fetch time for the set.
#[derive(Debug)]
pub(crate) struct JwtVerifier {
    validation: JwtValidation,
    client: reqwest::Client,
    /// The longest a key set fetch may take ([`FETCH_TIMEOUT`]; shorter in tests).
    fetch_timeout: Duration,
    /// The last fetch's outcome, read without waiting for a fetch.
    keys: std::sync::Mutex<Keys>,
    /// Held by the one fetch under way.
    fetching: tokio::sync::Mutex<()>,
}

/// What the fetches so far left.
#[derive(Debug, Default)]
struct Keys {
    /// The last key set fetched, and when.
    set: Option<(JwkSet, Instant)>,
    /// Why the last fetch failed, and when, if it failed.
    failed: Option<(String, Instant)>,
}

/// What the key set says of a token's key without a fetch.
enum Lookup {
    Found(Box<Jwk>),
    /// The set is fresh and lacks the key: the token is bad.
    Absent,
    /// The set cannot be had now.
    Unavailable(String),
    /// A fetch is needed.
    Fetch,
}

impl JwtVerifier {
    pub(crate) fn new(validation: JwtValidation) -> Result<JwtVerifier, String> {
        reqwest::Url::parse(&validation.jwks_url)
            .map_err(|error| format!("the JWKS URL `{}`: {error}", validation.jwks_url))?;
        let client = pleach_core::http_client::client_builder()?
            .build()
            .map_err(|error| format!("the HTTP client for the JWKS: {error}"))?;
        Ok(JwtVerifier {
            validation,
            client,
            fetch_timeout: FETCH_TIMEOUT,
            keys: std::sync::Mutex::new(Keys::default()),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// The same verifier with fetches cut after `timeout`.
    #[cfg(test)]
    fn fetch_timeout(mut self, timeout: Duration) -> JwtVerifier {
        self.fetch_timeout = timeout;
        self
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
    /// names none; the set is fetched when it is missing, old, or lacks the key (then at most
    /// every [`REFETCH_AFTER`]), one fetch for every token waiting on it.
    async fn key(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<Jwk, JwtRejection> {
        match self.lookup(kid, algorithm, None) {
            Lookup::Fetch => {}
            known => return known_key(known, kid),
        }
        let arrived = Instant::now();
        let waited = tokio::time::timeout(self.fetch_timeout, async {
            let _fetching = self.fetching.lock().await;
            // The fetch this token waited for may have answered it.
            match self.lookup(kid, algorithm, Some(arrived)) {
                Lookup::Fetch => {}
                known => return known,
            }
            let fetched = self.fetch().await;
            let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
            match fetched {
                Ok(set) => {
                    keys.set = Some((set, Instant::now()));
                    keys.failed = None;
                }
                Err(reason) => keys.failed = Some((reason, Instant::now())),
            }
            drop(keys);
            self.lookup(kid, algorithm, Some(arrived))
        })
        .await;
        match waited {
            Ok(Lookup::Fetch) | Err(_) => Err(JwtRejection::KeysUnavailable(format!(
                "the key set at {} did not arrive within {:?}",
                self.validation.jwks_url, self.fetch_timeout
            ))),
            Ok(known) => known_key(known, kid),
        }
    }

    /// What the fetches so far say of the key; `fetched_since`: a fetch made since then (one
    /// this token waited for) is taken as fresh, whatever its age.
    fn lookup(
        &self,
        kid: Option<&str>,
        algorithm: Algorithm,
        fetched_since: Option<Instant>,
    ) -> Lookup {
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let waited_for = |at: Instant| fetched_since.is_some_and(|since| at >= since);
        if let Some((set, fetched)) = &keys.set
            && (fetched.elapsed() < KEYS_MAX_AGE || waited_for(*fetched))
        {
            if let Some(jwk) = pick(set, kid, algorithm) {
                return Lookup::Found(Box::new(jwk.clone()));
            }
            if fetched.elapsed() < REFETCH_AFTER || waited_for(*fetched) {
                return Lookup::Absent;
            }
        }
        match &keys.failed {
            Some((reason, failed)) if failed.elapsed() < FAILURE_KEPT || waited_for(*failed) => {
                Lookup::Unavailable(reason.clone())
            }
            _ => Lookup::Fetch,
        }
    }

    /// The key set, or why it could not be read.
    async fn fetch(&self) -> Result<JwkSet, String> {
        let unavailable = |detail: String| {
            format!(
                "the key set at {} could not be read: {detail}",
                self.validation.jwks_url
            )
        };
        let mut response = self
            .client
            .get(&self.validation.jwks_url)
            .timeout(self.fetch_timeout)
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

/// A token's key from what the key set said of it.
fn known_key(lookup: Lookup, kid: Option<&str>) -> Result<Jwk, JwtRejection> {
    match lookup {
        Lookup::Found(jwk) => Ok(*jwk),
        Lookup::Unavailable(reason) => Err(JwtRejection::KeysUnavailable(reason)),
        Lookup::Absent | Lookup::Fetch => Err(JwtRejection::Invalid(match kid {
            Some(kid) => format!("no key `{kid}` in the authorization server's key set"),
            None => "the token names no key (`kid`) and the key set has no single key for its \
                     algorithm"
                .to_owned(),
        })),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use pleach_test_support::http::{LoopbackServer, Reply};

    use super::{JwtRejection, JwtValidation, JwtVerifier};

    /// A JWT-shaped token naming key `kid`: its signature is never reached, the key set is.
    fn token(kid: &str) -> String {
        use base64::Engine as _;
        let encode = |json: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
        };
        format!(
            "{}.{}.c2lnbmF0dXJl",
            encode(serde_json::json!({"alg": "RS256", "kid": kid})),
            encode(serde_json::json!({"iss": "issuer", "aud": "audience"}))
        )
    }

    fn verifier(server: &LoopbackServer, timeout: Duration) -> Arc<JwtVerifier> {
        let validation = JwtValidation::new(server.url("/jwks"), "issuer", "audience");
        Arc::new(
            JwtVerifier::new(validation)
                .expect("a verifier")
                .fetch_timeout(timeout),
        )
    }

    #[tokio::test]
    async fn while_the_key_set_fails_one_fetch_answers_the_tokens_that_follow() {
        let keys = LoopbackServer::start(|_, _| Reply::json(503, "{}")).await;
        let verifier = verifier(&keys, Duration::from_secs(5));
        for kid in ["a", "b", "c", "a", "d"] {
            match verifier.verify(&token(kid)).await {
                Err(JwtRejection::KeysUnavailable(reason)) => {
                    assert!(reason.contains("503"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(keys.requests().len(), 1, "the failure is remembered");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_waiting_on_a_hung_key_set_are_answered_together() {
        let keys = LoopbackServer::start(|_, _| Reply::Stall).await;
        let timeout = Duration::from_millis(600);
        let verifier = verifier(&keys, timeout);
        let started = Instant::now();
        let callers: Vec<_> = (0..3)
            .map(|n| {
                let verifier = Arc::clone(&verifier);
                tokio::spawn(async move {
                    let outcome = verifier.verify(&token(&format!("k{n}"))).await;
                    (outcome, started.elapsed())
                })
            })
            .collect();
        for caller in callers {
            let (outcome, waited) = caller.await.expect("the caller ends");
            assert!(
                matches!(outcome, Err(JwtRejection::KeysUnavailable(_))),
                "{outcome:?}"
            );
            assert!(waited < timeout + timeout / 2, "answered after {waited:?}");
        }
        assert_eq!(keys.requests().len(), 1, "one fetch for every waiter");
    }
}
