//! [`ToolIndex`]: BM25F over a catalog's [`ToolDocument`]s, and the regex mode.

use std::collections::HashMap;
use std::sync::Arc;

use super::text;
use super::{SearchError, SearchHit, ToolDocument, ToolRanker};
use crate::ToolSource;

/// How many fields a document has: name, description, parameter names, parameter descriptions,
/// enum values, category and schema key.
pub(crate) const FIELDS: usize = 6;

/// How much a term counts in each field, in [`ToolDocument::fields`]' order. A tool's name says
/// what it does in the fewest words, so a word there counts three times one in its description;
/// parameter descriptions are long and repeat the description, so theirs count half. Chosen on
/// the BFCL catalog with the bench (`pleach-bench tool-search`, docs/tool-search.md) from a few
/// round values; with [`K1`] and [`B`], picked on one category and checked on the nine others.
const FIELD_WEIGHTS: [f32; FIELDS] = [3.0, 1.0, 1.0, 0.5, 1.0, 0.5];

/// BM25's term-frequency saturation: how soon more of a word stops counting for more.
const K1: f32 = 1.6;
/// BM25's length normalisation per field, in [`ToolDocument::fields`]' order: how much a long
/// field's words count less. A name, a category and a schema key are a few words whatever the
/// tool, so their length says nothing (0); parameter text grows with the number of parameters
/// rather than with how much it is about anything, so it counts a little (0.3); a description
/// takes BM25's usual 0.75.
const B: [f32; FIELDS] = [0.0, 0.75, 0.3, 0.3, 0.3, 0.0];

/// What two query words next to one another add to a tool whose name has the same two terms
/// next to one another ("the current weather" and `get_current_weather`), times the pair's idf:
/// the words of a name in its order say what the tool does more surely than the same words
/// scattered over a question. Only a tool's best pair counts, once. Picked on one category of
/// the bench like [`K1`] and [`B`] (docs/tool-search.md).
const NAME_PAIR_WEIGHT: f32 = 0.75;

