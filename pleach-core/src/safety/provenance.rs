//! Provenance: the values a turn has already seen (in its prior tool results and, if configured,
//! in the user's messages), and where each came from. A value the model passes to a tool that it
//! never saw is a candidate fabrication: an account number it made up, an id it guessed.
//!
//! [`ProvenanceDetector`] is the detector built on it: configured with the argument paths that must
//! come from somewhere, it flags each value that has no provenance.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::{FabricationDetector, Finding};
use crate::call::ToolCall;
use crate::schema::push_pointer_segment;

/// Where a known value was seen.
///
/// ```
/// use pleach_core::safety::Source;
/// let source = Source::ToolResult { tool_call_id: "call_1".into(), tool_name: "find_account".into(), path: "/id".into() };
/// assert_eq!(source.to_string(), "the result of `find_account` (call call_1) at /id");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Source {
    /// A tool's result, at a JSON pointer inside it.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The call that returned it.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// Where in the result (`""` for the whole result).
        path: String,
    },
    /// A message of the user's (the n-th of the turn, from 0).
    #[serde(rename_all = "camelCase")]
    UserMessage {
        /// Which message of the turn.
        index: usize,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::ToolResult {
                tool_call_id,
                tool_name,
                path,
            } => {
                write!(f, "the result of `{tool_name}` (call {tool_call_id})")?;
                if !path.is_empty() {
                    write!(f, " at {path}")?;
                }
                Ok(())
            }
            Source::UserMessage { index } => write!(f, "the user's message #{index}"),
        }
    }
}

/// How a value matched a known one.
///
/// ```
/// use pleach_core::{ToolCall, safety::{MatchKind, Provenance}};
/// let mut provenance = Provenance::new();
/// provenance.record_result(&ToolCall::new("c1", "find", "{}"), &serde_json::json!("ACC-0042"));
/// assert_eq!(provenance.seen(&serde_json::json!("acc0042")).unwrap().kind, MatchKind::Normalized);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MatchKind {
    /// The same value: the same string, or the same number.
    Exact,
    /// The same after normalization: case, spacing and separators (`ACC-0042` and `acc 0042`), or a
    /// number written as text (`"42"` and `42`, `"42.0"` and `42`).
    Normalized,
}

/// The answer to "has this value been seen, and where".
///
/// ```
/// use pleach_core::{ToolCall, safety::Provenance};
/// let mut provenance = Provenance::new();
/// provenance.record_result(&ToolCall::new("c1", "find", "{}"), &serde_json::json!({ "id": 7 }));
/// let seen = provenance.seen(&serde_json::json!(7)).unwrap();
/// assert_eq!(seen.sources.len(), 1);
/// assert_eq!(seen.sources[0].to_string(), "the result of `find` (call c1) at /id");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seen<'a> {
    /// How it matched (exact wins over normalized).
    pub kind: MatchKind,
    /// Every place it was seen, oldest first.
    pub sources: &'a [Source],
}

/// A known value, for a ground-truth panel: what the model might have meant.
///
/// ```
/// use pleach_core::safety::{KnownValue, Source};
/// let known = KnownValue { value: serde_json::json!("ACC-0042"), source: Source::UserMessage { index: 0 } };
/// assert_eq!(known.source.to_string(), "the user's message #0");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct KnownValue {
    /// The value as it was seen.
    pub value: Value,
    /// Where it was first seen.
    pub source: Source,
}

/// A key under which values are compared.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Text(String),
    /// A number's canonical decimal text (`42`, `-3.5`, `1e+300`).
    Number(String),
}

/// The values of one turn and where each was seen. The runtime keeps one per session, cleared
/// when the user speaks, and hands it to every detector; hosts and tests can build one too.
///
/// ```
/// use pleach_core::{ToolCall, safety::{MatchKind, Provenance}};
/// use serde_json::json;
///
/// let mut provenance = Provenance::new();
/// let lookup = ToolCall::new("call_1", "find_account", "{}");
/// provenance.record_result(&lookup, &json!({ "id": "ACC-0042", "balance": 120.5 }));
///
/// assert_eq!(provenance.seen(&json!("ACC-0042")).unwrap().kind, MatchKind::Exact);
/// assert_eq!(provenance.seen(&json!("acc 0042")).unwrap().kind, MatchKind::Normalized);
/// assert_eq!(provenance.seen(&json!("120.5")).unwrap().kind, MatchKind::Normalized);
/// assert!(provenance.seen(&json!("ACC-0043")).is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    exact: HashMap<Key, Vec<Source>>,
    normalized: HashMap<Key, Vec<Source>>,
    /// Every distinct value seen, in order, for nearest-value lookups.
    known: Vec<KnownValue>,
    known_keys: HashMap<Key, usize>,
    user_messages: usize,
}

