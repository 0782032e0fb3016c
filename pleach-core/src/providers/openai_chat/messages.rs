//! A conversation as Chat Completions `messages`: `tool` messages for results, and their media in
//! a `user` message after them (or refused).

use serde_json::{Value, json};

use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};

use crate::providers::ToolResultMessage;
use crate::providers::attachments::{self, Part, with};

/// What a Chat Completions format does with a result's media.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Media {
    /// Sent in a `user` message after the `tool` messages.
    Follow,
    /// Refused: the `tool` message says so (1019).
    Refuse,
}

/// A conversation as `messages`; each run of `tool` messages is followed by one `user` message
/// holding their media, when they have any and `media` sends them.
pub(super) fn chat_messages(conversation: &[Message], media: Media) -> Vec<Value> {
    let mut out = Vec::with_capacity(conversation.len());
    let mut attached: Vec<Value> = Vec::new();
    for message in conversation {
        if let Some(tool) = ToolResultMessage::of(message) {
            out.push(tool_message(&tool, media));
            if media == Media::Follow && !tool.attachments.is_empty() {
                attached.extend(media_parts(&tool));
            }
            continue;
        }
        if !attached.is_empty() {
            out.push(with(
                json!({ "role": "user" }),
                "content",
                std::mem::take(&mut attached),
            ));
        }
        out.push(match message {
            Message::User { content } => json!({ "role": "user", "content": content }),
            Message::Assistant {
                content,
                tool_calls,
            } => assistant_message(content.as_deref(), tool_calls),
            // Tool messages were written above; `Message` may grow.
            _ => continue,
        });
    }
    if !attached.is_empty() {
        out.push(with(json!({ "role": "user" }), "content", attached));
    }
    out
}

/// A result's `tool` message: its text, with a line per attachment saying where it went.
pub(super) fn tool_message(tool: &ToolResultMessage<'_>, media: Media) -> Value {
    let id = tool.call.id();
    if tool.attachments.is_empty() {
        return json!({ "role": "tool", "tool_call_id": id, "content": tool.content });
    }
    let mut content = tool.content.to_owned();
    let mut refused = Vec::new();
    for part in attachments::parts(tool.attachments) {
        let line = match (part, media) {
            (Part::Text(text), _) => text.into_owned(),
            (
                Part::Image { mime, data }
                | Part::Audio { mime, data }
                | Part::File { mime, data, .. },
                Media::Follow,
            ) => {
                format!(
                    "[{mime}, {}: in the next user message]",
                    attachments::human_size(data.len())
                )
            }
            (
                Part::Image { mime, data }
                | Part::Audio { mime, data }
                | Part::File { mime, data, .. },
                Media::Refuse,
            ) => {
                refused.push(format!("{mime} ({})", attachments::human_size(data.len())));
                continue;
            }
        };
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&line);
    }
    if !refused.is_empty() {
        let error = ToolError::new(
            ErrorCode::ContentRefused,
            format!(
                "the tool returned {} and this model API takes text only; ask for a text result",
                refused.join(", ")
            ),
        );
        content = if content.is_empty() {
            error.model_text()
        } else {
            format!("{}\nThe result's text: {content}", error.model_text())
        };
    }
    json!({ "role": "tool", "tool_call_id": id, "content": content })
}

/// A result's media as user-message parts: a text part naming the call, then an `image_url`,
/// `file` or `input_audio` part each (a recording other than WAV or MP3 as a note).
fn media_parts(tool: &ToolResultMessage<'_>) -> Vec<Value> {
    let mut parts = Vec::new();
    for part in attachments::parts(tool.attachments) {
        let value = match part {
            Part::Text(_) => continue, // in the tool message
            Part::Image { mime, data } => with(
                json!({ "type": "image_url" }),
                "image_url",
                with(json!({}), "url", attachments::data_url(mime, data)),
            ),
            Part::File { mime, data, name } => with(
                json!({ "type": "file" }),
                "file",
                with(
                    json!({ "filename": name.unwrap_or("attachment") }),
                    "file_data",
                    attachments::data_url(mime, data),
                ),
            ),
            Part::Audio { mime, data } => match audio_format(mime) {
                Some(format) => with(
                    json!({ "type": "input_audio" }),
                    "input_audio",
                    with(
                        json!({ "format": format }),
                        "data",
                        attachments::base64(data),
                    ),
                ),
                None => json!({
                    "type": "text",
                    "text": attachments::not_sent("recording", mime, data.len(), "Chat Completions takes WAV and MP3")
                }),
            },
        };
        if parts.is_empty() {
            parts.push(json!({
                "type": "text",
                "text": format!("Attached by the tool call `{}` ({}):", tool.call.id(), tool.call.name())
            }));
        }
        parts.push(value);
    }
    parts
}

/// The `input_audio` format of a recording's MIME type.
fn audio_format(mime: &str) -> Option<&'static str> {
    match mime {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    }
}

/// The assistant message carrying the calls (and text, if any).
pub(super) fn assistant_message(content: Option<&str>, calls: &[ToolCall]) -> Value {
    let mut message = json!({ "role": "assistant", "content": content });
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id(),
                    "type": "function",
                    "function": { "name": c.name(), "arguments": crate::providers::arguments_text(c) },
                })
            })
            .collect();
    }
    message
}
