//! A tool's own questions to an MCP 2026-07-28 client (`ToolContext::elicit`,
//! `ToolContext::sample`). That protocol has no requests from server to client: the call ends
//! with an input-required result carrying the question and, as `requestState`, the answers so far
//! sealed with the server's interrupt key. The client's retry carries the answer; the tool runs
//! again from its start, its questions answered in the order it asks them, and the first one
//! without an answer ends the call again. The seal binds the answers to the call (its
//! fingerprint): a client cannot forge them, nor carry them to another call or other arguments.
#![allow(deprecated)] // rmcp marks sampling deprecated (SEP-2577); MCP still has it.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitResult, InputRequest,
    InputRequiredResult, InputResponses,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use pleach_core::call::ToolCall;
use pleach_core::client::{Elicitation, Elicited, Sampled, SamplingRequest};
use pleach_core::event::ClientRequest;
use pleach_core::safety::Action;

/// The most questions one call asks a 2026-07-28 client: each is a round trip that runs the tool
/// again, and the official SDKs give up after 10 rounds (one may be the call's approval).
pub(super) const MAX_QUESTIONS: usize = 8;

/// Set before the sealed body, so a seal made for another purpose with the same key never
/// opens as a call's answers.
const DOMAIN: &[u8] = b"pleach-mcp tool questions\0";

/// What a tool's question is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Kind {
    /// `elicitation/create`: a question to the user.
    Elicitation,
    /// `sampling/createMessage`: a completion from the client's model.
    Sampling,
}

impl Kind {
    fn method(self) -> &'static str {
        match self {
            Kind::Elicitation => "elicitation/create",
            Kind::Sampling => "sampling/createMessage",
        }
    }
}

/// One answer a retry carried: the client's result, read as one of its question's kind.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", content = "result", rename_all = "camelCase")]
enum Reply {
    Elicitation(ElicitResult),
    Sampling(CreateMessageResult),
}

impl Reply {
    /// `result`, the client's answer to a question of `kind`, read as one.
    fn read(kind: Kind, result: &Value) -> Result<Reply, serde_json::Error> {
        Ok(match kind {
            Kind::Elicitation => Reply::Elicitation(serde_json::from_value(result.clone())?),
            Kind::Sampling => Reply::Sampling(serde_json::from_value(result.clone())?),
        })
    }

    fn kind(&self) -> Kind {
        match self {
            Reply::Elicitation(_) => Kind::Elicitation,
            Reply::Sampling(_) => Kind::Sampling,
        }
    }
}

/// A tool's request of its client, as its call's event carries it.
pub(super) enum Question {
    Elicit(Arc<ClientRequest<Elicitation, Elicited<Value>>>),
    Sample(Arc<ClientRequest<SamplingRequest, Sampled>>),
}

impl Question {
    fn kind(&self) -> Kind {
        match self {
            Question::Elicit(_) => Kind::Elicitation,
            Question::Sample(_) => Kind::Sampling,
        }
    }

    pub(super) fn refuse(&self, reason: &str) {
        match self {
            Question::Elicit(request) => request.refuse(reason),
            Question::Sample(request) => request.refuse(reason),
        };
    }

    /// Answers the tool with `reply`, of this question's kind (else refuses, saying so).
    fn answer(&self, reply: &Reply, at: usize) {
        match (self, reply) {
            (Question::Elicit(request), Reply::Elicitation(answer)) => {
                request.answer(crate::client::elicited(answer.clone()));
            }
            (Question::Sample(request), Reply::Sampling(answer)) => {
                request.answer(crate::client::sampled(answer));
            }
            _ => self.refuse(&format!(
                "the tool's question {} is a `{}`, where its earlier run asked a `{}`: a tool \
                 must ask the same questions in the same order each time it runs",
                at + 1,
                self.kind().method(),
                reply.kind().method()
            )),
        }
    }

    /// The request the input-required result carries.
    fn input_request(&self) -> Result<InputRequest, String> {
        Ok(match self {
            Question::Elicit(request) => InputRequest::Elicitation(ElicitRequest::new(
                crate::client::elicit_params(request.request())?,
            )),
            Question::Sample(request) => InputRequest::CreateMessage(CreateMessageRequest::new(
                crate::client::sampling_params(request.request())?,
            )),
        })
    }
}

/// A call of a 2026-07-28 client with what its retries carried: the call that runs (as approved,
/// when it needed approval), and the answers to the tool's questions so far.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Questions {
    /// The fingerprint of the call as the client issues it: every retry must be that call.
    /// Worked out when a question is first sealed (from `issued`): most calls ask none.
    fingerprint: String,
    /// The call as the client issued it, until its fingerprint is needed.
    #[serde(skip)]
    issued: Option<ToolCall>,
    /// The call that runs: the issued one, or the one the user's approval was for.
    call: ToolCall,
    /// The user's decision on the call's approval, when it needed one.
    approved: Option<Action>,
    /// The answers, in the order the tool asked.
    replies: Vec<Reply>,
    /// The question the next retry answers.
    pending: Option<Kind>,
    /// How many questions the tool has asked in this run.
    #[serde(skip)]
    asked: usize,
    /// Whether this run ends to ask a question: later ones are not asked.
    #[serde(skip)]
    ending: bool,
}