/// Longest regex pattern accepted, in bytes, and the compiled program's size cap: a pattern is
/// the model's input.
const MAX_PATTERN_LEN: usize = 1_000;
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A searchable index over a catalog of tools: ranked lexical search (BM25F: each field weighted,
/// identifiers split at `_`, `-`, `.` and case changes, light stemming; a query's neighbouring
/// words that are neighbours in a tool's name, in that order, count more) and a regex mode.
///
/// Built once from the catalog (a runtime's registry with [`ToolIndex::from_source`], or any
/// [`ToolDocument`]s, such as a remote server's listing, with [`ToolIndex::new`]) and never
/// changed: when the catalog changes, build a new one. Each term's score in each tool is worked
/// out when the index is built, so a query costs one pass over the postings of its words.
/// Results are ordered by score, ties by name, so a query gives the same answer every time.
///
/// ```
/// use pleach_core::search::{ToolDocument, ToolIndex};
/// use serde_json::json;
///
/// let index = ToolIndex::new([
///     ToolDocument::new("get_weather", "Current weather for a city.",
///         &json!({"properties": {"city": {"type": "string"}}})),
///     ToolDocument::new("convertCurrency", "Converts an amount between currencies.",
///         &json!({"properties": {"amount": {"type": "number"}}})),
/// ]);
/// let hits = index.search("how much is 100 euros in dollars? convert the currency", 5);
/// assert_eq!(hits[0].name(), "convertCurrency");
/// assert_eq!(index.search_regex("^get_", 5).unwrap()[0].name(), "get_weather");
/// ```
#[derive(Debug, Clone)]
pub struct ToolIndex {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Sorted by name, one per name: a document's position is its tie-break. Kept whole for
    /// the regex mode.
    documents: Vec<ToolDocument>,
    terms: HashMap<Box<str>, u32, FastHash>,
    /// Where each term's postings start in `postings`; one more entry than terms, the end.
    starts: Vec<usize>,
    /// Per term, one term after another: the documents holding it, in document order, with the
    /// term's BM25F score there.
    postings: Vec<(u32, f32)>,
    /// The pairs of terms next to one another in a name, and the documents whose name has them.
    name_pairs: NamePairs,
}

/// Each pair of terms next to one another in some tool's name (the first term's id in the high
/// half of the key, the second's in the low), sorted by key, with what it adds to a tool
/// ([`NAME_PAIR_WEIGHT`] times its idf) and where the documents whose name has it start in
/// `documents` (they end where the next pair's start).
#[derive(Debug, Default)]
struct NamePairs {
    pairs: Vec<(u64, f32, usize)>,
    documents: Vec<u32>,
}

impl NamePairs {
    /// The pairs of every document's name; `names` yields each document's name terms in order.
    fn new<'a>(doc_count: usize, names: impl Iterator<Item = &'a [u32]>) -> Self {
        let mut found: Vec<(u64, u32)> = Vec::new();
        for (doc, terms) in names.enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            found.extend(
                terms
                    .windows(2)
                    .map(|pair| (pair_key(pair[0], pair[1]), doc)),
            );
        }
        // Sorted, a name that has a pair twice holds it once.
        found.sort_unstable();
        found.dedup();
        #[allow(clippy::cast_precision_loss)] // counts far below 2^24
        let doc_count = doc_count as f32;
        let mut pairs = Vec::new();
        let documents: Vec<u32> = found.iter().map(|&(_, doc)| doc).collect();
        let mut start = 0;
        for run in found.chunk_by(|a, b| a.0 == b.0) {
            #[allow(clippy::cast_precision_loss)]
            let count = run.len() as f32;
            let idf = ((doc_count - count + 0.5) / (count + 0.5) + 1.0).ln();
            pairs.push((run[0].0, NAME_PAIR_WEIGHT * idf, start));
            start += run.len();
        }
        NamePairs { pairs, documents }
    }

    /// The documents whose name has the pair `key`, and what the pair adds to each.
    fn holding(&self, key: u64) -> Option<(f32, &[u32])> {
        let at = self.pairs.binary_search_by_key(&key, |pair| pair.0).ok()?;
        let (_, bonus, start) = self.pairs[at];
        let end = self
            .pairs
            .get(at + 1)
            .map_or(self.documents.len(), |next| next.2);
        Some((bonus, &self.documents[start..end]))
    }

    /// Adds to `scores` each document's best pair among the query's pairs of neighbouring terms
    /// (`None`: a query word no tool has, which parts its neighbours).
    fn add_best(&self, query_terms: &[Option<u32>], scores: &mut [f32]) {
        let mut found: Vec<(u32, f32)> = Vec::new();
        for pair in query_terms.windows(2) {
            let (Some(first), Some(second)) = (pair[0], pair[1]) else {
                continue;
            };
            if let Some((bonus, documents)) = self.holding(pair_key(first, second)) {
                found.extend(documents.iter().map(|&doc| (doc, bonus)));
            }
        }
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        found.dedup_by_key(|(doc, _)| *doc);
        for (doc, bonus) in found {
            scores[doc as usize] += bonus;
        }
    }
}

fn pair_key(first: u32, second: u32) -> u64 {
    (u64::from(first) << 32) | u64::from(second)
}

/// What a stop word maps to in the table of words' terms.
const NO_TERM: u32 = u32::MAX;

/// Pass 1 of a build: every document's terms, field by field, as term ids in one flat list, and
/// how many documents hold each term.
struct ReadTerms {
    terms: HashMap<Box<str>, u32, FastHash>,
    ids: Vec<u32>,
    /// Per document and field: where its ids end in `ids`.
    ends: Vec<[usize; FIELDS]>,
    /// Per term: how many documents hold it.
    holding: Vec<usize>,
}

impl ReadTerms {
    fn new(documents: &[ToolDocument]) -> Self {
        let mut terms: HashMap<Box<str>, u32, FastHash> = HashMap::default();
        // Each distinct word's term (or `NO_TERM` for a stop word), worked out once: a catalog
        // says the same words over and over, and most of them skip the lower-casing, the stop
        // words and the stemmer for one table lookup.
        let mut words = WordTable::default();
        let mut ids: Vec<u32> = Vec::new();
        let mut ends: Vec<[usize; FIELDS]> = Vec::with_capacity(documents.len());
        let mut holding: Vec<usize> = Vec::new();
        // Per term: the last document seen holding it, so that each counts once in `holding`.
        let mut last_holder: Vec<u32> = Vec::new();
        let mut buf = String::new();
        for (doc_id, doc) in documents.iter().enumerate() {
            let doc_id = u32::try_from(doc_id).unwrap_or(u32::MAX);
            let mut doc_ends = [0; FIELDS];
            for (field, text) in doc.fields().into_iter().enumerate() {
                text::for_each_word(text, |word| {
                    let id = words.get_or_insert_with(word, || {
                        text::term(word, &mut buf).map_or(NO_TERM, |term| {
                            *terms.entry(term.into()).or_insert_with(|| {
                                holding.push(0);
                                last_holder.push(u32::MAX);
                                u32::try_from(holding.len() - 1).unwrap_or(NO_TERM - 1)
                            })
                        })
                    });
                    if id != NO_TERM {
                        ids.push(id);
                        let last = &mut last_holder[id as usize];
                        if *last != doc_id {
                            *last = doc_id;
                            holding[id as usize] += 1;
                        }
                    }
                });
                doc_ends[field] = ids.len();
            }
            ends.push(doc_ends);
        }
        ReadTerms {
            terms,
            ids,
            ends,
            holding,
        }
    }

