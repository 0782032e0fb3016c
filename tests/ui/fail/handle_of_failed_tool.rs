// Rule: one mistake in the attribute gives one error, also where code uses the tool's handle:
// beside the error the handle is emitted with every item a tool that compiles has (bodies that
// never run), so its uses resolve and type-check, in rustc and in an IDE.
use pleach_core::{DefinitionError, ToolDefinition, UnifiedToolDefinition, tool};

/// Looks a word up.
#[tool(nmae = "lookup")]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
    let _: &'static str = lookup::NAME;
    let _: Result<UnifiedToolDefinition, DefinitionError> = lookup::try_unified();
    let _: Option<pleach_core::SafetyTier> = lookup::unified().safety_tier();
    let _: ToolDefinition = lookup::definition();
    let _: &str = lookup::definition().name();
}
