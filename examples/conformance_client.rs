//! pleach's MCP client (`pleach_mcp::remote`) as the official conformance suite drives it: the
//! suite starts a scenario's server (and its authorization server), then runs this program with
//! the server's URL as the last argument, the scenario's name in `MCP_CONFORMANCE_SCENARIO` and
//! its context (client IDs, secrets, keys) as JSON in `MCP_CONFORMANCE_CONTEXT`.
//!
//! ```text
//! cargo build -p pleach-examples --example conformance_client
//! npx @modelcontextprotocol/conformance@0.1.16 client \
//!     --command target/debug/examples/conformance_client --suite auth
//! ```
//!
//! (`pleach-cli/tests/conformance/client.sh` runs the scenarios pleach passes.) The program
//! connects with [`McpRemote::http`], signing in with [`OAuth`] as the context says: a person
//! (the authorization code grant, whose browser is played by following the authorization URL's
//! redirect without opening it), a pre-registered client, or client credentials. Then it calls
//! every tool the server lists, with the arguments the scenario gives or the simplest ones its
//! schema accepts, as the host of those calls: a question the server asks during one (MCP
//! elicitation, passed to the host as an `elicitation.requested` event) is accepted with the
//! defaults its form gives. It declares no sampling, which it cannot answer.

use std::time::Duration;

use pleach_core::client::Elicited;
use pleach_core::{Runtime, SessionOptions, ToolCall, ToolEvent};
use pleach_mcp::remote::{ClientCredentials, McpRemote, OAuth};
use serde_json::{Map, Value, json};

/// The client ID metadata document the suite's authorization servers expect.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Never listened on: the authorization URL's redirect is read, not followed.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .next_back()
        .filter(|url| url.starts_with("http"))
        .ok_or("usage: conformance_client URL (the suite gives the URL)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    // Under the suite's own 30 s, so a server that never answers ends in an error here.
    tokio::time::timeout(Duration::from_secs(25), run(&url, &scenario, &context))
        .await
        .map_err(|_| format!("scenario `{scenario}`: no end within 25 s"))?
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), Box<dyn std::error::Error>> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut remote = McpRemote::http(url).prefix("server").sampling(false);
    if scenario.starts_with("auth/") {
        let mut oauth = OAuth::new()
            .client_name("pleach conformance client")
            .client_metadata_url(CLIENT_METADATA_URL)
            .authorize(REDIRECT_URI, follow_redirect);
        if let (Some(id), Some(key), Some(algorithm)) = (
            text("client_id"),
            text("private_key_pem"),
            text("signing_algorithm"),
        ) {
            oauth = oauth.client_credentials(ClientCredentials::private_key_jwt(
                id,
                key.as_bytes(),
                &algorithm,
            )?);
        } else if let (Some(id), Some(secret)) = (text("client_id"), text("client_secret")) {
            oauth = if scenario.contains("client-credentials") {
                oauth.client_credentials(ClientCredentials::secret(id, secret))
            } else {
                oauth.client_id(id).client_secret(secret)
            };
        }
        remote = remote.oauth(oauth);
    }
    let server = remote.connect().await?;
    let runtime = Runtime::builder().plugin(server.plugin()).build()?;
    let session = runtime.create_session(SessionOptions::all())?;

    let mut calls = Vec::new();
    if let Some(listed) = context.get("toolCalls").and_then(Value::as_array) {
        for (index, call) in listed.iter().enumerate() {
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
            calls.push(ToolCall::from_value(
                format!("c{index}"),
                format!("server__{name}"),
                &arguments,
            ));
        }
    } else {
        for (index, tool) in server.tools().iter().enumerate() {
            calls.push(ToolCall::from_value(
                format!("c{index}"),
                tool.name(),
                &simplest_arguments(tool.definition().input_schema()),
            ));
        }
    }
    let mut turn = session.run_turn(calls);
    while let Some(event) = turn.events().recv().await {
        if let ToolEvent::ElicitationRequested { request } = event {
            let defaults = defaults_of(&request.request().schema);
            eprintln!(
                "asked `{}`: accepting {defaults}",
                request.request().message
            );
            request.answer(Elicited::Accept(defaults));
        }
    }
    let mut failed = None;
    for result in turn.finish().await {
        match &result.outcome {
            Ok(value) => eprintln!("{} → {}", result.tool_call.name(), value.value()),
            Err(error) => {
                eprintln!("{} → {}", result.tool_call.name(), error.model_text());
                failed.get_or_insert_with(|| error.model_text());
            }
        }
    }
    server.close().await;
    match failed {
        Some(error) => Err(error.into()),
        None => Ok(()),
    }
}

/// The browser's part, headless: the suite's authorization servers approve at once and answer
/// the authorization URL (plain HTTP on loopback) with a redirect, whose `Location` is what the
/// browser would reach. One HTTP/1.0 request on a socket: a browser needs no more here.
async fn follow_redirect(url: String) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not a loopback http:// URL: {url}"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut socket = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|error| format!("cannot reach {authority}: {error}"))?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n");
    socket
        .write_all(request.as_bytes())
        .await
        .map_err(|error| error.to_string())?;
    let mut answer = Vec::new();
    socket
        .read_to_end(&mut answer)
        .await
        .map_err(|error| error.to_string())?;
    let answer = String::from_utf8_lossy(&answer);
    let head = answer.split("\r\n\r\n").next().unwrap_or_default();
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        })
        .ok_or_else(|| {
            let status = head.lines().next().unwrap_or_default();
            format!("the authorization URL answered `{status}` without a redirect")
        })
}

/// The answer a form's defaults give: each property that has a `default`, with it.
fn defaults_of(form: &Value) -> Value {
    let defaults = form
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect::<Map<String, Value>>();
    Value::Object(defaults)
}

/// Arguments an input schema accepts: each required property with the simplest value of its
/// type.
fn simplest_arguments(schema: &Value) -> Value {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut arguments = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if !required.contains(&name.as_str()) {
                continue;
            }
            let value = match property.get("type").and_then(Value::as_str) {
                Some("number") => json!(1.0),
                Some("integer") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("test"),
            };
            arguments.insert(name.clone(), value);
        }
    }
    Value::Object(arguments)
}
