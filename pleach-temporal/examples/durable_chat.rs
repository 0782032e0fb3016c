//! A durable conversation, worker and client in one process: this binary's tools on a worker, one
//! question to an OpenAI-compatible endpoint, the events as they are recorded, the answer.
//!
//! ```sh
//! temporal server start-dev --ip 127.0.0.1 --port 7233 --headless &
//! cargo run -p pleach-temporal --example durable_chat -- 127.0.0.1:7233 http://127.0.0.1:11434/v1 llama3.2
//! ```
//!
//! Stop it mid-way and run it again with the printed id as a fourth argument: the conversation
//! goes on where it was (`docs/durable.md`).

use std::time::Duration;

use pleach_core::agent::{ModelEndpoint, WireFormat};
use pleach_core::durable::{DurableOptions, Worker};
use pleach_core::{Message, Runtime, tool};
use pleach_temporal::{ConversationInput, DurableClient, DurableError, ServeOptions};

/// Multiplies two integers.
#[tool]
async fn multiply(a: i64, b: i64) -> i64 {
    a * b
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, base_url, model, rest @ ..] = args.as_slice() else {
        eprintln!("usage: durable_chat HOST:PORT BASE_URL MODEL [CONVERSATION_ID]");
        std::process::exit(2);
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // The worker runs on this task (the SDK's worker is not `Send`), beside the client.
    let worker = pleach_temporal::serve(
        target,
        Worker::new(Runtime::builder().build()?),
        ServeOptions::default().max_calls(16),
        stopped,
    );
    let conversation = async {
        let client = DurableClient::connect(target).await?;
        let id = if let Some(id) = rest.first() {
            id.clone()
        } else {
            let input = ConversationInput::new(
                vec![Message::User {
                    content: "What is 6 times 7? Use the multiply tool.".into(),
                }],
                ModelEndpoint::new(WireFormat::OpenAiChat, base_url, model),
            )
            .options(DurableOptions::default().max_steps(4));
            client
                .start(pleach_temporal::defaults::TASK_QUEUE, None, input)
                .await?
        };
        println!("conversation {id}");
        let mut seen = 0;
        let outcome = loop {
            if let Ok(events) = client.events(&id, seen).await {
                seen += events.len();
                for event in events.iter().filter(|event| event["type"] != "tool.delta") {
                    println!("  {event}");
                }
            }
            if let Some(outcome) = client
                .outcome_within(&id, Duration::from_millis(250))
                .await?
            {
                break outcome;
            }
        };
        println!("answer: {}", outcome.final_text.unwrap_or_default());
        let _ = stop.send(());
        Ok::<_, DurableError>(())
    };
    let (served, asked) = tokio::join!(worker, conversation);
    asked?;
    served?;
    Ok(())
}
