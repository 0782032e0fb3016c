//! Remote tools: an MCP server's tools beside this binary's own `#[tool]`, in one runtime. The
//! server is started from the command line given (stdio); each of its tools is named `remote__…`,
//! validated before the call leaves the process, and called like a local tool.
//!
//! ```text
//! cargo run -p pleach-examples --example remote_tools -- python3 tests/mcp-servers/hostile.py normal
//! ```
//!
//! (`hostile.py normal` is a small MCP server of the tests, Python's standard library only; any
//! stdio MCP server works: `-- npx -y @modelcontextprotocol/server-everything`.)

use pleach_core::{Runtime, SessionOptions, ToolCall, tool};
use pleach_mcp::remote::McpRemote;
use serde_json::json;

/// Converts a temperature from Celsius to Fahrenheit.
#[tool]
async fn to_fahrenheit(celsius: f64) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut command = std::env::args().skip(1);
    let program = command
        .next()
        .ok_or("usage: remote_tools PROGRAM [ARGS…] (a stdio MCP server)")?;
    let server = McpRemote::stdio(program, command)
        .prefix("remote")
        .connect()
        .await?;
    for skipped in server.skipped() {
        println!("skipped {skipped}");
    }

    // The server's tools join the compile-time registry (`to_fahrenheit`) as a plugin.
    let runtime = Runtime::builder().plugin(server.plugin()).build()?;
    println!("tools:");
    for tool in runtime.registry().tools() {
        let tier = tool.safety_tier().map_or("-", |tier| tier.as_str());
        println!(
            "  {:<24} tier {tier:<9} {}",
            tool.name(),
            tool.definition().description()
        );
    }

    let session = runtime.create_session(SessionOptions::all())?;
    let mut calls = vec![ToolCall::from_value(
        "c1",
        "to_fahrenheit",
        &json!({"celsius": 21.5}),
    )];
    // The first remote tool, called with no arguments: if it needs some, the runtime says which
    // (1001) before anything is sent.
    if let Some(first) = server.tool_names().first() {
        calls.push(ToolCall::from_value("c2", first, &json!({})));
    }
    for result in session.run_turn(calls).finish().await {
        match &result.outcome {
            Ok(value) => println!("{} → {}", result.tool_call.name(), value.value()),
            Err(error) => println!("{} → {}", result.tool_call.name(), error.model_text()),
        }
    }
    server.close().await;
    Ok(())
}
