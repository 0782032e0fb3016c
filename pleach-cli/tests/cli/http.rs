//! `pleach mcp --http`: the binary served on loopback and driven over real HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A `pleach mcp --http 127.0.0.1:0 …` process: killed on drop, its stderr printed when the test
/// fails.
struct Server {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        Server::try_start(args)
            .unwrap_or_else(|(status, log)| panic!("the server did not start ({status:?}):\n{log}"))
    }

    /// The server, or how it ended and what it said when it did not start.
    fn try_start(args: &[&str]) -> Result<Server, (Option<ExitStatus>, String)> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pleach"))
            .args(["mcp", "--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let log = Arc::new(Mutex::new(String::new()));
        let (sender, receiver) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().expect("piped");
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("pleach mcp: listening on ") {
                    let _ = sender.send(url.to_owned());
                }
                let mut log = kept.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        if let Ok(url) = receiver.recv_timeout(Duration::from_secs(20)) {
            return Ok(Server { child, url, log });
        }
        let status = wait_for(&mut child, Duration::from_secs(5));
        if status.is_none() {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(100));
        let log = log.lock().unwrap().clone();
        Err((status, log))
    }

    fn base(&self) -> &str {
        self.url.strip_suffix("/mcp").expect("the URL ends in /mcp")
    }

    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
    }

    fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        wait_for(&mut self.child, limit)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- pleach mcp --http said:\n{}", self.log.lock().unwrap());
        }
    }
}

fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            return Some(status);
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .tls_backend_preconfigured(pleach_contract::tls::client_config().expect("TLS set up"))
        .build()
        .expect("a client")
}

/// A JSON-RPC POST as MCP clients send it (2025-11-25, the header of that version), with extra
/// headers.
fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::blocking::Response {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().expect("the server answers")
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
}

