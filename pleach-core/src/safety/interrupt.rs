//! Approval interrupts: a `standard`-tier call with findings waits for the host's [`Decision`]
//! (accept, edit, reject), bound to the call's fingerprint. A pending interrupt can be sealed (an
//! HMAC with the host's key) and resumed by another process.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Finding, KnownValue};
use crate::call::ToolCall;
use crate::schema::{self, ValidationResult};
use crate::tier::SafetyTier;

/// A call waiting for the user: what the model asked for, why it was flagged, and what the turn
/// has seen that comes closest (the ground-truth panel).
///
/// Sent as the `interrupt.requested` event; answer it with [`Session::resolve`](crate::Session::resolve)
/// and one of [`Interrupt::accept`], [`Interrupt::edit`], [`Interrupt::reject`].
///
/// ```
/// use pleach_core::{SafetyTier, ToolCall, safety::{Action, Interrupt}};
///
/// let call = ToolCall::new("call_7", "transfer_funds", r#"{"to":"ACC-1","amount":5}"#);
/// let interrupt = Interrupt::new("int-1", call, SafetyTier::Standard, Vec::new(), Vec::new());
/// let decision = interrupt.reject("not that account");
/// assert_eq!(decision.fingerprint, interrupt.fingerprint);
/// assert!(matches!(decision.action, Action::Reject { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Interrupt {
    /// The interrupt's id, unique in its session.
    pub id: String,
    /// The call as the model issued it.
    pub tool_call: ToolCall,
    /// The call's fingerprint (SHA-256 of the tool's name and the canonical arguments, in hex): a
    /// decision applies to this fingerprint only.
    pub fingerprint: String,
    /// The tool's tier (as routed: a guarded tool without a tier is `standard`).
    pub tier: SafetyTier,
    /// What the detectors flagged.
    pub findings: Vec<Finding>,
    /// For each finding, the known values nearest to the flagged one.
    pub ground_truth: Vec<GroundTruth>,
}

/// The known values nearest to one flagged value: what the model may have meant to pass.
///
/// ```
/// use pleach_core::safety::GroundTruth;
/// let panel: GroundTruth = serde_json::from_str(r#"{ "path": "/to_account", "nearest": [] }"#).unwrap();
/// assert_eq!(panel.path, "/to_account");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroundTruth {
    /// The flagged argument's JSON pointer.
    pub path: String,
    /// The nearest known values, nearest first.
    pub nearest: Vec<KnownValue>,
}

/// The host's answer to an [`Interrupt`], bound to the interrupt and its call's fingerprint.
///
/// ```
/// use pleach_core::{SafetyTier, ToolCall, safety::{Action, Interrupt}};
/// let interrupt = Interrupt::new("int-1", ToolCall::new("c1", "pay", "{}"), SafetyTier::Standard, vec![], vec![]);
/// let decision = interrupt.reject("wrong account");
/// assert_eq!(decision.interrupt_id, "int-1");
/// assert_eq!(decision.action, Action::Reject { reason: "wrong account".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The interrupt answered.
    pub interrupt_id: String,
    /// The fingerprint of the call the user saw and decided on.
    pub fingerprint: String,
    /// What to do.
    pub action: Action,
}

/// What the user decided.
///
/// ```
/// use pleach_core::safety::Action;
/// let action: Action = serde_json::from_str(r#"{ "type": "edit", "arguments": "{\"amount\":10}" }"#).unwrap();
/// assert_eq!(action.name(), "edit");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Action {
    /// Run the call as the model issued it.
    Accept,
    /// Run the call with these arguments instead (JSON text, validated against the tool's input
    /// schema again); the conversation records that the user edited them.
    Edit {
        /// The new arguments.
        arguments: String,
    },
    /// Do not run it; the model gets a rejection (code 1013) with the reason.
    Reject {
        /// Why, in the user's words (the model reads it).
        reason: String,
    },
}

