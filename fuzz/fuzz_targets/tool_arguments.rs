//! Arbitrary bytes as the arguments of every catalog tool: validation gives a verdict, and a call
//! an error or a result, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pleach_core::{ToolContext, tool_registry};

fuzz_target!(|data: &[u8]| {
    pleach_tools::link();
    let Ok(arguments) = std::str::from_utf8(data) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    for tool in tool_registry().tools() {
        let definition = tool.definition();
        let verdict = definition.validate_arguments(arguments);
        // The file tools need a configured root and fail at once without one: calling every tool
        // is safe here (no network tool is built into this target).
        let outcome = runtime.block_on(definition.call(arguments, ToolContext::new("fuzz")));
        if outcome.is_ok() {
            assert!(
                verdict.valid,
                "{}: ran on arguments its schema refuses",
                tool.name()
            );
        }
    }
});
