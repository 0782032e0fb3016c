//! **rmcp**: the official MCP SDK's own stdio server for `add`, written the way its README shows:
//! a `#[tool]` method in a `#[tool_router(server_handler)]` impl (`dispatch`'s rmcp server, taking
//! `Parameters<AddArgs>` and returning `Json<i64>`), served on `rmcp::transport::stdio()`
//! (Tokio's stdin and stdout). rmcp validates no input schema on this path.

use rmcp::ServiceExt;

use crate::dispatch::rmcp_router::AddServer;

/// Serves `add` on stdin and stdout until the client closes stdin.
pub(super) async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let running = AddServer.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
