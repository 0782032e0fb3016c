//! Test fixture: defines `shared_name`, as does the other dup crate. Linking both into one binary
//! must make the registry report the duplicate with both definition sites.

/// Says which crate answered.
#[pleach_core::tool]
pub async fn shared_name() -> &'static str {
    "dup-a"
}
