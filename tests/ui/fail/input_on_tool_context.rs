// Rule: the `ToolContext` is injected, never the input; `#[input]` on it is an error.
use pleach_core::{ToolContext, tool};

/// Waits.
#[tool]
async fn wait(#[input] ctx: ToolContext) -> String {
    ctx.tool_call_id
}

fn main() {
    let _ = wait(ToolContext::new("a"));
}
