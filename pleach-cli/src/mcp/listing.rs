//! `pleach mcp --tool-search [--always TOOL]…`: a search tool and a call-by-name tool listed
//! instead of every tool (docs/tool-search.md, "Over MCP").

use pleach_mcp::McpServer;

use crate::usage::UsageError;

/// The flags of `pleach mcp` that choose what `tools/list` gives.
#[derive(Debug, clap::Args)]
pub(crate) struct ListingArgs {
    /// Lists `search_tools` and `call_tool` (and the `--always` tools) instead of every tool:
    /// a client that takes only so many tools finds the others with the search and runs them
    /// with `call_tool`.
    #[arg(long)]
    tool_search: bool,
    /// A tool listed as it is with `--tool-search` (repeatable).
    #[arg(long, value_name = "TOOL", requires = "tool_search")]
    always: Vec<String>,
}

impl ListingArgs {
    /// `server`, listing a search when `--tool-search` asked for one.
    pub(crate) fn apply(&self, server: McpServer) -> Result<McpServer, UsageError> {
        if !self.tool_search {
            return Ok(server);
        }
        if let Some(unknown) = self.always.iter().find(|name| {
            !server
                .tools()
                .iter()
                .any(|tool| tool.name.as_ref() == name.as_str())
        }) {
            return Err(UsageError(format!(
                "`--always {unknown}`: no tool of that name is served"
            )));
        }
        Ok(server.tool_search(&self.always))
    }
}
