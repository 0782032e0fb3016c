//! Sending a request through the guard: a client per hop that can only connect to the addresses
//! the guard checked, redirects followed by hand (each hop checked again), the body read up to a
//! cap, the whole bounded in time and dropped when the call is cancelled.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Duration;

use base64::Engine as _;
use pleach_core::content::{ContentBlock, ToolOutput};
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{CancellationToken, ErrorCode, ToolError};
use reqwest::header::{self, HeaderMap};
use reqwest::{Method, StatusCode};
use url::Url;

use super::guard::{self, Checked, shorten};
use super::policy::NetPolicy;

/// The caps on one call of a network tool: body size, time, redirects. Given to a tool's
/// configuration ([`UrlFetchConfig::limits`](crate::url_fetch::UrlFetchConfig::limits),
/// [`HttpRequestConfig::limits`](crate::http_request::HttpRequestConfig::limits)).
///
/// ```
/// use std::time::Duration;
/// use pleach_tools::net::FetchLimits;
///
/// let limits = FetchLimits::new()
///     .max_body_bytes(64 * 1024)
///     .timeout(Duration::from_secs(10))
///     .max_redirects(2);
/// assert_ne!(limits, FetchLimits::new());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchLimits {
    max_body_bytes: usize,
    timeout: Duration,
    connect_timeout: Duration,
    max_redirects: u32,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            max_body_bytes: 256 * 1024,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_redirects: 5,
        }
    }
}

impl FetchLimits {
    /// The defaults: a 256 KiB body, 30 s in all, 10 s to connect, 5 redirects.
    ///
    /// ```
    /// use std::time::Duration;
    /// use pleach_tools::net::FetchLimits;
    ///
    /// let limits = FetchLimits::new();
    /// assert_eq!(limits, FetchLimits::default());
    /// assert_eq!(
    ///     limits,
    ///     FetchLimits::new()
    ///         .max_body_bytes(256 * 1024)
    ///         .timeout(Duration::from_secs(30))
    ///         .connect_timeout(Duration::from_secs(10))
    ///         .max_redirects(5)
    /// );
    /// ```
    pub fn new() -> Self {
        FetchLimits::default()
    }

    /// Sets the most body bytes read (default 256 KiB). A longer body is cut there and the result
    /// says `truncated: true`; the rest is never read.
    ///
    /// ```
    /// let limits = pleach_tools::net::FetchLimits::new().max_body_bytes(64 * 1024);
    /// assert!(format!("{limits:?}").contains("max_body_bytes: 65536"));
    /// ```
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Sets the time the whole call may take (default 30 s): resolution, every redirect hop and
    /// the body. Past it the call fails with code 1010. The time to connect is capped apart
    /// ([`connect_timeout`](Self::connect_timeout)).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let limits = pleach_tools::net::FetchLimits::new().timeout(Duration::from_secs(5));
    /// assert!(format!("{limits:?}").contains("timeout: 5s"));
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time one connection (TCP and TLS) may take to set up (default 10 s).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let limits = pleach_tools::net::FetchLimits::new().connect_timeout(Duration::from_secs(3));
    /// assert!(format!("{limits:?}").contains("connect_timeout: 3s"));
    /// ```
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how many redirects are followed (default 5); 0 returns the redirect response itself.
    ///
    /// ```
    /// let limits = pleach_tools::net::FetchLimits::new().max_redirects(0);
    /// assert!(format!("{limits:?}").contains("max_redirects: 0"));
    /// ```
    #[must_use]
    pub fn max_redirects(mut self, redirects: u32) -> Self {
        self.max_redirects = redirects;
        self
    }
}

/// How [`HttpResponse::body`] holds the bytes.
///
/// ```
/// use base64::Engine as _;
/// use pleach_tools::net::BodyEncoding;
///
/// /// The bytes a response's `body` stands for.
/// fn body_bytes(body: &str, encoding: BodyEncoding) -> Vec<u8> {
///     match encoding {
///         BodyEncoding::Base64 => base64::engine::general_purpose::STANDARD
///             .decode(body)
///             .unwrap_or_default(),
///         _ => body.as_bytes().to_vec(),
///     }
/// }
///
/// assert_eq!(body_bytes("iVBORw==", BodyEncoding::Base64), [0x89, b'P', b'N', b'G']);
/// assert_eq!(body_bytes("hello", BodyEncoding::Text), b"hello");
/// assert_eq!(serde_json::to_value(BodyEncoding::Base64).unwrap(), "base64"); // as a model reads it
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "snake_case")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "How [`HttpResponse::body`] holds the bytes."
)]
#[non_exhaustive]
pub enum BodyEncoding {
    /// The bytes were UTF-8 and are the text as is.
    Text,
    /// The bytes were not UTF-8 and are in standard base64 (RFC 4648, with padding).
    Base64,
    /// The bytes are an image or a PDF (by their first bytes, not the `content-type`), whole: they
    /// are the result's content block, which the model sees as such, and `body` is empty.
    Content,
}

