//! [`StreamAssembler`]: the streamed calls of one model response assembled, each call's
//! fragments through its own [`IncrementalJson`] parser, a call final only on its provider's end
//! signal, and [`StreamedCall`], each call as the finished stream left it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::error::StreamError;
use super::json::IncrementalJson;
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::ToolEvent;
use crate::runtime::Limits;

/// Assembles the streamed tool calls of one model response: events as fragments arrive, each call
/// final only on its provider's end signal, every call's failure its own.
///
/// Arguments are checked as they come against [`Limits`] (size in bytes, nesting depth: 1006) and
/// JSON's grammar (1005, duplicate keys included); a call that fails takes no more fragments and
/// never runs, and the other calls go on. A call whose arguments text is empty when it ends has
/// the arguments `{}` (Anthropic sends no fragment for a tool without parameters).
///
/// Events are returned, not sent: forward them to an [`EventSender`](crate::event::EventSender)
/// or anywhere else. A streamed call's `tool.started` carries the arguments text received so far,
/// none: `"args":""` on the wire.
///
/// ```
/// use pleach_core::assemble::{StreamAssembler, StreamError};
/// use pleach_core::{ErrorCode, Limits, ToolEvent};
///
/// let mut assembler = StreamAssembler::with_limits(Limits::default().max_argument_bytes(16));
/// assembler.begin("a", "call_a", "search").unwrap();
/// assembler.begin("b", "call_b", "search").unwrap();
/// let delta = assembler.push("a", r#"{"q":"x"}"#).unwrap();
/// assert!(matches!(delta, Some(ToolEvent::Delta { .. })));
/// // Call b sends more than 16 bytes: it fails alone.
/// let err = assembler.push("b", r#"{"q":"a long query"}"#).unwrap_err();
/// assert!(matches!(&err, StreamError::CallFailed { error, .. } if error.code() == ErrorCode::ArgumentsTooLarge));
/// assert!(assembler.end("a").is_ok());
/// assert!(assembler.end("b").is_err());
/// ```
#[derive(Debug, Default)]
pub struct StreamAssembler {
    limits: Limits,
    /// Every call begun, in the order first seen.
    calls: Vec<StreamingCall>,
    by_key: HashMap<String, usize>,
    ids: HashSet<String>,
    /// Keys whose call was refused at `begin` because its id was taken, with that id.
    refused: HashMap<String, String>,
    /// The call the last fragment went to: the next fragment is most likely for it too, and
    /// comparing one key is cheaper than hashing it.
    last: usize,
}

/// One call being assembled.
#[derive(Debug)]
struct StreamingCall {
    key: String,
    id: Arc<str>,
    name: String,
    /// The arguments text received (whole characters).
    text: String,
    /// Bytes received, a character cut between fragments included.
    received: usize,
    /// The provider's signature for the call (empty: none), see [`ToolCall::signature`].
    signature: String,
    phase: Phase,
}

impl StreamingCall {
    /// The call as it stands, with `arguments`.
    fn tool_call(&self, arguments: &str) -> ToolCall {
        ToolCall::joined(&self.id, &self.name, arguments, &self.signature)
    }
}

#[derive(Debug)]
enum Phase {
    /// Taking fragments.
    Open(IncrementalJson),
    /// The provider ended it and its arguments are one JSON value.
    Ended { call: ToolCall, value: Value },
    /// It will not run.
    Failed(ToolError),
}

/// A call of a finished stream, from [`StreamAssembler::finish`].
///
/// ```
/// use pleach_core::assemble::StreamAssembler;
///
/// let mut assembler = StreamAssembler::new();
/// assembler.begin("0", "toolu_1", "list_issues").unwrap();
/// assembler.end("0").unwrap(); // no fragment at all: the arguments are `{}`
/// let calls = assembler.finish();
/// assert_eq!(calls[0].call.arguments(), "{}");
/// assert_eq!(calls[0].parsed, Ok(serde_json::json!({})));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamedCall {
    /// The call: id, name, and the arguments text as received.
    pub call: ToolCall,
    /// `Ok`: the call ended and these are its arguments, parsed; it may run. `Err`: why it fails;
    /// it must not run (a session reports the error as the call's result).
    pub parsed: Result<Value, ToolError>,
}

