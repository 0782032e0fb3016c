//! `mcp-http`: `tools/call` round trips over MCP Streamable HTTP on loopback, pleach's server
//! beside rmcp's own serving the same `add(a, b)` tool, with 1 and 16 clients at once; the same
//! with 16 clients for `image()`, a tool returning a 1 MiB PNG (an `image` content block: each
//! server base64-encodes the bytes it holds once a call); and the cold start of `pleach mcp` on
//! stdio to its first `tools/list` answer.
//!
//! Both servers are rmcp's `StreamableHttpService` with the same configuration (stateless, JSON
//! responses) in an axum router on the same multi-threaded runtime: pleach's behind its guard
//! (Origin, token check, capacity) with a session per request and the whole pipeline (input
//! validation against the schema, timeout, events, output validation); rmcp's with a
//! `#[tool_router]` tool and no validation. The clients are one reqwest client (HTTP/1.1,
//! connections kept alive) posting the same JSON-RPC request, each waiting for its answer
//! before sending the next. The runs alternate between the servers, pleach first in odd rounds.

mod round_trips;

use std::time::{Duration, Instant};

use base64::Engine as _;
use pleach_core::content::{Bytes, ContentBlock, ToolOutput};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolResult, ContentBlock as RmcpBlock};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde::Deserialize;

pub(crate) use round_trips::{ARG as ROUND_TRIPS_ARG, run as round_trips};

/// The request every client sends: `add(1, 2)` as MCP 2025-11-25 clients send it.
const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#;

/// `image()`: the call whose answer carries a 1 MiB image.
const IMAGE_CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"image","arguments":{}}}"#;

/// The image's size in bytes.
const IMAGE_BYTES: usize = 1 << 20;

/// The image both servers return: a PNG header, then bytes that do not compress.
fn image() -> Bytes {
    Bytes::from(crate::media::png(IMAGE_BYTES))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// rmcp's side: the tools in a `#[tool_router]`, routed by `#[tool_handler]`.
#[derive(Clone)]
struct RmcpTools {
    image: Bytes,
}

#[tool_router]
impl RmcpTools {
    #[tool(description = "Adds two integers.")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<i64> {
        Json(a + b)
    }

    #[tool(description = "Returns a 1 MiB PNG.")]
    async fn image(&self) -> CallToolResult {
        let data = base64::engine::general_purpose::STANDARD.encode(&self.image);
        CallToolResult::success(vec![RmcpBlock::image(data, "image/png")])
    }
}

#[tool_handler]
impl ServerHandler for RmcpTools {}

/// pleach's side of `image()`: the same bytes as a content block (shared, not copied).
fn pleach_image_tool(
    image: Bytes,
) -> Result<pleach_core::ToolDefinition, Box<dyn std::error::Error>> {
    Ok(
        pleach_core::ToolDefinition::builder("image", "Returns a 1 MiB PNG.").execute_json(
            move |_, _| {
                let image = image.clone();
                async move {
                    Ok::<_, pleach_core::ToolError>(ToolOutput::from_blocks([ContentBlock::image(
                        image,
                        "image/png",
                    )]))
                }
            },
        )?,
    )
}

/// One server under test: its name and URL.
struct Served {
    label: &'static str,
    url: String,
}

async fn serve(app: axum::Router) -> Result<String, Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{address}/mcp"))
}

async fn start_servers() -> Result<[Served; 2], Box<dyn std::error::Error>> {
    let image = image();
    let runtime = pleach_core::Runtime::builder()
        .plugin(pleach_core::PleachPlugin::new("bench").tools([pleach_image_tool(image.clone())?]))
        .build()?;
    let pleach = HttpServer::new(
        McpServer::new(runtime)?,
        HttpOptions::new(([127, 0, 0, 1], 0).into()),
    )?;
    let pleach_url = serve(pleach.router()).await?;
    let rmcp = StreamableHttpService::new(
        move || {
            Ok(RmcpTools {
                image: image.clone(),
            })
        },
        std::sync::Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    );
    let rmcp_url = serve(axum::Router::new().nest_service("/mcp", rmcp)).await?;
    Ok([
        Served {
            label: "pleach",
            url: pleach_url,
        },
        Served {
            label: "rmcp",
            url: rmcp_url,
        },
    ])
}

fn client() -> Result<reqwest::Client, Box<dyn std::error::Error>> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .pool_max_idle_per_host(64)
        .tls_backend_preconfigured(pleach_contract::tls::client_config()?)
        .build()?)
}

/// Which call the clients make.
#[derive(Clone, Copy)]
enum Call {
    /// `add(1, 2)`.
    Add,
    /// `image()`.
    Image,
}

/// One round trip; its latency, after checking the answer ([`check_answer`]).
async fn call(client: &reqwest::Client, url: &str, which: Call) -> Result<Duration, String> {
    let started = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(match which {
            Call::Add => CALL,
            Call::Image => IMAGE_CALL,
        })
        .send()
        .await
        .map_err(|error| error.to_string())?;
    let body = response.bytes().await.map_err(|error| error.to_string())?;
    let elapsed = started.elapsed();
    check_answer(&body, which)?;
    Ok(elapsed)
}

/// Whether `body` answers `which`: `3`, or an image of the right size.
fn check_answer(body: &[u8], which: Call) -> Result<(), String> {
    let answer: serde_json::Value =
        serde_json::from_slice(body).map_err(|error| format!("{error}: {:?}", body.get(..200)))?;
    let result = &answer["result"];
    let expected = match which {
        // pleach answers a non-object result as text; rmcp's `Json` as structured content too.
        Call::Add => result["content"][0]["text"] == "3" || result["structuredContent"] == 3,
        Call::Image => {
            let block = &result["content"][0];
            block["type"] == "image"
                && block["data"]
                    .as_str()
                    .is_some_and(|data| data.len() == IMAGE_BYTES.div_ceil(3) * 4)
        }
    };
    if !expected {
        return Err(format!("unexpected answer: {:.300}", answer.to_string()));
    }
    Ok(())
}

