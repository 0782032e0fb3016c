#[derive(::pleach_core::serde::Deserialize, ::pleach_core::schemars::JsonSchema)]
/// How to travel.
#[serde(rename_all = "snake_case")]
#[derive(Debug, Serialize)]
#[serde(crate = "::pleach_core::serde")]
#[schemars(crate = "::pleach_core::schemars")]
pub enum Mode {
    /// On foot.
    Walk,
    Cycle,
}