/// Values longer than this are not indexed (a document is not an id); their leaves still are.
const MAX_INDEXED_CHARS: usize = 512;
/// At most this many values are kept per turn; later ones are not indexed.
const MAX_KNOWN_VALUES: usize = 100_000;

impl Provenance {
    /// Nothing seen yet.
    ///
    /// ```
    /// assert!(pleach_core::safety::Provenance::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Provenance::default()
    }

    /// Records every string and number in a tool's result, with its JSON pointer.
    ///
    /// ```
    /// use pleach_core::{ToolCall, safety::Provenance};
    /// let mut provenance = Provenance::new();
    /// provenance.record_result(&ToolCall::new("c1", "find", "{}"), &serde_json::json!({ "ids": ["a-1", "a-2"] }));
    /// assert!(provenance.seen(&serde_json::json!("a-2")).is_some());
    /// ```
    pub fn record_result(&mut self, call: &ToolCall, result: &Value) {
        let mut pointer = String::new();
        self.record_value(result, &mut pointer, &|path: &str| Source::ToolResult {
            tool_call_id: call.id().to_owned(),
            tool_name: call.name().to_owned(),
            path: path.to_owned(),
        });
    }

    /// Records a message of the user's: the whole text, each word, and each number in it.
    ///
    /// ```
    /// use pleach_core::safety::Provenance;
    /// let mut provenance = Provenance::new();
    /// provenance.record_user_message("Send 250 to account DE-7781, please");
    /// assert!(provenance.seen(&serde_json::json!(250)).is_some());
    /// assert!(provenance.seen(&serde_json::json!("de7781")).is_some());
    /// ```
    pub fn record_user_message(&mut self, text: &str) {
        let source = Source::UserMessage {
            index: self.user_messages,
        };
        self.user_messages += 1;
        self.record_text(text, &source);
        for word in text.split(|c: char| c.is_whitespace() || ",;!?()[]{}\"'".contains(c)) {
            let word = word.trim_end_matches(['.', ':']);
            if word.is_empty() {
                continue;
            }
            self.record_text(word, &source);
            if let Some(number) = number_key(word) {
                self.insert(Key::Number(number), &source);
            }
        }
    }

    /// Forgets everything: a new user turn starts.
    ///
    /// ```
    /// use pleach_core::safety::Provenance;
    /// let mut provenance = Provenance::new();
    /// provenance.record_user_message("pay ACC-0042");
    /// provenance.clear();
    /// assert!(provenance.is_empty());
    /// ```
    pub fn clear(&mut self) {
        *self = Provenance::default();
    }

    /// Whether nothing has been recorded.
    ///
    /// ```
    /// use pleach_core::safety::Provenance;
    /// let mut provenance = Provenance::new();
    /// assert!(provenance.is_empty());
    /// provenance.record_user_message("hello");
    /// assert!(!provenance.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// Has `value` been seen, and where. Strings and numbers only (other values: `None`).
    ///
    /// ```
    /// use pleach_core::safety::Provenance;
    /// let mut provenance = Provenance::new();
    /// provenance.record_user_message("send 250 to DE-7781");
    /// assert!(provenance.seen(&serde_json::json!(250)).is_some());
    /// assert!(provenance.seen(&serde_json::json!({ "an": "object" })).is_none());
    /// ```
    pub fn seen(&self, value: &Value) -> Option<Seen<'_>> {
        let (exact, normalized) = keys(value)?;
        if let Some(sources) = self.exact.get(&exact) {
            return Some(Seen {
                kind: MatchKind::Exact,
                sources,
            });
        }
        normalized
            .iter()
            .find_map(|key| self.normalized.get(key))
            .map(|sources| Seen {
                kind: MatchKind::Normalized,
                sources,
            })
    }

    /// Up to `n` known values nearest to `value`: for a string, by edit distance of the normalized
    /// text; for a number, by absolute difference. Ties keep the order values were seen in.
    ///
    /// ```
    /// use pleach_core::{ToolCall, safety::Provenance};
    /// use serde_json::json;
    /// let mut provenance = Provenance::new();
    /// let call = ToolCall::new("c1", "list_accounts", "{}");
    /// provenance.record_result(&call, &json!(["ACC-0042", "ACC-9000", "ZZZ"]));
    /// let nearest = provenance.nearest(&json!("ACC-0043"), 1);
    /// assert_eq!(nearest[0].value, json!("ACC-0042"));
    /// ```
    pub fn nearest(&self, value: &Value, n: usize) -> Vec<KnownValue> {
        let mut scored: Vec<(f64, usize)> = match value {
            Value::Number(number) => {
                let Some(target) = number.as_f64() else {
                    return Vec::new();
                };
                self.known
                    .iter()
                    .enumerate()
                    .filter_map(|(i, known)| Some(((number_of(&known.value)? - target).abs(), i)))
                    .collect()
            }
            Value::String(text) => {
                let target = normalize(text);
                self.known
                    .iter()
                    .enumerate()
                    .filter_map(|(i, known)| {
                        let Value::String(candidate) = &known.value else {
                            return None;
                        };
                        let distance = strsim::levenshtein(&target, &normalize(candidate));
                        #[allow(clippy::cast_precision_loss)] // distances are small
                        Some((distance as f64, i))
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(n)
            .map(|(_, i)| self.known[i].clone())
            .collect()
    }

    fn record_value(
        &mut self,
        value: &Value,
        pointer: &mut String,
        source: &dyn Fn(&str) -> Source,
    ) {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    let len = pointer.len();
                    push_pointer_segment(pointer, key);
                    self.record_value(item, pointer, source);
                    pointer.truncate(len);
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let len = pointer.len();
                    push_pointer_segment(pointer, &index.to_string());
                    self.record_value(item, pointer, source);
                    pointer.truncate(len);
                }
            }
            Value::String(text) => {
                if text.chars().count() <= MAX_INDEXED_CHARS {
                    self.record_leaf(value, &source(pointer));
                }
            }
            Value::Number(_) => self.record_leaf(value, &source(pointer)),
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn record_text(&mut self, text: &str, source: &Source) {
        if text.chars().count() <= MAX_INDEXED_CHARS {
            self.record_leaf(&Value::String(text.to_owned()), source);
        }
    }

    fn record_leaf(&mut self, value: &Value, source: &Source) {
        let Some((exact, normalized)) = keys(value) else {
            return;
        };
        push_source(self.exact.entry(exact.clone()).or_default(), source);
        for key in normalized {
            self.insert(key, source);
        }
        if self.known.len() < MAX_KNOWN_VALUES && !self.known_keys.contains_key(&exact) {
            self.known_keys.insert(exact, self.known.len());
            self.known.push(KnownValue {
                value: value.clone(),
                source: source.clone(),
            });
        }
    }

    fn insert(&mut self, key: Key, source: &Source) {
        push_source(self.normalized.entry(key).or_default(), source);
    }
}

fn push_source(sources: &mut Vec<Source>, source: &Source) {
    // One source per place: recording the same result twice does not grow the list.
    if sources.len() < 16 && !sources.contains(source) {
        sources.push(source.clone());
    }
}

/// The exact key and the normalized keys of a string or number.
fn keys(value: &Value) -> Option<(Key, Vec<Key>)> {
    match value {
        Value::String(text) => {
            let mut normalized = vec![Key::Text(normalize(text))];
            if let Some(number) = number_key(text) {
                normalized.push(Key::Number(number));
            }
            Some((Key::Text(text.clone()), normalized))
        }
        // A number matches numbers (and text that reads as one, through `number_key`), not the
        // digits of any text: `12.50` or `12:50` normalized to letters and digits is not 1250.
        Value::Number(number) => {
            let canonical = canonical_number(number);
            Some((Key::Number(canonical.clone()), vec![Key::Number(canonical)]))
        }
        _ => None,
    }
}

/// Lowercase, letters and digits only: `ACC-0042`, `acc 0042` and `Acc_0042` are one value. A
/// decimal point between digits stays: `12.50` and `1250` are not.
fn normalize(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let decimal_point = |at: usize| {
        chars[at] == '.'
            && at > 0
            && chars[at - 1].is_ascii_digit()
            && chars.get(at + 1).is_some_and(char::is_ascii_digit)
    };
    chars
        .iter()
        .enumerate()
        .filter(|&(at, c)| c.is_alphanumeric() || decimal_point(at))
        .flat_map(|(_, c)| c.to_lowercase())
        .collect()
}

/// The canonical text of a number: integers exactly, others through `f64` (so `2.50` and `2.5`
/// agree, and an integer-valued float is written as the integer).
fn canonical_number(number: &serde_json::Number) -> String {
    if let Some(i) = number.as_i64() {
        return i.to_string();
    }
    if let Some(u) = number.as_u64() {
        return u.to_string();
    }
    match number.as_f64() {
        Some(f) => canonical_float(f),
        None => number.to_string(),
    }
}

#[allow(clippy::cast_possible_truncation, clippy::float_cmp)]
fn canonical_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return (f as i64).to_string();
    }
    f.to_string()
}

