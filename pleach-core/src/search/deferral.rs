//! [`ToolSearch`]: deferred tools in the agent loop, and the search tool that loads them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{SearchHit, ToolDocument, ToolIndex, ToolRanker};
use crate::error::ToolError;
use crate::tool::{DefinitionError, ToolDefinition, UnifiedToolDefinition};

/// The search tool's name unless [`ToolSearch::name`] sets another.
pub const DEFAULT_SEARCH_TOOL: &str = "search_tools";

/// How many tools one search returns unless [`ToolSearch::limit`] sets another.
pub const DEFAULT_LIMIT: usize = 5;

/// The most tools one search may return, whatever the model asks.
const MAX_LIMIT: usize = 50;

/// What the search tool returns for each tool it finds.
///
/// ```
/// use pleach_core::search::{SearchResults, ToolSearch};
/// let search = ToolSearch::new([]).results(SearchResults::Names);
/// assert_eq!(search.tool_name(), "search_tools");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SearchResults {
    /// `{"tools": ["name", …]}`: the fewest tokens; the model sees each tool's definition when it
    /// is sent on the next step.
    Names,
    /// `{"tools": [{"name", "description"}, …]}`: enough to choose among look-alikes.
    #[default]
    Summaries,
    /// `{"tools": [{"name", "description", "input_schema"}, …]}`: the whole definitions, for a
    /// model that should see the parameters before the next step.
    Definitions,
}

/// How the search tool's query is read.
///
/// ```
/// use pleach_core::search::{QueryMode, ToolSearch};
/// let search = ToolSearch::new([]).mode(QueryMode::Regex);
/// let schema = search.definition().unwrap().input_schema().clone();
/// assert!(schema["properties"]["query"]["description"].as_str().unwrap().contains("regular expression"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum QueryMode {
    /// Words, ranked (the ranker: [`ToolIndex`]'s BM25F unless [`ToolSearch::ranker`] gives one).
    #[default]
    Words,
    /// A regular expression over names, descriptions and parameters ([`ToolIndex::search_regex`]).
    Regex,
}

/// Deferred tools: tools the agent loop does not send the model until a search finds them.
///
/// Given to [`AgentOptions::tool_search`](crate::agent::AgentOptions::tool_search). The tools
/// named here are held back; every other tool the run offers is sent on every step, with the
/// search tool ([`ToolSearch::definition`], registered in the runtime like any tool). When the
/// model calls the search tool, the tools it returns are sent from the next step on (a
/// `tools.loaded` event says which). A call to a deferred tool not loaded yet fails with 1021
/// (`ToolNotLoaded`), whose message names the search tool.
///
/// The index over the deferred tools is built once, here; clones share it. Build a new
/// `ToolSearch` when the catalog changes (a remote server's list did).
///
/// ```
/// use pleach_core::search::ToolSearch;
/// use pleach_core::{ToolDefinition, ToolError, UnifiedToolDefinition};
///
/// let tool = |name: &str, description: &str| UnifiedToolDefinition::from(
///     ToolDefinition::builder(name, description)
///         .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
///         .unwrap());
/// let catalog = [tool("refund_payment", "Refunds a card payment."), tool("send_invoice", "Emails an invoice.")];
/// let search = ToolSearch::new(&catalog).limit(3);
/// assert!(search.is_deferred("refund_payment"));
/// assert_eq!(search.find("refund a payment")[0].name(), "refund_payment");
/// // Register `search.definition()` in the runtime with the catalog, and give `search` to
/// // `AgentOptions::tool_search`.
/// assert_eq!(search.definition().unwrap().name(), "search_tools");
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    name: String,
    limit: usize,
    results: SearchResults,
    mode: QueryMode,
    native: bool,
    shared: Arc<Shared>,
    ranker: Option<Arc<dyn ToolRanker>>,
}

