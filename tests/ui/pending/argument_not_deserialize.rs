// PENDING (not run): an argument type without `Deserialize`.
// Today: three E0277 errors in rustc/serde wording, from serde's derive on the generated arguments
// struct (two on `Filter`, one on `#[tool]`).
// Wanted: one error on `Filter` in our words. Needs expand.rs/__private.rs: assert a trait of ours
// (`ToolArgument: DeserializeOwned + JsonSchema`, with `on_unimplemented`) at the type's span, and
// stop deriving `Deserialize` on a struct holding the user's types (read each field with
// `T: ToolArgument` instead), so serde's derive cannot report the same bound again.
use pleach_core::schemars::JsonSchema;
use pleach_core::tool;

#[derive(JsonSchema)]
#[schemars(crate = "pleach_core::schemars")]
struct Filter {
    text: String,
}

/// Free-text search.
#[tool]
async fn search(filter: Filter) -> String {
    filter.text
}

fn main() {
    let _ = search(Filter {
        text: String::new(),
    });
}
