//! The `url_fetch` tool: an HTTP GET of a public http or https URL, behind the
//! [SSRF guard](crate::net). Opt-in: the `url-fetch` feature.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_tools::url_fetch::url_fetch;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let err = url_fetch::definition()
//!     .call(r#"{"url": "http://169.254.169.254/latest/meta-data/"}"#, ToolContext::new("call_1"))
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert_eq!(
//!     err.message(),
//!     "the host `169.254.169.254` is an address in cloud instance metadata \
//!      (169.254.169.254/32, RFC 3927); only public internet hosts can be reached"
//! );
//! # });
//! ```
//!
//! # Configuration
//!
//! Without configuration the tool runs with the strict [`NetPolicy`] and the default
//! [`FetchLimits`]: being compiled in (the feature) is the opt-in. A host changes either by
//! providing a [`UrlFetchConfig`] to its runtime:
//!
//! ```
//! # use pleach as pleach_core; // the runtime, for this example
//! use std::time::Duration;
//! use pleach_core::Runtime;
//! use pleach_tools::net::{FetchLimits, NetPolicy};
//! use pleach_tools::url_fetch::UrlFetchConfig;
//!
//! let config = UrlFetchConfig::new()
//!     .policy(NetPolicy::new().only_ports([80, 443]))
//!     .limits(FetchLimits::new().max_body_bytes(64 * 1024).timeout(Duration::from_secs(10)));
//! let runtime = Runtime::builder().provide(config).build().unwrap();
//! # let _ = runtime;
//! ```

use pleach_core::content::ToolOutput;
use pleach_core::{ToolContext, ToolError, tool};
use reqwest::Method;
use reqwest::header::HeaderMap;

use crate::net::{self, FetchLimits, HttpResponse, NetPolicy, Outgoing};

/// The configuration of `url_fetch`, provided to the runtime with
/// [`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide) and read by each call.
///
/// ```
/// use pleach_tools::net::{FetchLimits, NetPolicy};
/// use pleach_tools::url_fetch::UrlFetchConfig;
///
/// let config = UrlFetchConfig::new().limits(FetchLimits::new().max_redirects(0));
/// // The policy stays the strict one unless told otherwise.
/// assert_eq!(config, UrlFetchConfig::new().policy(NetPolicy::new()).limits(FetchLimits::new().max_redirects(0)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlFetchConfig {
    policy: NetPolicy,
    limits: FetchLimits,
}

impl UrlFetchConfig {
    /// The strict policy and the default limits: what the tool uses when nothing is provided.
    ///
    /// ```
    /// use pleach_tools::net::{FetchLimits, NetPolicy};
    /// use pleach_tools::url_fetch::UrlFetchConfig;
    ///
    /// let config = UrlFetchConfig::new();
    /// assert_eq!(config, UrlFetchConfig::new().policy(NetPolicy::new()).limits(FetchLimits::new()));
    /// ```
    pub fn new() -> Self {
        UrlFetchConfig::default()
    }

