//! Approvals over MCP: an approval interrupt becomes an elicitation the client shows its user
//! (approve, approve with edited arguments, or reject), and the answer becomes the interrupt's
//! decision. Before MCP 2026-07-28 the server sends the elicitation as a request of its own; from
//! 2026-07-28 on (no requests from server to client) it answers the call with an
//! input-required result carrying the elicitation and the sealed interrupt, and the client
//! retries the call with the user's answer. A client that cannot elicit cannot ask its user: its
//! session takes no approvals.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext};
use serde_json::json;

use pleach_core::client::Elicitation;
use pleach_core::safety::{Decision, Interrupt};

/// The key of the approval among an input-required result's requests and its retry's answers.
pub(super) const INPUT_KEY: &str = "approval";

/// How a client's user can be asked.
pub(super) enum Asking {
    /// A request sent to the client during the call (before 2026-07-28).
    Request(Peer<RoleServer>),
    /// An input-required result, answered by the client's retry (2026-07-28 on).
    InputRequired,
    /// Not at all: the client declared no elicitation, or has no channel back (a stateless HTTP
    /// request before 2026-07-28).
    Cannot,
}

/// Whether the client of this request takes requests from the server during a call (every
/// protocol before 2026-07-28).
pub(super) fn can_request(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_none_or(|version| version.as_str() < ProtocolVersion::V_2026_07_28.as_str())
}

/// How the client of this request can be asked.
pub(super) fn asking(context: &RequestContext<RoleServer>) -> Asking {
    let declared = context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.elicitation.is_some());
    if !declared {
        return Asking::Cannot;
    }
    if can_request(context) {
        Asking::Request(context.peer.clone())
    } else {
        Asking::InputRequired
    }
}

/// The input-required result that asks the user about `interrupt`; `sealed` comes back with the
/// answer.
pub(super) fn input_required(
    interrupt: &Interrupt,
    sealed: String,
) -> Result<InputRequiredResult, String> {
    let request = ElicitRequest::new(elicitation(interrupt)?);
    let requests = BTreeMap::from([(INPUT_KEY.to_owned(), InputRequest::Elicitation(request))]);
    Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
}

/// Asks the user about `interrupt` and waits at most `timeout` for the answer; what they decided,
/// or a rejection saying why there is no answer.
pub(super) async fn ask(
    peer: Peer<RoleServer>,
    interrupt: Arc<Interrupt>,
    timeout: Duration,
) -> Decision {
    let params = match elicitation(&interrupt) {
        Ok(params) => params,
        Err(error) => {
            return interrupt.reject(format!(
                "the approval request could not be formed ({error}); the call did not run"
            ));
        }
    };
    match peer
        .create_elicitation_with_timeout(params, Some(timeout))
        .await
    {
        Ok(answer) => decide(&interrupt, &answer),
        Err(error) => interrupt.reject(format!(
            "the user's approval could not be had ({error}); the call did not run"
        )),
    }
}

// The form the user fills in about a call that needs approval: its schema is MCP's
// `requestedSchema` (through `Elicitation`, as a tool's typed question), and an accepted answer is
// read back as it.
#[derive(pleach_core::schemars::JsonSchema, pleach_core::serde::Deserialize)]
#[schemars(crate = "pleach_core::schemars")]
#[serde(crate = "pleach_core::serde")]
struct ApprovalForm {
    /// Yes runs it (with the arguments below, if you give any); no rejects it.
    #[schemars(title = "Run this call?")]
    approve: bool,
    /// To run it with other arguments: the whole arguments object as JSON. Empty keeps the model's.
    #[schemars(title = "Arguments (optional)")]
    arguments: Option<String>,
    /// Why not: the model reads it.
    #[schemars(title = "Reason (optional)")]
    reason: Option<String>,
}

/// The form the user answers about `interrupt`.
fn elicitation(interrupt: &Interrupt) -> Result<ElicitRequestParams, String> {
    let question = Elicitation::new::<ApprovalForm>(message(interrupt))
        .map_err(|error| error.message().to_owned())?;
    serde_json::from_value(json!({
        "mode": "form",
        "message": question.message,
        "requestedSchema": question.schema,
    }))
    .map_err(|error| error.to_string())
}

