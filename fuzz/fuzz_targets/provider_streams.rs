//! Arbitrary bytes into every provider's stream parser, as SSE and as JSON lines: events or
//! errors, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pleach_core::providers::{
    Decoder, StreamParser, anthropic, gemini, openai_chat, openai_responses,
};

fn run<P: StreamParser>(parser: impl Fn() -> P, data: &[u8]) {
    let half = data.len() / 2;
    for mut decoder in [Decoder::sse(parser()), Decoder::json_lines(parser())] {
        let _ = decoder.feed(&data[..half]);
        let _ = decoder.feed(&data[half..]);
        let _ = decoder.finish();
    }
}

fuzz_target!(|data: &[u8]| {
    run(openai_chat::ChatStreamParser::new, data);
    run(openai_responses::ResponsesStreamParser::new, data);
    run(anthropic::MessagesStreamParser::new, data);
    run(gemini::GeminiStreamParser::new, data);
});