    /// Pass 2, BM25F: a term's frequencies in the fields, each normalised by its field's length
    /// and weighted, summed into one pseudo-frequency, saturated once, times its idf. Every
    /// term's postings in one list, term after term: `starts[t]..starts[t + 1]`.
    fn postings(&self) -> (Vec<usize>, Vec<(u32, f32)>) {
        let ReadTerms {
            ids, ends, holding, ..
        } = self;
        #[allow(clippy::cast_precision_loss)] // counts far below 2^24
        let doc_count = ends.len().max(1) as f32;
        let mut average = [0f32; FIELDS];
        let mut from = 0;
        for doc_ends in ends {
            for (field, &end) in doc_ends.iter().enumerate() {
                #[allow(clippy::cast_precision_loss)]
                let len = (end - from) as f32;
                average[field] += len;
                from = end;
            }
        }
        for sum in &mut average {
            *sum = (*sum / doc_count).max(f32::MIN_POSITIVE);
        }

        let mut starts = Vec::with_capacity(holding.len() + 1);
        let mut total = 0;
        starts.push(0);
        for &count in holding {
            total += count;
            starts.push(total);
        }
        let idf: Vec<f32> = holding
            .iter()
            .map(|&count| {
                #[allow(clippy::cast_precision_loss)]
                let count = count as f32;
                ((doc_count - count + 0.5) / (count + 0.5) + 1.0).ln()
            })
            .collect();

        let mut postings = vec![(0u32, 0f32); total];
        let mut next: Vec<usize> = starts[..holding.len()].to_vec();
        let mut pseudo = vec![0f32; holding.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut from = 0;
        for (doc_id, doc_ends) in ends.iter().enumerate() {
            for (field, &end) in doc_ends.iter().enumerate() {
                #[allow(clippy::cast_precision_loss)]
                let norm = 1.0 - B[field] + B[field] * (end - from) as f32 / average[field];
                let weight = FIELD_WEIGHTS[field] / norm;
                for &term in &ids[from..end] {
                    let slot = &mut pseudo[term as usize];
                    if *slot == 0.0 {
                        touched.push(term);
                    }
                    *slot += weight;
                }
                from = end;
            }
            let doc_id = u32::try_from(doc_id).unwrap_or(u32::MAX);
            for term in touched.drain(..) {
                let term = term as usize;
                let x = std::mem::take(&mut pseudo[term]);
                postings[next[term]] = (doc_id, idf[term] * x * (K1 + 1.0) / (x + K1));
                next[term] += 1;
            }
        }
        (starts, postings)
    }

    /// Each document's name terms, in order.
    fn names(&self) -> impl Iterator<Item = &[u32]> {
        let mut from = 0;
        self.ends.iter().map(move |doc_ends| {
            let name = &self.ids[from..doc_ends[0]];
            from = doc_ends[FIELDS - 1];
            name
        })
    }
}

impl ToolIndex {
    /// An index over `documents`. A name given twice is indexed once (its first document).
    ///
    /// ```
    /// use pleach_core::search::{ToolDocument, ToolIndex};
    /// let index = ToolIndex::new([ToolDocument::new("ping", "Answers pong.", &serde_json::json!({}))]);
    /// assert_eq!(index.len(), 1);
    /// ```
    pub fn new(documents: impl IntoIterator<Item = ToolDocument>) -> Self {
        let mut documents: Vec<ToolDocument> = documents.into_iter().collect();
        // Stable: of two documents with one name, the first given stays first and is kept.
        documents.sort_by(|a, b| a.name().cmp(b.name()));
        documents.dedup_by(|later, earlier| later.name() == earlier.name());

        let read = ReadTerms::new(&documents);
        let (starts, postings) = read.postings();
        let name_pairs = NamePairs::new(documents.len(), read.names());
        let terms = read.terms;
        ToolIndex {
            inner: Arc::new(Inner {
                documents,
                terms,
                starts,
                postings,
                name_pairs,
            }),
        }
    }

