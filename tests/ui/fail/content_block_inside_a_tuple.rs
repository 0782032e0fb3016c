// Rule: content blocks are not JSON, so a tool returns them as its whole output (`ContentBlock`,
// `Vec<ContentBlock>`) or beside a value (`ToolOutput<T>`), never inside another type (a tuple, an
// `Option`, a map); the error is ours, on the nested block, naming the shapes a tool can return.
use pleach_core::content::ContentBlock;
use pleach_core::tool;

/// Takes a screenshot and counts it.
#[tool]
async fn screenshot() -> (u32, ContentBlock) {
    (1, ContentBlock::image(vec![0u8], "image/png"))
}

fn main() {
    let _ = screenshot();
}