/// `calls` round trips by `clients` clients at once: calls per second and every latency.
async fn calls_at_once(
    client: &reqwest::Client,
    url: &str,
    which: Call,
    clients: usize,
    calls: usize,
) -> Result<(f64, Vec<Duration>), String> {
    let started = Instant::now();
    let per_client = calls / clients;
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let client = client.clone();
        let url = url.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                latencies.push(call(&client, &url, which).await?);
            }
            Ok::<_, String>(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(calls);
    for task in tasks {
        latencies.extend(task.await.map_err(|error| error.to_string())??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)] // call counts far below 2^52
    let rate = latencies.len() as f64 / elapsed;
    Ok((rate, latencies))
}

fn percentile(latencies: &mut [Duration], fraction: f64) -> f64 {
    latencies.sort_unstable();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((latencies.len() as f64 - 1.0) * fraction).round() as usize;
    latencies
        .get(index)
        .map_or(f64::NAN, |latency| latency.as_secs_f64() * 1000.0)
}

/// Runs the measurement and prints the table and the summary line.
pub(crate) fn run(quick: bool) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (rounds, calls) = if quick { (2, 2_000) } else { (5, 20_000) };
    let mut summary = String::new();
    let mut image_summary = String::new();
    runtime.block_on(async {
        let servers = start_servers().await?;
        let client = client()?;
        for server in &servers {
            // Warm up: connections, allocator, lazy statics; and check the answer once.
            calls_at_once(&client, &server.url, Call::Add, 16, 1_600).await?;
            calls_at_once(&client, &server.url, Call::Image, 16, 64).await?;
        }
        println!(
            "mcp-http: tools/call add(1, 2) over Streamable HTTP on loopback, {calls} calls a run, \
             {rounds} runs each, alternating"
        );
        println!(
            "{:<8} {:>8} {:>12} {:>10} {:>10}",
            "server", "clients", "calls/s", "p50 ms", "p99 ms"
        );
        for clients in [1, 16] {
            let mut rates = [Vec::new(), Vec::new()];
            let mut latencies = [Vec::new(), Vec::new()];
            for round in 0..rounds {
                let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
                for index in order {
                    let (rate, mut each) =
                        calls_at_once(&client, &servers[index].url, Call::Add, clients, calls)
                            .await?;
                    rates[index].push(rate);
                    latencies[index].append(&mut each);
                }
            }
            let mut row = [(0.0, 0.0, 0.0); 2];
            for index in 0..2 {
                rates[index].sort_by(f64::total_cmp);
                let rate = rates[index][rates[index].len() / 2];
                let p50 = percentile(&mut latencies[index], 0.5);
                let p99 = percentile(&mut latencies[index], 0.99);
                row[index] = (rate, p50, p99);
                println!(
                    "{:<8} {:>8} {:>12.0} {:>10.3} {:>10.3}",
                    servers[index].label, clients, rate, p50, p99
                );
            }
            println!("pleach/rmcp throughput: {:.2}x", row[0].0 / row[1].0);
            if clients == 16 {
                summary = format!(
                    "mcp_http clients=16 pleach_rps={:.0} rmcp_rps={:.0} pleach_p99_ms={:.3} rmcp_p99_ms={:.3}",
                    row[0].0, row[1].0, row[0].2, row[1].2
                );
            }
        }
        let image_calls = if quick { 160 } else { 1_600 };
        println!("image(): a 1 MiB PNG, {image_calls} calls a run, 16 clients");
        let mut rates = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for index in order {
                let (rate, _) =
                    calls_at_once(&client, &servers[index].url, Call::Image, 16, image_calls)
                        .await?;
                rates[index].push(rate);
            }
        }
        for rate in &mut rates {
            rate.sort_by(f64::total_cmp);
        }
        let (pleach, rmcp) = (rates[0][rates[0].len() / 2], rates[1][rates[1].len() / 2]);
        println!("pleach/rmcp image throughput: {:.2}x", pleach / rmcp);
        image_summary = format!("mcp_http_image pleach_rps={pleach:.0} rmcp_rps={rmcp:.0}");
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    match cold_start(if quick { 3 } else { 10 }) {
        Ok(median) => println!(
            "pleach mcp (stdio) cold start to its first tools/list answer: {median:.1} ms (median)"
        ),
        Err(why) => println!("pleach mcp cold start: not measured ({why})"),
    }
    println!("{image_summary}");
    println!("{summary}");
    Ok(())
}

/// The median time from starting `pleach mcp` (the `pleach` binary beside this one) to its
/// answer to `tools/list`, after `initialize`.
fn cold_start(runs: usize) -> Result<f64, String> {
    use std::io::{BufRead, BufReader, Write};
    let binary = std::env::current_exe()
        .map_err(|error| error.to_string())?
        .with_file_name("pleach");
    if !binary.exists() {
        return Err(format!(
            "no {}: `cargo build --release -p pleach-cli` first",
            binary.display()
        ));
    }
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let mut child = std::process::Command::new(&binary)
            .arg("mcp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|error| error.to_string())?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let requests = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            "\n"
        );
        stdin
            .write_all(requests.as_bytes())
            .map_err(|error| error.to_string())?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut found = false;
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|error| error.to_string())?;
            if line.contains(r#""id":2"#) {
                found = true;
                break;
            }
        }
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
        if !found {
            return Err("no tools/list answer".to_owned());
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