    /// An index over every tool of `source` (a runtime's registry, `tool_registry()`).
    ///
    /// ```
    /// use pleach_core::search::ToolIndex;
    /// let index = ToolIndex::from_source(pleach_core::tool_registry());
    /// assert_eq!(index.len(), pleach_core::tool_registry().len());
    /// ```
    pub fn from_source(source: &dyn ToolSource) -> Self {
        ToolIndex::new(source.tools().into_iter().map(ToolDocument::from))
    }

    /// How many tools the index holds.
    ///
    /// ```
    /// # use pleach_core::search::ToolIndex;
    /// assert_eq!(ToolIndex::new([]).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.documents.len()
    }

    /// Whether the index holds no tool.
    ///
    /// ```
    /// # use pleach_core::search::ToolIndex;
    /// assert!(ToolIndex::new([]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inner.documents.is_empty()
    }

    /// Whether the index holds the tool `name`.
    ///
    /// ```
    /// # use pleach_core::search::{ToolDocument, ToolIndex};
    /// let index = ToolIndex::new([ToolDocument::new("ping", "", &serde_json::json!({}))]);
    /// assert!(index.contains("ping") && !index.contains("pong"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.inner
            .documents
            .binary_search_by(|doc| doc.name().cmp(name))
            .is_ok()
    }

    /// The names of the tools held, sorted.
    ///
    /// ```
    /// # use pleach_core::search::{ToolDocument, ToolIndex};
    /// let index = ToolIndex::new(["b", "a"].map(|n| ToolDocument::new(n, "", &serde_json::json!({}))));
    /// assert_eq!(index.names().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.documents.iter().map(ToolDocument::name)
    }

    /// The at most `limit` tools that best match `query` (words in any language and casing), best
    /// first, ties by name. A tool that shares no word with the query is not returned.
    ///
    /// ```
    /// use pleach_core::search::{ToolDocument, ToolIndex};
    /// let index = ToolIndex::new([
    ///     ToolDocument::new("reserve_table", "Books a restaurant table.", &serde_json::json!({})),
    ///     ToolDocument::new("cancel_reservation", "Cancels a booking.", &serde_json::json!({})),
    /// ]);
    /// let hits = index.search("cancel my reservation", 5);
    /// assert_eq!(hits[0].name(), "cancel_reservation");
    /// assert!(hits[0].score() > hits[1].score()); // "reservation" meets "reserve"
    /// ```
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        let inner = &*self.inner;
        if limit == 0 || inner.documents.is_empty() {
            return Vec::new();
        }
        // In the query's order (for its pairs of neighbouring words), then sorted for its terms.
        let mut in_order: Vec<Option<u32>> = Vec::new();
        text::for_each_term(query, &mut String::new(), |term| {
            in_order.push(inner.terms.get(term).copied());
        });
        let mut query_terms: Vec<u32> = in_order.iter().flatten().copied().collect();
        query_terms.sort_unstable();
        query_terms.dedup();

        let mut scores = vec![0f32; inner.documents.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in query_terms {
            let term = term as usize;
            for &(doc, score) in &inner.postings[inner.starts[term]..inner.starts[term + 1]] {
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += score;
            }
        }
        // Every document a pair names holds both its terms, so it is in `touched` already.
        inner.name_pairs.add_best(&in_order, &mut scores);
        let order = |a: &u32, b: &u32| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then(a.cmp(b))
        };
        if touched.len() > limit {
            touched.select_nth_unstable_by(limit - 1, order);
            touched.truncate(limit);
        }
        touched.sort_unstable_by(order);
        touched
            .into_iter()
            .map(|doc| SearchHit::new(inner.documents[doc as usize].name(), scores[doc as usize]))
            .collect()
    }

    /// The at most `limit` tools whose name, description, parameters, enum values, category or
    /// schema key `pattern` matches (Rust `regex` syntax; `(?i)` for case-insensitive): those
    /// whose name matches first, then the others, each group by name. The score is 2 for a name
    /// match and 1 for another.
    ///
    /// # Errors
    ///
    /// [`SearchError::InvalidPattern`] when `pattern` is not a regex, is longer than 1,000 bytes
    /// or compiles to too large a program.
    ///
    /// ```
    /// use pleach_core::search::{ToolDocument, ToolIndex};
    /// let index = ToolIndex::new([
    ///     ToolDocument::new("weather_now", "Current conditions.", &serde_json::json!({})),
    ///     ToolDocument::new("forecast", "The weather for the days ahead.", &serde_json::json!({})),
    /// ]);
    /// let names: Vec<_> = index.search_regex("(?i)weather", 5).unwrap()
    ///     .into_iter().map(|hit| hit.name().to_owned()).collect();
    /// assert_eq!(names, ["weather_now", "forecast"]);
    /// assert!(index.search_regex("(", 5).is_err());
    /// ```
    pub fn search_regex(&self, pattern: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(SearchError::InvalidPattern(format!(
                "the pattern is {} bytes; at most {MAX_PATTERN_LEN} are accepted",
                pattern.len()
            )));
        }
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| SearchError::InvalidPattern(e.to_string()))?;
        let inner = &*self.inner;
        let mut by_name = Vec::new();
        let mut elsewhere = Vec::new();
        for doc in &inner.documents {
            if by_name.len() >= limit {
                break;
            }
            let [name, rest @ ..] = doc.fields();
            if regex.is_match(name) {
                by_name.push(SearchHit::new(name, 2.0));
            } else if elsewhere.len() < limit && rest.iter().any(|text| regex.is_match(text)) {
                elsewhere.push(SearchHit::new(name, 1.0));
            }
        }
        by_name.extend(elsewhere);
        by_name.truncate(limit);
        Ok(by_name)
    }
}

