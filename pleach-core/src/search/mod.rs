//! Tool search over a catalog: which tools a model should be sent when there are too many to send
//! them all.
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | [`ToolRanker`] (what ranks tools for a query), [`SearchHit`], [`SearchError`] |
//! | `document.rs` | [`ToolDocument`]: the searchable text of one tool |
//! | `index.rs` | [`ToolIndex`]: BM25F over the documents, and the regex mode |
//! | `deferral.rs` | [`ToolSearch`]: deferred tools in the agent loop, and the search tool |
//! | `text.rs` | text into index terms: identifiers split, stop words, stemming |
//!
//! [`ToolIndex`] is pleach's ranker; a host with a better one (embeddings, a service) implements
//! [`ToolRanker`] and gives it where a ranker is taken. docs/tool-search.md says how the ranking
//! works and what it measured on BFCL's function-calling catalog.
//!
//! ```
//! use pleach_core::search::{ToolIndex, ToolRanker};
//! use pleach_core::{ToolDefinition, ToolError, ToolRegistryBuilder};
//!
//! let tool = |name: &str, description: &str| {
//!     ToolDefinition::builder(name, description)
//!         .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
//!         .unwrap()
//! };
//! let registry = ToolRegistryBuilder::new()
//!     .register(tool("send_invoice", "Emails an invoice to a customer."))
//!     .register(tool("refund_payment", "Refunds a card payment."))
//!     .build()
//!     .unwrap();
//! let index = ToolIndex::from_source(&registry);
//! let ranker: &dyn ToolRanker = &index;
//! assert_eq!(ranker.rank("refund the customer's payment", 1)[0].name(), "refund_payment");
//! ```

mod deferral;
mod document;
mod index;
mod text;

#[cfg(feature = "http")]
pub(crate) use deferral::found_names;
pub use deferral::{DEFAULT_LIMIT, DEFAULT_SEARCH_TOOL, QueryMode, SearchResults, ToolSearch};
pub use document::ToolDocument;
pub use index::ToolIndex;

/// What ranks a catalog's tools for a query: [`ToolIndex`] (lexical), or a host's own (embeddings,
/// a search service) given where pleach takes a ranker. A ranker knows its catalog; a name it
/// returns that the caller does not know is dropped by the caller.
///
/// ```
/// use pleach_core::search::{SearchHit, ToolRanker};
///
/// /// Ranks by how many of the query's words a name contains.
/// struct ByNameWords(Vec<String>);
///
/// impl ToolRanker for ByNameWords {
///     fn rank(&self, query: &str, limit: usize) -> Vec<SearchHit> {
///         let mut hits: Vec<SearchHit> = self.0.iter().filter_map(|name| {
///             let shared = query.split_whitespace().filter(|w| name.contains(w)).count();
///             let score = f32::from(u16::try_from(shared).unwrap_or(u16::MAX));
///             (shared > 0).then(|| SearchHit::new(name, score))
///         }).collect();
///         hits.sort_by(|a, b| b.score().total_cmp(&a.score()).then_with(|| a.name().cmp(b.name())));
///         hits.truncate(limit);
///         hits
///     }
/// }
///
/// let ranker = ByNameWords(vec!["send_mail".into(), "read_mail".into()]);
/// assert_eq!(ranker.rank("send mail", 5)[0].name(), "send_mail");
/// ```
pub trait ToolRanker: Send + Sync {
    /// The at most `limit` tools that best match `query`, best first.
    fn rank(&self, query: &str, limit: usize) -> Vec<SearchHit>;
}

/// One tool a search found and its score (higher is better; comparable within one search only).
///
/// ```
/// use pleach_core::search::SearchHit;
/// let hit = SearchHit::new("send_mail", 2.5);
/// assert_eq!((hit.name(), hit.score()), ("send_mail", 2.5));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    name: String,
    score: f32,
}

impl SearchHit {
    /// A hit on the tool `name` with `score`.
    ///
    /// ```
    /// # use pleach_core::search::SearchHit;
    /// let hit = SearchHit::new("t", 1.0);
    /// assert_eq!(hit.name(), "t");
    /// ```
    pub fn new(name: impl Into<String>, score: f32) -> Self {
        SearchHit {
            name: name.into(),
            score,
        }
    }

    /// The tool's name.
    ///
    /// ```
    /// # use pleach_core::search::SearchHit;
    /// assert_eq!(SearchHit::new("t", 1.0).name(), "t");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The score: higher is better.
    ///
    /// ```
    /// # use pleach_core::search::SearchHit;
    /// assert_eq!(SearchHit::new("t", 1.0).score(), 1.0);
    /// ```
    pub fn score(&self) -> f32 {
        self.score
    }
}

/// Why a search could not run.
///
/// ```
/// use pleach_core::search::{SearchError, ToolIndex};
/// let err = ToolIndex::new([]).search_regex("[", 5).unwrap_err();
/// assert!(matches!(err, SearchError::InvalidPattern(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The regex pattern does not compile, or is too long or too large; the text says why.
    #[error("invalid search pattern: {0}")]
    InvalidPattern(String),
}
