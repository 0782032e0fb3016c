//! A standard-tier approval flow, end to end: a detector flags an account number the model made
//! up, the turn pauses with an `interrupt.requested` event carrying the findings and the nearest
//! known values, the "user" edits the call, and the conversation records the edit.
//!
//! ```sh
//! cargo run -p pleach-examples --example approval
//! ```

use pleach_core::safety::ProvenanceDetector;
use pleach_core::{Message, Runtime, SessionOptions, ToolCall, ToolEvent, tool, unified_tool};
use serde_json::{Value, json};

/// Lists the customer's accounts.
#[tool]
async fn list_accounts() -> Value {
    json!([{ "id": "ACC-0042", "name": "Rent" }, { "id": "ACC-7000", "name": "Savings" }])
}

/// Sends money to one of the customer's accounts.
#[unified_tool(safety_tier = "standard")]
async fn transfer_funds(to_account: String, amount: u32) -> String {
    format!("sent {amount} to {to_account}")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder()
        .detector(ProvenanceDetector::new().guard("transfer_funds", ["/to_account"]))
        .build()?;
    let session =
        runtime.create_session(SessionOptions::enabled(["list_accounts", "transfer_funds"]))?;
    session.push_user_message("Pay 5 into my rent account.");

    // Step 1: the model looks the accounts up. Their ids now have provenance.
    session
        .run_turn(vec![ToolCall::new("call_1", "list_accounts", "{}")])
        .finish()
        .await;

    // Step 2: the model mistypes the account. The detector flags it; the turn waits.
    let mut turn = session.run_turn(vec![ToolCall::new(
        "call_2",
        "transfer_funds",
        r#"{"to_account":"ACC-0043","amount":5}"#,
    )]);
    while let Some(event) = turn.events().recv().await {
        println!("{}", event.to_json());
        if let ToolEvent::InterruptRequested { interrupt } = &event {
            for (finding, truth) in interrupt.findings.iter().zip(&interrupt.ground_truth) {
                let nearest: Vec<String> =
                    truth.nearest.iter().map(|k| k.value.to_string()).collect();
                println!(
                    "  approval card: {} = {} ({}); known values nearby: {}",
                    finding.path,
                    finding.value,
                    finding.reason,
                    nearest.join(", ")
                );
            }
            // The user picks the nearest known account.
            let fixed = r#"{"to_account":"ACC-0042","amount":5}"#;
            println!("  the user edits the call to {fixed}");
            session.resolve(interrupt.edit(fixed))?;
        }
    }
    let results = turn.finish().await;
    println!("result: {:?}", results[0].outcome);

    if let Some(Message::Tool { content, .. }) = session.conversation().last() {
        println!("the model reads: {content}");
    }
    Ok(())
}
