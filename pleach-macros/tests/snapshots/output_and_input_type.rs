#[derive(
    ::pleach_core::serde::Serialize,
    ::pleach_core::schemars::JsonSchema,
    ::pleach_core::serde::Deserialize
)]
/// What a receipt is for.
#[derive(Debug)]
#[schemars(crate = "::pleach_core::schemars")]
#[serde(crate = "::pleach_core::serde")]
pub enum Category {
    Food,
    Travel,
}