/// A table from words to values. A word of at most 16 bytes (most words) is keyed by its length
/// and its bytes read as two integers, which hash in three steps and compare without a call to
/// `memcmp`; longer words are keyed by their text.
#[derive(Default)]
struct WordTable {
    short: HashMap<(u64, u64, u8), u32, FastHash>,
    long: HashMap<Box<str>, u32, FastHash>,
}

impl WordTable {
    /// The value of `word`, made by `make` and kept the first time `word` is seen.
    fn get_or_insert_with(&mut self, word: &str, make: impl FnOnce() -> u32) -> u32 {
        if let Some(key) = short_key(word.as_bytes()) {
            *self.short.entry(key).or_insert_with(make)
        } else if let Some(&value) = self.long.get(word) {
            value
        } else {
            let value = make();
            self.long.insert(word.into(), value);
            value
        }
    }
}

/// `bytes` (at most 16) as their length and two integers that, for that length, no other bytes
/// give: the first and last eight bytes, overlapping when fewer than 16 (or the first and last
/// four when fewer than eight). Read with whole-integer loads: copying a word into a zeroed
/// buffer first stalls the load that follows it.
fn short_key(bytes: &[u8]) -> Option<(u64, u64, u8)> {
    let len = u8::try_from(bytes.len()).ok().filter(|&len| len <= 16)?;
    let read8 = |from: &[u8]| {
        from.first_chunk()
            .map_or(0, |chunk| u64::from_le_bytes(*chunk))
    };
    let read4 = |from: &[u8]| {
        from.first_chunk()
            .map_or(0, |chunk| u32::from_le_bytes(*chunk))
    };
    let (low, high) = match bytes.len() {
        8.. => (read8(bytes), read8(&bytes[bytes.len() - 8..])),
        4..8 => {
            let last = u64::from(read4(&bytes[bytes.len() - 4..]));
            (u64::from(read4(bytes)) | last << 32, 0)
        }
        _ => {
            let packed = bytes.iter().rev();
            (
                packed.fold(0, |packed, &byte| packed << 8 | u64::from(byte)),
                0,
            )
        }
    };
    Some((low, high, len))
}

/// `FxHash` (rustc's) for the term table: `SipHash` was most of the index's build time. A catalog's
/// words come from its tools' authors; a remote server choosing colliding words could only slow
/// the build of its own listing's index, whose size pleach-mcp caps.
#[derive(Debug, Clone, Copy, Default)]
struct FastHash;

impl std::hash::BuildHasher for FastHash {
    type Hasher = FxHasher;
    fn build_hasher(&self) -> FxHasher {
        FxHasher(0)
    }
}

struct FxHasher(u64);

