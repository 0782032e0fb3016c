#[derive(::pleach_core::schemars::JsonSchema)]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, crate = "pleach_core::serde")]
#[schemars(crate = "::pleach_core::schemars")]
struct Query {
    text: String,
}
