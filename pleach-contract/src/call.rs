//! [`ToolCall`]: one call a model issued, as one shared allocation of its texts.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// One call a model issued: its id, the tool's name and the arguments as JSON text, exactly as the
/// provider sent them (the text matters: a duplicate key or a truncated stream is visible only there).
///
/// ```
/// use pleach_core::ToolCall;
/// use serde_json::json;
///
/// let a = ToolCall::new("call_1", "search_corpus", r#"{"query":"rust"}"#);
/// let b = ToolCall::from_value("call_1", "search_corpus", &json!({ "query": "rust" }));
/// assert_eq!(a, b);
/// ```
///
/// A call is one shared allocation holding its texts: cloning it (into an event, a result, the
/// conversation) copies a pointer, not the text.
///
/// A call may also carry the provider's opaque [`signature`](ToolCall::signature) for it (Gemini's
/// `thoughtSignature`), which the provider's message writer sends back with the call.
///
/// A call is 32 bytes (a pointer to its text and where each part ends), which keeps the events,
/// results and messages that hold one small; the price is that an id and a name longer than
/// 4 GiB together (no provider sends one) are cut to fit, at a character boundary.
#[derive(Clone)]
pub struct ToolCall {
    /// `id`, `name`, `arguments` and the signature (empty for none), back to back.
    text: Arc<str>,
    /// Where `id` ends and `name` begins.
    id_end: u32,
    /// Where `name` ends and `arguments` begin.
    name_end: u32,
    /// Where `arguments` end and the signature begins.
    arguments_end: usize,
}

// 32 bytes on 64-bit targets: with eight more, `pleach-bench batch` faults in fresh pages every
// round (97,000 page faults against 31,000) and takes 1.5 times as long (`docs/performance.md`,
// `batch`, "What limits it").
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<ToolCall>() == 32);

/// The texts of calls being built are joined here first, so a call costs one allocation.
const SCRATCH_KEEP: usize = 16 * 1024;

thread_local! {
    static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl ToolCall {
    /// A call from its id, the tool's name and the arguments text.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1,"b":2}"#);
    /// assert_eq!((call.id(), call.name(), call.arguments()), ("call_1", "add", r#"{"a":1,"b":2}"#));
    /// ```
    pub fn new(id: impl AsRef<str>, name: impl AsRef<str>, arguments: impl AsRef<str>) -> Self {
        ToolCall::joined(id.as_ref(), name.as_ref(), arguments.as_ref(), "")
    }

    /// A call from its texts, `signature` empty for none: one allocation.
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn joined(id: &str, name: &str, arguments: &str, signature: &str) -> Self {
        // The id's and name's ends are `u32`s (the call stays 32 bytes): cut what cannot fit.
        let id = cut_to(id, u32::MAX as usize);
        let name = cut_to(name, u32::MAX as usize - id.len());
        let text: Arc<str> = SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut joined) => {
                joined.clear();
                joined.extend([id, name, arguments, signature]);
                let text = Arc::from(joined.as_str());
                // Keep a small buffer for the next call; give a huge one back.
                if joined.capacity() > SCRATCH_KEEP {
                    *joined = String::new();
                }
                text
            }
            // Only reachable from within this closure; join in a fresh buffer then.
            Err(_) => Arc::from([id, name, arguments, signature].concat()),
        });
        let name_end = id.len() + name.len();
        ToolCall {
            text,
            // Both fit: cut above.
            id_end: u32::try_from(id.len()).unwrap_or(u32::MAX),
            name_end: u32::try_from(name_end).unwrap_or(u32::MAX),
            arguments_end: name_end + arguments.len(),
        }
    }

    /// A call whose arguments are a JSON value (a form, a test, a manual call).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::from_value("call_1", "add", &serde_json::json!({ "a": 1, "b": 2 }));
    /// assert_eq!(call.arguments(), r#"{"a":1,"b":2}"#);
    /// ```
    pub fn from_value(id: impl AsRef<str>, name: impl AsRef<str>, arguments: &Value) -> Self {
        // `Value`'s `Display` writes the same text through a formatter, at twice the cost.
        let text = serde_json::to_string(arguments).unwrap_or_else(|_| arguments.to_string());
        ToolCall::new(id, name, text)
    }

    /// The call's id (`tool_calls[].id`).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(call.id(), "call_1");
    /// ```
    #[inline]
    pub fn id(&self) -> &str {
        &self.text[..self.id_end as usize]
    }

    /// The tool's name (`tool_calls[].name`).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(call.name(), "add");
    /// ```
    #[inline]
    pub fn name(&self) -> &str {
        &self.text[self.id_end as usize..self.name_end as usize]
    }

    /// The arguments as JSON text, exactly as the model sent them.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1}"#);
    /// assert_eq!(call.arguments(), r#"{"a":1}"#);
    /// ```
    #[inline]
    pub fn arguments(&self) -> &str {
        &self.text[self.name_end as usize..self.arguments_end]
    }

    /// The provider's opaque signature for this call, if it sent one: Gemini's
    /// `thoughtSignature`, which Gemini 3 requires back on the call's part in the next request
    /// (it refuses a conversation whose calls lack it). The provider parsers attach it, the
    /// message writers send it back; pleach never reads it.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(call.signature(), None);
    /// assert_eq!(call.with_signature("EqUCCq").signature(), Some("EqUCCq"));
    /// ```
    #[inline]
    pub fn signature(&self) -> Option<&str> {
        Some(&self.text[self.arguments_end..]).filter(|signature| !signature.is_empty())
    }

    /// The same call carrying the provider's `signature` (see [`signature`](Self::signature));
    /// an empty one removes it.
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1}"#).with_signature("sig");
    /// assert_eq!(call.arguments(), r#"{"a":1}"#);
    /// assert_eq!(call.with_signature("").signature(), None);
    /// ```
    #[must_use]
    pub fn with_signature(&self, signature: impl AsRef<str>) -> Self {
        ToolCall::joined(self.id(), self.name(), self.arguments(), signature.as_ref())
    }

    /// The same call with other arguments (an edit a user made before it ran); it keeps its
    /// [`signature`](Self::signature).
    ///
    /// ```
    /// let call = pleach_core::ToolCall::new("call_1", "add", r#"{"a":1}"#);
    /// assert_eq!(call.with_arguments(r#"{"a":2}"#).arguments(), r#"{"a":2}"#);
    /// ```
    #[must_use]
    pub fn with_arguments(&self, arguments: impl AsRef<str>) -> Self {
        ToolCall::joined(
            self.id(),
            self.name(),
            arguments.as_ref(),
            self.signature().unwrap_or_default(),
        )
    }

    /// Whether `self` and `other` are the very same call (clones of one), not merely equal.
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn same(&self, other: &ToolCall) -> bool {
        Arc::ptr_eq(&self.text, &other.text)
    }
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (id, name, arguments) = (self.id(), self.name(), self.arguments());
        let mut debug = f.debug_struct("ToolCall");
        debug
            .field("id", &id)
            .field("name", &name)
            .field("arguments", &arguments);
        if let Some(signature) = self.signature() {
            debug.field("signature", &signature);
        }
        debug.finish()
    }
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
            || (self.id() == other.id()
                && self.name() == other.name()
                && self.arguments() == other.arguments()
                && self.signature() == other.signature())
    }
}