/// The canonical number a piece of text spells, if it spells one (`"1,250.00"` is 1250).
fn number_key(text: &str) -> Option<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() || !trimmed.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let without_grouping: String = trimmed.chars().filter(|c| *c != ',' && *c != '_').collect();
    if let Ok(i) = without_grouping.parse::<i64>() {
        return Some(i.to_string());
    }
    let f = without_grouping.parse::<f64>().ok()?;
    f.is_finite().then(|| canonical_float(f))
}

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => number_key(text)?.parse().ok(),
        _ => None,
    }
}

/// A detector that flags argument values with no provenance: configured per tool with the
/// argument paths (JSON pointers, `*` for any array index or object key) whose values must have
/// been seen earlier in the turn. Strings and numbers are checked; a path that is absent in a call
/// is not a finding (the schema decides what is required).
///
/// ```
/// use pleach_core::{ToolCall, safety::{FabricationDetector, Provenance, ProvenanceDetector}};
/// use serde_json::json;
///
/// let detector = ProvenanceDetector::new()
///     .guard("transfer_funds", ["/to_account", "/lines/*/invoice_id"]);
/// assert!(detector.covers("transfer_funds"));
///
/// let mut provenance = Provenance::new();
/// provenance.record_result(&ToolCall::new("c1", "list_accounts", "{}"), &json!([{ "id": "ACC-0042" }]));
///
/// let call = ToolCall::new("c2", "transfer_funds", "");
/// let arguments = json!({ "to_account": "ACC-0043", "lines": [{ "invoice_id": "INV-1" }] });
/// let findings = detector.inspect(&call, &arguments, &provenance);
/// let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
/// assert_eq!(paths, ["/to_account", "/lines/0/invoice_id"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ProvenanceDetector {
    guards: HashMap<String, Vec<Vec<String>>>,
}

