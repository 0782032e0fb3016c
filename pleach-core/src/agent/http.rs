//! What the HTTP model clients share: the reqwest client (rustls with ring, the operating
//! system's trust store, no proxy from the environment), the request, the streamed body, and
//! errors that say what went wrong without the key.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use serde_json::Value;

use super::{BoxFuture, ModelError, ModelResponse, ResponseBody, WireFormat};
use crate::content::Bytes;
use crate::providers::{JsonBody, ProfileProblem, ProviderFormat};
use crate::tool::UnifiedToolDefinition;

/// How long to wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the server may stay silent (before its headers, or between two chunks): models
/// think before they speak, so this is generous.
const READ_TIMEOUT: Duration = Duration::from_mins(5);
/// How much of an error body is kept.
const MAX_ERROR_BODY: usize = 4096;

/// What every model client holds: the HTTP client, the URL its requests go to, the model it
/// asks and the strict-mode fallbacks it has reported.
#[derive(Clone)]
pub(super) struct Connection {
    pub(super) http: reqwest::Client,
    pub(super) url: String,
    pub(super) model: String,
    pub(super) fallbacks: StrictFallbacks,
}

impl Connection {
    /// POSTs `body` as JSON to this connection's URL and returns the streamed response, or the
    /// API's error.
    pub(super) async fn post(
        &self,
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))] mut headers: HeaderMap,
        body: JsonBody,
        format: WireFormat,
    ) -> Result<ModelResponse, ModelError> {
        // The request's span (`chat {model}`) continues at the provider, when it reads W3C headers.
        #[cfg(feature = "otel")]
        for (name, value) in crate::trace_context::current_headers() {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                reqwest::header::HeaderValue::from_str(&value),
            ) {
                headers.insert(name, value);
            }
        }
        let response = self
            .http
            .post(&self.url)
            .headers(headers)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(http_body(body))
            .send()
            .await
            .map_err(|err| transport_error(&err))?;
        let status = response.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|seconds| seconds.trim().parse::<f64>().ok())
                .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                .map(std::time::Duration::from_secs_f64);
            return Err(ModelError::RateLimited {
                retry_after,
                body: error_body(response).await,
            });
        }
        if !status.is_success() {
            return Err(ModelError::Status {
                status: status.as_u16(),
                body: error_body(response).await,
            });
        }
        // A whole JSON answer (a server that ignores `stream: true`) or an HTML page (a proxy's)
        // holds no events: read as a stream it would be an empty answer, the run "finished".
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if let Some(content_type) = content_type {
            let essence = content_type.split(';').next().unwrap_or_default().trim();
            if !essence.eq_ignore_ascii_case("text/event-stream") {
                return Err(ModelError::NotAStream {
                    content_type,
                    body: error_body(response).await,
                });
            }
        }
        Ok(ModelResponse::new(format, HttpBody(response)))
    }

    /// `model` at `path` under `base`: refused when no model is named (checked first) or `base`
    /// is not an absolute http or https URL; the HTTP client set up.
    pub(super) fn new(base: &str, path: &str, model: String) -> Result<Self, ModelError> {
        if model.trim().is_empty() {
            return Err(ModelError::Config("no model named".into()));
        }
        Ok(Connection {
            url: endpoint(base, path)?,
            http: client()?,
            model,
            fallbacks: StrictFallbacks::default(),
        })
    }
}

/// A client for a model API: [`client_builder`](crate::http_client::client_builder), HTTP/1.1, timeouts for models that think
/// before they speak, and a new connection for each request.
pub(super) fn client() -> Result<reqwest::Client, ModelError> {
    crate::http_client::client_builder()
        .map_err(ModelError::Config)?
        .http1_only()
        // No connection is kept for the next step: llama.cpp's llama-server closes its end after
        // every streamed response though its headers offer keep-alive, and the next step's
        // request, written to that connection before the close was seen, failed ("connection
        // closed before message completed"). A step takes seconds; a handshake does not.
        .pool_max_idle_per_host(0)
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .build()
        .map_err(|err| {
            ModelError::Config(format!(
                "the HTTP client could not be set up: {}",
                chain(&err)
            ))
        })
}

