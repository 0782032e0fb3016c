//! Safety tiers, host fabrication detectors, provenance, and approval interrupts.
//!
//! A host registers [`FabricationDetector`]s (with
//! [`RuntimeBuilder::detector`](crate::RuntimeBuilder::detector) or a plugin's
//! [`detector`](crate::PleachPlugin::detector)). Before a call to a tool a
//! detector covers runs, the detector inspects its arguments against the turn's [`Provenance`];
//! each [`Finding`] routes the call by the tool's [`SafetyTier`]:
//!
//! | tier | a finding means |
//! | --- | --- |
//! | `critical` | a hard halt: the tool never runs; `tool.failed` with 1012, `_recoverable: false` |
//! | `standard` (also a guarded tool with no tier) | an approval interrupt: `interrupt.requested` with the findings and a ground-truth panel; the host answers accept, edit or reject ([`Decision`]) |
//! | `advisory` | a `safety.probe` event, and the call runs |
//!
//! A tier acts only on a finding: a tool no detector covers is never inspected, so a `standard` or
//! `advisory` tier alone changes nothing about how its calls run. To ask before every call of a
//! tool, register [`ApprovalRequired`]; to ask only when a value looks made up,
//! [`ProvenanceDetector`]. A `critical` tool no detector covers makes
//! [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) fail; [`assert_critical_coverage`] is
//! the one-line test of the same invariant. The tier lives on the registry-level shape
//! ([`UnifiedToolDefinition`](crate::UnifiedToolDefinition), set with
//! `#[unified_tool(safety_tier = "…")]` or [`UnifiedToolDefinition::from`](crate::UnifiedToolDefinition)),
//! never on the basic [`ToolDefinition`](crate::ToolDefinition). `docs/safety.md` is the contract.
//!
//! ```
//! use pleach_core::{ToolCall, safety::{FabricationDetector, Provenance, ProvenanceDetector}};
//! use serde_json::json;
//!
//! // `transfer_funds` may only pay accounts the turn has seen.
//! let detector = ProvenanceDetector::new().guard("transfer_funds", ["/to_account"]);
//! let mut provenance = Provenance::new();
//! provenance.record_result(&ToolCall::new("c1", "find_account", "{}"), &json!({ "id": "ACC-0042" }));
//!
//! let call = ToolCall::new("c2", "transfer_funds", "");
//! assert!(detector.inspect(&call, &json!({ "to_account": "ACC-0042" }), &provenance).is_empty());
//! let findings = detector.inspect(&call, &json!({ "to_account": "ACC-0043" }), &provenance);
//! assert_eq!(findings[0].path, "/to_account"); // made up: halt, ask or probe, by the tool's tier
//! ```

mod approval_required;
mod interrupt;
mod provenance;

pub use approval_required::ApprovalRequired;
#[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
pub use interrupt::fingerprint;
pub(crate) use interrupt::fingerprint_of_text;
pub use interrupt::{Action, Decision, DecisionError, GroundTruth, Interrupt, SealError};
#[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
pub use interrupt::{seal_mac, seal_verifies};
pub use provenance::{KnownValue, MatchKind, Provenance, ProvenanceDetector, Seen, Source};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::ToolCall;
use crate::registry::ToolSource;
use crate::tier::SafetyTier;

/// One flagged argument: where it is, what it holds, and why it looks fabricated.
///
/// ```
/// use pleach_core::safety::Finding;
/// let finding = Finding::new("/to_account", serde_json::json!("ACC-0043"), "never seen in this turn");
/// assert_eq!(serde_json::to_value(&finding).unwrap()["path"], "/to_account");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The argument's JSON pointer (`""` for the call as a whole).
    pub path: String,
    /// The value found there.
    pub value: Value,
    /// Why it was flagged, for the user and the operator.
    pub reason: String,
}

impl Finding {
    /// A finding at `path`.
    ///
    /// ```
    /// let finding = pleach_core::safety::Finding::new("/amount", serde_json::json!(9000), "never stated");
    /// assert_eq!(finding.reason, "never stated");
    /// ```
    pub fn new(path: impl Into<String>, value: Value, reason: impl Into<String>) -> Self {
        Finding {
            path: path.into(),
            value,
            reason: reason.into(),
        }
    }
}