fn call(id: u64, name: &str, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// The JSON-RPC message of a response, JSON or SSE (the last `data:` line that holds one).
fn message(response: reqwest::blocking::Response) -> Value {
    let sse = response.headers().get("content-type").is_some_and(|value| {
        value
            .to_str()
            .unwrap_or("")
            .starts_with("text/event-stream")
    });
    let text = response.text().expect("a body");
    if !sse {
        return serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC response in the stream: {text}"))
}

#[test]
fn http_lists_and_calls_tools_as_stdio_does() {
    let server = Server::start(&[]);
    let hello = message(post(&server.url, &initialize(), &[]));
    assert_eq!(hello["result"]["serverInfo"]["name"], "pleach", "{hello}");
    assert!(hello["result"]["capabilities"]["tools"].is_object());

    let listed = message(post(
        &server.url,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        &[],
    ));
    let tools = listed["result"]["tools"].as_array().expect("a tool list");
    assert!(tools.iter().any(|tool| tool["name"] == "math"), "{listed}");

    let good = message(post(
        &server.url,
        &call(3, "math", &json!({"expression": "6*7"})),
        &[],
    ));
    assert_eq!(
        good["result"]["structuredContent"]["result"], 42.0,
        "{good}"
    );
    assert_eq!(good["result"]["isError"], false);

    let bad = message(post(
        &server.url,
        &call(4, "math", &json!({"expression": 42})),
        &[],
    ));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let text = bad["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("error 1001: "), "{text}");

    let unknown = message(post(&server.url, &call(5, "no_such_tool", &json!({})), &[]));
    assert!(
        unknown["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "{unknown}"
    );
}

#[test]
fn a_browser_origin_not_allowed_gets_403_and_loopback_or_allowed_ones_pass() {
    let server = Server::start(&["--allow-origin", "https://app.example.com"]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let evil = post(&server.url, &list, &[("origin", "https://evil.example")]);
    assert_eq!(evil.status(), 403);
    let refusal: Value = serde_json::from_str(&evil.text().unwrap()).unwrap();
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("https://evil.example")
    );
    // Every method is checked, not only POST.
    let get = client()
        .get(&server.url)
        .header("origin", "https://evil.example")
        .header("accept", "text/event-stream")
        .send()
        .unwrap();
    assert_eq!(get.status(), 403);
    let allowed = post(&server.url, &list, &[("origin", "https://app.example.com")]);
    assert_eq!(allowed.status(), 200);
    let no_origin = post(&server.url, &list, &[]);
    assert_eq!(no_origin.status(), 200);

    // On loopback, the loopback origins (any port) pass without `--allow-origin`; any other
    // browser origin is refused.
    let local = Server::start(&[]);
    let port = reqwest::Url::parse(&local.url).unwrap().port().unwrap();
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
        "http://localhost:3000".to_owned(),
    ] {
        let page = post(&local.url, &list, &[("origin", origin.as_str())]);
        assert_eq!(page.status(), 200, "{origin}");
    }
    let page = post(&local.url, &list, &[("origin", "https://app.example.com")]);
    assert_eq!(page.status(), 403);
}

#[test]
fn bearer_tokens_from_a_file_are_required_and_the_401_says_where_to_get_one() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "# one a line\nfirst-token\n\n  second-token  \n").unwrap();
    let server = Server::start(&[
        "--token-file",
        tokens.to_str().unwrap(),
        "--resource",
        "https://tools.example.com/mcp",
        "--authorization-server",
        "https://auth.example.com/",
    ]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let metadata_url = "https://tools.example.com/.well-known/oauth-protected-resource/mcp";

    let missing = post(&server.url, &list, &[]);
    assert_eq!(missing.status(), 401);
    assert_eq!(
        missing.headers()["www-authenticate"],
        format!("Bearer resource_metadata=\"{metadata_url}\"").as_str()
    );
    let wrong = post(
        &server.url,
        &list,
        &[("authorization", "Bearer first-tokenX")],
    );
    assert_eq!(wrong.status(), 401);
    let challenge = wrong.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(challenge.contains(metadata_url), "{challenge}");

    for token in ["first-token", "second-token"] {
        let auth = format!("Bearer {token}");
        let ok = post(&server.url, &list, &[("authorization", &auth)]);
        assert_eq!(ok.status(), 200, "{token}");
    }

    // The protected-resource metadata (RFC 9728), without a token, at the path MCP clients try
    // first and at the root form.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let document: Value = serde_json::from_str(
            &client()
                .get(format!("{}{path}", server.base()))
                .send()
                .unwrap()
                .text()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(document["resource"], "https://tools.example.com/mcp");
        assert_eq!(
            document["authorization_servers"],
            json!(["https://auth.example.com/"])
        );
    }
    // Health needs no token: load balancers have none.
    let health = client()
        .get(format!("{}/healthz", server.base()))
        .send()
        .unwrap();
    assert_eq!(health.status(), 200);
}

/// Test keys (Ed25519), made for these tests only.
const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIPN24jjz/M+TL1qKnIXovkUMp0OR3aOart3+QIyapQAe
-----END PRIVATE KEY-----";
const TEST_KEY_X: &str = "a4jQv5LPTYPLFg4wSFbm4LCm08Jm6ZiLmWe331ETUP0";
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIAyytLNo9e5JwPzTws6ZZSolIUbESAy2qU0gXyEQXMOD
-----END PRIVATE KEY-----";

/// Serves `body` as JSON to every request on a loopback port until the process ends; counts the
/// requests.
fn serve_json(body: String) -> (String, Arc<Mutex<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let served = Arc::new(Mutex::new(0));
    let count = Arc::clone(&served);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0_u8; 4096];
            let _ = stream.read(&mut request);
            *count.lock().unwrap() += 1;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, served)
}