    /// Sets which addresses and ports may be reached (default: [`NetPolicy::new`], strict).
    ///
    /// The port is checked before any name is resolved, so this call is refused offline:
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::net::NetPolicy;
    /// use pleach_tools::url_fetch::{UrlFetchConfig, url_fetch};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let config = UrlFetchConfig::new().policy(NetPolicy::new().only_ports([443]));
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///
    /// let err = url_fetch(ctx, "http://example.com/".to_owned()).await.unwrap_err();
    /// assert_eq!(err.code().as_u16(), 1001);
    /// assert_eq!(err.message(), "port 80 is not allowed here; the allowed ports are 443");
    /// # }
    /// ```
    #[must_use]
    pub fn policy(mut self, policy: NetPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the caps on body size, time and redirects (default: [`FetchLimits::new`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use pleach_tools::net::FetchLimits;
    /// use pleach_tools::url_fetch::UrlFetchConfig;
    ///
    /// let limits = FetchLimits::new().timeout(Duration::from_secs(5));
    /// let config = UrlFetchConfig::new().limits(limits);
    /// assert_ne!(config, UrlFetchConfig::new());
    /// ```
    #[must_use]
    pub fn limits(mut self, limits: FetchLimits) -> Self {
        self.limits = limits;
        self
    }
}

/// Fetches a web page or file with an HTTP GET and returns `{status, final_url, content_type,
/// headers, body, body_encoding, truncated}`; for example `https://example.com/` gives status 200
/// and the page's HTML in `body`.
///
/// Only http and https URLs of public internet hosts: local, private and reserved addresses
/// (`localhost`, `127.0.0.1`, `10.0.0.0/8`, `169.254.169.254`, …) are refused however they are
/// written, and so is a redirect to one. Redirects are followed (5 at most by default). The body
/// is text when it is UTF-8 and base64 otherwise, cut at a size limit (256 KiB by default) with
/// `truncated` true; an image or a PDF within the limit comes back as a content block the model
/// sees (`body_encoding` `content`, by its bytes, not its `content-type`). A status such as 404 is returned like any other; the call fails when the URL
/// is refused, the host cannot be reached, or the fetch takes longer than its time limit (30 s by
/// default).
#[tool]
pub async fn url_fetch(
    ctx: ToolContext,
    #[arg(
        description = "The absolute http or https URL to fetch, e.g. `https://example.com/page`"
    )]
    url: String,
) -> Result<ToolOutput<HttpResponse>, ToolError> {
    let default = UrlFetchConfig::new();
    let config = ctx.get::<UrlFetchConfig>().unwrap_or(&default);
    let request = Outgoing {
        method: Method::GET,
        url: net::parse_url(&url)?,
        headers: HeaderMap::new(),
        body: None,
    };
    let no_more_checks = |_: &url::Url| Ok(());
    net::send(
        request,
        &config.policy,
        &config.limits,
        &no_more_checks,
        &ctx.signal,
    )
    .await
    .map(net::into_output)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use pleach::{BatchingStrategy, Runtime, SessionOptions, infer_batching_strategy};
    use pleach_core::extensions::{Extensions, SessionState};
    use pleach_core::{ErrorCode, ToolCall};
    use serde_json::{Value, json};

    use super::*;
    use crate::net::test_server::{Reply, TestServer};
    use crate::test_support::refusal;

    fn context(config: UrlFetchConfig) -> ToolContext {
        ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new())
    }

    /// A config that reaches exactly `server`.
    fn reaching(server: &TestServer) -> UrlFetchConfig {
        UrlFetchConfig::new().policy(server.policy())
    }

    async fn fetch(url: &str, ctx: ToolContext) -> Result<Value, ToolError> {
        url_fetch::definition()
            .call(&json!({ "url": url }).to_string(), ctx)
            .await
            .map(|out| out.value().clone())
    }

    /// The result of fetching `url`, which must succeed.
    async fn fetched(url: &str, ctx: ToolContext) -> Value {
        match fetch(url, ctx).await {
            Ok(out) => out,
            Err(err) => panic!("{url}: {err} ({:?})", err.detail()),
        }
    }

    /// The error of fetching `url`, which must fail.
    async fn failure(url: &str, ctx: ToolContext) -> ToolError {
        match fetch(url, ctx).await {
            Ok(out) => panic!("{url} gave {out}, expected an error"),
            Err(err) => err,
        }
    }

