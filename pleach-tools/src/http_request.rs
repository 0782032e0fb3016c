//! The `http_request` tool: any common HTTP method, with headers and a body, to a host on the
//! runtime's allowlist, behind the same [SSRF guard](crate::net) as `url_fetch`. Opt-in: the
//! `http-request` feature.
//!
//! Without configuration every host is refused: the host application names the hosts a model may
//! reach by providing an [`HttpRequestConfig`] to its runtime.
//!
//! ```
//! # use pleach as pleach_core; // the runtime, for this example
//! use pleach_core::{Runtime, SessionOptions, ToolCall};
//! use pleach_tools::http_request::HttpRequestConfig;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let config = HttpRequestConfig::new()
//!     .allow_host("api.example.com")?
//!     .allow_host("*.githubusercontent.com")?;
//! let runtime = Runtime::builder().provide(config).build()?;
//! let session = runtime.create_session(SessionOptions::enabled(["http_request"]))?;
//!
//! let call = ToolCall::new("c1", "http_request", r#"{"method": "GET", "url": "https://intranet.example/"}"#);
//! let err = session.call(call).await.outcome.unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert_eq!(
//!     err.message(),
//!     "the host `intranet.example` is not on this runtime's allowlist for http_request; the \
//!      allowed hosts are api.example.com, *.githubusercontent.com"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Why `safety_tier = "standard"`
//!
//! Unlike `url_fetch`, this tool has effects beyond reading: a POST, PUT, PATCH or DELETE changes
//! things on the server. When the host's detector flags a call's arguments as fabricated, a
//! standard tool goes to the user for approval rather than running (an advisory tool would run
//! anyway) or halting the turn (a critical tool): a person can tell a mistaken request from a
//! needed one, and the allowlist already bounds where requests go.

use std::fmt;

use pleach_core::content::ToolOutput;
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Deserialize;
use pleach_core::{ToolContext, ToolError, unified_tool};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::{Host, Url};

use crate::net::{self, FetchLimits, HttpResponse, NetPolicy, Outgoing, refused, shorten};

/// The most headers one request may set.
const MAX_REQUEST_HEADERS: usize = 32;

/// The most allowed hosts a refusal lists.
const MAX_LISTED_HOSTS: usize = 10;

/// Headers the HTTP client sets, or that steer the connection rather than the request: a model
/// setting them could desynchronize the framing (`content-length`, `transfer-encoding`) or
/// address another virtual host than the URL names (`host`).
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
];

/// The configuration of `http_request`, provided to the runtime with
/// [`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide): the hosts a model may
/// reach, the guard's [`NetPolicy`] and the [`FetchLimits`].
///
/// ```
/// use pleach_tools::http_request::HttpRequestConfig;
///
/// let config = HttpRequestConfig::new().allow_host("API.Example.com.").unwrap();
/// assert_eq!(config.allowed_hosts().collect::<Vec<_>>(), ["api.example.com"]);
///
/// let err = HttpRequestConfig::new().allow_host("https://api.example.com/v1").unwrap_err();
/// assert!(err.to_string().starts_with("`https://api.example.com/v1` is not a host pattern"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequestConfig {
    hosts: Vec<HostPattern>,
    any_host: bool,
    policy: NetPolicy,
    limits: FetchLimits,
    max_request_body_bytes: usize,
}

impl Default for HttpRequestConfig {
    fn default() -> Self {
        HttpRequestConfig {
            hosts: Vec::new(),
            any_host: false,
            policy: NetPolicy::new(),
            limits: FetchLimits::new(),
            max_request_body_bytes: 1024 * 1024,
        }
    }
}

impl HttpRequestConfig {
    /// No host allowed (add some with [`allow_host`](Self::allow_host)), the strict policy, the
    /// default limits, request bodies up to 1 MiB.
    ///
    /// ```
    /// use pleach_tools::http_request::HttpRequestConfig;
    /// use pleach_tools::net::{FetchLimits, NetPolicy};
    ///
    /// let config = HttpRequestConfig::new();
    /// assert_eq!(config.allowed_hosts().count(), 0); // every call refused until hosts are added
    /// assert!(!config.allows_any_host());
    /// let defaults = HttpRequestConfig::new()
    ///     .policy(NetPolicy::new())
    ///     .limits(FetchLimits::new())
    ///     .max_request_body_bytes(1024 * 1024);
    /// assert_eq!(config, defaults);
    /// ```
    pub fn new() -> Self {
        HttpRequestConfig::default()
    }