/// A host's fabrication detector: decides which tools it guards and, for a call to one of them,
/// which argument values look made up, given what the turn has seen so far.
///
/// A detector must not block: it runs inside the call's pipeline. One that panics does not crash
/// anything: its panic becomes a finding on the call (path `""`), so a broken detector fails
/// closed (a halt, an approval, or a probe, by the tool's tier).
///
/// ```
/// use pleach_core::{ToolCall, safety::{FabricationDetector, Finding, Provenance}};
/// use serde_json::Value;
///
/// /// Flags any transfer above 10,000 that the user did not type.
/// struct LargeTransfers;
///
/// impl FabricationDetector for LargeTransfers {
///     fn name(&self) -> &'static str { "large-transfers" }
///     fn covers(&self, tool_name: &str) -> bool { tool_name == "transfer_funds" }
///     fn inspect(&self, _call: &ToolCall, arguments: &Value, provenance: &Provenance) -> Vec<Finding> {
///         let amount = &arguments["amount"];
///         match amount.as_f64() {
///             Some(a) if a > 10_000.0 && provenance.seen(amount).is_none() => {
///                 vec![Finding::new("/amount", amount.clone(), "a large amount nobody stated")]
///             }
///             _ => Vec::new(),
///         }
///     }
/// }
///
/// let call = ToolCall::new("c1", "transfer_funds", "");
/// let findings = LargeTransfers.inspect(&call, &serde_json::json!({ "amount": 50_000 }), &Provenance::new());
/// assert_eq!(findings[0].path, "/amount");
/// ```
pub trait FabricationDetector: Send + Sync + 'static {
    /// A short name for events and errors.
    ///
    /// ```
    /// use pleach_core::safety::{FabricationDetector, ProvenanceDetector};
    /// assert_eq!(ProvenanceDetector::new().name(), "provenance");
    /// ```
    fn name(&self) -> &str;

    /// Whether this detector guards the tool named `tool_name`.
    ///
    /// ```
    /// use pleach_core::safety::{FabricationDetector, ProvenanceDetector};
    /// let detector = ProvenanceDetector::new().guard("transfer_funds", ["/to_account"]);
    /// assert!(detector.covers("transfer_funds"));
    /// assert!(!detector.covers("get_weather"));
    /// ```
    fn covers(&self, tool_name: &str) -> bool;

    /// The tools this detector names explicitly, if it keeps such a list:
    /// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refuses a name the registry does
    /// not have (a typo would silently leave the real tool unguarded). The default, for a
    /// detector that decides by rule, is none.
    ///
    /// ```
    /// use pleach_core::safety::{FabricationDetector, ProvenanceDetector};
    /// let detector = ProvenanceDetector::new().guard("transfer_funds", ["/to_account"]);
    /// assert_eq!(detector.guarded_tools(), ["transfer_funds"]);
    /// ```
    fn guarded_tools(&self) -> Vec<&str> {
        Vec::new()
    }

    /// The findings for one call (already valid against the tool's input schema): `arguments` is
    /// its parsed arguments, `provenance` what the turn has seen before it.
    ///
    /// ```
    /// use pleach_core::{ToolCall, safety::{FabricationDetector, Provenance, ProvenanceDetector}};
    /// use serde_json::json;
    ///
    /// let detector = ProvenanceDetector::new().guard("transfer_funds", ["/to_account"]);
    /// let call = ToolCall::new("c1", "transfer_funds", "");
    /// let findings = detector.inspect(&call, &json!({ "to_account": "ACC-9" }), &Provenance::new());
    /// assert_eq!(findings.len(), 1);
    /// ```
    fn inspect(&self, call: &ToolCall, arguments: &Value, provenance: &Provenance) -> Vec<Finding>;
}

/// The `critical` tools of `registry` that none of `detectors` covers, sorted by name: each could
/// bypass its hard halt.
///
/// ```rust,standalone_crate
/// use pleach_core::{tool_registry, unified_tool, safety::{uncovered_critical_tools, ProvenanceDetector}};
///
/// /// Deletes a customer's account.
/// #[unified_tool(safety_tier = "critical")]
/// async fn delete_account(account_id: String) -> bool { !account_id.is_empty() }
///
/// let registry = tool_registry();
/// assert_eq!(uncovered_critical_tools(registry, &[]), ["delete_account"]);
/// let detector = ProvenanceDetector::new().guard("delete_account", ["/account_id"]);
/// assert!(uncovered_critical_tools(registry, &[&detector]).is_empty());
/// ```
pub fn uncovered_critical_tools(
    registry: &dyn ToolSource,
    detectors: &[&dyn FabricationDetector],
) -> Vec<String> {
    let mut uncovered: Vec<String> = registry
        .tools()
        .into_iter()
        .filter(|tool| tool.safety_tier() == Some(SafetyTier::Critical))
        .filter(|tool| !detectors.iter().any(|d| d.covers(tool.name())))
        .map(|tool| tool.name().to_owned())
        .collect();
    uncovered.sort();
    uncovered
}

/// Panics, naming each one, if a `critical` tool of `registry` is covered by none of
/// `detectors`: the one-line test that makes CI fail when a critical tool could bypass its halt.
///
/// ```rust,standalone_crate
/// use pleach_core::{tool_registry, unified_tool, safety::{assert_critical_coverage, ProvenanceDetector}};
///
/// /// Wires money.
/// #[unified_tool(safety_tier = "critical")]
/// async fn wire_money(to_account: String, amount: f64) -> bool { !to_account.is_empty() && amount > 0.0 }
///
/// // In a test of yours:
/// assert_critical_coverage(tool_registry(), &[&ProvenanceDetector::new().guard("wire_money", ["/to_account"])]);
/// ```
///
/// # Panics
///
/// When a critical tool is uncovered; the message lists every such tool.
#[track_caller]
pub fn assert_critical_coverage(registry: &dyn ToolSource, detectors: &[&dyn FabricationDetector]) {
    let uncovered = uncovered_critical_tools(registry, detectors);
    assert!(uncovered.is_empty(), "{}", uncovered_message(&uncovered));
}

pub(crate) fn uncovered_message(uncovered: &[String]) -> String {
    let names: Vec<String> = uncovered.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "critical tools not covered by any fabrication detector: {}; register a detector that \
         covers each (RuntimeBuilder::detector or PleachPlugin::detector), or lower its tier",
        names.join(", ")
    )
}