/// What `url_fetch` and `http_request` return: the last response, after redirects.
///
/// A status such as 404 or 500 is a response like any other, not an error: the model reads the
/// status and the body the server sent with it.
///
/// ```
/// # #[cfg(feature = "url-fetch")] {
/// use pleach_tools::url_fetch::url_fetch;
///
/// // The tools' output schema tells the model what each field holds.
/// let tool = url_fetch::definition();
/// let properties = &tool.output_schema().unwrap()["properties"];
/// let mut fields: Vec<&String> = properties.as_object().unwrap().keys().collect();
/// fields.sort();
/// assert_eq!(
///     fields,
///     ["body", "body_encoding", "content_type", "final_url", "headers", "status", "truncated"]
/// );
/// assert_eq!(properties["status"]["description"], "The HTTP status code, e.g. 200.");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries these lines, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "What `url_fetch` and `http_request` return: the last response, after redirects.\n\nA status such as 404 or 500 is a response like any other, not an error: the model reads the\nstatus and the body the server sent with it."
)]
#[non_exhaustive]
pub struct HttpResponse {
    /// The HTTP status code, e.g. 200.
    pub status: u16,
    /// The URL that answered: the one requested, or where its redirects led.
    pub final_url: String,
    /// The `content-type` header, e.g. `text/html; charset=utf-8`, if the server sent one.
    pub content_type: Option<String>,
    /// The response headers by lowercase name, repeated ones joined with `, `: at most 64
    /// headers, each value cut at 1024 characters.
    pub headers: BTreeMap<String, String>,
    /// The body, at most the byte limit of the tool's configuration (256 KiB by default): text
    /// when it is UTF-8, base64 otherwise (see `body_encoding`; the limit counts the bytes, so
    /// base64 text is up to a third longer).
    pub body: String,
    /// `text` or `base64`.
    pub body_encoding: BodyEncoding,
    /// Whether the body was cut at the byte limit.
    pub truncated: bool,
    /// An image or PDF body, for the result's content block (`BodyEncoding::Content`).
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) media: Option<(pleach_core::content::Bytes, &'static str)>,
}

/// One request as the tools build it; redirects rewrite it hop by hop.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<String>,
}

/// A check a tool adds to the guard's, on every hop (the host allowlist of `http_request`).
pub(crate) type HopCheck<'a> = &'a (dyn Fn(&Url) -> Result<(), ToolError> + Sync);

/// The most response headers returned, and the longest value kept, in characters.
const MAX_RESPONSE_HEADERS: usize = 64;
const MAX_HEADER_VALUE_CHARS: usize = 1024;

const USER_AGENT: &str = concat!("pleach-tools/", env!("CARGO_PKG_VERSION"));

/// Sends `request` under `policy` and `limits`: the guard's checks (and `hop_check`) before every
/// hop, the time limit over everything, and `signal` ending the call at once (code 1011).
pub(crate) async fn send(
    request: Outgoing,
    policy: &NetPolicy,
    limits: &FetchLimits,
    hop_check: HopCheck<'_>,
    signal: &CancellationToken,
) -> Result<HttpResponse, ToolError> {
    let host = request.url.host_str().unwrap_or_default().to_owned();
    tokio::select! {
        biased;
        () = signal.cancelled() => Err(ToolError::new(ErrorCode::Cancelled, "the request was cancelled")),
        outcome = tokio::time::timeout(limits.timeout, follow(request, policy, limits, hop_check)) => {
            outcome.unwrap_or_else(|_| Err(ToolError::new(
                ErrorCode::TimedOut,
                format!(
                    "the request to `{host}` did not finish within {}; try again later or ask \
                     for a smaller resource",
                    show(limits.timeout)
                ),
            )))
        }
    }
}

/// The hops of one call: check, connect to what was checked, and either follow a redirect or
/// read the body.
async fn follow(
    mut request: Outgoing,
    policy: &NetPolicy,
    limits: &FetchLimits,
    hop_check: HopCheck<'_>,
) -> Result<HttpResponse, ToolError> {
    let mut redirects = 0;
    loop {
        let checked = check_hop(policy, &request.url, hop_check)
            .await
            .map_err(|err| match redirects {
                0 => err,
                _ => not_followed(&err, &request.url),
            })?;
        let response = send_once(&request, &checked, limits).await?;
        let Some(next) = redirect_target(&response, &request.url)? else {
            return read(response, request.url, limits.max_body_bytes).await;
        };
        if redirects == limits.max_redirects {
            // With redirects off the redirect is the answer; past a positive limit, a failure.
            if redirects == 0 {
                return read(response, request.url, limits.max_body_bytes).await;
            }
            return Err(ToolError::failed(format!(
                "too many redirects: more than {} (the last to `{}`)",
                limits.max_redirects,
                shorten(next.as_str())
            )));
        }
        redirects += 1;
        request = redirected(request, response.status(), next);
    }
}