impl StreamAssembler {
    /// An assembler with the default [`Limits`] (1 MiB of arguments, nesting 64 deep).
    ///
    /// ```
    /// let assembler = pleach_core::assemble::StreamAssembler::new();
    /// assert!(assembler.finish().is_empty());
    /// ```
    pub fn new() -> Self {
        StreamAssembler::default()
    }

    /// An assembler that enforces `limits` on every call's arguments as they arrive: the
    /// fragment that takes a call past `max_argument_bytes`, or opens an array or object past
    /// `max_argument_depth`, fails the call with 1006.
    ///
    /// ```
    /// use pleach_core::assemble::StreamAssembler;
    /// use pleach_core::{ErrorCode, Limits};
    ///
    /// let mut assembler = StreamAssembler::with_limits(Limits::default().max_argument_bytes(1024).max_argument_depth(2));
    /// assembler.begin("0", "c1", "nested").unwrap();
    /// assembler.push("0", r#"{"a":"#).unwrap();
    /// let err = assembler.push("0", r#"{"b":[]}}"#).unwrap_err();
    /// # let pleach_core::assemble::StreamError::CallFailed { error, .. } = err else { panic!() };
    /// assert_eq!(error.code(), ErrorCode::ArgumentsTooLarge);
    /// ```
    pub fn with_limits(limits: Limits) -> Self {
        StreamAssembler {
            limits,
            ..StreamAssembler::default()
        }
    }

    /// The first sight of a call: its key in the provider's stream, its id and its tool's name.
    /// Returns its `tool.started` event; `None` when the same call (same key, id and name) is
    /// begun again, which changes nothing.
    ///
    /// ```
    /// let mut assembler = pleach_core::assemble::StreamAssembler::new();
    /// let started = assembler.begin("0", "call_1", "search").unwrap().unwrap();
    /// assert_eq!(started.to_json(), r#"{"type":"tool.started","toolCall":{"id":"call_1","name":"search","args":""}}"#);
    /// assert_eq!(assembler.begin("0", "call_1", "search").unwrap(), None);
    /// assert!(assembler.begin("1", "call_1", "search").is_err()); // the id is taken
    /// ```
    pub fn begin(
        &mut self,
        key: &str,
        id: &str,
        name: &str,
    ) -> Result<Option<ToolEvent>, StreamError> {
        if let Some(&index) = self.by_key.get(key) {
            let call = &self.calls[index];
            return if &*call.id == id && call.name == name {
                Ok(None)
            } else {
                Err(StreamError::KeyInUse {
                    key: key.to_owned(),
                    tool_call_id: call.id.to_string(),
                })
            };
        }
        if self.refused.contains_key(key) || self.ids.contains(id) {
            self.refused.insert(key.to_owned(), id.to_owned());
            return Err(StreamError::DuplicateCallId {
                key: key.to_owned(),
                tool_call_id: id.to_owned(),
            });
        }
        self.ids.insert(id.to_owned());
        self.by_key.insert(key.to_owned(), self.calls.len());
        self.calls.push(StreamingCall {
            key: key.to_owned(),
            id: Arc::from(id),
            name: name.to_owned(),
            text: String::new(),
            received: 0,
            signature: String::new(),
            phase: Phase::Open(IncrementalJson::with_max_depth(
                self.limits.max_argument_depth,
            )),
        });
        Ok(Some(ToolEvent::Started {
            tool_call: ToolCall::new(id, name, ""),
        }))
    }

