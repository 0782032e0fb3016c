//! `pleach_mcp::http` at its edge, under traffic a load generator or an attacker sends: requests
//! written byte by byte on raw sockets (an HTTP client library would normalise what is tested
//! away), against [`HttpServer::serve`] on a loopback port. Capacity refusals, slow and idle
//! connections, `Host` and request-target tricks, announced oversized bodies, browsers' CORS
//! preflights and the protocols spoken.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use pleach_core::{OverloadPolicy, Runtime, ToolContext, tool};
use pleach_mcp::http::{HttpOptions, HttpServer};
use pleach_mcp::{McpError, McpServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// How long any step may take before the test fails instead of hanging.
const BOUND: Duration = Duration::from_secs(20);

/// Sleeps `millis` milliseconds, or until its call is cancelled; answers how long it slept.
#[tool]
async fn edge_pause(ctx: ToolContext, millis: u64) -> u64 {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(millis)) => millis,
        () = ctx.signal.cancelled() => 0,
    }
}

/// A server serving on a free loopback port until the test ends or it drains.
struct Running {
    address: SocketAddr,
    http: HttpServer,
    served: JoinHandle<Result<(), McpError>>,
}

async fn start(runtime: Runtime, options: impl FnOnce(HttpOptions) -> HttpOptions) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("bound");
    let mcp = McpServer::new(runtime).expect("every tool can be described to MCP");
    let http = HttpServer::new(mcp, options(HttpOptions::new(address))).expect("options hold");
    let served = tokio::spawn({
        let http = http.clone();
        async move { http.serve(listener, std::future::pending()).await }
    });
    Running {
        address,
        http,
        served,
    }
}

fn runtime() -> Runtime {
    Runtime::builder().build().expect("the registry builds")
}

