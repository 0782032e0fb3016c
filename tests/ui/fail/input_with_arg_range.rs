// Rule: an `#[input]` type carries its own ranges (`#[schemars(range(…))]`); `#[arg(min/max)]` on
// it is an error, not silently ignored.
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Deserialize;
use pleach_core::tool;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
struct Query {
    limit: u32,
}

/// Free-text search.
#[tool]
async fn find(
    #[input]
    #[arg(min = 1)]
    query: Query,
) -> u32 {
    query.limit
}

fn main() {
    let _ = find(Query { limit: 1 });
}
