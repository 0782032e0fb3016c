//! The conversation a session appends to: user messages, assistant messages with their tool
//! calls, and one tool-result message per call, written as the model will read it.
//!
//! ```
//! use pleach_core::{Message, ToolCall};
//!
//! let call = ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#);
//! let conversation = vec![
//!     Message::User { content: "1 + 2?".into() },
//!     Message::Assistant { content: None, tool_calls: vec![call.clone()] },
//!     Message::Tool { tool_call: call, content: "3".into(), attachments: Vec::new(), is_error: false, edited_arguments: None },
//! ];
//! assert_eq!(conversation.len(), 3);
//! ```

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::ToolCall;
use crate::content::{ContentBlock, ToolOutput};
use crate::error::ToolError;

/// One message of a conversation.
///
/// ```
/// use pleach_core::{Message, ToolCall};
///
/// let m = Message::Assistant {
///     content: None,
///     tool_calls: vec![ToolCall::new("call_1", "add", r#"{"a":1,"b":2}"#)],
/// };
/// assert_eq!(
///     serde_json::to_string(&m).unwrap(),
///     r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","name":"add","arguments":"{\"a\":1,\"b\":2}"}]}"#
/// );
/// ```
///
/// A tool-result message shares its call (one pointer, no copy of its texts). On the wire it is
/// `{"role":"tool","tool_call_id","name","arguments","content","is_error"}`, plus
/// `edited_arguments` for an edited call; `arguments` may be left out when reading one (it is
/// then the edited arguments, or `{}`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// What the user said.
    User {
        /// The text.
        content: String,
    },
    /// What the model said, with the tools it called.
    Assistant {
        /// The text, if any.
        content: Option<String>,
        /// The calls, in the model's order.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one call, as the model reads it.
    Tool {
        /// The call this answers, as it ran (its id and tool name; for an edited call, the
        /// user's arguments).
        tool_call: ToolCall,
        /// The result as text: its structured value as JSON text and its text blocks, one per
        /// line ([`ToolOutput::text`]); for a failure `error <code>: <message>`.
        content: String,
        /// The result's other content blocks (images, audio, files, resources), in order: each
        /// provider format sends them as its API takes them (`docs/providers.md`, "Content
        /// blocks"). Their bytes are shared with the tool's result, not copied.
        attachments: Vec<ContentBlock>,
        /// Whether the call failed.
        is_error: bool,
        /// The arguments the call ran with, when the user edited the model's (an approval
        /// interrupt answered with edits); the content says so too, so the history stays honest.
        edited_arguments: Option<String>,
    },
}

/// A [`Message`] on the wire, written from borrowed text and read into owned text.
#[derive(Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Wire<'a> {
    User {
        content: Cow<'a, str>,
    },
    Assistant {
        content: Option<Cow<'a, str>>,
        tool_calls: Cow<'a, [ToolCall]>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        name: Cow<'a, str>,
        #[serde(default)]
        arguments: Option<Cow<'a, str>>,
        content: Cow<'a, str>,
        #[serde(
            default,
            skip_serializing_if = "no_attachments",
            with = "attachments_wire"
        )]
        attachments: Attachments<'a>,
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited_arguments: Option<Cow<'a, str>>,
        /// The call's provider signature, if it has one (`ToolCall::signature`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<Cow<'a, str>>,
    },
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::User { content } => Wire::User {
                content: Cow::Borrowed(content),
            },
            Message::Assistant {
                content,
                tool_calls,
            } => Wire::Assistant {
                content: content.as_deref().map(Cow::Borrowed),
                tool_calls: Cow::Borrowed(tool_calls),
            },
            Message::Tool {
                tool_call,
                content,
                attachments,
                is_error,
                edited_arguments,
            } => Wire::Tool {
                tool_call_id: Cow::Borrowed(tool_call.id()),
                name: Cow::Borrowed(tool_call.name()),
                arguments: Some(Cow::Borrowed(tool_call.arguments())),
                content: Cow::Borrowed(content),
                attachments: Cow::Borrowed(attachments),
                is_error: *is_error,
                edited_arguments: edited_arguments.as_deref().map(Cow::Borrowed),
                signature: tool_call.signature().map(Cow::Borrowed),
            },
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Wire::deserialize(deserializer)? {
            Wire::User { content } => Message::User {
                content: content.into_owned(),
            },
            Wire::Assistant {
                content,
                tool_calls,
            } => Message::Assistant {
                content: content.map(Cow::into_owned),
                tool_calls: tool_calls.into_owned(),
            },
            Wire::Tool {
                tool_call_id,
                name,
                arguments,
                content,
                attachments,
                is_error,
                edited_arguments,
                signature,
            } => {
                let arguments = arguments
                    .as_deref()
                    .or(edited_arguments.as_deref())
                    .unwrap_or("{}");
                Message::Tool {
                    tool_call: ToolCall::joined(
                        &tool_call_id,
                        &name,
                        arguments,
                        signature.as_deref().unwrap_or_default(),
                    ),
                    content: content.into_owned(),
                    attachments: attachments.into_owned(),
                    is_error,
                    edited_arguments: edited_arguments.map(Cow::into_owned),
                }
            }
        })
    }
}