impl FxHasher {
    /// Mixes in eight bytes: rustc's `FxHash` step.
    #[inline]
    fn add(&mut self, word: u64) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl ToolRanker for ToolIndex {
    fn rank(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search(query, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(name: &str, description: &str) -> ToolDocument {
        ToolDocument::new(name, description, &json!({}))
    }

    #[test]
    fn ties_are_ordered_by_name_and_limit_keeps_the_best() {
        let index = ToolIndex::new([
            doc("y_report", "x"),
            doc("x_report", "x"),
            doc("c", "report"),
        ]);
        let names: Vec<String> = index
            .search("report", 5)
            .into_iter()
            .map(|hit| hit.name().to_owned())
            .collect();
        assert_eq!(
            names,
            ["x_report", "y_report", "c"],
            "a name match outranks a description one"
        );
        let top = index.search("report", 1);
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].name(), "x_report");
    }

    #[test]
    fn scores_are_bm25f_over_the_weighted_fields() {
        // Two tools, "alpha" in one's name (weight 3) and the other's description (weight 1),
        // each field one word long, so every field is its average length but the empty ones.
        let index = ToolIndex::new([doc("alpha", "beta"), doc("gamma", "alpha")]);
        let hits = index.search("alpha", 5);
        let idf = ((2.0f32 - 2.0 + 0.5) / (2.0 + 0.5) + 1.0).ln();
        let saturate = |x: f32| x * (K1 + 1.0) / (x + K1);
        assert_eq!(hits[0].name(), "alpha");
        assert!((hits[0].score() - idf * saturate(FIELD_WEIGHTS[0])).abs() < 1e-6);
        assert_eq!(hits[1].name(), "gamma");
        assert!((hits[1].score() - idf * saturate(FIELD_WEIGHTS[1])).abs() < 1e-6);
    }

    #[test]
    fn short_keys_tell_every_word_apart() {
        let words: Vec<String> = (1..=17)
            .flat_map(|len| ["a", "b", "ab", "é"].map(|piece| piece.repeat(len)))
            .chain(["abcdefghi", "abcdefghbcdefghi", "abcd", "abcdbcd"].map(String::from))
            .collect();
        let distinct: std::collections::BTreeSet<&String> = words.iter().collect();
        assert_eq!(distinct.len(), words.len());
        let mut keys = std::collections::HashMap::new();
        for word in &words {
            match short_key(word.as_bytes()) {
                Some(key) => {
                    assert!(word.len() <= 16);
                    if let Some(other) = keys.insert(key, word) {
                        assert_eq!(other, word, "two words, one key");
                    }
                    assert_eq!(short_key(word.as_bytes()), Some(key));
                }
                None => assert!(word.len() > 16),
            }
        }
        let mut table = WordTable::default();
        for (value, word) in (0u32..).zip(&words) {
            assert_eq!(table.get_or_insert_with(word, || value), value);
        }
        for (value, word) in (0u32..).zip(&words) {
            assert_eq!(table.get_or_insert_with(word, || u32::MAX), value, "{word}");
        }
    }

    fn names(hits: &[SearchHit]) -> Vec<&str> {
        hits.iter().map(SearchHit::name).collect()
    }

    #[test]
    fn a_query_word_meets_its_other_inflections() {
        let index = ToolIndex::new([
            doc("calculate_area", "Area of a shape."),
            doc("list_shapes", "Lists the shapes known."),
        ]);
        assert_eq!(
            names(&index.search("calculated areas", 5)),
            ["calculate_area"]
        );
        assert_eq!(names(&index.search("shape listing", 1)), ["list_shapes"]);
    }

    #[test]
    fn a_word_counts_more_in_a_name_than_in_a_parameters_description() {
        let index = ToolIndex::new([
            ToolDocument::new(
                "book",
                "Books it.",
                &json!({"properties": {"room": {"description": "The invoice number."}}}),
            ),
            doc("invoice", "Handles it."),
        ]);
        assert_eq!(names(&index.search("invoice", 5)), ["invoice", "book"]);
    }

    #[test]
    fn a_long_description_counts_its_words_less_and_a_long_name_does_not() {
        let index = ToolIndex::new([
            doc("a", "alpha"),
            doc("b", "alpha beta gamma delta epsilon zeta eta theta"),
            doc("alpha", ""),
            doc("alpha_beta_gamma_delta_epsilon", ""),
        ]);
        let hits = index.search("alpha", 5);
        assert_eq!(
            names(&hits),
            ["alpha", "alpha_beta_gamma_delta_epsilon", "a", "b"]
        );
        assert!(
            (hits[0].score() - hits[1].score()).abs() < 1e-6,
            "names: {hits:?}"
        );
        assert!(hits[2].score() > hits[3].score(), "descriptions: {hits:?}");
    }

    #[test]
    fn a_catalog_ranks_the_same_whatever_its_order_and_however_often_asked() {
        let tools = [
            doc("get_weather", "Current weather for a city."),
            doc(
                "weather_forecast",
                "The weather for the days ahead in a city.",
            ),
            doc("city_guide", "What to see in a city."),
            doc("convert_currency", "Converts an amount between currencies."),
        ];
        let forward = ToolIndex::new(tools.clone());
        let backward = ToolIndex::new(tools.into_iter().rev());
        let query = "weather in the city tomorrow";
        let first = forward.search(query, 5);
        assert_eq!(first.len(), 3);
        for _ in 0..3 {
            assert_eq!(forward.search(query, 5), first);
            assert_eq!(backward.search(query, 5), first);
        }
    }

    #[test]
    fn neighbouring_query_words_in_a_names_order_count_more() {
        let index = ToolIndex::new([doc("weather_current", ""), doc("current_weather", "")]);
        let hits = index.search("the current weather, now", 5);
        assert_eq!(names(&hits), ["current_weather", "weather_current"]);
        assert!(hits[0].score() > hits[1].score(), "{hits:?}");
        let hits = index.search("weather: current", 5);
        assert_eq!(names(&hits), ["weather_current", "current_weather"]);
        assert!(hits[0].score() > hits[1].score(), "{hits:?}");
        // A word no tool has parts its neighbours: no pair, a tie.
        let parted = index.search("current zebra weather", 5);
        assert!((parted[0].score() - parted[1].score()).abs() < 1e-6);
    }

    #[test]
    fn a_name_pair_counts_once_however_often_it_is_met() {
        let index = ToolIndex::new([doc("current_weather_current_weather", ""), doc("x", "")]);
        let paired = index.search("current weather current weather", 5)[0].score();
        let parted = index.search("current zebra weather", 5)[0].score();
        let idf = ((2.0f32 - 1.0 + 0.5) / (1.0 + 0.5) + 1.0).ln();
        assert!((paired - parted - NAME_PAIR_WEIGHT * idf).abs() < 1e-5);
    }

    #[test]
    fn a_duplicate_name_keeps_its_first_document() {
        let index = ToolIndex::new([doc("t", "apples"), doc("t", "pears")]);
        assert_eq!(index.len(), 1);
        assert_eq!(index.search("apples", 5).len(), 1);
        assert!(index.search("pears", 5).is_empty());
    }

    #[test]
    fn nothing_matches_nothing() {
        let index = ToolIndex::new([doc("ping", "Answers pong.")]);
        assert!(index.search("", 5).is_empty());
        assert!(index.search("the of a", 5).is_empty(), "stop words alone");
        assert!(index.search("ping", 0).is_empty());
        assert!(ToolIndex::new([]).search("ping", 5).is_empty());
    }

    #[test]
    fn parameters_and_enum_values_are_searched() {
        let index = ToolIndex::new([
            ToolDocument::new(
                "find_events",
                "Finds events in a city.",
                &json!({"properties": {"kind": {"enum": ["Theater", "Music"]}}}),
            ),
            doc("find_movies", "Finds movies in a city."),
        ]);
        assert_eq!(
            index.search("theater events in Seattle", 5)[0].name(),
            "find_events"
        );
        let hits = index.search("theater", 5);
        assert_eq!(hits.len(), 1);
    }

    #[test]
    fn regex_rejects_what_it_cannot_compile() {
        let index = ToolIndex::new([doc("ping", "Answers pong.")]);
        assert!(matches!(
            index.search_regex("(", 5),
            Err(SearchError::InvalidPattern(_))
        ));
        let long = "a".repeat(MAX_PATTERN_LEN + 1);
        assert!(index.search_regex(&long, 5).is_err());
        assert!(
            index.search_regex(r"\w{1000}{1000}", 5).is_err(),
            "too large a program"
        );
        let hits = index.search_regex("pong", 5).unwrap();
        assert!(
            (hits[0].score() - 1.0).abs() < f32::EPSILON,
            "a match outside the name"
        );
    }
}
