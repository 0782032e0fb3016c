//! `durable`: one conversation — a model step of N calls of `read_noop` (a read: parallel), then
//! the model's answer — from the user's message to the outcome, two ways:
//!
//! | column | what one conversation is |
//! | --- | --- |
//! | `inproc` | `Session::run_agent` against the loopback model, its events read to the end |
//! | `temporal` | `DurableClient::start` of a `ConversationWorkflow` on the Temporal server given, a worker in this process running its two model steps and N calls as activities, `DurableClient::outcome` |
//!
//! The model is a loopback HTTP server (OpenAI Chat Completions streams), the same for both. N is
//! 1 and 100; each size runs a warm-up conversation, then 5 measured ones each way (`--quick`: 1),
//! interleaved; the medians are printed. The server is whatever `--temporal` names (a
//! `temporal server start-dev` on this machine for the numbers in `docs/performance.md`).

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pleach_core::agent::{AgentOptions, ModelEndpoint, OpenAiChatClient, WireFormat};
use pleach_core::durable::Worker;
use pleach_core::{Message, Runtime, SessionOptions};
use pleach_temporal::{ConversationInput, DurableClient};
use serde_json::json;

use pleach_test_support::model::{ModelServer, answer, calls};

/// The conversation sizes measured; the last is the summary line's.
const SIZES: [usize; 2] = [1, 100];

pub(crate) fn run(quick: bool, target: Option<&str>) -> Result<(), Box<dyn Error>> {
    let target = target.ok_or(
        "`durable` needs `--temporal HOST:PORT`: a running Temporal server (`temporal server \
         start-dev --ip 127.0.0.1 --headless`)",
    )?;
    let rounds = if quick { 1 } else { 5 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let queue = format!("pleach-bench-{}", std::process::id());
    let medians = runtime.block_on(async {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = pleach_temporal::serve(
            target,
            Worker::new(Runtime::builder().build()?),
            pleach_temporal::ServeOptions::default()
                .task_queue(queue.as_str())
                .max_calls(256),
            stopped,
        );
        let measured = async {
            let result = measure(target, &queue, rounds).await;
            let _ = stop.send(());
            result
        };
        let (served, measured) = tokio::join!(worker, measured);
        served?;
        measured
    })?;
    println!(
        "durable: a step of N parallel calls and the answer, on a loopback model; median of {rounds}"
    );
    println!("{:>6}  {:>10}  {:>12}", "calls", "inproc_ms", "temporal_ms");
    for (size, inproc, temporal) in &medians {
        println!("{size:>6}  {inproc:>10.1}  {temporal:>12.1}");
    }
    let (size, inproc, temporal) = medians.last().ok_or("nothing measured")?;
    #[allow(clippy::cast_precision_loss)] // a count of calls
    let per_call = temporal / *size as f64;
    println!(
        "durable calls={size} inproc_ms={inproc:.1} temporal_ms={temporal:.1} per_call_ms={per_call:.2}"
    );
    Ok(())
}

/// `(calls, inproc median ms, temporal median ms)` for each size.
async fn measure(
    target: &str,
    queue: &str,
    rounds: usize,
) -> Result<Vec<(usize, f64, f64)>, Box<dyn Error>> {
    let client = DurableClient::connect(target).await?;
    let mut medians = Vec::new();
    for size in SIZES {
        let mut inproc = Vec::new();
        let mut temporal = Vec::new();
        // The first of each is a warm-up.
        for round in 0..=rounds {
            let took = in_process(size).await?;
            let durable = durable(&client, queue, size).await?;
            if round > 0 {
                inproc.push(took);
                temporal.push(durable);
            }
        }
        medians.push((size, median(&mut inproc), median(&mut temporal)));
    }
    Ok(medians)
}

fn steps(size: usize) -> Vec<Vec<u8>> {
    let ids: Vec<String> = (0..size).map(|n| format!("call_{n}")).collect();
    let step: Vec<(&str, &str, serde_json::Value)> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| (id.as_str(), "read_noop", json!({ "n": n })))
        .collect();
    vec![calls(&step), answer("done")]
}

const USER: &str = "read them all";

async fn in_process(size: usize) -> Result<Duration, Box<dyn Error>> {
    let model = ModelServer::start(steps(size)).await;
    let session = Runtime::builder()
        .build()?
        .create_session(SessionOptions::all())?;
    let client = Arc::new(OpenAiChatClient::new(&model.base, "bench", None)?);
    let started = Instant::now();
    session.push_user_message(USER);
    let mut run = session.run_agent(client, AgentOptions::default());
    while run.events().recv().await.is_some() {}
    let outcome = run.finish().await;
    let took = started.elapsed();
    check(
        outcome.steps.iter().map(|step| step.results.len()).sum(),
        size,
    )?;
    Ok(took)
}

async fn durable(
    client: &DurableClient,
    queue: &str,
    size: usize,
) -> Result<Duration, Box<dyn Error>> {
    let model = ModelServer::start(steps(size)).await;
    let input = ConversationInput::new(
        vec![Message::User {
            content: USER.into(),
        }],
        ModelEndpoint::new(WireFormat::OpenAiChat, &model.base, "bench"),
    );
    let started = Instant::now();
    let id = client.start(queue, None, input).await?;
    let outcome = client.outcome(&id).await?;
    let took = started.elapsed();
    check(outcome.results.len(), size)?;
    if outcome.results.iter().any(|result| result.outcome.is_err()) {
        return Err(format!("a durable call failed: {:?}", outcome.results).into());
    }
    Ok(took)
}

fn check(results: usize, size: usize) -> Result<(), Box<dyn Error>> {
    if results == size {
        Ok(())
    } else {
        Err(format!("{results} results for {size} calls").into())
    }
}

/// The median, in milliseconds.
fn median(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples
        .get(samples.len() / 2)
        .map_or(0.0, |took| took.as_secs_f64() * 1000.0)
}
