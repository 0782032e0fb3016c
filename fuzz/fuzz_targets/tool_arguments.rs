//! Arbitrary bytes as the arguments of every catalog tool: validation gives a verdict, and a call
//! an error or a result, never a panic. `url_fetch` is validated but not called: it works without
//! configuration and would reach for the network; every other tool that touches the host (files,
//! programs, `http_request`) fails at once here, as no configuration is provided.
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
        if tool.name() == "url_fetch" {
            continue;
        }
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