impl Eq for ToolCall {}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut_to(text: &str, max: usize) -> &str {
    if text.len() <= max {
        text
    } else {
        &text[..text.floor_char_boundary(max)]
    }
}

/// The stored form: `{"id", "name", "arguments"}`, and `"signature"` when the call has one (so a
/// saved conversation written back later still carries it).
#[derive(Serialize, serde::Deserialize)]
#[serde(rename = "ToolCall")]
struct ToolCallFields<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    signature: Option<Cow<'a, str>>,
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ToolCallFields {
            id: Cow::Borrowed(self.id()),
            name: Cow::Borrowed(self.name()),
            arguments: Cow::Borrowed(self.arguments()),
            signature: self.signature().map(Cow::Borrowed),
        }
        .serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = ToolCallFields::deserialize(deserializer)?;
        Ok(ToolCall::joined(
            &fields.id,
            &fields.name,
            &fields.arguments,
            fields.signature.as_deref().unwrap_or_default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_cut_at_a_character_boundary() {
        assert_eq!(cut_to("abc", 3), "abc");
        assert_eq!(cut_to("abc", 2), "ab");
        assert_eq!(
            cut_to("aé", 2),
            "a",
            "`é` is two bytes: it does not fit in one"
        );
        assert_eq!(cut_to("é", 0), "");
    }

    #[test]
    fn a_call_keeps_its_texts_and_signature_apart() {
        let call = ToolCall::joined("ид-1", "añadir", r#"{"x":"é"}"#, "c2ln");
        assert_eq!(
            (call.id(), call.name(), call.arguments(), call.signature()),
            ("ид-1", "añadir", r#"{"x":"é"}"#, Some("c2ln"))
        );
        let edited = call.with_arguments("{}");
        assert_eq!(
            (edited.arguments(), edited.signature()),
            ("{}", Some("c2ln"))
        );
        assert_eq!(edited.with_signature("").signature(), None);
        assert_ne!(
            call,
            call.with_signature("other"),
            "the signature is part of the call"
        );
    }

    #[test]
    fn a_call_keeps_its_three_texts_apart() {
        for (id, name, arguments) in [
            ("call_1", "add", r#"{"a":1}"#),
            ("", "", ""),
            ("ид-1", "añadir", r#"{"texte":"été ✓"}"#),
            ("c", "big", &"x".repeat(100_000)),
        ] {
            let call = ToolCall::new(id, name, arguments);
            assert_eq!(
                (call.id(), call.name(), call.arguments()),
                (id, name, arguments)
            );
        }
    }

    #[test]
    fn calls_compare_by_text_and_clones_are_the_same_call() {
        let a = ToolCall::new("c1", "add", "{}");
        let b = ToolCall::new("c1", "add", "{}");
        assert_eq!(a, b);
        assert!(!a.same(&b));
        assert!(a.same(&a.clone()));
        // The same bytes split differently are a different call.
        assert_ne!(ToolCall::new("c1a", "dd", "{}"), a);
        let edited = a.with_arguments(r#"{"a":2}"#);
        assert_eq!((edited.id(), edited.name()), ("c1", "add"));
        assert_ne!(edited, a);
    }

    #[test]
    fn a_call_serializes_as_its_three_fields() {
        let call = ToolCall::new("c1", "add", r#"{"a":1}"#);
        let json = serde_json::to_value(&call).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "id": "c1", "name": "add", "arguments": "{\"a\":1}" })
        );
        let back: ToolCall = serde_json::from_value(json).unwrap();
        assert_eq!(back, call);
        let escaped: ToolCall =
            serde_json::from_str(r#"{"id":"c\"2","name":"n","arguments":"{}"}"#).unwrap();
        assert_eq!(escaped.id(), "c\"2");
        assert!(serde_json::from_str::<ToolCall>(r#"{"id":"c"}"#).is_err());
        assert_eq!(
            format!("{call:?}"),
            r#"ToolCall { id: "c1", name: "add", arguments: "{\"a\":1}" }"#
        );
    }
}