fn jwt(key: &str, kid: &str, claims: &Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(kid.to_owned());
    let key = jsonwebtoken::EncodingKey::from_ed_pem(key.as_bytes()).unwrap();
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn jwt_access_tokens_are_checked_against_the_authorization_servers_keys() {
    let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": TEST_KEY_X,
        "kid": "test-key", "alg": "EdDSA", "use": "sig"}]});
    let (jwks_url, fetched) = serve_json(jwks.to_string());
    let issuer = "https://auth.example.com/";
    let audience = "https://tools.example.com/mcp";
    let server = Server::start(&[
        "--jwks-url",
        &jwks_url,
        "--issuer",
        issuer,
        "--audience",
        audience,
    ]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let good_claims = json!({"iss": issuer, "aud": audience, "sub": "alice", "exp": now() + 300});
    let send = |token: &str| {
        let auth = format!("Bearer {token}");
        post(&server.url, &list, &[("authorization", &auth)])
    };

    let good = send(&jwt(TEST_KEY, "test-key", &good_claims));
    assert_eq!(good.status(), 200);
    let listed = message(good);
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty()),
        "{listed}"
    );

    let mut expired = good_claims.clone();
    expired["exp"] = json!(now() - 3600);
    let mut wrong_audience = good_claims.clone();
    wrong_audience["aud"] = json!("https://elsewhere.example.com/mcp");
    let mut wrong_issuer = good_claims.clone();
    wrong_issuer["iss"] = json!("https://impostor.example.com/");
    let mut no_expiry = good_claims.clone();
    no_expiry.as_object_mut().unwrap().remove("exp");
    let hs256 = {
        let key = jsonwebtoken::EncodingKey::from_secret(TEST_KEY_X.as_bytes()).unwrap();
        jsonwebtoken::encode(&jsonwebtoken::Header::default(), &good_claims, &key).unwrap()
    };
    for (case, token, reason) in [
        ("expired", jwt(TEST_KEY, "test-key", &expired), "xpired"),
        (
            "wrong aud",
            jwt(TEST_KEY, "test-key", &wrong_audience),
            "udience",
        ),
        (
            "wrong iss",
            jwt(TEST_KEY, "test-key", &wrong_issuer),
            "ssuer",
        ),
        ("no exp", jwt(TEST_KEY, "test-key", &no_expiry), "exp"),
        (
            "other key",
            jwt(OTHER_KEY, "test-key", &good_claims),
            "ignature",
        ),
        (
            "unknown kid",
            jwt(OTHER_KEY, "other-key", &good_claims),
            "other-key",
        ),
        ("HS256", hs256, "asymmetric"),
        ("not a JWT", "not-a-jwt".to_owned(), "not a JWT"),
    ] {
        let refused = send(&token);
        assert_eq!(refused.status(), 401, "{case}");
        let challenge = refused.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(challenge.contains("invalid_token"), "{case}: {challenge}");
        assert!(
            challenge.to_lowercase().contains(&reason.to_lowercase()),
            "{case}: {challenge}"
        );
    }
    // The keys are fetched once, not for every token (an unknown `kid` may fetch them again, at
    // most every 30 s).
    assert!(
        *fetched.lock().unwrap() <= 2,
        "{} fetches",
        fetched.lock().unwrap()
    );
}

#[test]
fn off_loopback_without_auth_refuses_to_start_unless_told_it_is_insecure() {
    let mut refused = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(["mcp", "--http", "0.0.0.0:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_for(&mut refused, Duration::from_secs(20)).expect("it exits");
    assert_eq!(status.code(), Some(2));
    let mut said = String::new();
    refused
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert!(said.contains("without authentication"), "{said}");
    assert!(said.contains("--insecure-no-auth"), "{said}");

    let mut insecure = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(["mcp", "--http", "0.0.0.0:0", "--insecure-no-auth"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(insecure.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = insecure.kill();
    let _ = insecure.wait();
    assert!(
        line.starts_with("pleach mcp: listening on http://0.0.0.0:"),
        "{line}"
    );
}

#[test]
fn bad_requests_get_their_status_and_the_server_keeps_serving() {
    let server = Server::start(&["--max-body-bytes", "1024"]);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "math", "arguments": {"expression": "1+".repeat(1000) + "1"}}});
    let too_big = post(&server.url, &big, &[]);
    assert_eq!(too_big.status(), 413);
    assert!(message(too_big)["error"]["message"].is_string());

    let garbage = client()
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(garbage.status(), 400);
    assert_eq!(message(garbage)["error"]["code"], -32700);
    let wrong_type = client()
        .post(&server.url)
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string())
        .send()
        .unwrap();
    assert_eq!(wrong_type.status(), 415);
    let refusal = message(wrong_type);
    assert!(
        refusal["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("application/json")),
        "{refusal}"
    );
    let bad_params = message(post(
        &server.url,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 5}}),
        &[],
    ));
    assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");

    let health = client()
        .get(format!("{}/healthz", server.base()))
        .send()
        .unwrap();
    assert_eq!(health.status(), 200);
    let good = message(post(
        &server.url,
        &call(8, "math", &json!({"expression": "1+1"})),
        &[],
    ));
    assert_eq!(good["result"]["structuredContent"]["result"], 2.0, "{good}");
}