// A `ToolSearch` is unwind-safe as the `AgentOptions` holding it always were: nothing in it changes
// after it is built (the index and the definitions are read through `&`, and the host's ranker is
// asked through `&self`), so a panic while it is used cannot leave it half-changed. The compiler
// cannot see that through the definitions' handlers (`Arc<dyn Fn>`) and a host's `dyn ToolRanker`.
impl std::panic::UnwindSafe for ToolSearch {}
impl std::panic::RefUnwindSafe for ToolSearch {}

struct Shared {
    index: ToolIndex,
    /// The deferred tools by name.
    tools: BTreeMap<String, UnifiedToolDefinition>,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field("name", &self.name)
            .field("limit", &self.limit)
            .field("results", &self.results)
            .field("mode", &self.mode)
            .field("native", &self.native)
            .field("deferred", &self.shared.tools.len())
            .field("custom_ranker", &self.ranker.is_some())
            .finish_non_exhaustive()
    }
}

/// Two are equal when they are clones of one another with the same settings (one index, one
/// ranker).
impl PartialEq for ToolSearch {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.limit == other.limit
            && self.results == other.results
            && self.mode == other.mode
            && self.native == other.native
            && Arc::ptr_eq(&self.shared, &other.shared)
            && match (&self.ranker, &other.ranker) {
                (None, None) => true,
                (Some(a), Some(b)) => std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)),
                _ => false,
            }
    }
}