/// A header whose value is secret: marked sensitive, so reqwest's own debug output hides it.
pub(super) fn secret_header(
    headers: &mut HeaderMap,
    name: &'static str,
    value: &str,
) -> Result<(), ModelError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        ModelError::Config(format!(
            "the API key cannot be sent in the `{name}` header (it holds characters a header cannot)"
        ))
    })?;
    value.set_sensitive(true);
    headers.insert(HeaderName::from_static(name), value);
    Ok(())
}

/// A request body as [`JsonBody`]'s pieces: the JSON text written once, a medium's base64 moved in
/// whole (never copied into one buffer with the rest; `to_string` would also check every piece
/// for UTF-8 again, and `serde_json::to_vec` each byte of the base64 for escaping).
pub(super) fn request_body(body: Value) -> Result<JsonBody, ModelError> {
    JsonBody::new(body).map_err(|err| {
        ModelError::Config(format!("the request could not be written as JSON: {err}"))
    })
}

/// A [`JsonBody`] as reqwest sends it: one piece as it is; several as an HTTP body of those pieces
/// with their length known, so the request says `Content-Length` (never chunked).
fn http_body(body: JsonBody) -> reqwest::Body {
    if body.iter().len() <= 1 {
        return reqwest::Body::from(body.into_iter().next().unwrap_or_default());
    }
    let remaining = body.len() as u64;
    reqwest::Body::wrap(Pieces {
        pieces: body.into_iter(),
        remaining,
    })
}

/// The pieces of a [`JsonBody`], one data frame each.
struct Pieces {
    pieces: std::vec::IntoIter<Bytes>,
    remaining: u64,
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let piece = self.pieces.next();
        if let Some(piece) = &piece {
            self.remaining -= piece.len() as u64;
        }
        std::task::Poll::Ready(piece.map(|piece| Ok(http_body::Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}

/// The first [`MAX_ERROR_BODY`] bytes of an error response, as text.
async fn error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).trim().to_owned()
}

/// A response body read chunk by chunk as it arrives.
struct HttpBody(reqwest::Response);

impl ResponseBody for HttpBody {
    fn next_chunk(&mut self) -> BoxFuture<'_, Result<Option<Vec<u8>>, ModelError>> {
        Box::pin(async move {
            match self.0.chunk().await {
                Ok(chunk) => Ok(chunk.map(|bytes| bytes.to_vec())),
                Err(err) => Err(transport_error(&err)),
            }
        })
    }
}

fn transport_error(err: &reqwest::Error) -> ModelError {
    // reqwest's text names the URL, never a header: the key stays out of it.
    if err.is_timeout() {
        ModelError::Timeout(chain(err))
    } else {
        ModelError::Connection(chain(err))
    }
}

/// `{base}{path}`, with one slash between them; a configuration error when `base` is not an
/// absolute http or https URL with a host, so that a mistyped base URL is reported when the
/// client is made rather than as a failed request on the first turn.
pub(super) fn endpoint(base: &str, path: &str) -> Result<String, ModelError> {
    let refused = |why: &str| {
        ModelError::Config(format!(
            "the base URL `{base}` is not an http or https URL ({why}); write it as `https://host/…`"
        ))
    };
    let parsed = reqwest::Url::parse(base).map_err(|err| refused(&err.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refused(&format!("its scheme is `{}`", parsed.scheme())));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(refused("it names no host"));
    }
    Ok(format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    ))
}

/// Whether the API at `url` is known to honour strict mode: OpenAI's own API and Azure OpenAI
/// for Chat Completions and Responses, Anthropic's own API for Messages; Gemini has no strict
/// mode. Elsewhere (llama.cpp's server,
/// Ollama, vLLM, a gateway) the field is ignored or refused, and a server that builds a grammar
/// from the schema holds a small model to strict mode's every-property-required schema: it
/// invents values for the optional properties rather than leave them out.
pub(super) fn honours_strict(url: &str, format: WireFormat) -> bool {
    let Some(host) = reqwest::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
    else {
        return false;
    };
    match format {
        WireFormat::OpenAiChat | WireFormat::OpenAiResponses => {
            host == "api.openai.com"
                || host.ends_with(".openai.azure.com")
                || host.ends_with(".cognitiveservices.azure.com")
        }
        WireFormat::AnthropicMessages => host == "api.anthropic.com",
        WireFormat::Gemini => false,
    }
}

