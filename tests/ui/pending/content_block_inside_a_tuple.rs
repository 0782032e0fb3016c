// PENDING (not run): a content block inside another type (a tuple, an `Option`, a map).
// Today: a compile error (blocks are not `Serialize`, so they never reach the model as base64
// JSON), but in serde's words: "the trait bound `ContentBlock: Serialize` is not satisfied", our
// `ToolReturn` only in its notes ("required for `(u32, ContentBlock)` to implement
// `pleach_core::__private::ToolReturn`"): rustc reports the deepest bound that failed.
// Wanted: our message naming the shapes a tool can return (`output_not_serialize.rs` shows it for
// a type one level down). Needs a bound of ours at the leaf: `Serialize` for `ContentBlock`
// behind a trait with `on_unimplemented` that no type implements, which needs rustc's
// `trivial_bounds` (unstable) or an impl generic over something that makes the bound non-trivial.
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
