// Rule: the runtime injects one `ToolContext` per call; a second one is an error on it.
use pleach_core::{ToolContext, tool};

/// Waits.
#[tool]
async fn wait(ctx: ToolContext, again: ToolContext) -> String {
    format!("{} {}", ctx.tool_call_id, again.tool_call_id)
}

fn main() {
    let _ = wait(ToolContext::new("a"), ToolContext::new("b"));
}
