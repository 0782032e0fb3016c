// Rule: every key takes a string literal; the error sits on the value.
use pleach_core::unified_tool;

/// Reads a note.
#[unified_tool(category = notes)]
async fn read_note(key: String) -> String {
    key
}

fn main() {
    let _ = read_note(String::new());
}
