//! The `text_search` tool: finds a literal string, a regular expression or a fuzzy phrase in text
//! passed in (or, with the `scratchpad` feature, in a scratchpad note) and returns each match with
//! its offsets.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_tools::text_search::text_search;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let out = text_search::definition()
//!     .call(
//!         r#"{"query": "total: \\d+", "mode": "regex", "text": "café\ntotal: 42\n"}"#,
//!         ToolContext::new("call_1"),
//!     )
//!     .await
//!     .unwrap();
//! let found = &out.value()["matches"][0];
//! assert_eq!(found["text"], "total: 42");
//! // `é` is two bytes and one character: the offsets differ from there on.
//! assert_eq!((found["byte_start"].as_u64(), found["char_start"].as_u64()), (Some(6), Some(5)));
//! assert_eq!((found["line"].as_u64(), found["column"].as_u64()), (Some(2), Some(1)));
//!
//! let err = text_search::definition()
//!     .call(r#"{"query": "(unclosed", "mode": "regex", "text": "x"}"#, ToolContext::new("call_2"))
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert_eq!(err.message(), "`query` is not a valid regex: unclosed group");
//! # });
//! ```
//!
//! # Offsets
//!
//! Every match carries two pairs of offsets into the searched text, both counted from 0, the end
//! exclusive: `byte_start`/`byte_end` in UTF-8 bytes (what Rust, Go and most file APIs index by)
//! and `char_start`/`char_end` in Unicode scalar values (Rust `char`s, Python `str` indices).
//! Neither is UTF-16 code units, which JavaScript indexes by: they differ from `char` offsets past
//! any character outside the Basic Multilingual Plane (most emoji). `line` and `column` are
//! 1-based; `column` counts characters.
//!
//! # Regular expressions
//!
//! The `regex` crate: matching time is linear in the text, whatever the pattern (no
//! backreferences or look-around, which is what makes that true). A pattern is at most 1,000
//! bytes, nests groups at most 64 deep, and compiles to at most 1 MiB (its lazy DFA's cache is
//! capped at 1 MiB too), so `\w{1000}{1000}` is an error, not an allocation. Empty matches (what
//! `a*` finds between letters) are skipped.
//!
//! Linear is not cheap, though: the lazy DFA searches first, and where it gives up (a pattern
//! whose DFA would not fit its cache, such as `(?:a|b|ab|ba){1,600}c`, or a Unicode `\b` at a
//! non-ASCII byte) the NFA matcher behind it steps through every live state at each byte, which
//! took over 10 s for a MiB in a release build. So the search is the lazy DFA's, and the slow
//! matcher runs only while its NFA's states times the text's bytes stay under 2^27 (about a
//! quarter of a second); past that the query is refused (1001), saying how to simplify it.
//!
//! # Fuzzy scoring
//!
//! For `fuzzy`, the query and the text are read as words: runs of letters, digits and `_`,
//! compared in lowercase. Each run of as many consecutive words of one line as the query has is a
//! candidate, its words paired with the query's in order. Its score is 1 − E / L, where E adds up
//! the Levenshtein distance of each pair (the characters to insert, delete or replace) and L adds
//! up the length of the longer word of each pair, in characters: from 0 (nothing alike) to 1 (the
//! same words). Each line gives its best candidate (the first, on a tie); lines scoring at least
//! `min_score` (default 0.7) are returned, best first, ties in text order. "recieve payment"
//! scores 0.857 against "receive payment": 2 edits in the first pair, none in the second, over
//! 7 + 7 characters. Pairing words keeps the cost at one small comparison per word of the text
//! and query word, and lets a candidate be dropped as soon as its edits rule `min_score` out.

use std::ops::Range;

use pleach_core::schemars::JsonSchema;
use pleach_core::serde::{Deserialize, Serialize};
use pleach_core::{ErrorCode, ToolContext, ToolError, tool};
use regex::{Regex, RegexBuilder};
use regex_automata::util::iter::Searcher;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchError, MatchErrorKind, hybrid, nfa::thompson};

use crate::shorten::first_chars;

/// The longest text searched, in bytes (1 MiB).
const MAX_TEXT_BYTES: usize = 1024 * 1024;

/// The longest `query` accepted, in bytes.
const MAX_QUERY_BYTES: usize = 1000;

/// The longest fuzzy `query`, in characters: its cost is paid against every candidate.
const MAX_FUZZY_QUERY_CHARS: usize = 64;

/// The most words a fuzzy `query` may have.
const MAX_FUZZY_QUERY_WORDS: usize = 8;

/// The most memory a compiled regex may take, in bytes.
const REGEX_SIZE_LIMIT: usize = 1024 * 1024;

/// The most memory a regex's lazy DFA may cache, in bytes.
const REGEX_DFA_SIZE_LIMIT: usize = 1024 * 1024;

/// The most work the slow fallback matcher may take on, as NFA states times bytes of text: about
/// a quarter of a second in a release build.
const MAX_FALLBACK_WORK: u64 = 1 << 27;

/// The deepest nesting of groups and repetitions a regex may have.
const REGEX_NEST_LIMIT: u32 = 64;

/// The most characters of a match, or of the context on each side of it, a result quotes.
const MAX_QUOTED_CHARS: usize = 200;

/// How many characters of its line a match's `context` shows on each side.
const CONTEXT_CHARS: usize = 40;