/// The sealed form: the state as JSON text and its seal
/// ([`seal_mac`](pleach_core::safety::seal_mac) over the domain and the text).
#[derive(Serialize, Deserialize)]
struct Sealed {
    v: u32,
    questions: String,
    mac: String,
}

impl Questions {
    /// A call `issued` by the client, running as `call` with the user's decision `approved`,
    /// its tool's questions not yet asked.
    pub(super) fn new(issued: &ToolCall, call: ToolCall, approved: Option<Action>) -> Questions {
        Questions {
            fingerprint: String::new(),
            issued: Some(issued.clone()),
            call,
            approved,
            replies: Vec::new(),
            pending: None,
            asked: 0,
            ending: false,
        }
    }

    /// Whether `request_state` is a call's sealed answers (else it is a sealed approval).
    pub(super) fn sealed_here(request_state: &str) -> bool {
        serde_json::from_str::<Sealed>(request_state).is_ok()
    }

    /// The state a retry of `issued` carried (`request_state`), checked against `key` and the
    /// call, with the answer to its pending question from `responses`.
    pub(super) fn open(
        request_state: &str,
        key: &[u8],
        issued: &ToolCall,
        responses: Option<&InputResponses>,
    ) -> Result<Questions, String> {
        let sealed: Sealed = serde_json::from_str(request_state)
            .map_err(|error| format!("the `requestState` is malformed: {error}"))?;
        if sealed.v != 1 {
            return Err("the `requestState` is not one this server sealed".to_owned());
        }
        if !pleach_core::safety::seal_verifies(
            key,
            &[DOMAIN, sealed.questions.as_bytes()],
            &sealed.mac,
        ) {
            return Err(
                "the `requestState` is not one this server sealed; behind a load balancer, every \
                 replica needs the same interrupt key"
                    .to_owned(),
            );
        }
        let mut questions: Questions = serde_json::from_str(&sealed.questions)
            .map_err(|error| format!("the `requestState` is malformed: {error}"))?;
        if pleach_core::safety::fingerprint(issued) != questions.fingerprint {
            return Err(format!(
                "the `requestState` carries the answers of another call (`{}` with other \
                 arguments): retry the call they were asked for",
                questions.call.name()
            ));
        }
        let kind = questions
            .pending
            .take()
            .ok_or("the `requestState` has no question waiting for an answer")?;
        let at = key_of(questions.replies.len());
        let result = responses
            .and_then(|responses| responses.get(&at))
            .ok_or_else(|| {
                format!(
                    "the retry carries no `inputResponses.{at}`: the answer to the tool's question"
                )
            })?;
        let reply = Reply::read(kind, result).map_err(|_| {
            format!(
                "`inputResponses.{at}` is not a result of `{}`",
                kind.method()
            )
        })?;
        questions.replies.push(reply);
        Ok(questions)
    }

    /// The call that runs and the user's decision on its approval.
    pub(super) fn run(&self) -> (ToolCall, Option<Action>) {
        (self.call.clone(), self.approved.clone())
    }

    /// Answers the tool's next `question` from the replies; when there is none for it, the
    /// input-required result that asks it, sealed under `key` (the call then ends).
    pub(super) fn put(
        &mut self,
        question: &Question,
        key: &[u8],
    ) -> Option<Result<InputRequiredResult, String>> {
        let at = self.asked;
        self.asked += 1;
        if self.ending {
            question.refuse("the call ends to put an earlier question to its client first");
            return None;
        }
        match self.replies.get(at) {
            Some(reply) => {
                question.answer(reply, at);
                None
            }
            None if at >= MAX_QUESTIONS => {
                question.refuse(&format!(
                    "a tool asks at most {MAX_QUESTIONS} questions in one call of an MCP \
                     2026-07-28 client: each runs the tool again"
                ));
                None
            }
            None => match question.input_request() {
                Err(error) => {
                    question.refuse(&error);
                    None
                }
                Ok(request) => {
                    self.ending = true;
                    Some(self.input_required(question.kind(), request, key))
                }
            },
        }
    }

    /// The input-required result that asks `request`, a question of `kind`.
    fn input_required(
        &self,
        kind: Kind,
        request: InputRequest,
        key: &[u8],
    ) -> Result<InputRequiredResult, String> {
        let mut state = self.clone();
        state.pending = Some(kind);
        if let Some(issued) = state.issued.take() {
            state.fingerprint = pleach_core::safety::fingerprint(&issued);
        }
        let body = serde_json::to_string(&state).map_err(|error| error.to_string())?;
        let mac = pleach_core::safety::seal_mac(key, &[DOMAIN, body.as_bytes()]);
        let sealed = serde_json::to_string(&Sealed {
            v: 1,
            questions: body,
            mac,
        })
        .map_err(|error| error.to_string())?;
        let requests = BTreeMap::from([(key_of(self.replies.len()), request)]);
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }
}

