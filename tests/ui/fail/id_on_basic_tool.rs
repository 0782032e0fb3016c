// Rule: `id` is a key of the registry-level shape only; on `#[tool]` the error sits on `id` and
// names `#[unified_tool]`.
use pleach_core::tool;

/// Reads a note.
#[tool(id = "notes.read")]
async fn read_note(key: String) -> String {
    key
}

fn main() {
    let _ = read_note(String::new());
}
