//! The wire format: each event as the JSON the TypeScript spec prints, `toolCall` as
//! `{ id, name, args }`, and lines every reader keeps whole.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::ToolEvent;
use crate::call::ToolCall;
use crate::content::ContentBlock;

/// `json` with U+0085, U+2028 and U+2029 written as `\u` escapes. JSON takes them raw inside
/// strings, and NDJSON and SSE break lines only at `\n` and `\r`, but readers that split at every
/// Unicode line break (Python's `str.splitlines`, many log viewers) would cut an event there. The
/// escaped text is the same JSON value; `serde_json` already escapes the other control characters.
/// In JSON text these characters can only stand inside strings (they are not JSON whitespace), so
/// replacing each one anywhere in the text keeps it valid.
pub(super) fn escape_line_separators(json: String) -> String {
    const SEPARATORS: [char; 3] = ['\u{85}', '\u{2028}', '\u{2029}'];
    if json.is_ascii() || !json.contains(SEPARATORS) {
        return json;
    }
    let mut escaped = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        match c {
            '\u{85}' => escaped.push_str("\\u0085"),
            '\u{2028}' => escaped.push_str("\\u2028"),
            '\u{2029}' => escaped.push_str("\\u2029"),
            c => escaped.push(c),
        }
    }
    escaped
}

impl fmt::Display for ToolEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl Serialize for ToolEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireEvent {
            event: self,
            data: false,
        }
        .serialize(serializer)
    }
}

/// An event on the wire; `data`: whether media blocks carry their bytes (base64) besides their
/// type, MIME type and size.
pub(super) struct WireEvent<'a> {
    pub(super) event: &'a ToolEvent,
    pub(super) data: bool,
}

impl Serialize for WireEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = match self.event {
            ToolEvent::Completed { content, .. } if !content.is_empty() => 4,
            ToolEvent::Started { .. } => 2,
            ToolEvent::InterruptResolved { .. } => 4,
            ToolEvent::Log { message, .. } => 3 + usize::from(message.logger.is_some()),
            ToolEvent::Progress { progress, .. } => {
                2 + usize::from(progress.total.is_some()) + usize::from(progress.message.is_some())
            }
            _ => 3,
        };
        let mut s = serializer.serialize_struct("ToolEvent", fields)?;
        s.serialize_field("type", self.event.event_type())?;
        match self.event {
            ToolEvent::Started { tool_call } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
            }
            ToolEvent::Delta {
                tool_call_id,
                delta,
            } => {
                s.serialize_field("toolCallId", &**tool_call_id)?;
                s.serialize_field("delta", delta)?;
            }
            ToolEvent::Completed {
                tool_call,
                result,
                content,
            } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
                s.serialize_field("result", result)?;
                if !content.is_empty() {
                    let blocks: Vec<Value> = content
                        .iter()
                        .map(|block| block_summary(block, self.data))
                        .collect();
                    s.serialize_field("content", &blocks)?;
                }
            }
            ToolEvent::Failed { tool_call, error } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
                s.serialize_field("error", error)?;
            }
            ToolEvent::InterruptRequested { interrupt } => {
                s.serialize_field("toolCallId", interrupt.tool_call.id())?;
                s.serialize_field("interrupt", &WireInterrupt(interrupt))?;
            }
            ToolEvent::InterruptResolved {
                tool_call_id,
                interrupt_id,
                action,
            } => {
                s.serialize_field("toolCallId", &**tool_call_id)?;
                s.serialize_field("interruptId", interrupt_id)?;
                s.serialize_field("action", action)?;
            }
            ToolEvent::SafetyProbe {
                tool_call,
                findings,
            } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
                s.serialize_field("findings", findings)?;
            }
            ToolEvent::ToolsLoaded {
                tool_call_id,
                tools,
            } => {
                s.serialize_field("toolCallId", &**tool_call_id)?;
                s.serialize_field("tools", tools)?;
            }
            ToolEvent::Log { .. }
            | ToolEvent::Progress { .. }
            | ToolEvent::ElicitationRequested { .. }
            | ToolEvent::SamplingRequested { .. } => from_tool(&mut s, self.event)?,
        }
        s.end()
    }
}

/// The fields of the events a running tool's context sends (`tool.log`, `tool.progress`,
/// `elicitation.requested`, `sampling.requested`), after `type`.
fn from_tool<S: SerializeStruct>(s: &mut S, event: &ToolEvent) -> Result<(), S::Error> {
    match event {
        ToolEvent::Log {
            tool_call_id,
            message,
        } => {
            s.serialize_field("toolCallId", &**tool_call_id)?;
            s.serialize_field("level", &message.level)?;
            if let Some(logger) = &message.logger {
                s.serialize_field("logger", logger)?;
            }
            s.serialize_field("data", &message.data)?;
        }
        ToolEvent::Progress {
            tool_call_id,
            progress,
        } => {
            s.serialize_field("toolCallId", &**tool_call_id)?;
            s.serialize_field("progress", &progress.progress)?;
            if let Some(total) = &progress.total {
                s.serialize_field("total", total)?;
            }
            if let Some(message) = &progress.message {
                s.serialize_field("message", message)?;
            }
        }
        ToolEvent::ElicitationRequested { request } => {
            s.serialize_field("toolCallId", request.tool_call_id())?;
            s.serialize_field("elicitation", request.request())?;
        }
        ToolEvent::SamplingRequested { request } => {
            s.serialize_field("toolCallId", request.tool_call_id())?;
            s.serialize_field("sampling", request.request())?;
        }
        _ => {}
    }
    Ok(())
}

