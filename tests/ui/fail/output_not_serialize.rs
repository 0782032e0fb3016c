// Rule: a tool's output is written as JSON, so it implements `Serialize`; the error is our
// `ToolOutput` message on the return type, with the derive that fixes it.
use pleach_core::tool;

struct Report {
    lines: Vec<String>,
}

/// Makes a report.
#[tool]
async fn make_report() -> Report {
    Report { lines: Vec::new() }
}

fn main() {
    let _ = make_report();
    let _ = Report { lines: Vec::new() }.lines;
}
