// Rule: the `ToolContext` is injected, never in the schema; `#[arg]` on it is an error.
use pleach_core::{ToolContext, tool};

/// Waits.
#[tool]
async fn wait(#[arg(description = "The context")] ctx: ToolContext) -> String {
    ctx.tool_call_id
}

fn main() {
    let _ = wait(ToolContext::new("a"));
}