/// A server whose `shell_exec` may run `sleep`.
fn server_with_sleep(dir: &std::path::Path, extra: &[&str]) -> Server {
    let mut args = vec![
        "--root",
        dir.to_str().unwrap(),
        "--allow-program",
        "sleep",
        "--timeout",
        "60s",
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn sleep_call(id: u64, seconds: &str) -> Value {
    call(
        id,
        "shell_exec",
        &json!({"program": "sleep", "args": [seconds]}),
    )
}

#[test]
fn sigterm_drains_running_calls_then_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = server_with_sleep(dir.path(), &["--drain-notice", "1500ms"]);
    let url = server.url.clone();
    let running = std::thread::spawn(move || message(post(&url, &sleep_call(1, "2"), &[])));
    std::thread::sleep(Duration::from_millis(500));
    server.signal("TERM");
    std::thread::sleep(Duration::from_millis(300));

    // During the notice: health says draining, calls are still served.
    let health = client()
        .get(format!("{}/healthz", server.base()))
        .send()
        .unwrap();
    assert_eq!(health.status(), 503);
    let still = message(post(
        &server.url,
        &call(2, "math", &json!({"expression": "2*3"})),
        &[],
    ));
    assert_eq!(
        still["result"]["structuredContent"]["result"], 6.0,
        "{still}"
    );

    // The running call finishes with its result, then the process exits 0.
    let finished = running.join().unwrap();
    assert_eq!(finished["result"]["isError"], false, "{finished}");
    let status = server
        .wait(Duration::from_secs(10))
        .expect("it exits once drained");
    assert_eq!(status.code(), Some(0));
    // No more connections are taken.
    assert!(
        client()
            .get(format!("{}/healthz", server.base()))
            .send()
            .is_err()
    );
}

#[test]
fn a_call_still_running_when_the_drain_time_is_up_is_cancelled_and_told_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = server_with_sleep(dir.path(), &["--drain", "500ms"]);
    let url = server.url.clone();
    let started = Instant::now();
    let running = std::thread::spawn(move || message(post(&url, &sleep_call(1, "60"), &[])));
    std::thread::sleep(Duration::from_millis(500));
    server.signal("TERM");
    let cancelled = running.join().unwrap();
    assert_eq!(cancelled["result"]["isError"], true, "{cancelled}");
    let text = cancelled["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("error 1011: "), "{text}");
    let status = server.wait(Duration::from_secs(10)).expect("it exits");
    assert_eq!(status.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn at_capacity_a_request_gets_503_with_retry_after_not_a_wait() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_sleep(dir.path(), &["--max-in-flight", "1"]);
    // The slot is held for 8 s once the sleep runs; the refusal must come while it is: until
    // that call has its answer (however long the loaded machine takes to send it). A probe that
    // reaches the server before the sleep takes the slot for an instant, and the sleep is then
    // the one refused (503): the round starts again.
    let mut rounds = 0;
    let (refused, held) = loop {
        rounds += 1;
        let url = server.url.clone();
        let running = std::thread::spawn(move || message(post(&url, &sleep_call(1, "8"), &[])));
        std::thread::sleep(Duration::from_millis(200));
        let mut refused = None;
        while !running.is_finished() {
            let response = post(
                &server.url,
                &call(2, "math", &json!({"expression": "1"})),
                &[],
            );
            if response.status() == 503 {
                refused = Some(response);
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let held = running.join().unwrap();
        let sleep_refused = held.get("error").is_some();
        if sleep_refused && rounds < 5 {
            continue;
        }
        let refused = refused.unwrap_or_else(|| {
            panic!(
                "a request while the one slot is taken gets 503; the call taking it answered {held}"
            )
        });
        break (refused, held);
    };
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(held["result"]["isError"], false);
    let after = message(post(
        &server.url,
        &call(3, "math", &json!({"expression": "1+2"})),
        &[],
    ));
    assert_eq!(
        after["result"]["structuredContent"]["result"], 3.0,
        "{after}"
    );
}

#[test]
fn a_session_store_that_cannot_be_used_stops_the_start_with_the_reason() {
    // A port nothing listens on: taken, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    let cases = [
        (format!("redis://127.0.0.1:{port}/0"), "cannot reach Redis"),
        ("http://127.0.0.1:6379".to_owned(), "not a Redis URL"),
        (
            "redis://user:s3cret@no-such-host.invalid/0".to_owned(),
            "cannot reach Redis",
        ),
    ];
    for (url, reason) in cases {
        let mut server = Command::new(env!("CARGO_BIN_EXE_pleach"))
            .args(["mcp", "--http", "127.0.0.1:0", "--session-store", &url])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_for(&mut server, Duration::from_secs(30)).expect("it exits");
        let mut said = String::new();
        server
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert_eq!(status.code(), Some(2), "{url}: {said}");
        assert!(said.contains(reason), "{url}: {said}");
        assert!(!said.contains("listening"), "{url}: {said}");
        assert!(!said.contains("s3cret"), "the password stays out: {said}");
    }
}

#[test]
fn connection_flags_cut_a_request_whose_headers_never_end() {
    let server = Server::start(&["--header-timeout", "500ms", "--max-connections", "4"]);
    let address = server.base().strip_prefix("http://").expect("an http URL");
    let mut slow = std::net::TcpStream::connect(address).expect("connects");
    slow.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .expect("sent");
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
        "closed after {waited:?}"
    );
    let health = client()
        .get(format!("{}/healthz", server.base()))
        .send()
        .unwrap();
    assert_eq!(health.status(), 200);
}