impl ToolSearch {
    /// Defers `tools` (each sent only once a search found it), indexed for search now.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// let search = ToolSearch::new([]);
    /// assert_eq!(search.deferred().count(), 0);
    /// ```
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a UnifiedToolDefinition>) -> Self {
        let tools: BTreeMap<String, UnifiedToolDefinition> = tools
            .into_iter()
            .map(|tool| (tool.name().to_owned(), tool.clone()))
            .collect();
        let index = ToolIndex::new(tools.values().map(ToolDocument::from));
        ToolSearch {
            name: DEFAULT_SEARCH_TOOL.to_owned(),
            limit: DEFAULT_LIMIT,
            results: SearchResults::default(),
            mode: QueryMode::default(),
            native: false,
            shared: Arc::new(Shared { index, tools }),
            ranker: None,
        }
    }

    /// Names the search tool (default `search_tools`).
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// assert_eq!(ToolSearch::new([]).name("find_tools").tool_name(), "find_tools");
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many tools one search returns (default 5; at least 1, at most 50). The model may ask
    /// for fewer or more, up to 50, with the tool's `limit` argument.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// let schema = ToolSearch::new([]).limit(8).definition().unwrap().input_schema().clone();
    /// assert_eq!(schema["properties"]["limit"]["default"], 8);
    /// ```
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit.clamp(1, MAX_LIMIT);
        self
    }

    /// What the search tool returns for each tool found (default [`SearchResults::Summaries`]).
    ///
    /// ```
    /// # use pleach_core::search::{SearchResults, ToolSearch};
    /// let _ = ToolSearch::new([]).results(SearchResults::Definitions);
    /// ```
    #[must_use]
    pub fn results(mut self, results: SearchResults) -> Self {
        self.results = results;
        self
    }

    /// How the query is read (default [`QueryMode::Words`]).
    ///
    /// ```
    /// # use pleach_core::search::{QueryMode, ToolSearch};
    /// let _ = ToolSearch::new([]).mode(QueryMode::Regex);
    /// ```
    #[must_use]
    pub fn mode(mut self, mode: QueryMode) -> Self {
        self.mode = mode;
        self
    }

    /// Defers the provider's way where the model client can (`true`), or pleach's way everywhere
    /// (`false`, the default).
    ///
    /// Native, over Anthropic (`AnthropicClient`, feature `http`) every
    /// deferred tool is sent from the first step with `defer_loading: true` and each search
    /// result goes back as `tool_reference` blocks, which the API expands; over OpenAI Responses
    /// (`OpenAiResponsesClient`) the search tool is sent as
    /// a client-run `tool_search` tool and each result goes back as a `tool_search_output` item
    /// carrying the definitions found (`defer_loading: true`). The search itself is this one
    /// either way (its ranking, its events), and the tools sent do not change from step to step,
    /// so a provider's prompt cache keeps them. Clients of other wire formats defer pleach's
    /// way. Native deferral needs a model that supports it (Anthropic: Claude Sonnet 4.5, Opus
    /// 4.5 and later; OpenAI: GPT-5.4 and later), which is why it is not the default.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// assert!(!ToolSearch::new([]).is_native());
    /// assert!(ToolSearch::new([]).native(true).is_native());
    /// ```
    #[must_use]
    pub fn native(mut self, native: bool) -> Self {
        self.native = native;
        self
    }

    /// Whether deferral goes the provider's way where the client can ([`ToolSearch::native`]).
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// assert!(!ToolSearch::new([]).is_native());
    /// ```
    pub fn is_native(&self) -> bool {
        self.native
    }

    /// Ranks word queries with `ranker` instead of the built-in index (embeddings, a search
    /// service). Names it returns that are not deferred tools are dropped.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pleach_core::search::{SearchHit, ToolRanker, ToolSearch};
    ///
    /// struct Nothing;
    /// impl ToolRanker for Nothing {
    ///     fn rank(&self, _: &str, _: usize) -> Vec<SearchHit> { Vec::new() }
    /// }
    /// let search = ToolSearch::new([]).ranker(Arc::new(Nothing));
    /// assert!(search.find("anything").is_empty());
    /// ```
    #[must_use]
    pub fn ranker(mut self, ranker: Arc<dyn ToolRanker>) -> Self {
        self.ranker = Some(ranker);
        self
    }

    /// The search tool's name.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// assert_eq!(ToolSearch::new([]).tool_name(), "search_tools");
    /// ```
    pub fn tool_name(&self) -> &str {
        &self.name
    }

    /// Whether `name` is one of the deferred tools.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// assert!(!ToolSearch::new([]).is_deferred("anything"));
    /// ```
    pub fn is_deferred(&self, name: &str) -> bool {
        self.shared.tools.contains_key(name)
    }

    /// The deferred tools, by name.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// assert_eq!(ToolSearch::new([]).deferred().count(), 0);
    /// ```
    pub fn deferred(&self) -> impl Iterator<Item = &UnifiedToolDefinition> {
        self.shared.tools.values()
    }

    /// What a search for `query` finds, as the search tool would (mode and limit): the deferred
    /// tools that match, best first. An invalid regex finds nothing.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// assert!(ToolSearch::new([]).find("weather").is_empty());
    /// ```
    pub fn find(&self, query: &str) -> Vec<SearchHit> {
        self.search(query, self.limit).unwrap_or_default()
    }

    fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, ToolError> {
        let hits = match (self.mode, &self.ranker) {
            (QueryMode::Regex, _) => self.shared.index.search_regex(query, limit).map_err(|e| {
                ToolError::new(crate::error::ErrorCode::InputInvalid, e.to_string())
            })?,
            (QueryMode::Words, Some(ranker)) => ranker
                .rank(query, limit)
                .into_iter()
                .filter(|hit| self.is_deferred(hit.name()))
                .take(limit)
                .collect(),
            (QueryMode::Words, None) => self.shared.index.search(query, limit),
        };
        Ok(hits)
    }

    /// The search tool: register it in the runtime beside the catalog (and enable it in the
    /// session), as any tool. Its input is `{"query": …, "limit"?: …}`; its result is
    /// `{"tools": […]}` in the shape [`ToolSearch::results`] chose.
    ///
    /// # Errors
    ///
    /// When [`ToolSearch::name`] set a name that is not a valid tool name.
    ///
    /// ```
    /// # use pleach_core::search::ToolSearch;
    /// let definition = ToolSearch::new([]).definition().unwrap();
    /// assert_eq!(definition.input_schema()["required"], serde_json::json!(["query"]));
    /// ```
    pub fn definition(&self) -> Result<ToolDefinition, DefinitionError> {
        let query = match self.mode {
            QueryMode::Words => {
                "What the tool should do, in a few words (\"refund a card payment\"); the best \
                 matches by name, description and parameters come first."
            }
            QueryMode::Regex => {
                "A regular expression (Rust syntax; `(?i)` ignores case) matched against the \
                 tools' names, descriptions and parameters; name matches come first."
            }
        };
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": query},
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": self.limit,
                    "description": "How many tools to return at most."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let description = format!(
            "Searches {} more tools that are not loaded yet. The tools found can be called from \
             your next step on; call this first whenever none of your tools fits the task.",
            self.shared.tools.len()
        );
        let search = self.clone();
        ToolDefinition::builder(self.name.clone(), description)
            .input_schema(schema)
            .execute_json(move |input: Value, _| {
                let search = search.clone();
                async move { search.run(&input) }
            })
    }

    /// One call of the search tool.
    fn run(&self, input: &Value) -> Result<Value, ToolError> {
        let query = input
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let limit = input
            .get("limit")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .map_or(self.limit, |n| n.clamp(1, MAX_LIMIT));
        let span = tracing::info_span!(
            target: "pleach::search",
            "tool_search",
            pleach.search.query = query,
            pleach.search.hits = tracing::field::Empty,
        );
        let _entered = span.enter();
        let hits = self.search(query, limit)?;
        span.record("pleach.search.hits", hits.len());
        let tools: Vec<Value> = hits
            .iter()
            .filter_map(|hit| self.shared.tools.get(hit.name()))
            .map(|tool| match self.results {
                SearchResults::Names => json!(tool.name()),
                SearchResults::Summaries => json!({
                    "name": tool.name(),
                    "description": tool.definition().description(),
                }),
                SearchResults::Definitions => json!({
                    "name": tool.name(),
                    "description": tool.definition().description(),
                    "input_schema": tool.definition().input_schema(),
                }),
            })
            .collect();
        Ok(json!({ "tools": tools }))
    }

    /// The deferred tools a search tool's result names (any of the three shapes).
    pub(crate) fn found_in(&self, result: &Value) -> BTreeSet<String> {
        found_names(result)
            .filter(|name| self.is_deferred(name))
            .map(str::to_owned)
            .collect()
    }
}