    /// Allows requests to the hosts `pattern` names: a host (`api.example.com`, an IPv4 address,
    /// a bracketed IPv6 address), or `*.` and a domain for its subdomains (`*.example.com`
    /// matches `a.example.com` and `a.b.example.com`, not `example.com`). Names are compared
    /// after normalization: case, a final dot and internationalized spellings do not matter.
    ///
    /// The guard still applies: an allowed host that resolves to a blocked address is refused.
    ///
    /// ```
    /// use pleach_tools::http_request::HttpRequestConfig;
    ///
    /// let config = HttpRequestConfig::new().allow_host("*.example.com").unwrap();
    /// assert_eq!(config.allowed_hosts().collect::<Vec<_>>(), ["*.example.com"]);
    /// assert!(HttpRequestConfig::new().allow_host("*.10.0.0.1").is_err());
    /// assert!(HttpRequestConfig::new().allow_host("api.example.com:443").is_err());
    /// ```
    pub fn allow_host(mut self, pattern: &str) -> Result<Self, InvalidHostPattern> {
        self.hosts.push(HostPattern::parse(pattern)?);
        Ok(self)
    }

    /// Allows every host: the guard alone decides. For a host whose model may call any public
    /// API; the allowlist is the better default.
    ///
    /// ```
    /// let config = pleach_tools::http_request::HttpRequestConfig::new().allow_any_host();
    /// assert!(config.allows_any_host());
    /// ```
    #[must_use]
    pub fn allow_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    /// Sets which addresses and ports may be reached (default: [`NetPolicy::new`], strict).
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use pleach_tools::http_request::HttpRequestConfig;
    /// use pleach_tools::net::NetPolicy;
    ///
    /// // An internal service: on the allowlist, and let through the guard at its one address.
    /// let service: SocketAddr = "10.0.0.7:8443".parse().unwrap();
    /// let policy = NetPolicy::new().dangerously_allow_socket_addr(service);
    /// assert!(policy.permits(service));
    /// assert!(!policy.permits("10.0.0.7:22".parse().unwrap()));
    /// let config = HttpRequestConfig::new().allow_host("10.0.0.7").unwrap().policy(policy);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn policy(mut self, policy: NetPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the caps on response size, time and redirects (default: [`FetchLimits::new`]).
    ///
    /// ```
    /// use pleach_tools::http_request::HttpRequestConfig;
    /// use pleach_tools::net::FetchLimits;
    ///
    /// // A redirect is returned, not followed.
    /// let config = HttpRequestConfig::new().limits(FetchLimits::new().max_redirects(0));
    /// assert_ne!(config, HttpRequestConfig::new());
    /// ```
    #[must_use]
    pub fn limits(mut self, limits: FetchLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the largest request body accepted, in bytes (default 1 MiB).
    ///
    /// A longer body is refused before any connection is made:
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::http_request::{HttpRequestConfig, Method, http_request};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let config = HttpRequestConfig::new()
    ///     .allow_host("api.example.com")
    ///     .unwrap()
    ///     .max_request_body_bytes(16);
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///
    /// let url = "https://api.example.com/notes".to_owned();
    /// let body = r#"{"note": "more than sixteen bytes"}"#.to_owned();
    /// let err = http_request(ctx, Method::Post, url, None, Some(body)).await.unwrap_err();
    /// assert_eq!(err.code().as_u16(), 1001);
    /// assert!(err.message().ends_with("over this runtime's limit of 16"));
    /// # }
    /// ```
    #[must_use]
    pub fn max_request_body_bytes(mut self, bytes: usize) -> Self {
        self.max_request_body_bytes = bytes;
        self
    }

    /// The allowed host patterns, normalized, in the order they were added.
    ///
    /// ```
    /// use pleach_tools::http_request::HttpRequestConfig;
    ///
    /// let config = HttpRequestConfig::new()
    ///     .allow_host("API.Example.com.")
    ///     .unwrap()
    ///     .allow_host("*.bücher.example")
    ///     .unwrap();
    /// assert_eq!(
    ///     config.allowed_hosts().collect::<Vec<_>>(),
    ///     ["api.example.com", "*.xn--bcher-kva.example"]
    /// );
    /// ```
    pub fn allowed_hosts(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().map(|pattern| pattern.text.as_str())
    }

    /// Whether every host is allowed.
    ///
    /// ```
    /// use pleach_tools::http_request::HttpRequestConfig;
    ///
    /// assert!(!HttpRequestConfig::new().allow_host("api.example.com").unwrap().allows_any_host());
    /// assert!(HttpRequestConfig::new().allow_any_host().allows_any_host());
    /// ```
    pub fn allows_any_host(&self) -> bool {
        self.any_host
    }

    /// Whether the allowlist lets `url`'s host through (checked on every hop).
    fn check_host(&self, url: &Url) -> Result<(), ToolError> {
        let host = url.host_str().unwrap_or_default();
        let host = host.strip_suffix('.').unwrap_or(host);
        if self.any_host || self.hosts.iter().any(|pattern| pattern.matches(host)) {
            return Ok(());
        }
        let mut listed: Vec<&str> = self.allowed_hosts().take(MAX_LISTED_HOSTS).collect();
        let more = self.hosts.len().saturating_sub(MAX_LISTED_HOSTS);
        let more = format!("and {more} more");
        if self.hosts.len() > MAX_LISTED_HOSTS {
            listed.push(&more);
        }
        Err(refused(format!(
            "the host `{host}` is not on this runtime's allowlist for http_request; the allowed \
             hosts are {}",
            listed.join(", ")
        )))
    }
}

/// An allowed host, or a domain whose subdomains are allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPattern {
    /// The host as `url` serializes it (lowercase ASCII, IPv6 in brackets), no final dot.
    host: String,
    subdomains: bool,
    /// The pattern as shown: `host`, with `*.` in front for subdomains.
    text: String,
}