/// The key of the tool's question `at` (from 0) among an input-required result's requests and
/// its retry's answers.
fn key_of(at: usize) -> String {
    format!("question_{}", at + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::client::Elicitation;
    use serde_json::json;

    const KEY: &[u8] = b"test key";

    #[pleach_core::input]
    #[allow(dead_code)]
    struct People {
        people: u32,
    }

    fn call(id: u64) -> ToolCall {
        ToolCall::new("c1", "split_expense", format!(r#"{{"id":{id}}}"#))
    }

    fn elicit() -> (Question, pleach_core::event::Answered<Elicited<Value>>) {
        let question = Elicitation::new::<People>("How many people?").unwrap();
        let (request, answered) = ClientRequest::new("c1", question);
        (Question::Elicit(request), answered)
    }

    /// Asks the first question of a fresh run of `call(1)`; its sealed state.
    fn first_round() -> String {
        let mut questions = Questions::new(&call(1), call(1), None);
        let (question, _) = elicit();
        let asked = questions.put(&question, KEY).unwrap().unwrap();
        let request = serde_json::to_value(&asked.input_requests.unwrap()["question_1"]).unwrap();
        assert_eq!(request["method"], "elicitation/create", "{request}");
        assert_eq!(request["params"]["message"], "How many people?");
        asked.request_state.unwrap()
    }

    fn responses(key: &str, answer: Value) -> InputResponses {
        BTreeMap::from([(key.to_owned(), answer)])
    }

    #[tokio::test]
    async fn a_retry_answers_the_first_question_and_asks_the_second() {
        let sealed = first_round();
        assert!(Questions::sealed_here(&sealed));
        let answer = json!({ "action": "accept", "content": { "people": 4 } });
        let mut questions = Questions::open(
            &sealed,
            KEY,
            &call(1),
            Some(&responses("question_1", answer)),
        )
        .unwrap();
        let (first, answered) = elicit();
        assert!(questions.put(&first, KEY).is_none());
        assert_eq!(
            answered.await.unwrap().unwrap(),
            Elicited::Accept(json!({ "people": 4 }))
        );
        // The second question ends the run again; a third one in the same run is not asked.
        let (second, _) = elicit();
        let asked = questions.put(&second, KEY).unwrap().unwrap();
        assert!(asked.input_requests.unwrap().contains_key("question_2"));
        let (third, refused) = elicit();
        assert!(questions.put(&third, KEY).is_none());
        assert!(refused.await.unwrap().is_err());
        // Both answers ride the second retry's state.
        let decline = json!({ "action": "decline" });
        let mut questions = Questions::open(
            &asked.request_state.unwrap(),
            KEY,
            &call(1),
            Some(&responses("question_2", decline)),
        )
        .unwrap();
        let (first, one) = elicit();
        let (second, two) = elicit();
        assert!(questions.put(&first, KEY).is_none());
        assert!(questions.put(&second, KEY).is_none());
        assert!(matches!(one.await.unwrap(), Ok(Elicited::Accept(_))));
        assert_eq!(two.await.unwrap().unwrap(), Elicited::Decline);
    }

    #[test]
    fn a_forged_replayed_or_unanswered_retry_is_refused() {
        let sealed = first_round();
        let answer = responses("question_1", json!({ "action": "cancel" }));
        let other_call = Questions::open(&sealed, KEY, &call(2), Some(&answer)).unwrap_err();
        assert!(other_call.contains("another call"), "{other_call}");
        let other_key =
            Questions::open(&sealed, b"other key", &call(1), Some(&answer)).unwrap_err();
        assert!(
            other_key.contains("not one this server sealed"),
            "{other_key}"
        );
        let forged = sealed.replace("split_expense", "delete_expense");
        assert!(Questions::open(&forged, KEY, &call(1), Some(&answer)).is_err());
        let unanswered = Questions::open(&sealed, KEY, &call(1), None).unwrap_err();
        assert!(
            unanswered.contains("inputResponses.question_1"),
            "{unanswered}"
        );
        let wrong = responses("question_1", json!({ "model": "m" }));
        let wrong = Questions::open(&sealed, KEY, &call(1), Some(&wrong)).unwrap_err();
        assert!(wrong.contains("elicitation/create"), "{wrong}");
        assert!(!Questions::sealed_here(
            r#"{"v":1,"interrupt":"{}","mac":""}"#
        ));
    }

    #[tokio::test]
    async fn a_question_of_another_kind_than_its_answer_is_refused() {
        let sealed = first_round();
        let answer = responses("question_1", json!({ "action": "accept", "content": {} }));
        let mut questions = Questions::open(&sealed, KEY, &call(1), Some(&answer)).unwrap();
        let (request, answered) = ClientRequest::new("c1", SamplingRequest::new("hi"));
        assert!(questions.put(&Question::Sample(request), KEY).is_none());
        let error = answered.await.unwrap().unwrap_err();
        assert!(error.message().contains("same order"), "{error}");
    }
}