impl ProvenanceDetector {
    /// A detector guarding nothing yet.
    ///
    /// ```
    /// use pleach_core::safety::{FabricationDetector, ProvenanceDetector};
    /// assert!(!ProvenanceDetector::new().covers("transfer_funds"));
    /// ```
    pub fn new() -> Self {
        ProvenanceDetector::default()
    }

    /// Guards the tool named `tool_name`: the values at `paths` must have provenance. Paths are
    /// JSON pointers (`/to_account`, `/payee/iban`) where a `*` segment matches any array index or
    /// object key (`/lines/*/invoice_id`).
    ///
    /// ```
    /// use pleach_core::safety::{FabricationDetector, ProvenanceDetector};
    /// let detector = ProvenanceDetector::new()
    ///     .guard("transfer_funds", ["/to_account", "/lines/*/invoice_id"]);
    /// assert!(detector.covers("transfer_funds"));
    /// ```
    #[must_use]
    pub fn guard<P: AsRef<str>>(
        mut self,
        tool_name: impl Into<String>,
        paths: impl IntoIterator<Item = P>,
    ) -> Self {
        let entry = self.guards.entry(tool_name.into()).or_default();
        entry.extend(paths.into_iter().map(|path| split_pointer(path.as_ref())));
        self
    }
}

fn split_pointer(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect()
}

impl FabricationDetector for ProvenanceDetector {
    fn name(&self) -> &'static str {
        "provenance"
    }

    fn covers(&self, tool_name: &str) -> bool {
        self.guards.contains_key(tool_name)
    }

    fn guarded_tools(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.guards.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    fn inspect(&self, call: &ToolCall, arguments: &Value, provenance: &Provenance) -> Vec<Finding> {
        let Some(paths) = self.guards.get(call.name()) else {
            return Vec::new();
        };
        let mut findings = Vec::new();
        for path in paths {
            let mut pointer = String::new();
            visit(arguments, path, &mut pointer, &mut |pointer, value| {
                if !matches!(value, Value::String(_) | Value::Number(_)) {
                    return;
                }
                if provenance.seen(value).is_none() && !findings_has(&findings, pointer) {
                    findings.push(Finding::new(
                        pointer,
                        value.clone(),
                        "this value does not appear in any earlier tool result of this turn",
                    ));
                }
            });
        }
        findings
    }
}