/// Says why a tool goes without strict mode, once per tool and reason for a client and its
/// clones (a run asks the model again at every step; the log need not repeat itself).
#[derive(Debug, Clone, Default)]
pub(super) struct StrictFallbacks(
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<(String, String)>>>,
);

impl StrictFallbacks {
    /// Logs (through `tracing`, as a warning) that `tool` goes without strict mode, and why.
    pub(super) fn warn(&self, tool: &str, why: &str) {
        let first = match self.0.lock() {
            Ok(mut seen) => seen.insert((tool.to_owned(), why.to_owned())),
            Err(_) => true,
        };
        if first {
            tracing::warn!(tool, why, "the tool is sent without strict mode");
        }
    }

    /// [`StrictFallbacks::warn`] for the problems a profile found in the tool's schema.
    pub(super) fn warn_problems(&self, tool: &str, problems: &[ProfileProblem]) {
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        self.warn(
            tool,
            &format!(
                "strict mode cannot express its schema: {}",
                problems.join("; ")
            ),
        );
    }
}

/// A request's `tools` value for `tools` in `format`: each tool in strict mode when `strict` is on,
/// strict mode can express its schema and `fits` takes its strict definition (a request's limits
/// on strict schemas together); else its plain definition, with a warning saying why. The tools
/// whose plain definition the format refuses are one error naming every problem.
pub(super) fn request_tools(
    format: &dyn ProviderFormat,
    api: &str,
    tools: &[UnifiedToolDefinition],
    strict: bool,
    fallbacks: &StrictFallbacks,
    mut fits: impl FnMut(&Value) -> Result<(), String>,
) -> Result<Value, ModelError> {
    let mut definitions = Vec::new();
    let mut problems = Vec::new();
    for tool in tools {
        match format.definition(tool.definition()) {
            Ok(plain) => {
                let strict = if strict {
                    strict_definition(format, tool, fallbacks, &mut fits)
                } else {
                    None
                };
                definitions.push(strict.unwrap_or(plain));
            }
            Err(found) => problems.extend(
                found
                    .iter()
                    .map(|problem| format!("`{}` {problem}", tool.name())),
            ),
        }
    }
    if !problems.is_empty() {
        return Err(ModelError::Config(format!(
            "tools the {api} cannot take: {}",
            problems.join("; ")
        )));
    }
    Ok(format.request_tools(definitions))
}

/// The tool's strict definition, if strict mode can express its schema and `fits` takes it; else
/// `None`, and a warning says why.
fn strict_definition(
    format: &dyn ProviderFormat,
    tool: &UnifiedToolDefinition,
    fallbacks: &StrictFallbacks,
    fits: &mut impl FnMut(&Value) -> Result<(), String>,
) -> Option<Value> {
    let strict = match format.strict_definition(tool.definition()) {
        Ok(strict) => strict,
        Err(problems) => {
            fallbacks.warn_problems(tool.name(), &problems);
            return None;
        }
    };
    match fits(&strict) {
        Ok(()) => Some(strict),
        Err(why) => {
            fallbacks.warn(tool.name(), &why);
            None
        }
    }
}

/// What both OpenAI clients' `from_env` read: `OPENAI_BASE_URL` (default
/// `https://api.openai.com/v1`), `OPENAI_MODEL` (required) and `OPENAI_API_KEY` (optional: local
/// servers need none).
pub(super) fn openai_env() -> Result<(String, String, Option<String>), ModelError> {
    let model = env("OPENAI_MODEL")
        .ok_or_else(|| ModelError::Config("set OPENAI_MODEL to the model to ask".into()))?;
    let base = env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
    Ok((base, model, env("OPENAI_API_KEY")))
}

/// The headers of a request with `key` (if any) as `Authorization: Bearer`.
pub(super) fn bearer(key: Option<&str>) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        secret_header(&mut headers, "authorization", &format!("Bearer {key}"))?;
    }
    Ok(headers)
}

/// An environment variable, if set and not empty.
pub(super) fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// An error and its sources on one line.
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