impl HostPattern {
    fn parse(pattern: &str) -> Result<HostPattern, InvalidHostPattern> {
        let invalid = |reason: &str| InvalidHostPattern {
            pattern: pattern.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = pattern.trim();
        let (subdomains, rest) = match trimmed.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        };
        if rest.is_empty() {
            return Err(invalid("it is empty"));
        }
        if rest.contains('*') {
            return Err(invalid("a wildcard may only stand first, as `*.`"));
        }
        let host = match Host::parse(rest).map_err(|err| invalid(&err.to_string()))? {
            Host::Domain(name) => name.strip_suffix('.').unwrap_or(&name).to_owned(),
            _ if subdomains => {
                return Err(invalid("`*.` goes before a domain name, not an address"));
            }
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => format!("[{ip}]"),
        };
        if host.is_empty() {
            return Err(invalid("it is empty"));
        }
        let text = if subdomains {
            format!("*.{host}")
        } else {
            host.clone()
        };
        Ok(HostPattern {
            host,
            subdomains,
            text,
        })
    }

    fn matches(&self, host: &str) -> bool {
        if !self.subdomains {
            return host == self.host;
        }
        host.strip_suffix(self.host.as_str())
            .and_then(|prefix| prefix.strip_suffix('.'))
            .is_some_and(|label| !label.is_empty())
    }
}

/// A host pattern [`HttpRequestConfig::allow_host`] cannot read.
///
/// ```
/// use pleach_tools::http_request::{HttpRequestConfig, InvalidHostPattern};
///
/// let err: InvalidHostPattern = HttpRequestConfig::new().allow_host("*.10.0.0.1").unwrap_err();
/// assert!(err.to_string().starts_with(
///     "`*.10.0.0.1` is not a host pattern (`*.` goes before a domain name, not an address)"
/// ));
/// let _: Box<dyn std::error::Error> = Box::new(err); // `?` turns it into a boxed error
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHostPattern {
    pattern: String,
    reason: String,
}

impl fmt::Display for InvalidHostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a host pattern ({}); write a host alone, like `api.example.com`, \
             `*.example.com`, `203.0.113.7` or `[2001:db8::1]`",
            self.pattern, self.reason
        )
    }
}

impl std::error::Error for InvalidHostPattern {}