fn findings_has(findings: &[Finding], pointer: &str) -> bool {
    findings.iter().any(|f| f.path == pointer)
}

/// Calls `found` for each value of `value` at the path `segments` (with `*` wildcards).
fn visit(
    value: &Value,
    segments: &[String],
    pointer: &mut String,
    found: &mut dyn FnMut(&str, &Value),
) {
    let Some((segment, rest)) = segments.split_first() else {
        found(pointer, value);
        return;
    };
    let mut step = |key: &str, item: &Value, pointer: &mut String| {
        let len = pointer.len();
        push_pointer_segment(pointer, key);
        visit(item, rest, pointer, found);
        pointer.truncate(len);
    };
    match value {
        Value::Object(map) if segment == "*" => {
            for (key, item) in map {
                step(key, item, pointer);
            }
        }
        Value::Object(map) => {
            if let Some(item) = map.get(segment) {
                step(segment, item, pointer);
            }
        }
        Value::Array(items) if segment == "*" => {
            for (index, item) in items.iter().enumerate() {
                step(&index.to_string(), item, pointer);
            }
        }
        Value::Array(items) => {
            if let Some(item) = segment.parse::<usize>().ok().and_then(|i| items.get(i)) {
                step(segment, item, pointer);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_result(result: &Value) -> Provenance {
        let mut provenance = Provenance::new();
        provenance.record_result(&ToolCall::new("c1", "lookup", "{}"), result);
        provenance
    }

    #[test]
    fn numbers_match_exactly_and_through_text() {
        let provenance = with_result(&json!({ "amount": 1250, "rate": 2.50 }));
        assert_eq!(
            provenance.seen(&json!(1250)).unwrap().kind,
            MatchKind::Exact
        );
        assert_eq!(
            provenance.seen(&json!(1250.0)).unwrap().kind,
            MatchKind::Exact
        );
        assert_eq!(
            provenance.seen(&json!("1,250")).unwrap().kind,
            MatchKind::Normalized
        );
        assert_eq!(provenance.seen(&json!(2.5)).unwrap().kind, MatchKind::Exact);
        assert!(provenance.seen(&json!(1251)).is_none());
    }

    #[test]
    fn a_decimal_point_or_a_time_is_not_a_separator_between_digits() {
        let provenance = with_result(&json!({ "price": "12.50", "at": "12:50", "v": "4.2" }));
        assert!(provenance.seen(&json!(1250)).is_none());
        assert!(provenance.seen(&json!(42)).is_none());
        // Text still normalizes its separators: `12:50` and `1250` are one text.
        assert!(provenance.seen(&json!("1250")).is_some_and(|seen| {
            seen.sources
                .iter()
                .any(|source| matches!(source, Source::ToolResult { path, .. } if path == "/at"))
        }));
        assert!(provenance.seen(&json!(12.5)).is_some());
    }

    #[test]
    fn sources_carry_the_pointer() {
        let provenance = with_result(&json!({ "accounts": [{ "id": "A/1" }] }));
        let seen = provenance.seen(&json!("A/1")).unwrap();
        assert_eq!(
            seen.sources,
            [Source::ToolResult {
                tool_call_id: "c1".into(),
                tool_name: "lookup".into(),
                path: "/accounts/0/id".into()
            }]
        );
    }

    #[test]
    fn other_values_have_no_provenance_question() {
        let provenance = with_result(&json!({ "ok": true }));
        assert!(provenance.seen(&json!(true)).is_none());
        assert!(provenance.seen(&json!(null)).is_none());
        assert!(provenance.is_empty());
    }

    #[test]
    fn nearest_numbers_by_difference() {
        let provenance = with_result(&json!([100, 250, 260, "x"]));
        let nearest = provenance.nearest(&json!(255.5), 2);
        let values: Vec<&Value> = nearest.iter().map(|k| &k.value).collect();
        assert_eq!(values, [&json!(260), &json!(250)]);
    }

    #[test]
    fn wildcards_reach_every_item_and_key() {
        let detector = ProvenanceDetector::new().guard("pay", ["/by_name/*", "/ids/*"]);
        let provenance = with_result(&json!(["known"]));
        let call = ToolCall::new("c2", "pay", "");
        let findings = detector.inspect(
            &call,
            &json!({ "by_name": { "a": "known", "b": "made-up" }, "ids": [1, "known"] }),
            &provenance,
        );
        let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["/by_name/b", "/ids/0"]);
    }
}