/// The guard's checks on one hop, the tool's own between the offline ones and resolution (so a
/// host off an allowlist is never even resolved).
async fn check_hop(
    policy: &NetPolicy,
    url: &Url,
    hop_check: HopCheck<'_>,
) -> Result<Checked, ToolError> {
    let target = guard::check_offline(policy, url)?;
    hop_check(url)?;
    guard::resolve(policy, target).await
}

/// A refusal of a redirect hop, saying so.
fn not_followed(err: &ToolError, to: &Url) -> ToolError {
    let message = format!(
        "the response redirected to `{}`, which was not followed: {}",
        shorten(to.as_str()),
        err.message()
    );
    let out = ToolError::new(err.code(), message).with_recoverable(err.is_recoverable());
    match err.detail() {
        Some(detail) => out.with_detail(detail.to_owned()),
        None => out,
    }
}

async fn send_once(
    request: &Outgoing,
    checked: &Checked,
    limits: &FetchLimits,
) -> Result<reqwest::Response, ToolError> {
    let client = client_for(checked, limits)?;
    let mut builder = client
        .request(request.method.clone(), request.url.clone())
        .headers(request.headers.clone());
    if let Some(body) = &request.body {
        builder = builder.body(body.clone());
    }
    builder
        .send()
        .await
        .map_err(|err| network_error(&err, &request.url, limits))
}

/// A client for one hop. It cannot reach anything but `checked.addrs`: IP literals were checked
/// as written, and names resolve through [`Pinned`], which knows only the checked name. No
/// proxy, no redirects, no retries, no `Referer`, no connection kept for later.
fn client_for(checked: &Checked, limits: &FetchLimits) -> Result<reqwest::Client, ToolError> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .referer(false)
        .http1_only()
        .pool_max_idle_per_host(0)
        .connect_timeout(limits.connect_timeout)
        .user_agent(USER_AGENT)
        .dns_resolver(Pinned(checked.clone()))
        .tls_backend_preconfigured(tls_config()?)
        .build()
        .map_err(|err| {
            ToolError::failed("the HTTP client could not be set up").with_detail(chain(&err))
        })
}

/// The resolver of a hop's client: the checked name gives the checked addresses, any other name
/// nothing (the request fails closed rather than reach an unchecked address).
struct Pinned(Checked);

