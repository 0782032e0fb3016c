//! Quick start: define tools with `#[tool]`, list the registry with their schemas, validate a good
//! and a bad call, and run one.
//!
//! ```text
//! cargo run -p pleach-examples --example quickstart
//! ```

use pleach_core::{ToolCall, ToolContext, ToolError, tool, tool_registry, validate_tool_call};

/// Free-text search over the host corpus.
#[tool]
async fn search_corpus(
    #[arg(description = "What to look for")] query: String,
    #[arg(description = "How many results", default = 10, min = 1, max = 50)] limit: u32,
) -> Result<Vec<String>, ToolError> {
    if query.trim().is_empty() {
        return Err(ToolError::failed(
            "the query is blank; say what to look for",
        ));
    }
    Ok((1..=limit.min(3))
        .map(|i| format!("{query}: result {i}"))
        .collect())
}

/// Converts a temperature from Celsius to Fahrenheit.
#[tool]
async fn celsius_to_fahrenheit(celsius: f64) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The catalog crate registers its tools too, once it is linked.
    pleach_tools::link();

    let registry = tool_registry();
    println!("{} tools registered:", registry.len());
    for tool in registry.tools() {
        let definition = tool.definition();
        println!("\n- {} — {}", definition.name(), definition.description());
        println!("  input schema: {}", definition.input_schema());
        if let Some(output) = definition.output_schema() {
            println!("  output schema: {output}");
        }
    }

    let calls = [
        ToolCall::new(
            "call_1",
            "search_corpus",
            r#"{"query":"pleaching hedges","limit":2}"#,
        ),
        ToolCall::new(
            "call_2",
            "search_corpus",
            r#"{"query":42,"limit":80,"sort":"date"}"#,
        ),
        ToolCall::new("call_3", "search_corpus", r#"{"query":"a","query":"b"}"#),
        ToolCall::new("call_4", "no_such_tool", "{}"),
    ];
    println!("\nValidating calls:");
    for call in &calls {
        let verdict = validate_tool_call(call);
        println!(
            "\n{} {} {}",
            call.name(),
            call.arguments(),
            if verdict.valid {
                "→ valid"
            } else {
                "→ invalid"
            }
        );
        for error in &verdict.errors {
            let path = if error.path.is_empty() {
                "(top level)"
            } else {
                &error.path
            };
            println!("  {path} [{}] {}", error.keyword, error.message);
        }
    }

    println!("\nRunning call_1:");
    let definition = search_corpus::definition();
    let result = definition
        .call(calls[0].arguments(), ToolContext::new(calls[0].id()))
        .await?;
    println!("  {}", result.value());
    Ok(())
}