/// How `text_search` reads `query`.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_tools::text_search::{Mode, TextSearchInput, text_search};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let input: TextSearchInput = serde_json::from_str(
///     r#"{"query": "recieve payment", "mode": "fuzzy", "text": "we receive payment on fridays"}"#,
/// )
/// .unwrap();
/// let out = text_search(ToolContext::new("call_1"), input).await.unwrap();
/// let best = &out.matches[0];
/// assert_eq!(best.text, "receive payment");
/// assert_eq!(best.score, Some(0.857)); // 2 edits over 14 characters
/// assert_eq!(Mode::default(), Mode::Literal);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "snake_case")]
// Set here so the input schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "How `text_search` reads `query`."
)]
#[non_exhaustive]
pub enum Mode {
    /// The query's text, exactly (case aside, unless `case_sensitive`).
    #[default]
    Literal,
    /// A regular expression in the `regex` crate's syntax (Perl-like, no look-around).
    Regex,
    /// Lines with words close to the query's, ranked by similarity.
    Fuzzy,
}

// An input struct rather than parameters, so that `key` is in the schema only when this build can
// read scratchpad notes. Each field's doc is its description in the schema: one line each.
/// The arguments of `text_search`.
///
/// ```
/// use pleach_tools::text_search::{Mode, TextSearchInput};
///
/// let input: TextSearchInput = serde_json::from_str(r#"{"query": "TODO", "text": "a\nTODO: b"}"#).unwrap();
/// assert_eq!((input.mode, input.case_sensitive, input.max_results), (Mode::Literal, false, 20));
///
/// // Unknown fields are refused, not ignored.
/// assert!(serde_json::from_str::<TextSearchInput>(r#"{"query": "TODO", "txt": "a"}"#).is_err());
/// ```
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", deny_unknown_fields)]
// Set here so the input schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The arguments of `text_search`."
)]
#[non_exhaustive]
pub struct TextSearchInput {
    /// What to look for (text, a regex or loose words, by `mode`), at most 1,000 bytes
    pub query: String,
    #[cfg_attr(
        feature = "scratchpad",
        doc = "The text to search, at most 1 MiB; give this or `key`, not both"
    )]
    #[cfg_attr(not(feature = "scratchpad"), doc = "The text to search, at most 1 MiB")]
    pub text: Option<String>,
    /// The key of a scratchpad note to search instead of `text`
    #[cfg(feature = "scratchpad")]
    pub key: Option<String>,
    /// How to read `query`: `literal`, `regex` or `fuzzy` (words close to the query's, best first)
    #[serde(default)]
    pub mode: Mode,
    /// Whether case matters (literal and regex; fuzzy always ignores case)
    #[serde(default)]
    pub case_sensitive: bool,
    /// The most matches to return
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = 100))]
    pub max_results: u32,
    /// Fuzzy only: the lowest score a match may have, from 0 to 1; 0.7 if absent
    #[schemars(range(min = 0, max = 1))]
    pub min_score: Option<f64>,
}

fn default_max_results() -> u32 {
    20
}

/// The fuzzy `min_score` when none is given.
const DEFAULT_MIN_SCORE: f64 = 0.7;

/// One match.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_tools::text_search::{TextSearchInput, text_search};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let input: TextSearchInput = serde_json::from_str(
///     r#"{"query": "todo", "text": "a\nTODO: ship 😀 todo"}"#,
/// )
/// .unwrap();
/// let out = text_search(ToolContext::new("call_1"), input).await.unwrap();
/// let second = &out.matches[1];
/// assert_eq!(second.text, "todo");
/// assert_eq!((second.byte_start, second.byte_end), (18, 22)); // the emoji is 4 bytes
/// assert_eq!((second.char_start, second.char_end), (15, 19)); // and one character
/// assert_eq!((second.line, second.column), (2, 14));
/// assert_eq!(second.context, "TODO: ship 😀 todo");
/// assert_eq!(second.score, None); // fuzzy only
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(crate = "pleach_core::schemars", description = "One match.")]
#[non_exhaustive]
pub struct TextMatch {
    /// The matched text (its first 200 characters and `…` if longer).
    pub text: String,
    /// Where the match starts, in UTF-8 bytes from the start of the text.
    pub byte_start: usize,
    /// Where it ends (exclusive), in UTF-8 bytes.
    pub byte_end: usize,
    /// Where it starts, in characters (Unicode scalar values, not UTF-16 units).
    pub char_start: usize,
    /// Where it ends (exclusive), in characters.
    pub char_end: usize,
    /// The line it starts on, from 1.
    pub line: usize,
    /// The column it starts at, in characters, from 1.
    pub column: usize,
    /// The match with up to 40 characters of its line on each side.
    pub context: String,
    /// Fuzzy only: the similarity, from 0 to 1 (three decimals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// The result of `text_search`.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_tools::text_search::{TextSearchInput, text_search};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let input: TextSearchInput = serde_json::from_str(
///     r#"{"query": "\\d+", "mode": "regex", "text": "1, 22, 333", "max_results": 2}"#,
/// )
/// .unwrap();
/// let out = text_search(ToolContext::new("call_1"), input).await.unwrap();
/// let found: Vec<&str> = out.matches.iter().map(|m| m.text.as_str()).collect();
/// assert_eq!(found, ["1", "22"]);
/// assert_eq!(out.total_matches, 3);
/// assert!(out.truncated);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `text_search`."
)]
#[non_exhaustive]
pub struct TextSearchOutput {
    /// The matches: in text order, or best first for fuzzy.
    pub matches: Vec<TextMatch>,
    /// How many matches there are in all (fuzzy: lines at or over `min_score`).
    pub total_matches: usize,
    /// Whether `matches` stops short of `total_matches` (raise `max_results` for more, up to 100).
    pub truncated: bool,
}

