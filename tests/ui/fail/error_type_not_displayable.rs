// An error type with none of `Into<ToolError>`, `Error`, `Display`, `Debug`: one error, on the
// error type in the return type, saying which trait to implement.
use pleach_core::tool;

struct Opaque;

/// Fails.
#[tool]
async fn fail() -> Result<u32, Opaque> {
    Err(Opaque)
}

fn main() {
    let _ = fail();
}