/// The tool names a search tool's result gives, in its order (any of the three shapes).
pub(crate) fn found_names(result: &Value) -> impl Iterator<Item = &str> {
    result
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.as_str().or_else(|| entry.get("name")?.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> UnifiedToolDefinition {
        ToolDefinition::builder(name, description)
            .execute_json(|_, _| async { Ok::<_, ToolError>(json!(null)) })
            .unwrap()
            .into()
    }

    #[test]
    fn each_result_shape_names_what_it_found() {
        let catalog = [
            tool("refund_payment", "Refunds a card payment."),
            tool("send_invoice", "Emails an invoice."),
        ];
        for (results, first) in [
            (SearchResults::Names, json!("refund_payment")),
            (
                SearchResults::Summaries,
                json!({"name": "refund_payment", "description": "Refunds a card payment."}),
            ),
        ] {
            let search = ToolSearch::new(&catalog).results(results);
            let out = search.run(&json!({"query": "refund"})).unwrap();
            assert_eq!(out["tools"][0], first);
            assert_eq!(
                search.found_in(&out),
                BTreeSet::from(["refund_payment".to_owned()])
            );
        }
        let search = ToolSearch::new(&catalog).results(SearchResults::Definitions);
        let out = search
            .run(&json!({"query": "invoice", "limit": 1}))
            .unwrap();
        assert_eq!(out["tools"].as_array().unwrap().len(), 1);
        assert_eq!(out["tools"][0]["input_schema"]["type"], "object");
    }

    #[test]
    fn a_bad_regex_is_the_models_to_fix_and_unknown_names_are_not_loaded() {
        let search = ToolSearch::new(&[tool("ping", "Answers pong.")]).mode(QueryMode::Regex);
        let error = search.run(&json!({"query": "("})).unwrap_err();
        assert_eq!(error.code(), crate::error::ErrorCode::InputInvalid);
        assert!(
            search
                .found_in(&json!({"tools": ["ping", "rm_rf", {"name": "x"}]}))
                .len()
                == 1
        );
    }
}