/// Searches text for a query and returns each match with its byte and character offsets, line
/// and column; for example `{"query": "TODO", "text": "a\nTODO: b"}` gives one match with
/// `byte_start` 2, `char_start` 2, `line` 2, `column` 1.
///
/// Modes: `literal` (the default) finds the query's text; `regex` reads it as a regular expression
/// (Rust `regex` syntax, no look-around or backreferences); `fuzzy` ranks lines by how close their
/// words come to the query's (typos and word forms allowed), best first, each with a `score` from
/// 0 to 1. Literal and regex ignore case unless `case_sensitive`. Offsets count from 0, end
/// exclusive: bytes in UTF-8 and characters as Unicode scalar values (not UTF-16 units).
///
/// Limits: text up to 1 MiB, query up to 1,000 bytes (fuzzy: 64 characters, 8 words), up to 100
/// matches returned (`total_matches` counts them all).
#[tool]
pub async fn text_search(
    ctx: ToolContext,
    #[input] input: TextSearchInput,
) -> Result<TextSearchOutput, ToolError> {
    #[cfg(feature = "scratchpad")]
    let note = match (&input.text, input.key.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "pass `text` or `key`, not both: `key` names a scratchpad note to search in \
                 place of `text`"
                    .to_owned(),
            ));
        }
        (None, Some(key)) => Some(read_note(&ctx, key)?),
        (_, None) => None,
    };
    #[cfg(not(feature = "scratchpad"))]
    let note: Option<String> = {
        let _ = &ctx;
        None
    };
    let text = match (&note, &input.text) {
        (Some(note), _) => note.as_str(),
        (None, Some(text)) => text.as_str(),
        (None, None) => return Err(invalid(missing_text())),
    };
    search(&input, text, note.is_some())
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

#[cfg(feature = "scratchpad")]
fn missing_text() -> String {
    "pass `text` (the text to search) or `key` (a scratchpad note to search)".to_owned()
}

#[cfg(not(feature = "scratchpad"))]
fn missing_text() -> String {
    "`text` is missing; pass the text to search".to_owned()
}

/// The scratchpad note at `key`, copied (the note may change while the search runs).
#[cfg(feature = "scratchpad")]
fn read_note(ctx: &ToolContext, key: &str) -> Result<String, ToolError> {
    let pad = ctx
        .session_state::<crate::scratchpad::Scratchpad>()
        .ok_or_else(|| {
            ToolError::failed(
                "scratchpad notes live in a session, and this call has none; pass `text` instead",
            )
        })?;
    pad.get(key)
        .ok_or_else(|| crate::scratchpad::no_note(key, &pad.keys()))
}

/// The search itself; `in_note` says where the text came from, for the size message.
fn search(
    input: &TextSearchInput,
    text: &str,
    in_note: bool,
) -> Result<TextSearchOutput, ToolError> {
    check_query(input)?;
    if text.len() > MAX_TEXT_BYTES {
        let source = if in_note { "the note" } else { "`text`" };
        return Err(invalid(format!(
            "{source} is {} bytes long, over the limit of {MAX_TEXT_BYTES} (1 MiB); search a part \
             of it",
            text.len()
        )));
    }
    let max_results = usize::try_from(input.max_results.clamp(1, 100)).unwrap_or(100);
    let (found, total) = match input.mode {
        Mode::Literal => {
            let pattern = regex::escape(&input.query);
            find_all(&compile(&pattern, input)?, text, max_results)?
        }
        Mode::Regex => find_all(&compile(&input.query, input)?, text, max_results)?,
        Mode::Fuzzy => fuzzy(
            &input.query,
            text,
            input.min_score.unwrap_or(DEFAULT_MIN_SCORE),
            max_results,
        )?,
    };
    // Positions are counted in one pass over the text, in text order.
    let mut order: Vec<usize> = (0..found.len()).collect();
    order.sort_by_key(|&index| found[index].byte_start);
    let mut cursor = Cursor::default();
    let mut matches = vec![None; found.len()];
    for index in order {
        let raw = &found[index];
        matches[index] = Some(cursor.describe(text, raw));
    }
    let matches: Vec<TextMatch> = matches.into_iter().flatten().collect();
    Ok(TextSearchOutput {
        truncated: matches.len() < total,
        matches,
        total_matches: total,
    })
}

