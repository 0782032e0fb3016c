//! MCP on stdin and stdout.

use rmcp::ServiceExt;

use super::{McpError, McpServer};
use crate::session::Runtime;

/// Serves every tool of `runtime` over MCP on stdin and stdout until the client disconnects.
///
/// # Errors
///
/// See [`McpError`].
///
/// ```rust,no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), pleach_core::mcp::McpError> {
/// use pleach_core::{Runtime, ToolRegistryBuilder};
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// pleach_core::mcp::serve_stdio(runtime).await // until the client disconnects
/// # }
/// ```
pub async fn serve_stdio(runtime: Runtime) -> Result<(), McpError> {
    serve(McpServer::new(runtime)?).await
}

/// Serves `server` on stdin and stdout until the client disconnects. A client that closes stdin
/// before its first request has disconnected too (MCP's stdio shutdown): `Ok`, as for one that
/// closes it later.
///
/// # Errors
///
/// The handshake fails, or the connection ends with an error.
///
/// ```rust,no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), pleach_core::mcp::McpError> {
/// use pleach_core::{mcp::McpServer, Runtime, ToolRegistryBuilder};
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let server = McpServer::new(runtime)?.with_implementation("acme-tools", "2.1.0");
/// pleach_core::mcp::serve(server).await
/// # }
/// ```
pub async fn serve(server: McpServer) -> Result<(), McpError> {
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(McpError::Initialize(error.to_string())),
    };
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|error| McpError::Connection(error.to_string()))
}
