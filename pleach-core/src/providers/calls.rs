//! The bookkeeping every stream parser shares: which calls are open under which key, which ids are
//! taken, and the rule that each key gets at most one start, then fragments, then exactly one end
//! or failure, and nothing after.

use std::collections::HashMap;

use crate::error::{ErrorCode, ToolError};

use super::{ProviderEvent, StreamProblem};

#[derive(Debug)]
enum State {
    Open { id: String, name: String },
    Ended,
    Failed,
}

/// The calls of one stream, by the provider's key.
#[derive(Debug, Default)]
pub(crate) struct CallTable {
    states: HashMap<String, State>,
    /// Open keys in the order their calls started (failures at the end of a stream follow it).
    open: Vec<String>,
    /// Every call id seen, with the key that claimed it.
    ids: HashMap<String, String>,
}

impl CallTable {
    pub(crate) fn is_open(&self, key: &str) -> bool {
        matches!(self.states.get(key), Some(State::Open { .. }))
    }

    pub(crate) fn is_known(&self, key: &str) -> bool {
        self.states.contains_key(key)
    }

    /// The id and name of the open call at `key`.
    pub(crate) fn open_call(&self, key: &str) -> Option<(&str, &str)> {
        match self.states.get(key) {
            Some(State::Open { id, name }) => Some((id, name)),
            _ => None,
        }
    }

    /// Keys of the open calls, in start order.
    pub(crate) fn open_keys(&self) -> Vec<String> {
        self.open.clone()
    }