impl Message {
    /// The tool-result message for a call's outcome: the result as text (its structured value
    /// as JSON text, then its text blocks) with its other blocks as attachments, or the error's
    /// model text with its code.
    ///
    /// ```
    /// use pleach_core::{ContentBlock, Message, ToolCall, ToolError, ToolOutput};
    /// let call = ToolCall::new("call_1", "add", "{}");
    /// let ok = Message::tool_result(&call, &Ok(serde_json::json!(3).into()));
    /// assert_eq!(ok, Message::Tool { tool_call: call.clone(), content: "3".into(), attachments: Vec::new(), is_error: false, edited_arguments: None });
    /// let failed = Message::tool_result(&call, &Err(ToolError::failed("boom")));
    /// assert!(matches!(failed, Message::Tool { is_error: true, ref content, .. } if content == "error 1008: boom"));
    /// let shot = Message::tool_result(&call, &Ok(ToolOutput::from_blocks([ContentBlock::image(vec![1u8], "image/png")])));
    /// assert!(matches!(shot, Message::Tool { ref attachments, .. } if attachments.len() == 1));
    /// ```
    pub fn tool_result(call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Message {
        let (content, attachments, is_error) = match outcome {
            // A result without blocks (the common case) takes the fast writer.
            Ok(output) if output.content.is_empty() => (
                output
                    .structured
                    .as_ref()
                    .map_or_else(|| "null".to_owned(), json_text),
                Vec::new(),
                false,
            ),
            Ok(output) => (
                output.text(),
                output.attachments().cloned().collect(),
                false,
            ),
            Err(error) => (error.model_text(), Vec::new(), true),
        };
        Message::Tool {
            tool_call: call.clone(),
            content,
            attachments,
            is_error,
            edited_arguments: None,
        }
    }

    /// The tool-result message for a call the user edited before it ran (`call` holds the edited
    /// arguments): the content tells the model what ran, then the outcome.
    ///
    /// ```
    /// use pleach_core::{Message, ToolCall};
    /// let ran = ToolCall::new("call_1", "pay", r#"{"to":"ACC-1"}"#);
    /// let message = Message::edited_tool_result(&ran, &Ok(serde_json::json!("sent").into()));
    /// let Message::Tool { content, edited_arguments, .. } = message else { unreachable!() };
    /// assert_eq!(edited_arguments.as_deref(), Some(r#"{"to":"ACC-1"}"#));
    /// assert!(content.starts_with("The user edited the arguments"));
    /// assert!(content.ends_with("\"sent\""));
    /// ```
    pub fn edited_tool_result(call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Message {
        let mut message = Message::tool_result(call, outcome);
        if let Message::Tool {
            content,
            edited_arguments,
            ..
        } = &mut message
        {
            *content = format!("{}{content}", edited_prefix(call.arguments()));
            *edited_arguments = Some(call.arguments().to_owned());
        }
        message
    }
}

/// A tool message's attachments on the wire: borrowed when written, owned when read.
type Attachments<'a> = Cow<'a, [ContentBlock]>;

#[allow(clippy::ptr_arg)] // serde's `skip_serializing_if` hands the field as it is
fn no_attachments(attachments: &Attachments<'_>) -> bool {
    attachments.is_empty()
}

/// Attachments in their JSON form (`pleach_core::content::wire`).
mod attachments_wire {
    use std::borrow::Cow;

    use serde::{Deserializer, Serializer};

    use crate::content::{ContentBlock, wire};

    #[allow(clippy::ptr_arg)] // serde's `with` hands the field as it is
    pub(super) fn serialize<S: Serializer>(
        blocks: &Cow<'_, [ContentBlock]>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        wire::serialize(blocks, serializer)
    }

    pub(super) fn deserialize<'de, 'a, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Cow<'a, [ContentBlock]>, D::Error> {
        wire::deserialize(deserializer).map(Cow::Owned)
    }
}

/// What an edited call's result message says before the result (the call ran with `arguments`).
pub(crate) fn edited_prefix(arguments: &str) -> String {
    format!(
        "The user edited the arguments of this call before it ran; it ran with {arguments}. Result: "
    )
}

/// Scratch space for [`json_text`]; a huge buffer is given back rather than kept.
const SCRATCH_KEEP: usize = 16 * 1024;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A value's compact JSON text, as `value.to_string()` writes it, at a fraction of the cost:
/// `Display` goes through `fmt::Formatter` and re-checks each piece as UTF-8, while this writes
/// into a reused buffer with `serde_json`'s own writer and copies the text out at its exact size
/// (an object result renders about 2.5× faster; a number as fast as before).
pub(crate) fn json_text(value: &Value) -> String {
    SCRATCH
        .with(|scratch| {
            let mut buffer = scratch.try_borrow_mut().ok()?;
            buffer.clear();
            serde_json::to_writer(&mut *buffer, value).ok()?;
            let text = std::str::from_utf8(&buffer).ok().map(str::to_owned);
            if buffer.capacity() > SCRATCH_KEEP {
                *buffer = Vec::new();
            }
            text
        })
        // Unreachable in practice (the buffer is only borrowed here, and a `Value` always
        // serializes); `Display` gives the same text.
        .unwrap_or_else(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_is_written_as_display_writes_it() {
        let big = "x".repeat(SCRATCH_KEEP * 2);
        let values = [
            json!(null),
            json!(true),
            json!(-17),
            json!(u64::MAX),
            json!(0.1),
            json!(1e300),
            json!("quote \" backslash \\ newline \n tab \t nul \u{0} é 😀"),
            json!([]),
            json!({}),
            json!({"b": [1, {"c": null}], "a": "z", "nested": {"deep": [[[]]]}}),
            json!(big),
            json!("after a big one"),
        ];
        for value in &values {
            assert_eq!(json_text(value), value.to_string());
        }
        // The big value's buffer was given back, not kept for every later call.
        SCRATCH.with(|scratch| assert!(scratch.borrow().capacity() <= SCRATCH_KEEP));
    }

    #[test]
    fn a_tool_message_keeps_its_wire_form_and_reads_back_whole() {
        let call = ToolCall::new("call_1", "add", r#"{"a":1,"b":2}"#);
        let message = Message::tool_result(&call, &Ok(json!(3).into()));
        let text = serde_json::to_string(&message).unwrap();
        assert_eq!(
            text,
            r#"{"role":"tool","tool_call_id":"call_1","name":"add","arguments":"{\"a\":1,\"b\":2}","content":"3","is_error":false}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), message);
    }

    #[test]
    fn a_tool_message_without_arguments_reads_as_its_edit_or_an_empty_object() {
        let plain: Message = serde_json::from_value(json!({
            "role": "tool", "tool_call_id": "c1", "name": "add", "content": "3", "is_error": false
        }))
        .unwrap();
        let Message::Tool { tool_call, .. } = &plain else {
            panic!("a tool message")
        };
        assert_eq!((tool_call.id(), tool_call.arguments()), ("c1", "{}"));
        let edited: Message = serde_json::from_value(json!({
            "role": "tool", "tool_call_id": "c2", "name": "pay", "content": "\"sent\"",
            "is_error": false, "edited_arguments": "{\"to\":\"ACC-1\"}"
        }))
        .unwrap();
        let Message::Tool { tool_call, .. } = &edited else {
            panic!("a tool message")
        };
        assert_eq!(tool_call.arguments(), r#"{"to":"ACC-1"}"#);
        assert!(
            serde_json::to_string(&edited)
                .unwrap()
                .contains("edited_arguments")
        );
    }

    #[test]
    fn user_and_assistant_messages_round_trip() {
        let messages = vec![
            Message::User {
                content: "hi".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall::new("c1", "add", "{}")],
            },
        ];
        let text = serde_json::to_string(&messages).unwrap();
        assert_eq!(
            text,
            r#"[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","name":"add","arguments":"{}"}]}]"#
        );
        assert_eq!(
            serde_json::from_str::<Vec<Message>>(&text).unwrap(),
            messages
        );
    }
}