fn check_query(input: &TextSearchInput) -> Result<(), ToolError> {
    let query = &input.query;
    if query.is_empty() {
        return Err(invalid(
            "`query` is empty; pass the text or pattern to look for".to_owned(),
        ));
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(invalid(format!(
            "`query` is {} bytes long, over the limit of {MAX_QUERY_BYTES}; look for something \
             shorter",
            query.len()
        )));
    }
    match input.min_score {
        Some(score) if !(0.0..=1.0).contains(&score) => {
            return Err(invalid(format!(
                "`min_score` must be from 0 to 1, got {score}"
            )));
        }
        Some(_) if input.mode != Mode::Fuzzy => {
            return Err(invalid(
                "`min_score` is only read by fuzzy search; leave it out or set `mode` to `fuzzy`"
                    .to_owned(),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// A compiled query: the `regex` crate's matcher, and the lazy DFA that is tried first.
struct Query {
    regex: Regex,
    /// `None` only if the DFA cannot be built for a pattern `regex` took, which the settings
    /// below rule out; the search then runs on `regex` alone.
    lazy: Option<hybrid::regex::Regex>,
}

/// The regex for `pattern`, within the size limits, and its lazy DFA.
fn compile(pattern: &str, input: &TextSearchInput) -> Result<Query, ToolError> {
    let regex = RegexBuilder::new(pattern)
        .case_insensitive(!input.case_sensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .nest_limit(REGEX_NEST_LIMIT)
        .build()
        .map_err(|err| match err {
            regex::Error::CompiledTooBig(limit) => invalid(format!(
                "`query` compiles to a regex over the limit of {limit} bytes; use fewer or \
                 smaller repetitions (`{{n}}` counts multiply, and `\\w` spans all of Unicode)"
            )),
            regex::Error::Syntax(ref full) => {
                let reason = syntax_reason(full);
                invalid(format!("`query` is not a valid regex: {reason}")).with_detail(full.clone())
            }
            other => invalid(format!("`query` is not a valid regex: {other}")),
        })?;
    // The same syntax and limits as `regex`'s, and the give-up rule of its own lazy DFA: when the
    // cache is cleared over and over, searching stops rather than fall back unbounded.
    let lazy = hybrid::regex::Regex::builder()
        .syntax(
            syntax::Config::new()
                .case_insensitive(!input.case_sensitive)
                .nest_limit(REGEX_NEST_LIMIT),
        )
        .thompson(thompson::Config::new().nfa_size_limit(Some(REGEX_SIZE_LIMIT)))
        .dfa(
            hybrid::dfa::Config::new()
                .cache_capacity(REGEX_DFA_SIZE_LIMIT)
                .skip_cache_capacity_check(true)
                .minimum_cache_clear_count(Some(3))
                .minimum_bytes_per_state(Some(10))
                .unicode_word_boundary(true),
        )
        .build(pattern)
        .ok();
    Ok(Query { regex, lazy })
}

/// The reason line of a regex syntax error (`error: unclosed group`), without the drawing of the
/// pattern above it.
fn syntax_reason(full: &str) -> &str {
    full.lines()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .unwrap_or(full)
}

/// A match before its position is described: its byte range and fuzzy score.
#[derive(Debug, Clone, Copy)]
struct Found {
    byte_start: usize,
    byte_end: usize,
    score: Option<f64>,
}

/// The first `max_results` non-empty matches and how many there are in all.
///
/// The lazy DFA searches first, in time linear in the text with a small constant. Where it
/// cannot (a pattern whose DFA would not fit its cache, or a Unicode `\b` at a non-ASCII byte),
/// `regex` would go on with an NFA simulation that steps through every live state at each byte:
/// linear too, but a pattern of thousands of states over a MiB took tens of seconds, on the
/// async thread and deaf to cancellation. That fallback runs only while its states times the
/// text's bytes stay within [`MAX_FALLBACK_WORK`]; past it the query is refused.
fn find_all(
    query: &Query,
    text: &str,
    max_results: usize,
) -> Result<(Vec<Found>, usize), ToolError> {
    let Some(lazy) = &query.lazy else {
        return Ok(first(
            query.regex.find_iter(text).map(|m| m.range()),
            max_results,
        ));
    };
    let mut cache = lazy.create_cache();
    let mut searcher = Searcher::new(Input::new(text));
    let mut stopped = None;
    let matches = std::iter::from_fn(|| {
        match searcher.try_advance(|input| lazy.try_search(&mut cache, input)) {
            Ok(found) => found.map(|m| m.range()),
            Err(err) => {
                stopped = Some(err);
                None
            }
        }
    });
    let found = first(matches, max_results);
    let Some(err) = stopped else {
        return Ok(found);
    };
    let states = lazy.forward().get_nfa().states().len();
    let work = u64::try_from(states.saturating_mul(text.len())).unwrap_or(u64::MAX);
    if work > MAX_FALLBACK_WORK {
        return Err(too_costly(&err, states, text.len()));
    }
    Ok(first(
        query.regex.find_iter(text).map(|m| m.range()),
        max_results,
    ))
}

/// The first `max_results` of `matches` that are not empty, and how many of those there are.
fn first(matches: impl Iterator<Item = Range<usize>>, max_results: usize) -> (Vec<Found>, usize) {
    let mut found = Vec::new();
    let mut total = 0;
    for m in matches.filter(|m| !m.is_empty()) {
        total += 1;
        if found.len() < max_results {
            found.push(Found {
                byte_start: m.start,
                byte_end: m.end,
                score: None,
            });
        }
    }
    (found, total)
}

/// The refusal of a query whose lazy DFA stopped with `err`, and whose fallback would step
/// through `states` NFA states at each of `bytes` bytes.
fn too_costly(err: &MatchError, states: usize, bytes: usize) -> ToolError {
    let why = match err.kind() {
        MatchErrorKind::Quit { .. } => {
            "its Unicode word boundary (`\\b`) needs the slow matcher on non-ASCII text".to_owned()
        }
        _ => "no DFA of a workable size matches it, so it needs the slow matcher".to_owned(),
    };
    invalid(format!(
        "`query` is too costly to match against this text: {why}, which would step through up \
         to {states} states at each of its {bytes} bytes; simplify it (fewer alternatives and \
         smaller `{{n}}` counts inside repetitions; `(?-u:\\b)` for an ASCII word boundary) or \
         search a shorter text"
    ))
    .with_detail(format!("lazy DFA: {err}"))
}

/// A word of the text: its byte range and its lowercase spelling.
struct Word {
    start: usize,
    end: usize,
    lower: String,
    /// The length of `lower` in characters.
    chars: usize,
}

/// The words of `line` (runs of letters, digits and `_`), offsets relative to `base`.
fn words(line: &str, base: usize) -> Vec<Word> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in line.char_indices().chain([(line.len(), ' ')]) {
        let in_word = c.is_alphanumeric() || c == '_';
        match (start, in_word) {
            (None, true) => start = Some(at),
            (Some(from), false) => {
                let lower = line[from..at].to_lowercase();
                words.push(Word {
                    start: base + from,
                    end: base + at,
                    chars: lower.chars().count(),
                    lower,
                });
                start = None;
            }
            _ => {}
        }
    }
    words
}

/// Each line's best fuzzy candidate scoring at least `min_score`, best first; at most
/// `max_results` of them, and how many there are in all.
fn fuzzy(
    query: &str,
    text: &str,
    min_score: f64,
    max_results: usize,
) -> Result<(Vec<Found>, usize), ToolError> {
    let query_chars = query.chars().count();
    if query_chars > MAX_FUZZY_QUERY_CHARS {
        return Err(invalid(format!(
            "a fuzzy `query` may be at most {MAX_FUZZY_QUERY_CHARS} characters, got \
             {query_chars}; use a few key words, or `literal` or `regex` mode"
        )));
    }
    let wanted = words(query, 0);
    if wanted.is_empty() {
        return Err(invalid(
            "a fuzzy `query` needs letters or digits to compare; use `literal` mode to find \
             punctuation"
                .to_owned(),
        ));
    }
    if wanted.len() > MAX_FUZZY_QUERY_WORDS {
        return Err(invalid(format!(
            "a fuzzy `query` may have at most {MAX_FUZZY_QUERY_WORDS} words, got {}; keep the \
             key words",
            wanted.len()
        )));
    }
    let mut found = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let line_words = words(line, line_start);
        line_start += line.len();
        let mut best: Option<Found> = None;
        for window in line_words.windows(wanted.len()) {
            if let Some(score) = window_score(&wanted, window, min_score)
                && best.is_none_or(|b| b.score < Some(score))
                && let (Some(first), Some(last)) = (window.first(), window.last())
            {
                best = Some(Found {
                    byte_start: first.start,
                    byte_end: last.end,
                    score: Some(score),
                });
            }
        }
        found.extend(best);
    }
    let total = found.len();
    // Best first; the sort is stable, so ties stay in text order.
    found.sort_by(|a, b| b.score.unwrap_or(0.0).total_cmp(&a.score.unwrap_or(0.0)));
    found.truncate(max_results);
    Ok((found, total))
}

/// The score of `window` against the query's words, paired in order: 1 − the edits the pairs need
/// over the longer word of each pair, added up; `None` below `min_score`. Stops as soon as the
/// edits so far rule `min_score` out.
fn window_score(wanted: &[Word], window: &[Word], min_score: f64) -> Option<f64> {
    let pairs = || wanted.iter().zip(window);
    let longest: usize = pairs().map(|(q, w)| q.chars.max(w.chars)).sum();
    let allowed = (1.0 - min_score) * fraction(longest, 1);
    // Two words differ by at least the difference of their lengths.
    let at_least: usize = pairs().map(|(q, w)| q.chars.abs_diff(w.chars)).sum();
    if fraction(at_least, 1) > allowed {
        return None;
    }
    let mut edits = 0;
    for (q, w) in pairs() {
        edits += strsim::levenshtein(&q.lower, &w.lower);
        if fraction(edits, 1) > allowed {
            return None;
        }
    }
    Some(1.0 - fraction(edits, longest))
}

/// `part / whole` as a fraction from 0 to 1, exact enough for any text length here.
#[allow(clippy::cast_precision_loss)] // lengths under 2^52
fn fraction(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// Counts characters and lines up to a byte offset, moving forward only.
#[derive(Debug, Default)]
struct Cursor {
    byte: usize,
    chars: usize,
    /// The 1-based line `byte` is on, less one.
    newlines: usize,
    /// The character offset at which that line starts.
    line_start_chars: usize,
}

impl Cursor {
    fn advance(&mut self, text: &str, to: usize) {
        let Some(skipped) = text.get(self.byte..to) else {
            return;
        };
        for c in skipped.chars() {
            self.chars += 1;
            if c == '\n' {
                self.newlines += 1;
                self.line_start_chars = self.chars;
            }
        }
        self.byte = to;
    }

    /// `found` with its character offsets, line, column and context.
    fn describe(&mut self, text: &str, found: &Found) -> TextMatch {
        self.advance(text, found.byte_start);
        let (char_start, line, column) = (
            self.chars,
            self.newlines + 1,
            self.chars - self.line_start_chars + 1,
        );
        let matched = text.get(found.byte_start..found.byte_end).unwrap_or("");
        let char_end = char_start + matched.chars().count();
        let before = text.get(..found.byte_start).unwrap_or("");
        let before = before.rsplit('\n').next().unwrap_or("");
        let after = text.get(found.byte_end..).unwrap_or("");
        let after = after.split('\n').next().unwrap_or("");
        let context = format!(
            "{}{}{}",
            last_chars(before.trim_end_matches('\r'), CONTEXT_CHARS),
            first_chars(matched, MAX_QUOTED_CHARS),
            first_chars(after.trim_end_matches('\r'), CONTEXT_CHARS),
        );
        TextMatch {
            text: first_chars(matched, MAX_QUOTED_CHARS),
            byte_start: found.byte_start,
            byte_end: found.byte_end,
            char_start,
            char_end,
            line,
            column,
            context,
            score: found.score.map(|s| (s * 1000.0).round() / 1000.0),
        }
    }
}

/// The last `max` characters of `text`, after `…` if there were more.
fn last_chars(text: &str, max: usize) -> String {
    match text.char_indices().rev().nth(max.saturating_sub(1)) {
        Some((start, _)) if start > 0 => format!("…{}", &text[start..]),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(mode: Mode, query: &str) -> TextSearchInput {
        TextSearchInput {
            query: query.to_owned(),
            text: None,
            #[cfg(feature = "scratchpad")]
            key: None,
            mode,
            case_sensitive: false,
            max_results: default_max_results(),
            min_score: None,
        }
    }

    #[track_caller]
    fn ok(input: &TextSearchInput, text: &str) -> TextSearchOutput {
        match search(input, text, false) {
            Ok(out) => out,
            Err(err) => panic!("{:?} in {text:.80?} failed: {}", input.query, err.message()),
        }
    }

    #[track_caller]
    fn assert_error(input: &TextSearchInput, text: &str, needle: &str) {
        let message = crate::test_support::refusal(search(input, text, false), &input.query);
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }

    fn spans(out: &TextSearchOutput) -> Vec<(usize, usize, usize, usize)> {
        out.matches
            .iter()
            .map(|m| (m.byte_start, m.byte_end, m.char_start, m.char_end))
            .collect()
    }

    #[test]
    fn literal_offsets_count_bytes_and_characters() {
        // `é` is 2 bytes, `😀` 4 bytes (and 2 UTF-16 units): each is one character.
        let text = "é😀 Cat\ncat\r\nthe CAT";
        let out = ok(&input(Mode::Literal, "cat"), text);
        assert_eq!(
            spans(&out),
            [(7, 10, 3, 6), (11, 14, 7, 10), (20, 23, 16, 19)]
        );
        let lines: Vec<_> = out.matches.iter().map(|m| (m.line, m.column)).collect();
        assert_eq!(lines, [(1, 4), (2, 1), (3, 5)]);
        assert_eq!(out.matches[0].text, "Cat");
        assert_eq!(out.matches[1].context, "cat");
        assert_eq!(out.matches[2].context, "the CAT");
        for m in &out.matches {
            assert_eq!(&text[m.byte_start..m.byte_end].to_lowercase(), "cat");
            let by_chars: String = text
                .chars()
                .skip(m.char_start)
                .take(m.char_end - m.char_start)
                .collect();
            assert_eq!(by_chars, text[m.byte_start..m.byte_end]);
        }

        let mut sensitive = input(Mode::Literal, "cat");
        sensitive.case_sensitive = true;
        assert_eq!(ok(&sensitive, text).total_matches, 1);
        // Regex syntax in a literal query is just text.
        assert_eq!(
            ok(&input(Mode::Literal, "a.b"), "axb a.b").matches[0].byte_start,
            4
        );
    }

    #[test]
    fn regex_matches_and_skips_empty_ones() {
        let out = ok(&input(Mode::Regex, r"\d+"), "a1 b22 c333");
        assert_eq!(
            out.matches
                .iter()
                .map(|m| m.text.as_str())
                .collect::<Vec<_>>(),
            ["1", "22", "333"]
        );
        let out = ok(&input(Mode::Regex, "x*"), "abxxc");
        assert_eq!(spans(&out), [(2, 4, 2, 4)]);
        assert_eq!(out.total_matches, 1);
        assert_eq!(ok(&input(Mode::Regex, "z"), "").total_matches, 0);
    }

    #[test]
    fn results_are_capped_and_counted() {
        let text = "ab ".repeat(500);
        let mut few = input(Mode::Literal, "ab");
        few.max_results = 3;
        let out = ok(&few, &text);
        assert_eq!(
            (out.matches.len(), out.total_matches, out.truncated),
            (3, 500, true)
        );
        few.max_results = 1000; // the schema says 100; the code holds to it as well
        assert_eq!(ok(&few, &text).matches.len(), 100);
    }

    #[test]
    fn long_matches_and_lines_are_quoted_short() {
        let text = format!("{}needle{}\nnext", "a".repeat(500), "b".repeat(500));
        let out = ok(&input(Mode::Literal, "needle"), &text);
        let context = &out.matches[0].context;
        assert_eq!(
            context,
            &format!("…{}needle{}…", "a".repeat(40), "b".repeat(40))
        );
        let out = ok(&input(Mode::Regex, "a+"), &text);
        assert_eq!(out.matches[0].text, format!("{}…", "a".repeat(200)));
        assert_eq!(out.matches[0].byte_end, 500);
    }

    #[test]
    fn bad_regexes_are_refused_with_the_reason() {
        assert_error(
            &input(Mode::Regex, "(a"),
            "x",
            "`query` is not a valid regex: unclosed group",
        );
        assert_error(&input(Mode::Regex, "(?<=a)b"), "x", "look-around");
        assert_error(
            &input(Mode::Regex, r"\1"),
            "x",
            "backreferences are not supported",
        );
        // Compiles to far more than the limit: refused, not allocated.
        assert_error(
            &input(Mode::Regex, r"\w{1000}{1000}"),
            "x",
            "compiles to a regex over the limit of 1048576 bytes",
        );
        let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
        assert_error(&input(Mode::Regex, &deep), "x", "nest");
    }

    #[test]
    fn queries_and_texts_over_the_limits_are_refused() {
        assert_error(&input(Mode::Literal, ""), "x", "`query` is empty");
        let long = "q".repeat(1001);
        assert_error(
            &input(Mode::Literal, &long),
            "x",
            "`query` is 1001 bytes long, over the limit of 1000",
        );
        let big = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_error(
            &input(Mode::Literal, "x"),
            &big,
            "`text` is 1048577 bytes long, over the limit",
        );
        let message =
            crate::test_support::refusal(search(&input(Mode::Literal, "x"), &big, true), &"note");
        assert!(
            message.starts_with("the note is 1048577 bytes long"),
            "{message}"
        );

        let mut score = input(Mode::Fuzzy, "x");
        score.min_score = Some(1.5);
        assert_error(&score, "x", "`min_score` must be from 0 to 1, got 1.5");
        score.mode = Mode::Literal;
        score.min_score = Some(0.5);
        assert_error(&score, "x", "`min_score` is only read by fuzzy search");
    }

    #[test]
    fn fuzzy_ranks_lines_by_similarity() {
        let text = "Receive payment today\nsend invoice\nreceive payments\nrecieve payment\n";
        let out = ok(&input(Mode::Fuzzy, "recieve payment"), text);
        let ranked: Vec<_> = out
            .matches
            .iter()
            .map(|m| (m.text.as_str(), m.line, m.score))
            .collect();
        assert_eq!(
            ranked,
            [
                ("recieve payment", 4, Some(1.0)),
                ("Receive payment", 1, Some(0.857)),
                ("receive payments", 3, Some(0.8)),
            ]
        );
        assert_eq!(out.total_matches, 3);
        // Words, not punctuation, are compared: "set-up" is the two words "set up".
        let out = ok(&input(Mode::Fuzzy, "set up"), "the set-up step\nsetup\n");
        assert_eq!(out.matches[0].text, "set-up");
        assert_eq!(out.matches[0].byte_start, 4);

        let mut strict = input(Mode::Fuzzy, "recieve payment");
        strict.min_score = Some(0.9);
        assert_eq!(ok(&strict, text).total_matches, 1);
    }

    #[test]
    fn fuzzy_queries_are_bounded() {
        let long = "word ".repeat(13);
        assert_error(
            &input(Mode::Fuzzy, &long),
            "x",
            "at most 64 characters, got 65",
        );
        assert_error(
            &input(Mode::Fuzzy, "a b c d e f g h i"),
            "x",
            "at most 8 words, got 9",
        );
        assert_error(&input(Mode::Fuzzy, "?!"), "x", "needs letters or digits");
    }

    #[test]
    fn fuzzy_search_of_a_large_text_is_quick() {
        let line = "the quick brown fox jumps over the lazy dog and keeps running far away\n";
        let text = line.repeat(MAX_TEXT_BYTES / line.len());
        let started = std::time::Instant::now();
        let out = ok(
            &input(Mode::Fuzzy, "quick brwn fox jumsp over the lazy dgo"),
            &text,
        );
        assert!(out.total_matches > 1000);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    /// 1 MiB of `a` and `b`, with a `c` about every 50 bytes.
    fn letters() -> String {
        (0..MAX_TEXT_BYTES as u64)
            .map(
                |i| match (i.wrapping_mul(2_654_435_761).rotate_right(13) ^ i) % 53 {
                    0 => 'c',
                    n if n % 2 == 0 => 'a',
                    _ => 'b',
                },
            )
            .collect()
    }

    /// The CPU time this thread has used (on a platform without the clock, the wall time since
    /// the first call, so the bound still holds where the machine is quiet).
    fn thread_cpu_time() -> std::time::Duration {
        #[cfg(unix)]
        {
            let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            std::time::Duration::new(
                u64::try_from(now.tv_sec).unwrap_or(0),
                u32::try_from(now.tv_nsec).unwrap_or(0),
            )
        }
        #[cfg(not(unix))]
        {
            static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
            START.get_or_init(std::time::Instant::now).elapsed()
        }
    }

    #[test]
    fn a_regex_too_costly_for_the_text_is_refused_quickly() {
        let text = letters();
        // Small enough to compile, but no DFA can hold them: the fallback matcher walks every
        // NFA state at every byte, which took over 10 s on this text in a release build.
        for pattern in [
            r"(?:a|b|ab|ba|aab|bba|abab){1,600}c",
            r"[ab]*a[ab]{200}c",
            // A Unicode word boundary stops the fast matcher at the first non-ASCII byte.
            r"\b(?:a|b|ab|ba){1,300}c",
        ] {
            let text = if pattern.starts_with(r"\b") {
                format!("é{}", &text[2..])
            } else {
                text.clone()
            };
            let started = std::time::Instant::now();
            let cpu_started = thread_cpu_time();
            assert_error(
                &input(Mode::Regex, pattern),
                &text,
                "`query` is too costly to match against this text",
            );
            // The refusal's own work, on this thread: what other processes take of the machine
            // does not count (under a load of 10, the wall time of the same work tripled).
            let cpu = thread_cpu_time().saturating_sub(cpu_started);
            assert!(
                cpu < std::time::Duration::from_secs(5),
                "{pattern}: {cpu:?} of CPU time"
            );
            // And no unbounded wait: a generous wall-clock bound catches a hang.
            assert!(
                started.elapsed() < std::time::Duration::from_mins(1),
                "{pattern}: {:?}",
                started.elapsed()
            );
        }
    }

    #[test]
    fn costly_regexes_still_run_on_short_texts() {
        // The same patterns, where the slow matcher's cost is small: the matches are found.
        let text = &letters()[..2000];
        let pattern = r"a[ab]{40}c";
        let expected = Regex::new(pattern).map(|re| re.find_iter(text).count());
        assert_eq!(
            ok(&input(Mode::Regex, pattern), text).total_matches,
            expected.unwrap_or(usize::MAX)
        );
        let out = ok(&input(Mode::Regex, r"\bwörld\b"), "héllo wörld, wörlds");
        assert_eq!(spans(&out), [(7, 13, 6, 11)]);
        // Common patterns over a whole MiB stay on the fast path.
        let text = letters();
        for pattern in [r"\w{20}", r"a+b+c", r"(?-u:\b)c\w*", r"x*"] {
            let expected =
                Regex::new(pattern).map(|re| re.find_iter(&text).filter(|m| !m.is_empty()).count());
            let mut case_sensitive = input(Mode::Regex, pattern);
            case_sensitive.case_sensitive = true;
            assert_eq!(
                ok(&case_sensitive, &text).total_matches,
                expected.unwrap_or(usize::MAX),
                "{pattern}"
            );
        }
    }

    #[tokio::test]
    async fn calls_go_through_the_schema() {
        let tool = text_search::definition();
        let call = |args: &'static str| tool.call(args, pleach_core::ToolContext::new("call_1"));
        let out = call(r#"{"query":"b","text":"abc"}"#).await.unwrap();
        assert_eq!(
            out,
            json!({"matches": [{"text": "b", "byte_start": 1, "byte_end": 2, "char_start": 1,
                "char_end": 2, "line": 1, "column": 2, "context": "abc"}],
                "total_matches": 1, "truncated": false})
        );
        let err = call(r#"{"query":"b","text":"abc","mode":"glob"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.path(), Some("/mode"));
        let err = call(r#"{"query":"b","txt":"abc"}"#).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InputInvalid);
        let err = call(r#"{"query":"b"}"#).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InputInvalid);
        assert!(
            err.message().starts_with("pass `text`")
                || err.message().starts_with("`text` is missing")
        );
        let err = call(r#"{"query":"b","text":"abc","max_results":0}"#)
            .await
            .unwrap_err();
        assert_eq!(err.path(), Some("/max_results"));

        let schema = tool.input_schema();
        assert_eq!(schema["required"], json!(["query"]));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["mode"]["default"], "literal");
        assert_eq!(schema["properties"]["max_results"]["default"], 20);
        assert_eq!(
            schema["properties"].get("key").is_some(),
            cfg!(feature = "scratchpad")
        );
    }

    #[cfg(feature = "scratchpad")]
    #[tokio::test]
    async fn notes_are_searched_by_key() {
        use crate::scratchpad::Scratchpad;
        use pleach_core::ToolContext;
        use pleach_core::extensions::{Extensions, SessionState};

        let tool = text_search::definition();
        let state = SessionState::new();
        state
            .get_or_default::<Scratchpad>()
            .insert("log", "ok\nerror: disk full\n");
        let ctx = || ToolContext::new("call_1").with_scope(Extensions::new(), state.clone());

        let out = tool
            .call(r#"{"query":"error","key":"log"}"#, ctx())
            .await
            .unwrap();
        assert_eq!(out.value()["matches"][0]["line"], 2);
        let err = tool
            .call(r#"{"query":"error","key":"logs"}"#, ctx())
            .await
            .unwrap_err();
        assert_eq!(
            err.message(),
            "there is no note `logs`; did you mean `log`?"
        );
        let err = tool
            .call(r#"{"query":"error","key":"log","text":"x"}"#, ctx())
            .await
            .unwrap_err();
        assert!(
            err.message().starts_with("pass `text` or `key`, not both"),
            "{}",
            err.message()
        );
        let err = tool
            .call(
                r#"{"query":"error","key":"log"}"#,
                ToolContext::new("call_2"),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(
            err.message().contains("pass `text` instead"),
            "{}",
            err.message()
        );
        assert_eq!(
            pleach::infer_batching_strategy(&tool),
            pleach::BatchingStrategy::Chunked { key: "key".into() }
        );
    }
}