/// A content block in an event: a text block whole; any other its `type`, `mimeType` and
/// `size` (bytes), with its JSON form's fields (`data` in base64, a link's `uri`) only when
/// `data` is asked for, but a link's and a resource's `uri` always.
fn block_summary(block: &ContentBlock, data: bool) -> Value {
    let mut json = crate::content::wire::to_value(block);
    if let (Value::Object(fields), Some(_)) = (&mut json, block.as_text()) {
        fields.remove("annotations");
        return json;
    }
    if !data && let Value::Object(fields) = &mut json {
        fields.remove("data");
        if let Some(Value::Object(resource)) = fields.get_mut("resource") {
            resource.remove("blob");
            resource.remove("text");
        }
    }
    if let Value::Object(fields) = &mut json {
        if let (None, Some(mime)) = (fields.get("mimeType"), block.mime_type()) {
            fields.insert("mimeType".to_owned(), Value::from(mime));
        }
        fields.insert("size".to_owned(), Value::from(block.len()));
    }
    json
}

/// An interrupt in an event: its `toolCall` in the events' `{ id, name, args }` form (a sealed
/// interrupt keeps `Interrupt`'s own serde form).
struct WireInterrupt<'a>(&'a crate::safety::Interrupt);

impl Serialize for WireInterrupt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let interrupt = self.0;
        let mut s = serializer.serialize_struct("Interrupt", 6)?;
        s.serialize_field("id", &interrupt.id)?;
        s.serialize_field("toolCall", &WireCall(&interrupt.tool_call))?;
        s.serialize_field("fingerprint", &interrupt.fingerprint)?;
        s.serialize_field("tier", &interrupt.tier)?;
        s.serialize_field("findings", &interrupt.findings)?;
        s.serialize_field("groundTruth", &interrupt.ground_truth)?;
        s.end()
    }
}

/// `{ id, name, args }`: the arguments as raw JSON when they are JSON, else as the string the
/// model sent (so an event about bad JSON is itself valid JSON, and shows what came). Arguments
/// nested deeper than [`READABLE_DEPTH`] are written as the string too: in place, they would make
/// the event line deeper than common JSON readers take (`serde_json` stops at 128 levels), and
/// one unreadable line can stop a reader of the whole stream. So are arguments that only follow
/// JSON's grammar (see [`Readable`]).
struct WireCall<'a>(&'a ToolCall);

/// The deepest arguments an event writes as JSON: the event and its `toolCall` add two levels,
/// and the line stays well inside `serde_json`'s 128.
pub(super) const READABLE_DEPTH: usize = 100;

impl Serialize for WireCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ToolCall", 3)?;
        s.serialize_field("id", &self.0.id())?;
        s.serialize_field("name", &self.0.name())?;
        let arguments = self.0.arguments();
        if crate::schema::nesting_depth(arguments) > READABLE_DEPTH {
            s.serialize_field("args", arguments)?;
            return s.end();
        }
        let raw = serde_json::from_str::<&RawValue>(arguments)
            .ok()
            .filter(|_| serde_json::from_str::<Readable>(arguments).is_ok());
        match raw {
            // Line breaks in JSON text are whitespace between tokens (a string cannot hold one
            // raw), and a model's pretty-printed arguments would split an NDJSON line or an SSE
            // `data:` field: written as spaces, the text means the same on one line.
            Some(_) if arguments.contains(['\n', '\r']) => {
                match RawValue::from_string(arguments.replace(['\n', '\r'], " ")) {
                    Ok(raw) => s.serialize_field("args", &raw)?,
                    Err(_) => s.serialize_field("args", arguments)?,
                }
            }
            Some(raw) => s.serialize_field("args", raw)?,
            None => s.serialize_field("args", arguments)?,
        }
        s.end()
    }
}

/// JSON text read through and kept nowhere: whether `serde_json` can read it as a value. A
/// `RawValue` takes text that follows JSON's grammar, but that is not enough for a reader: a lone
/// surrogate (`"\ud800"`) or a number past `f64` (`1e400`) passes the grammar, and `serde_json`
/// refuses the whole line that holds it. The session refuses such arguments too (1005), so their
/// events carry them as the text that came.
struct Readable;

impl<'de> Deserialize<'de> for Readable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Readable)
    }
}

impl<'de> Visitor<'de> for Readable {
    type Value = Readable;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_str<E>(self, _: &str) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_unit<E>(self) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Readable, A::Error> {
        while items.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Readable, A::Error> {
        while entries.next_entry::<Readable, Readable>()?.is_some() {}
        Ok(Readable)
    }
}
