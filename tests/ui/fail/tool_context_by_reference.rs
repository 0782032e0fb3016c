// Rule: `ToolContext` is taken by value (a borrow cannot outlive the call's future).
use pleach_core::{ToolContext, tool};

/// Waits.
#[tool]
async fn wait(ctx: &ToolContext) -> String {
    ctx.tool_call_id.clone()
}

fn main() {
    let ctx = ToolContext::new("a");
    let _ = wait(&ctx);
}