    #[tokio::test]
    async fn fetches_a_page() {
        let server = TestServer::start(|_| {
            Reply::with(
                200,
                &[("content-type", "text/html; charset=utf-8"), ("x-one", "1")],
                "<p>héllo</p>",
            )
        })
        .await;
        let out = fetched(&server.url("/page?q=1"), context(reaching(&server))).await;
        assert_eq!(out["status"], 200);
        assert_eq!(out["body"], "<p>héllo</p>");
        assert_eq!(out["body_encoding"], "text");
        assert_eq!(out["truncated"], false);
        assert_eq!(out["content_type"], "text/html; charset=utf-8");
        assert_eq!(out["final_url"], server.url("/page?q=1"));
        assert_eq!(out["headers"]["x-one"], "1");
        assert_eq!(out["headers"]["content-length"], "13");

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].method, "GET");
        assert_eq!(requests[0].target, "/page?q=1");
        assert_eq!(
            requests[0].header("host"),
            Some(server.addr().to_string().as_str())
        );
        assert!(
            requests[0]
                .header("user-agent")
                .is_some_and(|ua| ua.starts_with("pleach-tools/"))
        );
    }

    /// What a host does: provide the configuration to the runtime, and every session's calls
    /// read it.
    #[tokio::test]
    async fn the_configuration_comes_from_the_runtime() {
        let server = TestServer::start(|_| Reply::ok("text/plain", "hello")).await;
        let call = ToolCall::new(
            "c1",
            "url_fetch",
            json!({ "url": server.url("/") }).to_string(),
        );
        let outcome = |runtime: Runtime| {
            let call = call.clone();
            async move {
                let session = runtime
                    .create_session(SessionOptions::enabled(["url_fetch"]))
                    .unwrap_or_else(|err| panic!("{err}"));
                session.call(call).await.outcome
            }
        };
        let build =
            |builder: pleach::RuntimeBuilder| builder.build().unwrap_or_else(|err| panic!("{err}"));

        let strict = outcome(build(Runtime::builder())).await;
        assert!(refusal(strict, &"strict").contains("loopback"));
        let open = outcome(build(Runtime::builder().provide(reaching(&server)))).await;
        let out = open.unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(out.value()["body"], "hello");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn an_error_status_is_a_result() {
        let server = TestServer::start(|_| Reply::with(404, &[], "no such page")).await;
        let out = fetched(&server.url("/missing"), context(reaching(&server))).await;
        assert_eq!(out["status"], 404);
        assert_eq!(out["body"], "no such page");
        assert_eq!(out["content_type"], Value::Null);
    }

    #[tokio::test]
    async fn the_default_policy_refuses_the_loopback_server() {
        let server = TestServer::start(|_| Reply::ok("text/plain", "secret")).await;
        // Nothing provided: the strict policy.
        let message = refusal(
            fetch(&server.url("/"), ToolContext::new("c1")).await,
            &"default",
        );
        assert!(message.contains("loopback"), "{message}");
        // Provided, without the exception.
        let message = refusal(
            fetch(&server.url("/"), context(UrlFetchConfig::new())).await,
            &"strict",
        );
        assert!(message.contains("loopback"), "{message}");
        assert!(server.requests().is_empty(), "no connection was made");
    }

    #[tokio::test]
    async fn ssrf_targets_are_refused_through_the_tool() {
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost/",
            "http://169.254.169.254/latest/meta-data/",
            "file:///etc/passwd",
        ] {
            let message = refusal(fetch(url, ToolContext::new("c1")).await, &url);
            assert!(!message.is_empty());
        }
    }

    #[tokio::test]
    async fn the_body_is_cut_at_the_cap() {
        let server = TestServer::start(|_| Reply::Endless).await;
        let config = reaching(&server).limits(FetchLimits::new().max_body_bytes(100_000));
        let out = fetched(&server.url("/big"), context(config)).await;
        assert_eq!(out["truncated"], true);
        assert_eq!(out["body"].as_str().map(str::len), Some(100_000));

        // A body exactly at the cap is whole.
        let exact = TestServer::start(|_| Reply::ok("text/plain", "x".repeat(1000))).await;
        let config = reaching(&exact).limits(FetchLimits::new().max_body_bytes(1000));
        let out = fetched(&exact.url("/"), context(config)).await;
        assert_eq!(out["truncated"], false);
        assert_eq!(out["body"].as_str().map(str::len), Some(1000));
    }

    #[tokio::test]
    async fn a_character_cut_by_the_cap_is_dropped() {
        // "é" is two bytes; a cap of 4 cuts the second "é" in half.
        let server = TestServer::start(|_| Reply::ok("text/plain", "aééé")).await;
        let config = reaching(&server).limits(FetchLimits::new().max_body_bytes(4));
        let out = fetched(&server.url("/"), context(config)).await;
        assert_eq!(out["body"], "aé");
        assert_eq!(out["body_encoding"], "text");
        assert_eq!(out["truncated"], true);
    }

    #[tokio::test]
    async fn an_image_body_is_a_content_block_by_its_bytes() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        let body = png.clone();
        let server =
            TestServer::start(move |_| Reply::ok("application/octet-stream", body.clone())).await;
        let out = url_fetch::definition()
            .call(
                &json!({ "url": server.url("/shot") }).to_string(),
                context(reaching(&server)),
            )
            .await
            .unwrap();
        assert_eq!(out.value()["body_encoding"], "content");
        assert_eq!(out.value()["body"], "");
        assert_eq!(out.content[0].kind(), "image");
        assert_eq!(out.content[0].media().unwrap().data, png);
    }

    #[tokio::test]
    async fn binary_bodies_come_in_base64() {
        let server =
            TestServer::start(|_| Reply::ok("image/png", [0x89, b'P', b'N', b'G', 0xff, 0x00]))
                .await;
        let out = fetched(&server.url("/img"), context(reaching(&server))).await;
        assert_eq!(out["body_encoding"], "base64");
        assert_eq!(out["body"], "iVBOR/8A");
        assert_eq!(out["content_type"], "image/png");
    }

    #[tokio::test]
    async fn redirects_within_the_policy_are_followed() {
        let server = TestServer::start(|request| match request.target.as_str() {
            "/old" => Reply::redirect(301, "/new"),
            "/new" => Reply::redirect(302, "new2?x=1"),
            _ => Reply::ok("text/plain", format!("at {}", request.target)),
        })
        .await;
        let out = fetched(&server.url("/old"), context(reaching(&server))).await;
        assert_eq!(out["status"], 200);
        assert_eq!(out["body"], "at /new2?x=1");
        assert_eq!(out["final_url"], server.url("/new2?x=1"));
        let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
        assert_eq!(targets, ["/old", "/new", "/new2?x=1"]);
    }

    #[tokio::test]
    async fn a_redirect_to_another_loopback_port_is_refused_at_the_hop() {
        let other = TestServer::start(|_| Reply::ok("text/plain", "internal secret")).await;
        let location = other.url("/admin");
        let server = TestServer::start(move |_| Reply::redirect(302, &location)).await;
        let err = fetch(&server.url("/go"), context(reaching(&server))).await;
        let message = refusal(err, &"redirect to loopback");
        assert_eq!(
            message,
            format!(
                "the response redirected to `{}`, which was not followed: the host `127.0.0.1` is \
                 an address in loopback (127.0.0.0/8, RFC 1122); only public internet hosts can \
                 be reached",
                other.url("/admin")
            )
        );
        assert_eq!(server.requests().len(), 1);
        assert!(
            other.requests().is_empty(),
            "the refused hop made no connection"
        );
    }

    #[tokio::test]
    async fn redirects_to_ssrf_targets_are_refused() {
        for (location, needle) in [
            ("http://localhost/", "names this machine"),
            ("http://localhost.:9/", "names this machine"),
            ("file:///etc/passwd", "the scheme `file:` is not allowed"),
            (
                "http://169.254.169.254/latest/meta-data/",
                "cloud instance metadata",
            ),
            ("http://[::ffff:127.0.0.1]/", "IPv4-mapped"),
            ("http://2130706433/", "loopback"),
            ("http://user:pw@example.com/", "user name or password"),
            ("gopher://example.com/", "the scheme `gopher:`"),
        ] {
            let server = TestServer::start(move |_| Reply::redirect(307, location)).await;
            let message = refusal(
                fetch(&server.url("/"), context(reaching(&server))).await,
                &location,
            );
            assert!(
                message.starts_with("the response redirected to `"),
                "{message}"
            );
            assert!(message.contains(needle), "{location}: {message}");
        }
    }

    #[tokio::test]
    async fn redirect_loops_end() {
        let server = TestServer::start(|_| Reply::redirect(302, "/again")).await;
        let err = failure(&server.url("/"), context(reaching(&server))).await;
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(
            err.message().starts_with("too many redirects: more than 5"),
            "{}",
            err.message()
        );
        assert_eq!(server.requests().len(), 6);

        // With redirects off, the redirect is the answer.
        let config = reaching(&server).limits(FetchLimits::new().max_redirects(0));
        let out = fetched(&server.url("/"), context(config)).await;
        assert_eq!(out["status"], 302);
        assert_eq!(out["headers"]["location"], "/again");
    }

    #[tokio::test]
    async fn an_invalid_redirect_location_fails() {
        let server = TestServer::start(|_| Reply::redirect(301, "http://[::1")).await;
        let err = failure(&server.url("/"), context(reaching(&server))).await;
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(
            err.message().contains("redirected to an invalid location"),
            "{}",
            err.message()
        );
    }

    #[tokio::test]
    async fn a_slow_server_times_out() {
        let server = TestServer::start(|_| Reply::Stall).await;
        let config =
            reaching(&server).limits(FetchLimits::new().timeout(Duration::from_millis(300)));
        let started = Instant::now();
        let err = failure(&server.url("/"), context(config)).await;
        assert_eq!(err.code(), ErrorCode::TimedOut);
        assert_eq!(
            err.message(),
            "the request to `127.0.0.1` did not finish within 300 ms; try again later or ask for \
             a smaller resource"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn cancelling_the_call_stops_the_request() {
        let server = TestServer::start(|_| Reply::Stall).await;
        let ctx = context(reaching(&server));
        let signal = ctx.signal.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            signal.cancel();
        });
        let started = Instant::now();
        let err = failure(&server.url("/"), ctx).await;
        assert_eq!(err.code(), ErrorCode::Cancelled);
        assert_eq!(err.message(), "the request was cancelled");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_closed_port_is_a_connection_failure() {
        // Bind and drop: the port is (almost certainly) closed for the moment of the test.
        let addr = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(addr) => addr,
            Err(err) => panic!("{err}"),
        };
        let config =
            UrlFetchConfig::new().policy(NetPolicy::new().dangerously_allow_socket_addr(addr));
        let err = failure(&format!("http://{addr}/"), context(config)).await;
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(
            err.message()
                .starts_with("could not connect to `127.0.0.1`"),
            "{}",
            err.message()
        );
        assert!(err.detail().is_some());
    }

    #[tokio::test]
    async fn https_to_a_server_without_tls_fails_cleanly() {
        let server = TestServer::start(|_| Reply::ok("text/plain", "not tls")).await;
        let url = format!("https://{}/", server.addr());
        let err = failure(&url, context(reaching(&server))).await;
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(
            err.message()
                .starts_with("could not connect to `127.0.0.1`"),
            "{}",
            err.message()
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_schema_errors() {
        for args in [
            "{}",
            r#"{"url": 5}"#,
            r#"{"url": "https://example.com", "method": "POST"}"#,
        ] {
            let err = url_fetch::definition()
                .call(args, ToolContext::new("c1"))
                .await
                .err()
                .unwrap_or_else(|| panic!("{args} must fail"));
            assert_eq!(err.code(), ErrorCode::InputInvalid, "{args}");
        }
    }

    #[test]
    fn the_schemas_name_the_url_and_the_response() {
        let tool = url_fetch::definition();
        assert_eq!(tool.name(), "url_fetch");
        assert_eq!(tool.input_schema()["required"], json!(["url"]));
        let output = tool
            .output_schema()
            .unwrap_or_else(|| panic!("typed output"));
        for field in [
            "status",
            "final_url",
            "content_type",
            "headers",
            "body",
            "body_encoding",
            "truncated",
        ] {
            assert!(output["properties"].get(field).is_some(), "{field}");
        }
        assert_eq!(
            infer_batching_strategy(&tool),
            BatchingStrategy::Chunked {
                key: "url".to_owned()
            },
            "the crate docs' table says chunked by `url`"
        );
    }
}