impl Action {
    /// `accept`, `edit` or `reject`.
    ///
    /// ```
    /// assert_eq!(pleach_core::safety::Action::Accept.name(), "accept");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::Edit { .. } => "edit",
            Action::Reject { .. } => "reject",
        }
    }
}

/// Why a [`Decision`] was refused. The interrupt stays pending, so the host can answer again.
///
/// ```
/// use pleach_core::safety::DecisionError;
/// let err = DecisionError::UnknownInterrupt("int-9".into());
/// assert_eq!(err.to_string(), "no pending interrupt `int-9` in this session");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionError {
    /// No pending interrupt has that id (answered already, or never raised in this session).
    #[error("no pending interrupt `{0}` in this session")]
    UnknownInterrupt(String),
    /// The decision was made for another call than the one waiting.
    #[error(
        "the decision is for call fingerprint `{decided}`, but interrupt `{interrupt_id}` waits on `{pending}`; a decision applies to the call it was made for"
    )]
    FingerprintMismatch {
        /// The interrupt.
        interrupt_id: String,
        /// The fingerprint the decision names.
        decided: String,
        /// The fingerprint of the waiting call.
        pending: String,
    },
    /// The interrupt was answered already (resolved, or resumed from its seal): each interrupt is
    /// answered once per session.
    #[error("interrupt `{0}` was already resolved")]
    AlreadyResolved(String),
    /// A sealed interrupt resumed in the session whose turn still waits on it: answer it there,
    /// with `Session::resolve`, or the call would run twice.
    #[error(
        "interrupt `{0}` still waits in this session's turn; answer it with `resolve`, not by resuming its seal"
    )]
    StillPending(String),
    /// The interrupt's tool is `critical` in this session: no accept or edit overrides its halt,
    /// whatever the seal says (it was sealed before the tool became critical, or not by this
    /// runtime's screening). Nothing ran; a rejection would still be taken.
    #[error(
        "tool `{tool}` is critical here: no decision can override its safety halt, so interrupt `{interrupt_id}` cannot be resumed"
    )]
    CriticalTool {
        /// The interrupt.
        interrupt_id: String,
        /// The tool.
        tool: String,
    },
    /// The edited arguments are not valid for the tool.
    #[error("the edited arguments are not valid for the tool: {}", describe(.0))]
    InvalidEdit(ValidationResult),
    /// A sealed interrupt could not be opened.
    #[error(transparent)]
    Seal(#[from] SealError),
}

/// Why a sealed interrupt could not be opened.
///
/// ```
/// use pleach_core::{SafetyTier, ToolCall, safety::{Interrupt, SealError}};
/// assert!(matches!(Interrupt::open_with("not a seal", b"key"), Err(SealError::Malformed(_))));
/// let sealed = Interrupt::new("int-1", ToolCall::new("c1", "pay", "{}"), SafetyTier::Standard, vec![], vec![])
///     .seal_with(b"key");
/// assert_eq!(Interrupt::open_with(&sealed, b"another key"), Err(SealError::Tampered));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The runtime has no interrupt key ([`RuntimeBuilder::interrupt_key`](crate::RuntimeBuilder::interrupt_key)).
    #[error("no interrupt key is configured: set one with RuntimeBuilder::interrupt_key")]
    NoKey,
    /// The text is not a sealed interrupt.
    #[error("not a sealed interrupt: {0}")]
    Malformed(String),
    /// The seal does not match: the text was changed, or sealed with another key.
    #[error("the interrupt's seal does not match: it was altered or sealed with another key")]
    Tampered,
}

