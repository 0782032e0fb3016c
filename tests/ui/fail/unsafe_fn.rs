// Rule: a tool cannot be an `unsafe fn`: a model cannot uphold a safety contract.
use pleach_core::tool;

/// Reads raw memory.
#[tool]
async unsafe fn peek(address: u64) -> u64 {
    address
}

fn main() {
    let _ = unsafe { peek(0) };
}