/// One request header of an `http_request` call: a list of these rather than a map, so the
/// schema stays closed (OpenAI's strict mode and Gemini refuse open-ended objects).
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::http_request::{Header, HttpRequestConfig, Method, http_request};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let config = HttpRequestConfig::new().allow_host("api.example.com").unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
/// let url = "https://api.example.com/items/7".to_owned();
///
/// // As a model writes it: `{"name": "host", "value": "intranet.example"}`.
/// let header: Header = serde_json::from_str(r#"{"name": "host", "value": "intranet.example"}"#).unwrap();
/// // Refused before any connection: the client sets `host` from the URL.
/// let err = http_request(ctx, Method::Get, url, Some(vec![header]), None).await.unwrap_err();
/// assert_eq!(err.code().as_u16(), 1001);
/// assert!(err.message().starts_with("the header `host` cannot be set"));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", deny_unknown_fields)]
// Set here so the input schema carries these lines, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "One request header of an `http_request` call: a list of these rather than a map, so the\nschema stays closed (OpenAI's strict mode and Gemini refuse open-ended objects)."
)]
pub struct Header {
    /// The header's name, like `accept` or `content-type`.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// The HTTP method of an `http_request` call.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::http_request::{HttpRequestConfig, Method, http_request};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let config = HttpRequestConfig::new().allow_host("api.example.com").unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
/// let url = "https://api.example.com/items/7".to_owned();
///
/// let method: Method = serde_json::from_str(r#""GET""#).unwrap(); // as a model writes it
/// assert_eq!(method, Method::Get);
/// // GET and HEAD take no body: refused before any connection.
/// let err = http_request(ctx, method, url, None, Some("{}".to_owned())).await.unwrap_err();
/// assert!(err.message().starts_with("a GET request has no body"));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "UPPERCASE")]
// Set here so the input schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The HTTP method of an `http_request` call."
)]
#[non_exhaustive]
pub enum Method {
    /// Reads a resource.
    Get,
    /// Reads a resource's headers only.
    Head,
    /// Submits data.
    Post,
    /// Replaces a resource.
    Put,
    /// Changes part of a resource.
    Patch,
    /// Removes a resource.
    Delete,
    /// Asks what a resource supports.
    Options,
}

impl Method {
    fn as_reqwest(self) -> reqwest::Method {
        match self {
            Method::Get => reqwest::Method::GET,
            Method::Head => reqwest::Method::HEAD,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
            Method::Options => reqwest::Method::OPTIONS,
        }
    }
}

/// Sends an HTTP request to a host this runtime allows and returns `{status, final_url,
/// content_type, headers, body, body_encoding, truncated}`; for example method `GET` and url
/// `https://api.example.com/items/7` with headers `[{"name": "accept", "value": "application/json"}]`.
///
/// `body` is sent as is: set its type in `headers` (`{"name": "content-type", "value": "application/json"}`).
/// GET and HEAD take no body. Headers that steer the connection (`host`, `content-length`,
/// `transfer-encoding`, `connection`, …) cannot be set. Only hosts on the runtime's allowlist can
/// be reached, over http or https, and never local, private or reserved addresses. Redirects are
/// followed (5 at most by default); a 303, or a 301 or 302 after a POST, continues as a GET. The
/// response body is text when it is UTF-8 and base64 otherwise, cut at a size limit (256 KiB by
/// default) with `truncated` true; an image or a PDF within the limit comes back as a content
/// block the model sees (`body_encoding` `content`). A status such as 404 is returned like any
/// other.
#[unified_tool(
    safety_tier = "standard",
    category = "network",
    display_name = "HTTP request"
)]
pub async fn http_request(
    ctx: ToolContext,
    #[arg(description = "The HTTP method: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS")]
    method: Method,
    #[arg(description = "The absolute http or https URL, on a host this runtime allows")]
    url: String,
    #[arg(
        description = "Request headers, e.g. [{\"name\": \"accept\", \"value\": \"application/json\"}]"
    )]
    headers: Option<Vec<Header>>,
    #[arg(description = "The request body, sent as is; set `content-type` in `headers`")]
    body: Option<String>,
) -> Result<ToolOutput<HttpResponse>, ToolError> {
    let Some(config) = ctx.get::<HttpRequestConfig>() else {
        return Err(unconfigured());
    };
    if !config.any_host && config.hosts.is_empty() {
        return Err(unconfigured());
    }
    let request = Outgoing {
        method: method.as_reqwest(),
        url: net::parse_url(&url)?,
        headers: request_headers(headers.unwrap_or_default())?,
        body: request_body(method, body, config.max_request_body_bytes)?,
    };
    let on_allowlist = |url: &Url| config.check_host(url);
    net::send(
        request,
        &config.policy,
        &config.limits,
        &on_allowlist,
        &ctx.signal,
    )
    .await
    .map(net::into_output)
}

