//! A user's crate: it lists `pleach-core` alone in its `Cargo.toml`, writes tools with the macros,
//! derives its input type through pleach's re-exports, and builds under the workspace's strict
//! lints (`missing_docs`, `unreachable_pub`, clippy pedantic), so generated code must be clean.

use pleach_core::schemars::JsonSchema;
use pleach_core::serde::{Deserialize, Serialize};
use pleach_core::{ToolContext, ToolError, tool, unified_tool};

/// Converts a temperature from Celsius to Fahrenheit.
#[tool]
pub async fn celsius_to_fahrenheit(#[arg(description = "Degrees Celsius")] celsius: f64) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

/// A greeting request.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
pub struct Greeting {
    /// Who to greet.
    pub name: String,
    /// How many exclamation marks.
    #[schemars(range(max = 5))]
    #[serde(default)]
    pub excitement: u8,
}

/// The greeting.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
pub struct Greeted {
    /// The text.
    pub text: String,
}

/// Greets someone.
#[tool(name = "greet")]
pub async fn greet_someone(
    #[input] greeting: Greeting,
    ctx: ToolContext,
) -> Result<Greeted, ToolError> {
    if ctx.signal.is_cancelled() {
        return Err(ToolError::failed("cancelled before greeting"));
    }
    let marks = "!".repeat(usize::from(greeting.excitement));
    Ok(Greeted {
        text: format!("Hello, {}{marks}", greeting.name),
    })
}

/// Closes an account. Destructive: routed through the host's safety policy.
#[unified_tool(category = "accounts", safety_tier = "critical")]
pub async fn close_account(account_id: String) -> Result<String, std::io::Error> {
    if account_id.is_empty() {
        return Err(std::io::Error::other("no account id"));
    }
    Ok(format!("closed {account_id}"))
}

/// A private helper tool: generated items must not trip `unreachable_pub` or `dead_code`.
#[tool]
async fn private_echo(text: String) -> String {
    text
}
