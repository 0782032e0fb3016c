// Rule: `#[unified_tool]` rejects unknown keys too, with "did you mean" for a near miss.
use pleach_core::unified_tool;

/// Reads a note.
#[unified_tool(catgory = "notes")]
async fn read_note(key: String) -> String {
    key
}

fn main() {
    let _ = read_note(String::new());
}