/// The refusal when no host is allowed: nothing the model can change, so not recoverable, and
/// worded for whoever reads it on to the application's operator.
fn unconfigured() -> ToolError {
    ToolError::failed(
        "http_request is not configured: no host is allowed. The application running it allows \
         hosts by providing `pleach_tools::http_request::HttpRequestConfig::new().allow_host(\"api.example.com\")` \
         to its runtime (`RuntimeBuilder::provide`)",
    )
    .with_recoverable(false)
}

fn request_headers(headers: Vec<Header>) -> Result<HeaderMap, ToolError> {
    if headers.len() > MAX_REQUEST_HEADERS {
        return Err(refused(format!(
            "`headers` has {} entries, over the limit of {MAX_REQUEST_HEADERS}",
            headers.len()
        )));
    }
    let mut map = HeaderMap::with_capacity(headers.len());
    for Header { name, value } in headers {
        let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            refused(format!(
                "`{}` is not a valid header name; a name is letters, digits and `-`, like \
                 `content-type`",
                shorten(&name)
            ))
        })?;
        let lowercase = header.as_str();
        if FORBIDDEN_HEADERS.contains(&lowercase) || lowercase.starts_with("proxy-") {
            return Err(refused(format!(
                "the header `{lowercase}` cannot be set: the HTTP client sets it or it steers the \
                 connection; remove it"
            )));
        }
        let value = HeaderValue::from_str(&value).map_err(|_| {
            refused(format!(
                "the value of the header `{lowercase}` is not valid: it must be visible ASCII \
                 text on one line (no line breaks or control characters)"
            ))
        })?;
        map.append(header, value);
    }
    Ok(map)
}