    /// A fragment of the arguments text of the call under `key`. Returns its `tool.delta` event,
    /// whose `delta` is the fragment's text (a UTF-8 character cut between fragments is sent with
    /// the fragment that completes it); `None` for a fragment with no whole character, or for a
    /// call that already failed (the fragment is dropped).
    ///
    /// ```
    /// use pleach_core::ToolEvent;
    /// let mut assembler = pleach_core::assemble::StreamAssembler::new();
    /// assembler.begin("0", "call_1", "search").unwrap();
    /// let Some(ToolEvent::Delta { tool_call_id, delta }) = assembler.push("0", r#"{"q":"#).unwrap() else {
    ///     unreachable!()
    /// };
    /// assert_eq!((&*tool_call_id, delta), ("call_1", serde_json::json!(r#"{"q":"#)));
    /// ```
    pub fn push(
        &mut self,
        key: &str,
        fragment: impl AsRef<[u8]>,
    ) -> Result<Option<ToolEvent>, StreamError> {
        let Some(index) = self.index_of(key) else {
            return if self.refused.contains_key(key) {
                Ok(None)
            } else {
                Err(StreamError::UnknownKey {
                    key: key.to_owned(),
                })
            };
        };
        let max_bytes = self.limits.max_argument_bytes;
        let call = &mut self.calls[index];
        let parser = match &mut call.phase {
            Phase::Open(parser) => parser,
            Phase::Ended { .. } => {
                return Err(StreamError::Ended {
                    key: key.to_owned(),
                    tool_call_id: call.id.to_string(),
                });
            }
            Phase::Failed(_) => return Ok(None),
        };
        let fragment = fragment.as_ref();
        let received = call.received.saturating_add(fragment.len());
        if received > max_bytes {
            let error = ToolError::new(
                ErrorCode::ArgumentsTooLarge,
                format!(
                    "the arguments are at least {received} bytes, over the limit of \
                     {max_bytes}; send less data"
                ),
            );
            return Err(call.fail(error));
        }
        call.received = received;
        match parser.feed_decoded(fragment) {
            Ok(text) if text.is_empty() => Ok(None),
            Ok(text) => {
                call.text.push_str(&text);
                Ok(Some(ToolEvent::Delta {
                    tool_call_id: call.id.clone(),
                    delta: Value::String(text.into_owned()),
                }))
            }
            Err(error) => {
                call.text.push_str(&String::from_utf8_lossy(fragment));
                let error = error.to_tool_error();
                Err(call.fail(error))
            }
        }
    }

    /// The provider's end signal for the call under `key`: its arguments are complete. Returns
    /// the call, ready to run, when its arguments are one JSON value (or empty: `{}`); else
    /// the call fails (1005). Ending a call again returns the same answer.
    ///
    /// ```
    /// use pleach_core::assemble::{StreamAssembler, StreamError};
    /// use pleach_core::ErrorCode;
    ///
    /// let mut assembler = StreamAssembler::new();
    /// assembler.begin("0", "call_1", "search").unwrap();
    /// assembler.push("0", r#"{"q":"rust""#).unwrap();
    /// // The provider says it is over, but the JSON is not: the call fails and does not run.
    /// let Err(StreamError::CallFailed { error, .. }) = assembler.end("0") else { unreachable!() };
    /// assert_eq!(error.code(), ErrorCode::ArgumentsNotJson);
    /// ```
    pub fn end(&mut self, key: &str) -> Result<ToolCall, StreamError> {
        let Some(index) = self.index_of(key) else {
            return Err(match self.refused.get(key) {
                Some(id) => StreamError::DuplicateCallId {
                    key: key.to_owned(),
                    tool_call_id: id.clone(),
                },
                None => StreamError::UnknownKey {
                    key: key.to_owned(),
                },
            });
        };
        let call = &mut self.calls[index];
        let parser = match &mut call.phase {
            Phase::Open(parser) => std::mem::take(parser),
            Phase::Ended { call, .. } => return Ok(call.clone()),
            Phase::Failed(error) => {
                return Err(StreamError::CallFailed {
                    key: key.to_owned(),
                    tool_call_id: call.id.to_string(),
                    error: Box::new(error.clone()),
                });
            }
        };
        let parsed = if call.received == 0 {
            call.text.push_str("{}");
            Ok(Value::Object(serde_json::Map::new()))
        } else {
            parser.finish()
        };
        match parsed {
            Ok(value) => {
                let arguments = std::mem::take(&mut call.text);
                let ended = call.tool_call(&arguments);
                call.phase = Phase::Ended {
                    call: ended.clone(),
                    value,
                };
                Ok(ended)
            }
            Err(error) => Err(call.fail(error.to_tool_error())),
        }
    }

