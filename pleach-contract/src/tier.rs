//! [`SafetyTier`]: where a flagged call goes (`critical`, `standard`, `advisory`). The tier is part
//! of a tool's registry-level shape; the runtime's `safety` module routes calls by it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a flagged call goes. See `docs/safety.md` for the routing table.
///
/// ```
/// use pleach_core::SafetyTier;
///
/// let tier: SafetyTier = "critical".parse().unwrap();
/// assert_eq!(tier, SafetyTier::Critical);
/// assert_eq!(tier.as_str(), "critical");
/// assert!("urgent".parse::<SafetyTier>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SafetyTier {
    /// A hard-halt stage short-circuits dispatch with `_recoverable: false`. Not overridable.
    Critical,
    /// An approval interrupt: the user can accept, edit or reject the call.
    Standard,
    /// Probe only: the detector fires for observability; no halt and no card.
    Advisory,
}

impl SafetyTier {
    /// Every tier, strictest first.
    pub const ALL: [SafetyTier; 3] = [
        SafetyTier::Critical,
        SafetyTier::Standard,
        SafetyTier::Advisory,
    ];

    /// The tier as the TypeScript spec spells it: `"critical"`, `"standard"` or `"advisory"`.
    ///
    /// ```
    /// assert_eq!(pleach_core::SafetyTier::Advisory.as_str(), "advisory");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            SafetyTier::Critical => "critical",
            SafetyTier::Standard => "standard",
            SafetyTier::Advisory => "advisory",
        }
    }
}

impl fmt::Display for SafetyTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a [`SafetyTier`] from text.
///
/// ```
/// let err = "urgent".parse::<pleach_core::SafetyTier>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "unknown safety tier `urgent`; expected one of `critical`, `standard`, `advisory`"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown safety tier `{0}`; expected one of `critical`, `standard`, `advisory`")]
pub struct ParseSafetyTierError(String);

impl FromStr for SafetyTier {
    type Err = ParseSafetyTierError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SafetyTier::ALL
            .into_iter()
            .find(|tier| tier.as_str() == s)
            .ok_or_else(|| ParseSafetyTierError(s.to_owned()))
    }
}

impl SafetyTier {
    /// The MCP tool annotations this tier maps to: `critical` and `standard` tools are
    /// destructive (`destructiveHint: true`); no tier claims read-only (`readOnlyHint: false`),
    /// since a tier exists because a call can do harm.
    ///
    /// ```
    /// use pleach_core::SafetyTier;
    /// assert_eq!(
    ///     SafetyTier::Critical.mcp_annotations(),
    ///     serde_json::json!({ "destructiveHint": true, "readOnlyHint": false })
    /// );
    /// assert_eq!(SafetyTier::Advisory.mcp_annotations()["destructiveHint"], false);
    /// ```
    pub fn mcp_annotations(self) -> Value {
        let destructive = matches!(self, SafetyTier::Critical | SafetyTier::Standard);
        serde_json::json!({ "destructiveHint": destructive, "readOnlyHint": false })
    }
}