    /// A call starts. An id already taken by another key fails this call (the other is
    /// unharmed); an empty id or name fails it too. Starting again a key whose call has ended
    /// begins a new call there.
    pub(crate) fn start(&mut self, out: &mut Vec<ProviderEvent>, key: &str, id: &str, name: &str) {
        match self.states.get(key) {
            Some(State::Open { id: known, .. }) if known == id => return,
            Some(State::Open { id: known, .. }) => {
                let message = format!(
                    "the provider sent a second id `{id}` for the call `{known}` (key `{key}`); the call was not run"
                );
                self.fail(out, key, StreamProblem::ConflictingCall, message);
                return;
            }
            Some(State::Failed) => return,
            Some(State::Ended) | None => {}
        }
        if id.is_empty() || name.is_empty() {
            let message = format!(
                "the provider started a call (key `{key}`) without {}; the call was not run",
                if id.is_empty() { "an id" } else { "a name" }
            );
            self.fail(out, key, StreamProblem::UnknownCall, message);
            return;
        }
        if let Some(other) = self.ids.get(id) {
            let message = format!(
                "the provider sent the call id `{id}` twice (keys `{other}` and `{key}`); this call was not run, the first one is unaffected"
            );
            self.states.insert(key.to_owned(), State::Failed);
            out.push(failure(
                key,
                Some(id),
                Some(name),
                StreamProblem::DuplicateId,
                message,
            ));
            return;
        }
        self.ids.insert(id.to_owned(), key.to_owned());
        self.states.insert(
            key.to_owned(),
            State::Open {
                id: id.to_owned(),
                name: name.to_owned(),
            },
        );
        self.open.push(key.to_owned());
        out.push(ProviderEvent::CallStarted {
            key: key.to_owned(),
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }

    /// The provider's signature for an open call; ignored for any other key (a call that ended
    /// has been handed on, and one that failed will not be written back).
    pub(crate) fn sign(&mut self, out: &mut Vec<ProviderEvent>, key: &str, signature: String) {
        if self.is_open(key) && !signature.is_empty() {
            out.push(ProviderEvent::CallSignature {
                key: key.to_owned(),
                signature,
            });
        }
    }

    /// A fragment of a call's arguments. For a key never started, the call fails (its id and
    /// name are unknown); after a call ended or failed, fragments are ignored.
    pub(crate) fn delta(&mut self, out: &mut Vec<ProviderEvent>, key: &str, fragment: &str) {
        match self.states.get(key) {
            Some(State::Open { .. }) => {
                if !fragment.is_empty() {
                    out.push(ProviderEvent::ArgumentsDelta {
                        key: key.to_owned(),
                        fragment: fragment.to_owned(),
                    });
                }
            }
            // The call ended (and may be running): its arguments were final. More of them is
            // the provider contradicting itself, which the host should hear of.
            Some(State::Ended) if !fragment.is_empty() => {
                out.push(ProviderEvent::StreamError {
                    problem: StreamProblem::ArgumentsMismatch,
                    message: format!(
                        "the provider sent more arguments for the call under key `{key}` after it \
                         ended; they were dropped"
                    ),
                });
            }
            Some(State::Ended | State::Failed) => {}
            None => {
                let message = format!(
                    "the provider sent arguments for a call it never started (key `{key}`); they were not run"
                );
                self.fail(out, key, StreamProblem::UnknownCall, message);
            }
        }
    }

    /// The provider's end signal for a call.
    pub(crate) fn end(&mut self, out: &mut Vec<ProviderEvent>, key: &str) {
        if self.is_open(key) {
            self.states.insert(key.to_owned(), State::Ended);
            self.open.retain(|k| k != key);
            out.push(ProviderEvent::CallEnded {
                key: key.to_owned(),
            });
        } else if !self.is_known(key) {
            let message = format!(
                "the provider ended a call it never started (key `{key}`); nothing was run"
            );
            self.fail(out, key, StreamProblem::UnknownCall, message);
        }
    }

    /// Fails the call at `key` (open or never seen); a call already ended or failed is left as is.
    pub(crate) fn fail(
        &mut self,
        out: &mut Vec<ProviderEvent>,
        key: &str,
        problem: StreamProblem,
        message: String,
    ) {
        let event = match self.states.get(key) {
            Some(State::Ended | State::Failed) => return,
            Some(State::Open { id, name }) => failure(key, Some(id), Some(name), problem, message),
            None => failure(key, None, None, problem, message),
        };
        self.states.insert(key.to_owned(), State::Failed);
        self.open.retain(|k| k != key);
        out.push(event);
    }

    /// Fails every open call, in start order, with the message `why` builds from each call's id.
    pub(crate) fn fail_open(
        &mut self,
        out: &mut Vec<ProviderEvent>,
        problem: StreamProblem,
        why: impl Fn(&str) -> String,
    ) {
        for key in self.open_keys() {
            let message = match self.open_call(&key) {
                Some((id, _)) => why(id),
                None => continue,
            };
            self.fail(out, &key, problem, message);
        }
    }
}

/// A `CallFailed` event.
pub(crate) fn failure(
    key: &str,
    id: Option<&str>,
    name: Option<&str>,
    problem: StreamProblem,
    message: String,
) -> ProviderEvent {
    let code = match problem {
        StreamProblem::Incomplete | StreamProblem::ProviderError => ErrorCode::ArgumentsIncomplete,
        _ => ErrorCode::ArgumentsNotJson,
    };
    ProviderEvent::CallFailed {
        key: key.to_owned(),
        id: id.map(str::to_owned),
        name: name.map(str::to_owned),
        problem,
        error: ToolError::new(code, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_and_duplicate_ids() {
        let mut table = CallTable::default();
        let mut out = Vec::new();
        table.start(&mut out, "0", "a", "f");
        table.start(&mut out, "1", "a", "g");
        table.delta(&mut out, "1", "{}");
        table.delta(&mut out, "0", "{}");
        table.end(&mut out, "0");
        table.delta(&mut out, "0", "late");
        assert!(matches!(&out[0], ProviderEvent::CallStarted { key, .. } if key == "0"));
        assert!(matches!(
            &out[1],
            ProviderEvent::CallFailed { key, problem: StreamProblem::DuplicateId, .. } if key == "1"
        ));
        assert!(matches!(&out[2], ProviderEvent::ArgumentsDelta { key, .. } if key == "0"));
        assert!(matches!(&out[3], ProviderEvent::CallEnded { key } if key == "0"));
        // Arguments after the end are dropped, and said to be.
        assert!(matches!(
            &out[4],
            ProviderEvent::StreamError {
                problem: StreamProblem::ArgumentsMismatch,
                ..
            }
        ));
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn fail_open_follows_start_order() {
        let mut table = CallTable::default();
        let mut out = Vec::new();
        table.start(&mut out, "b", "id_b", "f");
        table.start(&mut out, "a", "id_a", "f");
        out.clear();
        table.fail_open(&mut out, StreamProblem::Incomplete, str::to_owned);
        let keys: Vec<_> = out
            .iter()
            .map(|e| match e {
                ProviderEvent::CallFailed { key, error, .. } => {
                    assert_eq!(error.code(), ErrorCode::ArgumentsIncomplete);
                    key.clone()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(keys, ["b", "a"]);
    }
}