impl reqwest::dns::Resolve for Pinned {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let asked = name.as_str();
        let asked = asked.strip_suffix('.').unwrap_or(asked);
        let outcome = match &self.0.name {
            Some(checked) if checked.eq_ignore_ascii_case(asked) => {
                let addrs: reqwest::dns::Addrs = Box::new(self.0.addrs.clone().into_iter());
                Ok(addrs)
            }
            _ => Err(format!("`{asked}` was not checked by the guard").into()),
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// pleach-core's TLS setup (rustls with ring and the operating system's trust store, built once
/// per process), as a tool error when it cannot be had.
fn tls_config() -> Result<rustls::ClientConfig, ToolError> {
    pleach_core::tls::client_config().map_err(|detail| {
        ToolError::failed("https is not available: the TLS setup failed").with_detail(detail)
    })
}

/// Where a redirect response points, if it is one this code follows (301, 302, 303, 307, 308
/// with a `location`); any other response is the answer.
fn redirect_target(response: &reqwest::Response, current: &Url) -> Result<Option<Url>, ToolError> {
    let status = response.status();
    let followed = matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    );
    let Some(location) = response
        .headers()
        .get(header::LOCATION)
        .filter(|_| followed)
    else {
        return Ok(None);
    };
    let invalid = |reason: String| {
        ToolError::failed(format!(
            "the response ({status}) redirected to an invalid location: {reason}"
        ))
    };
    let location = location
        .to_str()
        .map_err(|_| invalid("it is not ASCII text".to_owned()))?;
    current
        .join(location)
        .map(Some)
        .map_err(|err| invalid(format!("`{}` ({err})", shorten(location))))
}

/// The request for the next hop, by the rules of RFC 9110 §15.4 as browsers apply them: 303
/// turns anything but HEAD into a GET without body, 301 and 302 turn a POST into one; 307 and
/// 308 repeat the request as it was. Credentials stay with their origin.
fn redirected(mut request: Outgoing, status: StatusCode, next: Url) -> Outgoing {
    let to_get = match status {
        StatusCode::SEE_OTHER => request.method != Method::HEAD,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => request.method == Method::POST,
        _ => false,
    };
    if to_get {
        request.method = Method::GET;
        request.body = None;
        for name in [
            header::CONTENT_TYPE,
            header::CONTENT_ENCODING,
            header::CONTENT_LANGUAGE,
        ] {
            request.headers.remove(name);
        }
    }
    if next.origin() != request.url.origin() {
        for name in [header::AUTHORIZATION, header::COOKIE] {
            request.headers.remove(name);
        }
    }
    request.url = next;
    request
}

/// The response with its body read up to `max_body_bytes`.
async fn read(
    mut response: reqwest::Response,
    url: Url,
    max_body_bytes: usize,
) -> Result<HttpResponse, ToolError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let headers = response_headers(response.headers());
    let mut bytes = Vec::with_capacity(
        response
            .content_length()
            .and_then(|length| usize::try_from(length).ok())
            .unwrap_or(0)
            .min(max_body_bytes),
    );
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await.map_err(|err| {
        ToolError::failed(format!(
            "the connection to `{}` broke while the body was read",
            url.host_str().unwrap_or_default()
        ))
        .with_detail(chain(&err))
    })? {
        let room = max_body_bytes - bytes.len();
        if chunk.len() > room {
            // Dropping the response closes the connection: the rest is never read.
            bytes.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    let media = pleach_core::content::sniff_mime(&bytes)
        .filter(|mime| !truncated && (mime.starts_with("image/") || *mime == "application/pdf"));
    let (body, body_encoding, media) = if let Some(mime) = media {
        let data = pleach_core::content::Bytes::from(bytes);
        (String::new(), BodyEncoding::Content, Some((data, mime)))
    } else {
        let (body, encoding) = encode_body(bytes, truncated);
        (body, encoding, None)
    };
    Ok(HttpResponse {
        status,
        final_url: url.into(),
        content_type,
        headers,
        body,
        body_encoding,
        truncated,
        media,
    })
}

/// A response as a tool's result: an image or a PDF body as its content block.
pub(crate) fn into_output(mut response: HttpResponse) -> ToolOutput<HttpResponse> {
    let media = response.media.take();
    let output = ToolOutput::new(response);
    match media {
        Some((data, mime)) if mime.starts_with("image/") => {
            output.block(ContentBlock::image(data, mime))
        }
        Some((data, mime)) => output.block(ContentBlock::file(data, mime)),
        None => output,
    }
}

/// The body as text when it is UTF-8 (a character cut in two by the byte limit is dropped),
/// otherwise in base64.
fn encode_body(bytes: Vec<u8>, truncated: bool) -> (String, BodyEncoding) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, BodyEncoding::Text),
        Err(err) => {
            let utf8 = err.utf8_error();
            let mut bytes = err.into_bytes();
            if truncated && utf8.error_len().is_none() {
                bytes.truncate(utf8.valid_up_to());
                match String::from_utf8(bytes) {
                    Ok(text) => return (text, BodyEncoding::Text),
                    Err(err) => bytes = err.into_bytes(),
                }
            }
            (
                base64::engine::general_purpose::STANDARD.encode(&bytes),
                BodyEncoding::Base64,
            )
        }
    }
}

fn response_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        let full = out.len() >= MAX_RESPONSE_HEADERS;
        match out.entry(name.as_str().to_owned()) {
            Entry::Occupied(mut joined) => {
                let joined = joined.get_mut();
                joined.push_str(", ");
                joined.push_str(&value);
                cut(joined);
            }
            Entry::Vacant(slot) if !full => {
                let mut value = value.into_owned();
                cut(&mut value);
                slot.insert(value);
            }
            Entry::Vacant(_) => {}
        }
    }
    out
}

/// Cuts `value` to [`MAX_HEADER_VALUE_CHARS`] characters.
fn cut(value: &mut String) {
    if let Some((end, _)) = value.char_indices().nth(MAX_HEADER_VALUE_CHARS) {
        value.truncate(end);
    }
}

fn network_error(err: &reqwest::Error, url: &Url, limits: &FetchLimits) -> ToolError {
    let host = url.host_str().unwrap_or_default();
    let error = if err.is_timeout() {
        // The whole call's limit is enforced around everything; reqwest times out connections.
        ToolError::new(
            ErrorCode::TimedOut,
            format!(
                "could not connect to `{host}` within {}; try again later",
                show(limits.connect_timeout)
            ),
        )
    } else if err.is_connect() {
        ToolError::failed(format!(
            "could not connect to `{host}`: the server is down, refuses the connection, or its \
             TLS certificate is not valid"
        ))
    } else {
        ToolError::failed(format!("the request to `{host}` failed"))
    };
    error.with_detail(chain(err))
}

/// An error and its sources on one line, for operators.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(err) = source {
        text.push_str(": ");
        text.push_str(&err.to_string());
        source = err.source();
    }
    text
}

/// `duration` for a message: `30 s`, `250 ms`.
fn show(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}
