//! `HttpOptions::session_store` in process: two [`HttpServer`]s (two replicas) sharing one real
//! `redis-server` (Debian package `redis-server`) started on a free loopback port, driven over
//! raw HTTP as an initialize-based client (MCP 2025-11-25) drives them: a session started on one
//! is served by the other with its scratchpad, a call without progress is answered with JSON, one
//! with a `progressToken` streams its progress, and a `DELETE` on one ends the session on both.
//!
//! Without `redis-server` on the machine the test says so and passes, unless
//! `PLEACH_REQUIRE_REDIS` is set (CI sets it, after installing the package).

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pleach_core::{Runtime, ToolContext, tool};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer, RedisSessionStore};
use serde_json::{Value, json};

/// Reports a step of progress, then answers.
#[tool]
async fn sessions_one_step(ctx: ToolContext) -> i64 {
    ctx.progress(json!({ "step": 1 }));
    tokio::task::yield_now().await;
    1
}

/// A `redis-server` on a free loopback port, killed when dropped.
struct Redis {
    child: Child,
    url: String,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `redis-server`, or says why not (`None`: not installed and not required).
async fn start_redis() -> Option<Redis> {
    let binary = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists());
    let Some(binary) = binary else {
        assert!(
            std::env::var_os("PLEACH_REQUIRE_REDIS").is_none(),
            "PLEACH_REQUIRE_REDIS is set, and redis-server is not installed"
        );
        eprintln!("redis-server is not installed (apt-get install redis-server): not run");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let dir = std::env::temp_dir();
    let child = Command::new(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("redis-server starts");
    let redis = Redis {
        child,
        url: format!("redis://127.0.0.1:{port}/0"),
    };
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some(redis);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("redis-server did not listen on port {port} within 5 s");
}

/// One replica: the compile-time registry with the scratchpad persisted, its sessions in `url`.
async fn replica(url: &str) -> SocketAddr {
    let runtime = Runtime::builder()
        .persist_state::<pleach_tools::scratchpad::Scratchpad>()
        .build()
        .expect("the registry builds");
    let store = RedisSessionStore::connect(url)
        .await
        .expect("Redis answers");
    let options = HttpOptions::new(([127, 0, 0, 1], 0).into()).session_store(store);
    let http = HttpServer::new(McpServer::new(runtime).expect("tools describable"), options)
        .expect("options hold");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move { http.serve(listener, std::future::pending()).await });
    address
}

/// Sends one JSON-RPC message to `address` in `session`; the status, content type and body.
async fn post(
    client: &reqwest::Client,
    address: SocketAddr,
    session: Option<&str>,
    message: &Value,
) -> (u16, String, String, Option<String>) {
    let mut request = client
        .post(format!("http://{address}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(message.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = tokio::time::timeout(Duration::from_secs(15), request.send())
        .await
        .expect("answered within 15 s")
        .expect("sent");
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let kind = header("content-type").unwrap_or_default();
    let session = header("mcp-session-id");
    let body = response.text().await.expect("a body");
    (status, kind, body, session)
}

fn call(id: u64, name: &str, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_and_its_scratchpad_are_served_by_either_replica() {
    let Some(redis) = start_redis().await else {
        return;
    };
    let (a, b) = (replica(&redis.url).await, replica(&redis.url).await);
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(pleach_contract::tls::client_config().expect("TLS set up"))
        .build()
        .expect("a client");

    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "sessions-test", "version": "1.0.0"}}});
    let (status, kind, body, session) = post(&client, a, None, &initialize).await;
    assert_eq!(status, 200, "{body}");
    assert!(kind.starts_with("application/json"), "{kind}: {body}");
    let session = session.expect("the server gives the session an id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&client, a, Some(&session), &initialized).await.0, 202);

    let set = call(
        1,
        "scratchpad",
        &json!({"operation": "set", "key": "plan", "value": "read, then sum"}),
    );
    let (status, kind, body, _) = post(&client, a, Some(&session), &set).await;
    assert_eq!(status, 200, "{body}");
    assert!(kind.starts_with("application/json"), "{kind}: {body}");

    // The other replica has never seen the session: it restores it, and the note with it.
    let get = call(2, "scratchpad", &json!({"operation": "get", "key": "plan"}));
    let (status, _, body, _) = post(&client, b, Some(&session), &get).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        answer["result"]["structuredContent"]["value"],
        json!("read, then sum"),
        "{body}"
    );

    // With a progress token the answer is a stream: the progress, then the result.
    let mut with_progress = call(3, "sessions_one_step", &json!({}));
    with_progress["params"]["_meta"] = json!({"progressToken": "p1"});
    let (status, kind, body, _) = post(&client, b, Some(&session), &with_progress).await;
    assert_eq!(status, 200, "{body}");
    assert!(kind.starts_with("text/event-stream"), "{kind}: {body}");
    let progress = body
        .find("notifications/progress")
        .expect("a progress notification");
    let result = body.find(r#""id":3"#).expect("the result");
    assert!(progress < result, "progress before the result: {body}");

    // A DELETE on one replica ends the session on both.
    let deleted = client
        .delete(format!("http://{a}/mcp"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("sent");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    for replica in [a, b] {
        let (status, _, body, _) = post(&client, replica, Some(&session), &get).await;
        assert_eq!(status, 404, "{body}");
    }
}
