// Rule: a near miss of a `#[unified_tool]` key on `#[tool]` gets "did you mean" and says the key
// belongs to the other macro.
use pleach_core::tool;

/// Reads a note.
#[tool(catgory = "notes")]
async fn read_note(key: String) -> String {
    key
}

fn main() {
    let _ = read_note(String::new());
}