    /// Fails the call under `key` with `error`: its provider's stream broke for it (an event of
    /// it was lost, the response was cut off, the provider reported an error), so it takes no more
    /// fragments and will not run; [`finish`](StreamAssembler::finish) reports it with `error`.
    /// A call that already failed keeps its first error; a call refused at `begin` stays refused.
    ///
    /// ```
    /// use pleach_core::assemble::StreamAssembler;
    /// use pleach_core::{ErrorCode, ToolError};
    ///
    /// let mut assembler = StreamAssembler::new();
    /// assembler.begin("0", "call_1", "search").unwrap();
    /// assembler.push("0", r#"{"q":"ru"#).unwrap();
    /// assembler.fail("0", ToolError::new(ErrorCode::ArgumentsNotJson, "an event was lost")).unwrap();
    /// let calls = assembler.finish();
    /// assert_eq!(calls[0].parsed.as_ref().unwrap_err().code(), ErrorCode::ArgumentsNotJson);
    /// ```
    pub fn fail(&mut self, key: &str, error: ToolError) -> Result<(), StreamError> {
        let Some(index) = self.known(key)? else {
            return Ok(());
        };
        let call = &mut self.calls[index];
        match call.phase {
            Phase::Open(_) => {
                call.fail(error);
                Ok(())
            }
            Phase::Ended { .. } => Err(StreamError::Ended {
                key: key.to_owned(),
                tool_call_id: call.id.to_string(),
            }),
            Phase::Failed(_) => Ok(()),
        }
    }

    /// Attaches the provider's `signature` to the call under `key` (see
    /// [`ToolCall::signature`]): the call [`end`](Self::end) returns and
    /// [`finish`](Self::finish) reports carries it. A later signature replaces an earlier one;
    /// one for a call that already ended updates what `finish` reports.
    ///
    /// ```
    /// let mut assembler = pleach_core::assemble::StreamAssembler::new();
    /// assembler.begin("0", "gemini_r_0", "weather").unwrap();
    /// assembler.sign("0", "EqUCCq").unwrap();
    /// assembler.push("0", r#"{"city":"Paris"}"#).unwrap();
    /// assert_eq!(assembler.end("0").unwrap().signature(), Some("EqUCCq"));
    /// ```
    pub fn sign(&mut self, key: &str, signature: &str) -> Result<(), StreamError> {
        let Some(index) = self.known(key)? else {
            return Ok(());
        };
        let call = &mut self.calls[index];
        signature.clone_into(&mut call.signature);
        if let Phase::Ended { call: ended, .. } = &mut call.phase {
            *ended = ended.with_signature(signature);
        }
        Ok(())
    }

    /// The arguments of the call under `key` so far, as a value (see
    /// [`IncrementalJson::partial_value`]); its final arguments once it ended; `None` for an
    /// unknown key, a call that failed, or before any value started.
    ///
    /// ```
    /// use serde_json::json;
    /// let mut assembler = pleach_core::assemble::StreamAssembler::new();
    /// assembler.begin("0", "call_1", "write_file").unwrap();
    /// assembler.push("0", r#"{"path":"a.md","text":"Hel"#).unwrap();
    /// assert_eq!(assembler.partial_value("0"), Some(&json!({ "path": "a.md", "text": "Hel" })));
    /// ```
    pub fn partial_value(&mut self, key: &str) -> Option<&Value> {
        let index = self.index_of(key)?;
        match &mut self.calls[index].phase {
            Phase::Open(parser) => parser.partial_value(),
            Phase::Ended { value, .. } => Some(value),
            Phase::Failed(_) => None,
        }
    }