impl Interrupt {
    /// An interrupt for `call`; the fingerprint is computed from the call.
    ///
    /// ```
    /// use pleach_core::{SafetyTier, ToolCall, safety::{Finding, Interrupt}};
    /// let call = ToolCall::new("c1", "pay", r#"{"to":"ACC-9"}"#);
    /// let finding = Finding::new("/to", serde_json::json!("ACC-9"), "never seen");
    /// let interrupt = Interrupt::new("int-1", call, SafetyTier::Standard, vec![finding], vec![]);
    /// assert!(!interrupt.fingerprint.is_empty());
    /// ```
    pub fn new(
        id: impl Into<String>,
        tool_call: ToolCall,
        tier: SafetyTier,
        findings: Vec<Finding>,
        ground_truth: Vec<GroundTruth>,
    ) -> Self {
        Interrupt {
            id: id.into(),
            fingerprint: fingerprint(&tool_call),
            tool_call,
            tier,
            findings,
            ground_truth,
        }
    }

    /// The decision to run the call as it is.
    ///
    /// ```
    /// use pleach_core::{SafetyTier, ToolCall, safety::{Action, Interrupt}};
    /// let interrupt = Interrupt::new("int-1", ToolCall::new("c1", "pay", "{}"), SafetyTier::Standard, vec![], vec![]);
    /// assert_eq!(interrupt.accept().action, Action::Accept);
    /// ```
    pub fn accept(&self) -> Decision {
        self.decide(Action::Accept)
    }

    /// The decision to run the call with `arguments` (JSON text) instead.
    ///
    /// ```
    /// use pleach_core::{SafetyTier, ToolCall, safety::{Action, Interrupt}};
    /// let interrupt = Interrupt::new("int-1", ToolCall::new("c1", "pay", r#"{"to":"ACC-9"}"#), SafetyTier::Standard, vec![], vec![]);
    /// let decision = interrupt.edit(r#"{"to":"ACC-0042"}"#);
    /// assert_eq!(decision.action, Action::Edit { arguments: r#"{"to":"ACC-0042"}"#.into() });
    /// assert_eq!(decision.fingerprint, interrupt.fingerprint); // bound to the call the user saw
    /// ```
    pub fn edit(&self, arguments: impl Into<String>) -> Decision {
        self.decide(Action::Edit {
            arguments: arguments.into(),
        })
    }

    /// The decision not to run the call, with the user's reason.
    ///
    /// ```
    /// use pleach_core::{SafetyTier, ToolCall, safety::Interrupt};
    /// let interrupt = Interrupt::new("int-1", ToolCall::new("c1", "pay", "{}"), SafetyTier::Standard, vec![], vec![]);
    /// assert_eq!(interrupt.reject("no").action.name(), "reject");
    /// ```
    pub fn reject(&self, reason: impl Into<String>) -> Decision {
        self.decide(Action::Reject {
            reason: reason.into(),
        })
    }

    fn decide(&self, action: Action) -> Decision {
        Decision {
            interrupt_id: self.id.clone(),
            fingerprint: self.fingerprint.clone(),
            action,
        }
    }

    /// The interrupt as text another process can resume, sealed with an HMAC-SHA256 under `key`
    /// (use [`Session::seal`](crate::Session::seal) to seal with the runtime's key).
    ///
    /// ```
    /// use pleach_core::{SafetyTier, ToolCall, safety::{Interrupt, SealError}};
    /// let interrupt = Interrupt::new("int-1", ToolCall::new("c1", "pay", "{}"), SafetyTier::Standard, vec![], vec![]);
    /// let sealed = interrupt.seal_with(b"host secret");
    /// assert_eq!(Interrupt::open_with(&sealed, b"host secret").unwrap(), interrupt);
    /// assert_eq!(Interrupt::open_with(&sealed, b"other key"), Err(SealError::Tampered));
    /// ```
    pub fn seal_with(&self, key: &[u8]) -> String {
        // Serializing these plain types cannot fail; an empty body would fail its seal check.
        let body = serde_json::to_string(self).unwrap_or_default();
        let mac = seal_mac(key, &[body.as_bytes()]);
        serde_json::json!({ "v": 1, "interrupt": body, "mac": mac }).to_string()
    }