fn request_body(
    method: Method,
    body: Option<String>,
    max_bytes: usize,
) -> Result<Option<String>, ToolError> {
    let Some(body) = body else {
        return Ok(None);
    };
    if matches!(method, Method::Get | Method::Head) {
        return Err(refused(format!(
            "a {} request has no body; send the data with POST, PUT or PATCH, or drop `body`",
            method.as_reqwest()
        )));
    }
    if body.len() > max_bytes {
        return Err(refused(format!(
            "`body` is {} bytes long, over this runtime's limit of {max_bytes}",
            body.len()
        )));
    }
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pleach_core::extensions::{Extensions, SessionState};

    /// `{"name": "value", …}` as the tool's list of headers.
    fn header_list(headers: &Value) -> Value {
        let pairs = headers.as_object().map(|map| {
            map.iter()
                .map(|(name, value)| json!({ "name": name, "value": value }))
                .collect::<Vec<_>>()
        });
        Value::from(pairs.unwrap_or_default())
    }
    use pleach::{BatchingStrategy, infer_batching_strategy};
    use pleach_core::{ErrorCode, SafetyTier};
    use serde_json::{Value, json};

    use super::*;
    use crate::net::test_server::{Reply, TestServer};
    use crate::test_support::refusal;

    fn context(config: HttpRequestConfig) -> ToolContext {
        ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new())
    }

    /// A config that allows `127.0.0.1` and reaches exactly the `servers`.
    fn reaching(servers: &[&TestServer]) -> HttpRequestConfig {
        let policy = servers.iter().fold(NetPolicy::new(), |policy, server| {
            policy.dangerously_allow_socket_addr(server.addr())
        });
        match HttpRequestConfig::new().allow_host("127.0.0.1") {
            Ok(config) => config.policy(policy),
            Err(err) => panic!("{err}"),
        }
    }

    async fn request(args: Value, ctx: ToolContext) -> Result<Value, ToolError> {
        http_request::definition()
            .call(&args.to_string(), ctx)
            .await
            .map(|out| out.value().clone())
    }

    /// The result of the call `args`, which must succeed.
    async fn answered(args: Value, ctx: ToolContext) -> Value {
        match request(args.clone(), ctx).await {
            Ok(out) => out,
            Err(err) => panic!("{args}: {err} ({:?})", err.detail()),
        }
    }

    /// The error of the call `args`, which must fail.
    async fn failure(args: Value, ctx: ToolContext) -> ToolError {
        match request(args.clone(), ctx).await {
            Ok(out) => panic!("{args} gave {out}, expected an error"),
            Err(err) => err,
        }
    }

    fn echo(request: &crate::net::test_server::Recorded) -> Reply {
        let headers: BTreeMap<&str, &str> = request
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let echoed = json!({
            "method": request.method,
            "target": request.target,
            "headers": headers,
            "body": String::from_utf8_lossy(&request.body),
        });
        Reply::ok("application/json", echoed.to_string())
    }

    fn echoed(out: &Value) -> Value {
        out["body"]
            .as_str()
            .and_then(|body| serde_json::from_str(body).ok())
            .unwrap_or(Value::Null)
    }

    #[tokio::test]
    async fn sends_method_headers_and_body() {
        let server = TestServer::start(echo).await;
        let out = answered(
            json!({
                "method": "POST",
                "url": server.url("/items"),
                "headers": header_list(&json!({"Content-Type": "application/json", "x-trace": "abc"})),
                "body": "{\"name\":\"Ada\"}",
            }),
            context(reaching(&[&server])),
        )
        .await;
        assert_eq!(out["status"], 200);
        let seen = echoed(&out);
        assert_eq!(seen["method"], "POST");
        assert_eq!(seen["target"], "/items");
        assert_eq!(seen["headers"]["content-type"], "application/json");
        assert_eq!(seen["headers"]["x-trace"], "abc");
        assert_eq!(seen["headers"]["content-length"], "14");
        assert_eq!(seen["body"], "{\"name\":\"Ada\"}");
    }

    #[tokio::test]
    async fn every_method_is_sent_as_named() {
        let server = TestServer::start(echo).await;
        let config = reaching(&[&server]);
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
            let out = answered(
                json!({"method": method, "url": server.url("/")}),
                context(config.clone()),
            )
            .await;
            assert_eq!(echoed(&out)["method"], method);
        }
        let head = answered(
            json!({"method": "HEAD", "url": server.url("/")}),
            context(config),
        )
        .await;
        assert_eq!(head["body"], "");
        assert_eq!(
            server
                .requests()
                .last()
                .map(|r| r.method.clone())
                .as_deref(),
            Some("HEAD")
        );
    }

    #[tokio::test]
    async fn without_configuration_every_host_is_refused() {
        let server = TestServer::start(echo).await;
        for ctx in [ToolContext::new("c1"), context(HttpRequestConfig::new())] {
            let err = failure(json!({"method": "GET", "url": server.url("/")}), ctx).await;
            assert_eq!(err.code(), ErrorCode::ToolFailed);
            assert!(!err.is_recoverable());
            assert!(
                err.message()
                    .starts_with("http_request is not configured: no host is allowed")
            );
            assert!(
                err.message()
                    .contains("HttpRequestConfig::new().allow_host(")
            );
        }
        assert!(server.requests().is_empty());
    }

    #[tokio::test]
    async fn hosts_off_the_allowlist_are_refused() {
        let config = HttpRequestConfig::new()
            .allow_host("api.example.com")
            .and_then(|config| config.allow_host("*.example.org"))
            .unwrap_or_else(|err| panic!("{err}"));
        for url in [
            "https://example.com/",
            "https://example.org/",
            "https://api.example.com.evil.net/",
        ] {
            let message = refusal(
                request(
                    json!({"method": "GET", "url": url}),
                    context(config.clone()),
                )
                .await,
                &url,
            );
            assert!(
                message.contains("is not on this runtime's allowlist"),
                "{message}"
            );
            assert!(
                message.ends_with("the allowed hosts are api.example.com, *.example.org"),
                "{message}"
            );
        }
    }

    #[tokio::test]
    async fn an_allowed_host_still_meets_the_guard() {
        let config = HttpRequestConfig::new()
            .allow_host("127.0.0.1")
            .and_then(|config| config.allow_host("169.254.169.254"))
            .and_then(|config| config.allow_host("localhost"))
            .unwrap_or_else(|err| panic!("{err}"));
        for (url, needle) in [
            ("http://127.0.0.1:9/", "loopback"),
            ("http://2130706433:9/", "loopback"),
            (
                "http://169.254.169.254/latest/meta-data/",
                "cloud instance metadata",
            ),
            ("http://localhost:9/", "names this machine"),
        ] {
            let message = refusal(
                request(
                    json!({"method": "GET", "url": url}),
                    context(config.clone()),
                )
                .await,
                &url,
            );
            assert!(message.contains(needle), "{url}: {message}");
        }
        let any = HttpRequestConfig::new().allow_any_host();
        for url in [
            "http://[::ffff:127.0.0.1]/",
            "file:///etc/passwd",
            "http://10.0.0.1/",
        ] {
            refusal(
                request(json!({"method": "GET", "url": url}), context(any.clone())).await,
                &url,
            );
        }
    }

    #[tokio::test]
    async fn a_redirect_off_the_allowlist_is_refused() {
        let server =
            TestServer::start(|_| Reply::redirect(307, "https://elsewhere.example/")).await;
        let message = refusal(
            request(
                json!({"method": "GET", "url": server.url("/")}),
                context(reaching(&[&server])),
            )
            .await,
            &"redirect",
        );
        assert_eq!(
            message,
            "the response redirected to `https://elsewhere.example/`, which was not followed: the \
             host `elsewhere.example` is not on this runtime's allowlist for http_request; the \
             allowed hosts are 127.0.0.1"
        );
    }

    #[tokio::test]
    async fn redirects_follow_the_method_rules() {
        let server = TestServer::start(|request| match request.target.as_str() {
            "/see-other" => Reply::redirect(303, "/landing"),
            "/found" => Reply::redirect(302, "/landing"),
            "/temporary" => Reply::redirect(307, "/landing"),
            "/permanent" => Reply::redirect(308, "/landing"),
            _ => echo(request),
        })
        .await;
        let config = reaching(&[&server]);
        for (start, method, body) in [
            ("/see-other", "GET", ""),
            ("/found", "GET", ""),
            ("/temporary", "POST", "payload"),
            ("/permanent", "POST", "payload"),
        ] {
            let out = answered(
                json!({
                    "method": "POST",
                    "url": server.url(start),
                    "headers": header_list(&json!({"content-type": "text/plain"})),
                    "body": "payload",
                }),
                context(config.clone()),
            )
            .await;
            let seen = echoed(&out);
            assert_eq!(seen["target"], "/landing", "{start}");
            assert_eq!(seen["method"], method, "{start}");
            assert_eq!(seen["body"], body, "{start}");
            let content_type = if body.is_empty() {
                Value::Null
            } else {
                json!("text/plain")
            };
            assert_eq!(seen["headers"]["content-type"], content_type, "{start}");
        }
        // A PUT keeps its method through a 302; a 303 turns it into a GET.
        let put = |start: &str| {
            answered(
                json!({"method": "PUT", "url": server.url(start), "body": "x"}),
                context(config.clone()),
            )
        };
        assert_eq!(echoed(&put("/found").await)["method"], "PUT");
        assert_eq!(echoed(&put("/see-other").await)["method"], "GET");
    }

    #[tokio::test]
    async fn credentials_stay_with_their_origin() {
        let other = TestServer::start(echo).await;
        let location = other.url("/landing");
        let same = TestServer::start(move |request| match request.target.as_str() {
            "/away" => Reply::redirect(302, &location),
            "/here" => Reply::redirect(302, "/landing"),
            _ => echo(request),
        })
        .await;
        let config = reaching(&[&same, &other]);
        let headers = json!({"authorization": "Bearer token", "cookie": "a=1", "x-keep": "yes"});
        let away = answered(
            json!({"method": "GET", "url": same.url("/away"), "headers": header_list(&headers)}),
            context(config.clone()),
        )
        .await;
        let seen = echoed(&away);
        assert_eq!(seen["headers"]["authorization"], Value::Null);
        assert_eq!(seen["headers"]["cookie"], Value::Null);
        assert_eq!(seen["headers"]["x-keep"], "yes");

        let here = answered(
            json!({"method": "GET", "url": same.url("/here"), "headers": header_list(&headers)}),
            context(config),
        )
        .await;
        assert_eq!(echoed(&here)["headers"]["authorization"], "Bearer token");
    }

    #[tokio::test]
    async fn bad_headers_and_bodies_are_refused() {
        let config = reaching(&[]);
        let cases = [
            (
                json!({"bad name": "x"}),
                None,
                "`bad name` is not a valid header name",
            ),
            (json!({"": "x"}), None, "`` is not a valid header name"),
            (
                json!({"x-a": "one\r\nx-injected: 1"}),
                None,
                "the value of the header `x-a` is not valid",
            ),
            (json!({"x-a": "bell\u{7}"}), None, "is not valid"),
            (
                json!({"Host": "internal.example"}),
                None,
                "the header `host` cannot be set",
            ),
            (
                json!({"content-length": "5"}),
                None,
                "the header `content-length` cannot be set",
            ),
            (
                json!({"transfer-encoding": "chunked"}),
                None,
                "cannot be set",
            ),
            (
                json!({"proxy-authorization": "x"}),
                None,
                "the header `proxy-authorization` cannot be set",
            ),
            (
                json!({}),
                Some(("GET", "data")),
                "a GET request has no body",
            ),
            (
                json!({}),
                Some(("HEAD", "data")),
                "a HEAD request has no body",
            ),
        ];
        for (headers, method_body, needle) in cases {
            let (method, body) = method_body.unwrap_or(("POST", "x"));
            let args = json!({"method": method, "url": "http://127.0.0.1:9/", "headers": header_list(&headers), "body": body});
            let message = refusal(request(args.clone(), context(config.clone())).await, &args);
            assert!(message.contains(needle), "{args}: {message}");
        }

        let many: BTreeMap<String, String> = (0..33)
            .map(|i| (format!("x-{i}"), "v".to_owned()))
            .collect();
        let args = json!({"method": "GET", "url": "http://127.0.0.1:9/", "headers": header_list(&json!(many))});
        let message = refusal(request(args, context(config.clone())).await, &"many");
        assert_eq!(message, "`headers` has 33 entries, over the limit of 32");

        let small = config.max_request_body_bytes(4);
        let args = json!({"method": "POST", "url": "http://127.0.0.1:9/", "body": "12345"});
        let message = refusal(request(args, context(small)).await, &"body");
        assert_eq!(
            message,
            "`body` is 5 bytes long, over this runtime's limit of 4"
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_schema_errors() {
        for args in [
            json!({"url": "https://example.com/"}),
            json!({"method": "get", "url": "https://example.com/"}),
            json!({"method": "TRACE", "url": "https://example.com/"}),
            json!({"method": "GET", "url": "https://example.com/", "headers": [{"name": "a", "value": 1}]}),
            json!({"method": "GET", "url": "https://example.com/", "headers": ["a"]}),
            json!({"method": "GET", "url": "https://example.com/", "headers": {"a": "b"}}),
        ] {
            let err = failure(args.clone(), ToolContext::new("c1")).await;
            assert_eq!(
                err.code(),
                ErrorCode::InputInvalid,
                "{args}: {}",
                err.message()
            );
        }
    }

    #[test]
    fn host_patterns() {
        let pattern = |text: &str| HostPattern::parse(text).unwrap_or_else(|err| panic!("{err}"));
        assert!(pattern("api.example.com").matches("api.example.com"));
        assert!(!pattern("api.example.com").matches("x.api.example.com"));
        assert!(pattern("API.Example.COM.").matches("api.example.com"));
        assert!(pattern("bücher.example").matches("xn--bcher-kva.example"));
        let wildcard = pattern("*.example.com");
        assert!(wildcard.matches("a.example.com"));
        assert!(wildcard.matches("a.b.example.com"));
        assert!(!wildcard.matches("example.com"));
        assert!(!wildcard.matches("badexample.com"));
        assert!(!wildcard.matches(".example.com"));
        assert!(pattern("203.0.113.7").matches("203.0.113.7"));
        assert!(pattern("[2001:DB8::1]").matches("[2001:db8::1]"));
        assert_eq!(pattern("0x7f.1").text, "127.0.0.1");

        for (text, reason) in [
            ("", "it is empty"),
            ("*.", "it is empty"),
            ("https://api.example.com", "not a host pattern"),
            ("api.example.com:443", "not a host pattern"),
            ("api.example.com/v1", "not a host pattern"),
            ("a.*.example.com", "a wildcard may only stand first"),
            ("*", "a wildcard may only stand first"),
            ("*.10.0.0.1", "`*.` goes before a domain name"),
            ("exa mple.com", "not a host pattern"),
        ] {
            let err = HostPattern::parse(text)
                .err()
                .unwrap_or_else(|| panic!("{text:?} parsed"));
            assert!(err.to_string().contains(reason), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_tool_is_standard_tier_and_chunked_by_url() {
        let tool = http_request::unified();
        assert_eq!(tool.name(), "http_request");
        assert_eq!(tool.safety_tier(), Some(SafetyTier::Standard));
        assert_eq!(tool.category(), "network");
        assert_eq!(
            tool.definition().input_schema()["required"],
            json!(["method", "url"])
        );
        assert_eq!(
            infer_batching_strategy(tool.definition()),
            BatchingStrategy::Chunked {
                key: "url".to_owned()
            },
            "the crate docs' table says chunked by `url`"
        );
    }
}
