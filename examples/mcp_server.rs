//! A whole MCP server of your own: an expense assistant's tools (struct inputs, an enum, shared
//! state, a standard-tier delete that always asks first) served over stdio to any MCP client.
//!
//! ```sh
//! cargo run -p pleach-examples --example mcp_server                          # on stdio
//! cargo run -p pleach-examples --example mcp_server -- --http 127.0.0.1:8080  # over HTTP
//! ```
//!
//! Then point an MCP client at that command (Claude Desktop's `mcpServers`, the MCP Inspector,
//! the official SDKs' stdio clients). A client that can elicit asks its user before each
//! `delete_expense` (approve, approve with other arguments, reject); one that cannot gets an
//! `isError` result at once, `error 1012: this call needs the user's approval …`, and the delete
//! never runs (`docs/mcp.md`, "Approvals").

use std::sync::{Mutex, PoisonError};

use pleach_core::safety::ApprovalRequired;
use pleach_core::{Runtime, ToolContext, ToolError, input, output, tool, unified_tool};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer, shutdown_signal};

/// What an expense was for: taken (a filter, a new expense's field) and returned.
#[input]
#[output]
#[derive(Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Category {
    Food,
    Travel,
    Lodging,
    Office,
}

/// A new expense.
#[input]
#[derive(Debug)]
struct NewExpense {
    /// What was bought.
    description: String,
    /// The amount in cents.
    #[schemars(range(min = 1))]
    cents: u64,
    /// What it was for.
    category: Category,
}

/// An expense on record.
#[output]
#[derive(Debug, Clone)]
struct Expense {
    /// Its id, for `delete_expense`.
    id: u64,
    /// What was bought.
    description: String,
    /// The amount in cents.
    cents: u64,
    /// What it was for.
    category: Category,
}

/// The expenses, shared by every call (given to the runtime with `provide`).
#[derive(Default)]
struct Ledger(Mutex<Vec<Expense>>);

impl Ledger {
    fn of(ctx: &ToolContext) -> Result<&Ledger, ToolError> {
        ctx.get::<Ledger>()
            .ok_or_else(|| ToolError::failed("the ledger is not configured"))
    }

    fn expenses(&self) -> std::sync::MutexGuard<'_, Vec<Expense>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Records an expense and returns it with its id.
#[tool]
async fn add_expense(ctx: ToolContext, #[input] new: NewExpense) -> Result<Expense, ToolError> {
    let mut expenses = Ledger::of(&ctx)?.expenses();
    let id = expenses.iter().map(|e| e.id).max().unwrap_or(0) + 1;
    let expense = Expense {
        id,
        description: new.description,
        cents: new.cents,
        category: new.category,
    };
    expenses.push(expense.clone());
    Ok(expense)
}

/// Lists the recorded expenses, optionally of one category.
#[tool]
async fn list_expenses(
    ctx: ToolContext,
    #[arg(description = "Only this category")] category: Option<Category>,
) -> Result<Vec<Expense>, ToolError> {
    let expenses = Ledger::of(&ctx)?.expenses();
    Ok(expenses
        .iter()
        .filter(|e| category.is_none_or(|c| c == e.category))
        .cloned()
        .collect())
}

/// Deletes an expense by id. Cannot be undone: the user approves every call.
#[unified_tool(safety_tier = "standard")]
async fn delete_expense(ctx: ToolContext, id: u64) -> Result<bool, ToolError> {
    let mut expenses = Ledger::of(&ctx)?.expenses();
    let before = expenses.len();
    expenses.retain(|e| e.id != id);
    Ok(expenses.len() < before)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder()
        .provide(Ledger::default())
        // A tier acts only on a finding: this policy makes one for every call of the tool.
        .detector(ApprovalRequired::tools(["delete_expense"]))
        .build()?;
    let server = McpServer::new(runtime)?.implementation("expenses", "1.0.0");
    let tools = server.tools().len();
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => {
            // Logs go to stderr: stdout carries the protocol.
            eprintln!("expenses MCP server: {tools} tools on stdio");
            pleach_mcp::serve(server).await?;
        }
        // The same server over Streamable HTTP (feature `mcp-http`), until SIGTERM or Ctrl-C.
        (Some("--http"), Some(address)) => {
            let options = HttpOptions::new(address.parse()?);
            let http = HttpServer::new(server, options)?;
            let listener = tokio::net::TcpListener::bind(address.as_str()).await?;
            eprintln!(
                "expenses MCP server: {tools} tools at http://{}/mcp",
                listener.local_addr()?
            );
            http.serve(listener, shutdown_signal()).await?;
        }
        _ => return Err("usage: mcp_server [--http ADDR]".into()),
    }
    Ok(())
}
