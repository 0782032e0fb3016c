//! `parse_structured` on arbitrary text in each format: a value or a clear error, never a panic,
//! never a hang (the size and depth limits hold).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pleach_core::ToolContext;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let format = ["json", "yaml", "toml", "csv"][usize::from(pick) % 4];
    let arguments = serde_json::json!({ "format": format, "text": text }).to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let definition = pleach_tools::parse_structured::parse_structured::definition();
    let _ = runtime.block_on(definition.call(&arguments, ToolContext::new("fuzz")));
});