    /// Opens a sealed interrupt, checking its seal under `key`.
    ///
    /// # Errors
    ///
    /// [`SealError::Malformed`] for text that is not a sealed interrupt, [`SealError::Tampered`]
    /// when the seal does not match.
    ///
    /// ```
    /// use pleach_core::{SafetyTier, ToolCall, safety::Interrupt};
    /// let interrupt = Interrupt::new("int-1", ToolCall::new("c1", "pay", "{}"), SafetyTier::Standard, vec![], vec![]);
    /// let sealed = interrupt.seal_with(b"host secret");
    /// assert_eq!(Interrupt::open_with(&sealed, b"host secret").unwrap().id, "int-1");
    /// assert!(Interrupt::open_with(&sealed.replace("pay", "pax"), b"host secret").is_err());
    /// ```
    pub fn open_with(sealed: &str, key: &[u8]) -> Result<Interrupt, SealError> {
        #[derive(Deserialize)]
        struct Sealed {
            v: u32,
            interrupt: String,
            mac: String,
        }
        let sealed: Sealed =
            serde_json::from_str(sealed).map_err(|e| SealError::Malformed(e.to_string()))?;
        if sealed.v != 1 {
            return Err(SealError::Malformed(format!(
                "unknown seal version {}",
                sealed.v
            )));
        }
        if !seal_verifies(key, &[sealed.interrupt.as_bytes()], &sealed.mac) {
            return Err(SealError::Tampered);
        }
        let interrupt: Interrupt = serde_json::from_str(&sealed.interrupt)
            .map_err(|e| SealError::Malformed(e.to_string()))?;
        // The fingerprint is derived, not trusted: a sealed call always matches its own.
        if interrupt.fingerprint != fingerprint(&interrupt.tool_call) {
            return Err(SealError::Tampered);
        }
        Ok(interrupt)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn describe(verdict: &ValidationResult) -> String {
    let errors: Vec<String> = verdict.errors.iter().map(ToString::to_string).collect();
    errors.join("; ")
}

fn keyed(key: &[u8]) -> Hmac<Sha256> {
    // RFC 2104: a key longer than the hash's block is hashed, a shorter one zero-padded. Done
    // here, it gives HMAC a block-sized key, whose constructor cannot fail.
    let mut block = [0_u8; 64];
    if key.len() > block.len() {
        let digest = Sha256::digest(key);
        block[..digest.len()].copy_from_slice(&digest);
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    <Hmac<Sha256> as KeyInit>::new(&block.into())
}

/// The seal of state a host carries between requests: HMAC-SHA256 under `key` over `parts` in
/// order, in hex (a sealed interrupt's body; pleach-mcp's sealed tool questions, their domain
/// first). Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
///
/// ```
/// use pleach_core::safety::{seal_mac, seal_verifies};
/// let mac = seal_mac(b"host secret", &[b"domain\0", b"state"]);
/// assert!(seal_verifies(b"host secret", &[b"domain\0", b"state"], &mac));
/// assert!(!seal_verifies(b"other key", &[b"domain\0", b"state"], &mac));
/// ```
#[doc(hidden)]
#[must_use]
pub fn seal_mac(key: &[u8], parts: &[&[u8]]) -> String {
    let mut mac = keyed(key);
    for part in parts {
        mac.update(part);
    }
    hex(&mac.finalize().into_bytes())
}

/// Whether `mac` (hex) is [`seal_mac`] of `parts` under `key`, compared in constant time. Not API:
/// for pleach-mcp (ARCHITECTURE.md, "Seams").
#[doc(hidden)]
#[must_use]
pub fn seal_verifies(key: &[u8], parts: &[&[u8]], mac: &str) -> bool {
    let Some(tag) = unhex(mac) else {
        return false;
    };
    let mut check = keyed(key);
    for part in parts {
        check.update(part);
    }
    check.verify_slice(&tag).is_ok()
}

/// The fingerprint of a call: SHA-256 (hex) of its tool's name and its canonical arguments
/// (object keys sorted, no spacing, a whole float written as its integer; the raw text when it is
/// not JSON). The same call, however the
/// model spelled it: approvals bind to it, and the runtime counts repeated failures by it.
pub fn fingerprint(call: &ToolCall) -> String {
    match schema::parse_arguments(call.arguments()) {
        Ok(value) => digest_of(call.name(), &canonical_json(&value)),
        Err(_) => fingerprint_of_text(call),
    }
}

/// The fingerprint of a call by its arguments text as it came, never parsed: for text the runtime
/// refuses to parse (past its size or nesting limits), where the same call is the same text.
pub(crate) fn fingerprint_of_text(call: &ToolCall) -> String {
    digest_of(call.name(), call.arguments())
}

/// SHA-256 (hex) of a tool's name and an arguments text.
fn digest_of(name: &str, arguments: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0]);
    hasher.update(arguments.as_bytes());
    hex(&hasher.finalize())
}

/// JSON text with object keys sorted at every level, whatever map type `serde_json` was built with.
fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // One value, one spelling: `7`, `7.0` and `70e-1` are the same argument.
        Value::Number(number) => match schema::whole_float_as_integer(number) {
            Some(integer) => out.push_str(&integer.to_string()),
            None => out.push_str(&number.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_ignore_key_order_and_spacing() {
        let a = ToolCall::new("c1", "pay", r#"{"b":1,"a":{"y":2,"x":3}}"#);
        let b = ToolCall::new("c2", "pay", r#"{ "a" : { "x":3, "y":2 }, "b" : 1 }"#);
        let c = ToolCall::new("c3", "pay", r#"{"b":2,"a":{"y":2,"x":3}}"#);
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        assert_eq!(fingerprint(&a).len(), 64);
    }

    #[test]
    fn fingerprints_take_a_number_by_its_value_not_its_spelling() {
        let call = |arguments| fingerprint(&ToolCall::new("c1", "pay", arguments));
        let one = call(r#"{"amount":7,"to":[2]}"#);
        for same in [
            r#"{"amount":7.0,"to":[2.0]}"#,
            r#"{"amount":70e-1,"to":[2e0]}"#,
            r#"{"to":[2],"amount":0.7e1}"#,
        ] {
            assert_eq!(call(same), one, "{same}");
        }
        for other in [r#"{"amount":7.5,"to":[2]}"#, r#"{"amount":"7","to":[2]}"#] {
            assert_ne!(call(other), one, "{other}");
        }
        // Floats past what an integer type holds keep their own spelling.
        assert_eq!(call(r#"{"amount":1e300}"#), call(r#"{"amount":1e300}"#));
        assert_ne!(call(r#"{"amount":1e300}"#), call(r#"{"amount":1e301}"#));
    }

    #[test]
    fn keys_of_any_length_give_the_standard_hmac() {
        for length in [0, 1, 32, 64, 65, 200] {
            let key = vec![7_u8; length];
            let mut ours = keyed(&key);
            let mut standard = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).unwrap();
            ours.update(b"body");
            standard.update(b"body");
            assert_eq!(
                ours.finalize().into_bytes(),
                standard.finalize().into_bytes()
            );
        }
    }

    #[test]
    fn a_changed_body_breaks_the_seal() {
        let interrupt = Interrupt::new(
            "int-1",
            ToolCall::new("c1", "pay", r#"{"amount":5}"#),
            SafetyTier::Standard,
            Vec::new(),
            Vec::new(),
        );
        let sealed = interrupt.seal_with(b"k");
        let mut outer: Value = serde_json::from_str(&sealed).unwrap();
        let body = outer["interrupt"].as_str().unwrap().replace(":5}", ":500}");
        assert!(body.contains("500"));
        outer["interrupt"] = Value::String(body);
        let tampered = outer.to_string();
        assert_eq!(
            Interrupt::open_with(&tampered, b"k"),
            Err(SealError::Tampered)
        );
        assert!(matches!(
            Interrupt::open_with("not json", b"k"),
            Err(SealError::Malformed(_))
        ));
    }
}