/// The decision an elicitation answer stands for.
pub(super) fn decide(interrupt: &Interrupt, answer: &ElicitResult) -> Decision {
    match answer.action {
        ElicitationAction::Accept => {
            let form = answer
                .content
                .clone()
                .and_then(|content| serde_json::from_value::<ApprovalForm>(content).ok());
            let given = |text: &Option<String>| {
                text.as_deref()
                    .map(str::trim)
                    .filter(|text| !text.is_empty())
                    .map(str::to_owned)
            };
            match form {
                Some(form) if form.approve => match given(&form.arguments) {
                    Some(arguments) => interrupt.edit(arguments),
                    None => interrupt.accept(),
                },
                form => interrupt.reject(
                    form.and_then(|form| given(&form.reason))
                        .as_deref()
                        .unwrap_or("the user did not approve this call"),
                ),
            }
        }
        ElicitationAction::Decline => interrupt.reject("the user declined this call"),
        ElicitationAction::Cancel => {
            interrupt.reject("the user dismissed the approval request; the call did not run")
        }
        _ => interrupt.reject("the client answered the approval request with an action this server does not know; the call did not run"),
    }
}

/// What the user reads: the call, its arguments, and what was flagged.
fn message(interrupt: &Interrupt) -> String {
    let call = &interrupt.tool_call;
    let findings = interrupt
        .findings
        .iter()
        .map(|finding| {
            if finding.path.is_empty() {
                format!("- {}", finding.reason)
            } else {
                format!("- `{}`: {}", finding.path, finding.reason)
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    format!(
        "The assistant wants to run `{}` with these arguments:\n{}\n\nIt needs your approval because:\n{findings}",
        call.name(),
        call.arguments()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::safety::{Action, Finding};
    use pleach_core::{SafetyTier, ToolCall};
    use serde_json::Value;

    fn interrupt() -> Interrupt {
        Interrupt::new(
            "int-1",
            ToolCall::new("c1", "delete_expense", r#"{"id":3}"#),
            SafetyTier::Standard,
            vec![Finding::new(
                "",
                Value::Null,
                "the operator asks before every call",
            )],
            Vec::new(),
        )
    }

    fn answer(action: &str, content: &Value) -> ElicitResult {
        serde_json::from_value(json!({ "action": action, "content": content })).unwrap()
    }

    #[test]
    fn the_form_is_the_approval_forms_schema_through_elicitation() {
        let params = serde_json::to_value(elicitation(&interrupt()).unwrap()).unwrap();
        let form = &params["requestedSchema"];
        assert_eq!(form["type"], "object");
        assert_eq!(form["required"], json!(["approve"]), "{form}");
        assert_eq!(
            form["properties"]["approve"],
            json!({
                "type": "boolean",
                "title": "Run this call?",
                "description": "Yes runs it (with the arguments below, if you give any); no rejects it.",
            }),
            "{form}"
        );
        assert_eq!(form["properties"]["arguments"]["type"], "string", "{form}");
        assert_eq!(form["properties"]["reason"]["title"], "Reason (optional)");
        assert!(
            params["message"]
                .as_str()
                .unwrap()
                .contains("delete_expense")
        );
    }

    #[test]
    fn each_answer_maps_to_its_decision() {
        let interrupt = interrupt();
        let cases = [
            (
                answer("accept", &(json!({"approve": true}))),
                Action::Accept,
            ),
            (
                answer(
                    "accept",
                    &(json!({"approve": true, "arguments": " {\"id\":4} "})),
                ),
                Action::Edit {
                    arguments: r#"{"id":4}"#.into(),
                },
            ),
            (
                answer(
                    "accept",
                    &(json!({"approve": false, "reason": "wrong expense"})),
                ),
                Action::Reject {
                    reason: "wrong expense".into(),
                },
            ),
            (
                answer("accept", &(json!({}))),
                Action::Reject {
                    reason: "the user did not approve this call".into(),
                },
            ),
            (
                answer("decline", &Value::Null),
                Action::Reject {
                    reason: "the user declined this call".into(),
                },
            ),
        ];
        for (answer, action) in cases {
            let decision = decide(&interrupt, &answer);
            assert_eq!(decision.action, action, "{answer:?}");
            assert_eq!(decision.fingerprint, interrupt.fingerprint);
        }
        let cancelled = decide(&interrupt, &answer("cancel", &Value::Null));
        assert!(matches!(cancelled.action, Action::Reject { .. }));
    }

    #[test]
    fn the_message_names_the_call_its_arguments_and_the_findings() {
        let text = message(&interrupt());
        assert!(text.contains("`delete_expense`"), "{text}");
        assert!(text.contains(r#"{"id":3}"#), "{text}");
        assert!(
            text.contains("the operator asks before every call"),
            "{text}"
        );
    }
}