/// A `tools/call` POST of `edge_pause` as a 2025-11-25 client sends it, the connection closed
/// after the answer, with `extra` header lines (each ending in `\r\n`).
fn pause_request(address: SocketAddr, millis: u64, extra: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "edge_pause", "arguments": {"millis": millis}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
         connection: close\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends `request` on a new connection and reads until the server closes it.
async fn exchange(address: SocketAddr, request: &[u8]) -> String {
    tokio::time::timeout(BOUND, async {
        let mut stream = TcpStream::connect(address).await.expect("connects");
        stream.write_all(request).await.expect("sent");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await
    .expect("the server answers and closes within the bound")
}

fn status(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP/1.1 response: {answer:?}"))
}

/// The value of header `name` (lowercase) in a raw response.
fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next().unwrap_or("");
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// A connection that has sent `bytes` and sends nothing more.
async fn sending(address: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connects");
    stream.write_all(bytes).await.expect("sent");
    stream
}

/// Whether the server closes `stream` (or answers and closes it) within `limit`.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buffer = [0_u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_capacity_every_refusal_is_a_503_with_retry_after_never_a_200_carrying_1014() {
    let runtime = Runtime::builder()
        .max_in_flight(2)
        .overload_policy(OverloadPolicy::FailFast)
        .build()
        .expect("the registry builds");
    let server = start(runtime, |options| options).await;
    let (mut succeeded, mut refused) = (0, 0);
    for _round in 0..4 {
        let calls: Vec<_> = (0..16)
            .map(|_| {
                let request = pause_request(server.address, 40, "");
                tokio::spawn(async move { exchange(server.address, request.as_bytes()).await })
            })
            .collect();
        for call in calls {
            let answer = call.await.expect("the client task ends");
            match status(&answer) {
                200 => {
                    assert!(
                        answer.contains("\"isError\":false"),
                        "a 200 carries a result, never a refusal: {answer}"
                    );
                    succeeded += 1;
                }
                503 => {
                    assert_eq!(header(&answer, "retry-after"), Some("1"), "{answer}");
                    refused += 1;
                }
                other => panic!("{other}: {answer}"),
            }
        }
    }
    assert!(
        succeeded >= 2 && refused >= 1,
        "{succeeded} ran, {refused} refused"
    );
}

#[tokio::test]
async fn a_request_whose_headers_never_end_is_closed_after_the_header_timeout() {
    let server = start(runtime(), |options| {
        options.header_timeout(Duration::from_millis(500))
    })
    .await;
    let mut slow = sending(server.address, b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n").await;
    let started = Instant::now();
    assert!(
        closed_within(&mut slow, Duration::from_secs(5)).await,
        "a request whose headers never end is cut"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn with_every_connection_taken_a_new_one_waits_until_slow_ones_are_cut() {
    let server = start(runtime(), |options| {
        options
            .max_connections(2)
            .header_timeout(Duration::from_secs(1))
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..2 {
        slow.push(
            sending(
                server.address,
                b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n",
            )
            .await,
        );
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let probe = tokio::spawn(exchange(
        server.address,
        b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !probe.is_finished(),
        "past the cap, a connection waits to be taken"
    );
    let answer = probe.await.expect("the probe ends");
    assert_eq!(status(&answer), 200, "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn draining_closes_idle_and_half_sent_connections_at_once() {
    let server = start(runtime(), |options| {
        options.drain_timeout(Duration::from_secs(30))
    })
    .await;
    let mut open = Vec::new();
    for _ in 0..3 {
        // A whole request answered, the connection kept alive for the next one.
        let mut stream = sending(
            server.address,
            b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        )
        .await;
        let mut buffer = [0_u8; 256];
        let read = stream.read(&mut buffer).await.expect("answered");
        assert!(buffer[..read].starts_with(b"HTTP/1.1 200"));
        open.push(stream);
    }
    for _ in 0..2 {
        open.push(sending(server.address, b"GET /healthz HTTP/1.1\r\nhost: 127.").await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    server.http.start_draining();
    tokio::time::timeout(Duration::from_secs(5), server.served)
        .await
        .expect("the drain ends promptly, no call running")
        .expect("the server task ends")
        .expect("served");
    assert!(started.elapsed() < Duration::from_secs(5));
    for stream in &mut open {
        assert!(closed_within(stream, Duration::from_secs(1)).await);
    }
}

#[tokio::test]
async fn without_a_resource_the_challenge_and_the_metadata_name_the_servers_own_address() {
    let server = start(runtime(), |options| options.bearer_token("s3cret")).await;
    let address = server.address;
    let challenged = exchange(
        address,
        b"POST /mcp HTTP/1.1\r\nhost: attacker.example\r\ncontent-type: application/json\r\n\
          connection: close\r\ncontent-length: 2\r\n\r\n{}",
    )
    .await;
    assert_eq!(status(&challenged), 401, "{challenged}");
    let challenge = header(&challenged, "www-authenticate").expect("a challenge");
    assert_eq!(
        challenge,
        format!(
            "Bearer resource_metadata=\"http://{address}/.well-known/oauth-protected-resource/mcp\""
        )
    );
    let metadata = exchange(
        address,
        b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nhost: attacker.example\r\n\
          connection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status(&metadata), 200, "{metadata}");
    assert!(!metadata.contains("attacker"), "{metadata}");
    assert!(
        metadata.contains(&format!("\"resource\":\"http://{address}/mcp\"")),
        "{metadata}"
    );
}

#[tokio::test]
async fn two_host_lines_or_an_absolute_target_for_another_host_get_400() {
    let server = start(runtime(), |options| options).await;
    let address = server.address;
    let two_hosts = pause_request(address, 1, "host: attacker.example\r\n");
    let answer = exchange(address, two_hosts.as_bytes()).await;
    assert_eq!(status(&answer), 400, "{answer}");
    let absolute = pause_request(address, 1, "").replacen(
        "POST /mcp ",
        "POST http://attacker.example/mcp ",
        1,
    );
    let answer = exchange(address, absolute.as_bytes()).await;
    assert_eq!(status(&answer), 400, "{answer}");
    // The absolute form naming the server itself is a request like any other.
    let own = pause_request(address, 1, "").replacen(
        "POST /mcp ",
        &format!("POST http://{address}/mcp "),
        1,
    );
    let answer = exchange(address, own.as_bytes()).await;
    assert_eq!(status(&answer), 200, "{answer}");
}

#[tokio::test]
async fn an_announced_body_over_the_limit_gets_413_before_it_is_sent() {
    let server = start(runtime(), |options| options.max_body_bytes(1024)).await;
    for expect in ["", "expect: 100-continue\r\n"] {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n{expect}content-length: 1000000\r\n\r\n"
        );
        let mut stream = sending(server.address, head.as_bytes()).await;
        let mut buffer = [0_u8; 1024];
        let read = tokio::time::timeout(Duration::from_secs(3), stream.read(&mut buffer))
            .await
            .expect("answered without the body")
            .expect("read");
        let answer = String::from_utf8_lossy(&buffer[..read]);
        assert!(answer.starts_with("HTTP/1.1 413"), "{expect:?}: {answer}");
    }
}

/// `OPTIONS` as a browser sends it before a cross-origin POST with these headers.
fn preflight(address: SocketAddr, origin: &str) -> String {
    format!(
        "OPTIONS /mcp HTTP/1.1\r\nhost: {address}\r\norigin: {origin}\r\n\
         access-control-request-method: POST\r\n\
         access-control-request-headers: authorization, content-type, mcp-protocol-version\r\n\
         connection: close\r\n\r\n"
    )
}

#[tokio::test]
async fn a_browser_page_of_an_allowed_origin_may_call_and_no_other() {
    let server = start(runtime(), |options| {
        options
            .bearer_token("s3cret")
            .allow_origin("http://localhost:*")
    })
    .await;
    let address = server.address;
    let answer = exchange(
        address,
        preflight(address, "http://localhost:5173").as_bytes(),
    )
    .await;
    assert!((200..300).contains(&status(&answer)), "{answer}");
    assert_eq!(
        header(&answer, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    let allowed = header(&answer, "access-control-allow-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "mcp-protocol-version",
        "mcp-session-id",
        "last-event-id",
        "mcp-method",
        "mcp-name",
    ] {
        assert!(allowed.contains(name), "{name} in {allowed}");
    }
    let methods = header(&answer, "access-control-allow-methods").unwrap_or_default();
    assert!(methods.contains("POST"), "{methods}");

    let other = exchange(
        address,
        preflight(address, "https://attacker.example").as_bytes(),
    )
    .await;
    assert_eq!(
        header(&other, "access-control-allow-origin"),
        None,
        "{other}"
    );

    let call = pause_request(
        address,
        1,
        "origin: http://localhost:5173\r\nauthorization: Bearer s3cret\r\n",
    );
    let answer = exchange(address, call.as_bytes()).await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(
        header(&answer, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    let exposed = header(&answer, "access-control-expose-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id"), "{answer}");

    // A client without `Origin` skips the CORS layer's work, not the `Vary` it gives such a
    // request: a cache keeps the answers to browsers and to other clients apart. What only a
    // browser reads, and only on an answer to a request with `Origin`, is left out.
    let plain = pause_request(address, 1, "authorization: Bearer s3cret\r\n");
    let answer = exchange(address, plain.as_bytes()).await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(header(&answer, "access-control-allow-origin"), None);
    let vary = header(&answer, "vary")
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(
        vary.contains("origin") && vary.contains("access-control-request-method"),
        "{answer}"
    );
    assert_eq!(header(&answer, "access-control-expose-headers"), None);

    let refused = pause_request(
        address,
        1,
        "origin: https://attacker.example\r\nauthorization: Bearer s3cret\r\n",
    );
    let answer = exchange(address, refused.as_bytes()).await;
    assert_eq!(status(&answer), 403, "{answer}");
    assert_eq!(header(&answer, "access-control-allow-origin"), None);
}

#[tokio::test]
async fn http2_with_prior_knowledge_is_not_spoken_in_any_build() {
    let server = start(runtime(), |options| options).await;
    // The HTTP/2 connection preface, then an empty SETTINGS frame.
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    let answer = tokio::time::timeout(BOUND, async {
        let mut stream = TcpStream::connect(server.address).await.expect("connects");
        stream.write_all(&hello).await.expect("sent");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        answer
    })
    .await
    .expect("the server closes the connection");
    // An HTTP/2 server's first frame is its SETTINGS (type 4); an HTTP/1.1 server answers in
    // HTTP/1.1 or closes.
    assert!(
        answer.is_empty() || answer.starts_with(b"HTTP/1.1 "),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
}

#[tokio::test]
async fn on_loopback_the_loopback_origins_of_any_port_may_call_and_no_other() {
    let server = start(runtime(), |options| options).await;
    let address = server.address;
    let port = address.port();
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
        "http://localhost:5173".to_owned(),
        "http://127.0.0.1".to_owned(),
    ] {
        let call = pause_request(address, 1, &format!("origin: {origin}\r\n"));
        let answer = exchange(address, call.as_bytes()).await;
        assert_eq!(status(&answer), 200, "{origin}: {answer}");
        assert_eq!(
            header(&answer, "access-control-allow-origin"),
            Some(origin.as_str()),
            "{origin}: {answer}"
        );
    }
    for origin in [
        "https://attacker.example",
        "http://localhost.attacker.example",
        "http://127.0.0.2:80",
    ] {
        let call = pause_request(address, 1, &format!("origin: {origin}\r\n"));
        let answer = exchange(address, call.as_bytes()).await;
        assert_eq!(status(&answer), 403, "{origin}: {answer}");
    }
}

#[tokio::test]
async fn off_loopback_a_loopback_origin_still_needs_allow_origin() {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    let options = HttpOptions::new(listener.local_addr().expect("bound")).bearer_token("s3cret");
    let http = HttpServer::new(
        McpServer::new(runtime()).expect("every tool can be described to MCP"),
        options,
    )
    .expect("options hold");
    let served = tokio::spawn({
        let http = http.clone();
        async move { http.serve(listener, std::future::pending()).await }
    });
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let call = pause_request(
        address,
        1,
        &format!("origin: http://localhost:{port}\r\nauthorization: Bearer s3cret\r\n"),
    );
    let answer = exchange(address, call.as_bytes()).await;
    assert_eq!(status(&answer), 403, "{answer}");
    served.abort();
}
