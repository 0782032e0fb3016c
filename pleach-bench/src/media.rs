//! `media`: a 1 MB image from a tool to the bytes of a model request, beside base64-encoding the
//! same megabyte alone (issue 37's bound: at most one encode and no decode on the way).
//!
//! | row | what one run is |
//! | --- | --- |
//! | `encode only` | the floor: `base64::STANDARD.encode` of the 1 MB, once |
//! | `anthropic`, `openai-responses`, `gemini`, `openai-chat` | `Session::call` of a `#[tool]` returning `ToolOutput` with the image (its bytes shared, as a tool holding its image returns them), the result written into the conversation (`Message::tool_result`), the conversation as the format's messages, and the request body written as the model clients send it (the messages moved into the body, the body as `pleach_core::providers::JsonBody`'s pieces: the base64 moved in, not copied) |
//!
//! The rows run interleaved (who goes first rotates), after warm-up rounds; each row's number is
//! the median run. Every row's body is checked to hold the image's base64 once before anything
//! is timed. The summary line's `pleach_us` is the slowest format's median.

use std::error::Error;
use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use pleach_core::content::{Bytes, ContentBlock, ToolOutput};
use pleach_core::providers::anthropic::Anthropic;
use pleach_core::providers::gemini::Gemini;
use pleach_core::providers::openai_chat::OpenAiChat;
use pleach_core::providers::openai_responses::OpenAiResponses;
use pleach_core::providers::{JsonBody, ProviderFormat};
use pleach_core::{Message, Session, SessionOptions, ToolCall};
use serde_json::json;
use tokio::runtime::Runtime;

/// The image's size: 1 MiB.
const IMAGE_BYTES: usize = 1 << 20;

/// The summary line's goal: at most this many times the encode alone.
const TARGET_RATIO: f64 = 1.5;

/// The image every run sends (its bytes made once).
fn image() -> &'static Bytes {
    static IMAGE: OnceLock<Bytes> = OnceLock::new();
    IMAGE.get_or_init(|| Bytes::from(png(IMAGE_BYTES)))
}

/// `len` bytes of a 1024×768 PNG: its header, then bytes that vary and do not compress (so no run
/// is cheaper for repeated input). No pixels are decoded anywhere.
pub(crate) fn png(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend_from_slice(&1024u32.to_be_bytes());
    bytes.extend_from_slice(&768u32.to_be_bytes());
    let mut state = 0x9e37_79b9_u32;
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// Takes a 1 MB screenshot (`media`'s tool).
#[pleach_core::tool]
async fn bench_screenshot() -> ToolOutput<String> {
    ToolOutput::new("1024×768".to_owned()).block(ContentBlock::image(image().clone(), "image/png"))
}

/// A format a client sends, and the body it writes around the messages.
struct Row {
    label: &'static str,
    format: &'static dyn ProviderFormat,
    /// The request body's field holding the conversation.
    field: &'static str,
}

const ROWS: [Row; 4] = [
    Row {
        label: "anthropic",
        format: &Anthropic,
        field: "messages",
    },
    Row {
        label: "openai-responses",
        format: &OpenAiResponses,
        field: "input",
    },
    Row {
        label: "gemini",
        format: &Gemini,
        field: "contents",
    },
    Row {
        label: "openai-chat",
        format: &OpenAiChat,
        field: "messages",
    },
];

/// How much to measure: warm-up runs, then measured runs, per row.
fn rounds(quick: bool) -> (u32, u32) {
    if quick { (5, 31) } else { (30, 301) }
}

/// Runs the `media` measurement and prints its table and summary line.
pub(crate) fn run(quick: bool) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let session = pleach_core::Runtime::builder()
        .build()?
        .create_session(SessionOptions::enabled(["bench_screenshot"]))?;
    let call = ToolCall::new("call_1", "bench_screenshot", "{}");
    let encoded = STANDARD.encode(image());
    for row in &ROWS {
        let body = request_body(&runtime, &session, &call, row)?.to_vec();
        let text = std::str::from_utf8(&body)?;
        if text.matches(encoded.as_str()).count() != 1 {
            return Err(format!(
                "the {} body does not hold the image's base64 once",
                row.label
            )
            .into());
        }
    }

    let (warmup, measured) = rounds(quick);
    println!(
        "pleach-bench media: a {IMAGE_BYTES}-byte image from a tool's ToolOutput to a request \
         body's bytes; {measured} runs per row after {warmup} warm-up runs, interleaved{}",
        if quick { " (--quick)" } else { "" },
    );
    let rows = ROWS.len() + 1;
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(measured as usize); rows];
    for round in 0..warmup + measured {
        for offset in 0..rows {
            let index = (round as usize + offset) % rows;
            let elapsed = if index == 0 {
                let start = Instant::now();
                black_box(STANDARD.encode(black_box(image())));
                start.elapsed()
            } else {
                let start = Instant::now();
                black_box(request_body(&runtime, &session, &call, &ROWS[index - 1])?);
                start.elapsed()
            };
            if round >= warmup {
                times[index].push(elapsed);
            }
        }
    }
    let medians: Vec<f64> = times.iter_mut().map(|runs| median_us(runs)).collect();
    let encode_only = medians[0];
    println!("row                   median µs   × encode");
    println!("encode only        {encode_only:>12.0}       1.00");
    for (row, median) in ROWS.iter().zip(&medians[1..]) {
        println!(
            "{:<18} {:>12.0} {:>10.2}",
            row.label,
            median,
            median / encode_only
        );
    }
    let slowest = medians[1..].iter().copied().fold(0.0, f64::max);
    let ratio = slowest / encode_only;
    println!(
        "slowest format: {ratio:.2}× the encode alone (target ≤ {TARGET_RATIO}×: {})",
        if ratio <= TARGET_RATIO {
            "met"
        } else {
            "missed"
        }
    );
    println!("media bytes={IMAGE_BYTES} pleach_us={slowest:.0} encode_only_us={encode_only:.0}");
    Ok(())
}

/// One run of a row: the call through the session, its result into the conversation, and the
/// request body's bytes.
fn request_body(
    runtime: &Runtime,
    session: &Session,
    call: &ToolCall,
    row: &Row,
) -> Result<JsonBody, Box<dyn Error>> {
    let result = runtime.block_on(session.call(call.clone()));
    if let Err(error) = &result.outcome {
        return Err(format!("the tool failed: {error}").into());
    }
    let conversation = [
        Message::User {
            content: "What is on the screen?".into(),
        },
        Message::Assistant {
            content: None,
            tool_calls: vec![call.clone()],
        },
        Message::tool_result(call, &result.outcome),
    ];
    // As the clients write it: the messages moved into the body, the body written as the pieces
    // they send (`JsonBody`: the base64 moved in, not copied).
    let mut body = json!({ "model": "m", "stream": true });
    body[row.field] = serde_json::Value::Array(row.format.messages(&conversation));
    Ok(JsonBody::new(body)?)
}

/// The median of `runs`, in microseconds (`NaN` when nothing was measured).
fn median_us(runs: &mut [Duration]) -> f64 {
    runs.sort_unstable();
    runs.get(runs.len() / 2)
        .map_or(f64::NAN, |median| median.as_secs_f64() * 1e6)
}