    /// The JSON pointers of the top-level fields of the call under `key` that completed since the
    /// last call (see [`IncrementalJson::take_completed_fields`]): a UI can show a field once it
    /// is whole.
    ///
    /// ```
    /// let mut assembler = pleach_core::assemble::StreamAssembler::new();
    /// assembler.begin("0", "call_1", "write_file").unwrap();
    /// assembler.push("0", r#"{"path":"a.md","text":"Hel"#).unwrap();
    /// assert_eq!(assembler.take_completed_fields("0"), ["/path"]);
    /// ```
    pub fn take_completed_fields(&mut self, key: &str) -> Vec<String> {
        match self.index_of(key).map(|index| &mut self.calls[index].phase) {
            Some(Phase::Open(parser)) => parser.take_completed_fields(),
            _ => Vec::new(),
        }
    }

    /// The end of the response: every call, in the order first seen. A call that never got its
    /// end signal fails with 1007 (`ArgumentsIncomplete`) and must not run, whatever its text
    /// looks like.
    ///
    /// ```
    /// use pleach_core::assemble::StreamAssembler;
    /// use pleach_core::ErrorCode;
    ///
    /// let mut assembler = StreamAssembler::new();
    /// assembler.begin("0", "call_1", "search").unwrap();
    /// assembler.push("0", r#"{"q":"rust"}"#).unwrap(); // parses, but was never ended
    /// let calls = assembler.finish();
    /// let error = calls[0].parsed.as_ref().unwrap_err();
    /// assert_eq!(error.code(), ErrorCode::ArgumentsIncomplete);
    /// assert_eq!(calls[0].call.arguments(), r#"{"q":"rust"}"#);
    /// ```
    pub fn finish(self) -> Vec<StreamedCall> {
        self.calls
            .into_iter()
            .map(|call| {
                let StreamingCall {
                    key,
                    id,
                    name,
                    text,
                    received,
                    signature,
                    phase,
                } = call;
                let as_received = || ToolCall::joined(&id, &name, &text, &signature);
                match phase {
                    Phase::Ended { call, value } => StreamedCall {
                        call,
                        parsed: Ok(value),
                    },
                    Phase::Failed(error) => StreamedCall {
                        call: as_received(),
                        parsed: Err(error),
                    },
                    Phase::Open(_) => {
                        let error = ToolError::new(
                            ErrorCode::ArgumentsIncomplete,
                            format!(
                                "the call to `{name}` was cut off: the response ended before its \
                                 arguments were complete ({received} bytes came), so it did not \
                                 run; call it again, with shorter arguments if they were long"
                            ),
                        )
                        .with_detail(format!(
                            "the stream ended without the provider's end signal for key `{key}`"
                        ));
                        StreamedCall {
                            call: as_received(),
                            parsed: Err(error),
                        }
                    }
                }
            })
            .collect()
    }

    /// The index of the call under `key`; `None` for a key refused at `begin` (whatever comes
    /// for it is dropped), an error for a key never begun.
    fn known(&mut self, key: &str) -> Result<Option<usize>, StreamError> {
        match self.index_of(key) {
            Some(index) => Ok(Some(index)),
            None if self.refused.contains_key(key) => Ok(None),
            None => Err(StreamError::UnknownKey {
                key: key.to_owned(),
            }),
        }
    }

    /// The index of the call under `key`.
    fn index_of(&mut self, key: &str) -> Option<usize> {
        if self
            .calls
            .get(self.last)
            .is_some_and(|call| call.key == key)
        {
            return Some(self.last);
        }
        let index = *self.by_key.get(key)?;
        self.last = index;
        Some(index)
    }
}

impl StreamingCall {
    /// Fails the call with `error`: it takes no more fragments and will not run.
    fn fail(&mut self, error: ToolError) -> StreamError {
        let error = error.with_detail(format!(
            "streamed tool call key `{}`, after {} bytes of arguments",
            self.key, self.received
        ));
        self.phase = Phase::Failed(error.clone());
        StreamError::CallFailed {
            key: self.key.clone(),
            tool_call_id: self.id.to_string(),
            error: Box::new(error),
        }
    }
}
