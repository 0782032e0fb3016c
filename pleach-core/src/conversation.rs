//! The conversation a session appends to: user messages, assistant messages with their tool
//! calls, and one tool-result message per call, written as the model will read it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::ToolCall;

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
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
        /// The call this answers.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// The result as JSON text, or for a failure `error <code>: <message>`.
        content: String,
        /// Whether the call failed.
        is_error: bool,
        /// The arguments the call ran with, when the user edited the model's (an approval
        /// interrupt answered with edits); the content says so too, so the history stays honest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited_arguments: Option<String>,
    },
}

impl Message {
    /// The tool-result message for a call's outcome: the result as JSON text, or the error's
    /// model text with its code.
    ///
    /// ```
    /// use pleach_core::{Message, ToolCall, ToolError};
    /// let call = ToolCall::new("call_1", "add", "{}");
    /// let ok = Message::tool_result(&call, &Ok(serde_json::json!(3)));
    /// assert_eq!(ok, Message::Tool { tool_call_id: "call_1".into(), name: "add".into(), content: "3".into(), is_error: false, edited_arguments: None });
    /// let failed = Message::tool_result(&call, &Err(ToolError::failed("boom")));
    /// assert!(matches!(failed, Message::Tool { is_error: true, ref content, .. } if content == "error 1008: boom"));
    /// ```
    pub fn tool_result(call: &ToolCall, outcome: &Result<Value, ToolError>) -> Message {
        let (content, is_error) = match outcome {
            Ok(value) => (value.to_string(), false),
            Err(error) => (error.model_text(), true),
        };
        Message::Tool {
            tool_call_id: call.id().to_owned(),
            name: call.name().to_owned(),
            content,
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
    /// let message = Message::edited_tool_result(&ran, &Ok(serde_json::json!("sent")));
    /// let Message::Tool { content, edited_arguments, .. } = message else { unreachable!() };
    /// assert_eq!(edited_arguments.as_deref(), Some(r#"{"to":"ACC-1"}"#));
    /// assert!(content.starts_with("The user edited the arguments"));
    /// assert!(content.ends_with("\"sent\""));
    /// ```
    pub fn edited_tool_result(call: &ToolCall, outcome: &Result<Value, ToolError>) -> Message {
        let mut message = Message::tool_result(call, outcome);
        if let Message::Tool {
            content,
            edited_arguments,
            ..
        } = &mut message
        {
            *content = format!(
                "The user edited the arguments of this call before it ran; it ran with {}. \
                 Result: {content}",
                call.arguments()
            );
            *edited_arguments = Some(call.arguments().to_owned());
        }
        message
    }
}
