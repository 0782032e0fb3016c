#[derive(::pleach_core::serde::Deserialize, ::pleach_core::schemars::JsonSchema)]
/// How to travel.
#[serde(rename_all = "snake_case")]
#[derive(Debug, Serialize)]
#[schemars(crate = "::pleach_core::schemars")]
#[serde(crate = "::pleach_core::serde")]
pub enum Mode {
    /// On foot.
    Walk,
    Cycle,
}
