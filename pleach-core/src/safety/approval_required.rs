//! The "always ask" policy: a detector that flags every call of the tools it names, so each one
//! waits for the user's decision (the AI SDK's `needsApproval`, the OpenAI Agents SDK's
//! `needs_approval`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{FabricationDetector, Finding, Provenance};
use crate::call::ToolCall;

/// Flags every call of the tools it names, whatever the arguments: "always ask before deleting".
///
/// A tier acts only on a finding, and this detector makes one for each call it covers. What the
/// finding does is the tool's tier (`docs/safety.md`):
///
/// | tier | each call of a named tool |
/// | --- | --- |
/// | `standard`, or no tier | waits for the host's decision (`interrupt.requested`; accept, edit or reject) |
/// | `advisory` | runs, after a `safety.probe` event |
/// | `critical` | never runs (1012): use `standard` for "ask first" |
///
/// A host that cannot ask its user (an MCP server over stdio, a call dispatched without an event
/// stream) fails such a call at once with 1012, its message saying approval is required; a
/// decision that does not come within [`RuntimeBuilder::approval_timeout`](crate::RuntimeBuilder::approval_timeout)
/// fails it with 1016. [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refuses a name the
/// registry does not have, so a typo cannot turn the policy off.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolError, ToolEvent, ToolRegistryBuilder, ToolDefinition};
/// use pleach_core::safety::ApprovalRequired;
///
/// let delete = ToolDefinition::builder("delete_expense", "Deletes an expense.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!({ "deleted": true })) })
///     .unwrap();
/// let runtime = Runtime::builder()
///     .registry(ToolRegistryBuilder::new().register(delete).build().unwrap())
///     .detector(ApprovalRequired::tools(["delete_expense"]))
///     .build()
///     .unwrap();
/// let session = runtime.create_session(SessionOptions::all()).unwrap();
/// let mut turn = session.run_turn(vec![ToolCall::new("c1", "delete_expense", r#"{"id":7}"#)]);
/// while let Some(event) = turn.events().recv().await {
///     if let ToolEvent::InterruptRequested { interrupt } = &event {
///         // Ask the user; here they say yes.
///         session.resolve(interrupt.accept()).unwrap();
///     }
/// }
/// assert!(turn.finish().await[0].outcome.is_ok());
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[doc(alias = "needsApproval")]
#[doc(alias = "needs_approval")]
pub struct ApprovalRequired {
    tools: BTreeSet<String>,
}

impl ApprovalRequired {
    /// Asks before every call of each tool in `names`.
    ///
    /// ```
    /// use pleach_core::safety::{ApprovalRequired, FabricationDetector};
    /// let policy = ApprovalRequired::tools(["delete_expense", "refund"]);
    /// assert!(policy.covers("refund"));
    /// assert!(!policy.covers("list_expenses"));
    /// ```
    pub fn tools<N: Into<String>>(names: impl IntoIterator<Item = N>) -> Self {
        ApprovalRequired {
            tools: names.into_iter().map(Into::into).collect(),
        }
    }

    /// Also asks before every call of `name`.
    ///
    /// ```
    /// use pleach_core::safety::{ApprovalRequired, FabricationDetector};
    /// let policy = ApprovalRequired::tools(["delete_expense"]).guard("refund");
    /// assert!(policy.covers("refund"));
    /// ```
    #[must_use]
    pub fn guard(mut self, name: impl Into<String>) -> Self {
        self.tools.insert(name.into());
        self
    }
}

impl FabricationDetector for ApprovalRequired {
    fn name(&self) -> &'static str {
        "approval-required"
    }

    fn covers(&self, tool_name: &str) -> bool {
        self.tools.contains(tool_name)
    }

    fn guarded_tools(&self) -> Vec<&str> {
        self.tools.iter().map(String::as_str).collect()
    }

    fn inspect(
        &self,
        call: &ToolCall,
        _arguments: &Value,
        _provenance: &Provenance,
    ) -> Vec<Finding> {
        if !self.covers(call.name()) {
            return Vec::new();
        }
        vec![Finding::new(
            "",
            Value::Null,
            format!(
                "the operator asks the user before every call of `{}`",
                call.name()
            ),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_of_a_named_tool_is_flagged_whatever_its_arguments() {
        let policy = ApprovalRequired::tools(["delete_expense"]);
        let call = ToolCall::new("c1", "delete_expense", "");
        for arguments in [serde_json::json!({}), serde_json::json!({ "id": 7 })] {
            let findings = policy.inspect(&call, &arguments, &Provenance::new());
            assert_eq!(findings.len(), 1);
            assert_eq!(findings[0].path, "");
            assert!(findings[0].reason.contains("`delete_expense`"));
        }
        let other = ToolCall::new("c2", "list_expenses", "");
        assert!(
            policy
                .inspect(&other, &serde_json::json!({}), &Provenance::new())
                .is_empty()
        );
    }

    #[test]
    fn the_named_tools_are_reported_for_the_runtime_to_check() {
        let policy = ApprovalRequired::tools(["b", "a"]).guard("c");
        assert_eq!(policy.guarded_tools(), ["a", "b", "c"]);
    }
}
