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
//!
//! Five tools talk to the client while they run (`docs/mcp.md`, "Tools that talk to the
//! client"): `import_receipts` logs as it goes, `total_expenses` reports progress in its own
//! numbers, `split_expense` asks the user how to split one (a typed elicitation),
//! `rename_expense` asks twice before it changes anything, and `categorize_expense` asks the
//! client's model (sampling). A client that did not declare elicitation or sampling gets
//! `error 1020: …` for those.

use std::sync::{Mutex, PoisonError};

use pleach_core::client::{Elicited, LogLevel, Progress, SamplingRequest};
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

/// Imports receipts as expenses, logging each one (and a warning for each it skips).
#[tool]
async fn import_receipts(ctx: ToolContext, receipts: Vec<String>) -> Result<usize, ToolError> {
    let log = ctx.with_logger("import");
    log.log(LogLevel::Debug, format!("{} receipts", receipts.len()));
    let mut imported = 0;
    for receipt in &receipts {
        if receipt.trim().is_empty() {
            log.log(LogLevel::Warning, "an empty receipt was skipped");
        } else {
            log.log(LogLevel::Info, serde_json::json!({ "imported": receipt }));
            imported += 1;
        }
    }
    Ok(imported)
}

/// Adds up the expenses in cents, reporting its progress one expense at a time.
#[tool]
async fn total_expenses(ctx: ToolContext) -> Result<u64, ToolError> {
    let expenses = Ledger::of(&ctx)?.expenses().clone();
    #[allow(clippy::cast_precision_loss)] // a count of expenses
    let count = expenses.len() as f64;
    let mut total = 0;
    for (done, expense) in (1_u32..).zip(&expenses) {
        total += expense.cents;
        ctx.report_progress(
            Progress::new(f64::from(done))
                .total(count)
                .message(expense.description.clone()),
        );
    }
    Ok(total)
}

/// How the user splits an expense.
#[input]
struct Split {
    /// Between how many people.
    #[schemars(range(min = 1, max = 20))]
    people: u32,
    /// Whether to round each share up to whole units.
    round_up: Option<bool>,
}

/// Splits an expense between people: asks the user how many.
#[tool]
async fn split_expense(ctx: ToolContext, id: u64) -> Result<String, ToolError> {
    let cents = Ledger::of(&ctx)?
        .expenses()
        .iter()
        .find(|e| e.id == id)
        .map(|e| e.cents)
        .ok_or_else(|| ToolError::failed(format!("no expense has the id {id}")))?;
    let question = format!("Split expense {id} ({cents} cents) between how many people?");
    Ok(match ctx.elicit::<Split>(question).await? {
        Elicited::Accept(split) => {
            let people = u64::from(split.people);
            let share = if split.round_up.unwrap_or(false) {
                cents.div_ceil(people * 100) * 100
            } else {
                cents / people
            };
            format!("{people} shares of {share} cents")
        }
        Elicited::Decline => "the user declined to split it".to_owned(),
        Elicited::Cancel => "the user dismissed the question".to_owned(),
    })
}

/// The new description of an expense.
#[input]
struct Rename {
    /// What the expense was for.
    description: String,
}

/// The user's go-ahead.
#[input]
struct Confirm {
    /// Yes goes ahead.
    confirm: bool,
}

/// Renames an expense: asks the user for the new description, then to confirm it. Both
/// questions come before the change: for an MCP 2026-07-28 client each question is a round trip
/// that runs the tool again from its start, so what it does, it does after its last answer.
#[tool]
async fn rename_expense(ctx: ToolContext, id: u64) -> Result<String, ToolError> {
    let ledger = Ledger::of(&ctx)?;
    let old = ledger
        .expenses()
        .iter()
        .find(|e| e.id == id)
        .map(|e| e.description.clone())
        .ok_or_else(|| ToolError::failed(format!("no expense has the id {id}")))?;
    let Elicited::Accept(rename) = ctx
        .elicit::<Rename>(format!("Rename \"{old}\" to?"))
        .await?
    else {
        return Ok("left as it was".to_owned());
    };
    let question = format!("Rename \"{old}\" to \"{}\"?", rename.description);
    if !ctx
        .elicit::<Confirm>(question)
        .await?
        .accepted()
        .is_some_and(|answer| answer.confirm)
    {
        return Ok("left as it was".to_owned());
    }
    if let Some(expense) = ledger.expenses().iter_mut().find(|e| e.id == id) {
        expense.description.clone_from(&rename.description);
    }
    Ok(format!("renamed to \"{}\"", rename.description))
}

/// Asks the client's model which category a description belongs to.
#[tool]
async fn categorize_expense(ctx: ToolContext, description: String) -> Result<String, ToolError> {
    let request = SamplingRequest::new(format!(
        "Which of food, travel, lodging or office is this expense? Answer with the one word: {description}"
    ))
    .system_prompt("You sort expenses into categories.")
    .max_tokens(5);
    let answer = ctx.sample(request).await?;
    Ok(answer
        .text()
        .map_or_else(|| "no text".to_owned(), |text| text.trim().to_lowercase()))
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
