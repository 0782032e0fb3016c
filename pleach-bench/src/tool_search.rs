//! `tool-search`: pleach's tool search (`pleach_core::search::ToolIndex`) on a real catalog, the
//! function definitions and questions of the Berkeley Function-Calling Leaderboard (BFCL).
//!
//! The data comes from BFCL's package on the Python Package Index, `bfcl-eval` ([`BFCL_VERSION`], pinned so every run
//! reads the same data), fetched on the first run with `pip download` into the cache directory
//! (`$PLEACH_BENCH_CACHE`, else `$XDG_CACHE_HOME/pleach-bench`, else `~/.cache/pleach-bench`)
//! and unpacked there with Python's `zipfile`; nothing of it is committed. `--bfcl DIR` reads an
//! unpacked `bfcl_eval/data` directory instead.
//!
//! The catalog is every function of every single-turn category with ground truth (simple in
//! three languages, multiple, parallel, parallel-multiple, and their `live_` versions), one per
//! name (the first definition seen): 1,437 tools. Each question is a query (its user messages
//! joined); its ground truth is the set of functions its answer calls. Recall@k of a query is the
//! share of those functions among the search's first k results; a category's is the mean over
//! its questions. Beside pleach's ranking the bench runs plain BM25 (`k1` 1.5, `b` 0.75; lower
//! case, split at every character that is not a letter or digit, over the name, description and
//! parameters' names and descriptions as one text) as the baseline it must beat.
//!
//! Latency: the index over 1,000 tools (the catalog's first 1,000 by name) and over 10,000 (the
//! catalog seven times: copy `k` of a tool is named `{name}_copy{k}` and its description has the
//! description of the tool `k` places further on appended, so copies are not identical and the
//! terms' statistics are those of a larger catalog, then cut to 10,000 by name). Every question is
//! a query, timed one by one; the build is timed over several builds (`--quick`: one).
//!
//! Request size: the bytes of tool definitions a request carries (OpenAI Chat's `tools`, compact
//! JSON) with every tool sent, and with deferral: the search tool alone on the first step, then
//! the search tool and the five tools a search loads (the mean over the questions).
//!
//! Lines: `tool_search category=NAME tools=N queries=M recall_at_1=… recall_at_5=…` per category,
//! `tool_search_latency tools=N build_ms=… p50_us=… p99_us=…` per size,
//! `tool_search_request tools=N all_bytes=… deferred_first_bytes=… deferred_loaded_bytes=…` for
//! the catalog and a 1,000-tool gateway, and last a summary.

use std::collections::{BTreeSet, HashMap};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use pleach_core::search::{ToolDocument, ToolIndex};
use serde_json::Value;

/// The `bfcl-eval` release the numbers come from.
pub(crate) const BFCL_VERSION: &str = "2026.3.23";

/// The single-turn categories with ground truth, in BFCL's order.
const CATEGORIES: [&str; 10] = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
];

/// One function of the catalog, as BFCL gives it.
struct Function {
    name: String,
    description: String,
    parameters: Value,
}

/// Each category's questions, in [`CATEGORIES`]' order.
type Categories = Vec<(&'static str, Vec<Query>)>;

/// One question: its text and the functions its answer calls.
struct Query {
    text: String,
    truth: BTreeSet<String>,
}

/// Runs the bench; `bfcl` is an unpacked `bfcl_eval/data` directory, else it is fetched. With
/// `explain`, prints that category's questions, their ground truth and both rankings' first five
/// instead, and times nothing.
pub(crate) fn run(
    quick: bool,
    bfcl: Option<&Path>,
    explain: Option<&str>,
) -> Result<(), Box<dyn Error>> {
    if let Some(category) = explain
        && !CATEGORIES.contains(&category)
    {
        return Err(format!(
            "`--explain {category}`: not a category; expected one of {}",
            CATEGORIES.join(", ")
        )
        .into());
    }
    let data = match bfcl {
        Some(dir) => dir.to_owned(),
        None => fetch()?,
    };
    let (catalog, queries) = load(&data)?;
    println!(
        "BFCL {BFCL_VERSION}: {} functions in one catalog, {} questions\n",
        catalog.len(),
        queries.iter().map(|(_, list)| list.len()).sum::<usize>()
    );

    let index = ToolIndex::new(catalog.iter().map(document));
    let baseline = PlainBm25::new(&catalog);
    if let Some(category) = explain {
        let questions = queries
            .iter()
            .find(|(name, _)| *name == category)
            .map_or(&[][..], |(_, list)| list.as_slice());
        explain_category(category, questions, &index, &baseline);
        return Ok(());
    }
    println!(
        "{:<24} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "category", "queries", "bm25 @1", "bm25 @5", "pleach @1", "pleach @5"
    );
    let mut lines = Vec::new();
    let mut summary = Vec::new();
    for (category, questions) in &queries {
        let ours = recall(questions, |text| {
            index
                .search(text, 5)
                .into_iter()
                .map(|hit| hit.name().to_owned())
                .collect()
        });
        let plain = recall(questions, |text| baseline.search(text, 5));
        println!(
            "{category:<24} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            questions.len(),
            plain.0,
            plain.1,
            ours.0,
            ours.1
        );
        lines.push(format!(
            "tool_search category={category} tools={} queries={} recall_at_1={:.3} recall_at_5={:.3}",
            index.len(),
            questions.len(),
            ours.0,
            ours.1
        ));
        if *category == "multiple" || *category == "live_multiple" {
            summary.push(format!("{category}_recall_at_5={:.3}", ours.1));
        }
        if ours.1 <= plain.1 {
            summary.push(format!("{category}_not_above_bm25=1"));
        }
    }
    println!();
    for line in &lines {
        println!("{line}");
    }

    let texts: Vec<&str> = queries
        .iter()
        .flat_map(|(_, list)| list)
        .map(|query| query.text.as_str())
        .collect();
    let builds = if quick { 1 } else { 5 };
    for size in [1_000, 10_000] {
        let tools = synthesise(&catalog, size);
        let (build_ms, index) = time_build(&tools, builds);
        let (p50, p99) = time_queries(&index, &texts, if quick { 1 } else { 3 });
        println!(
            "tool_search_latency tools={} build_ms={build_ms:.1} p50_us={p50:.1} p99_us={p99:.1}",
            index.len()
        );
        summary.push(format!(
            "build_ms_{size}={build_ms:.1} p99_us_{size}={p99:.1}"
        ));
    }
    request_sizes(&catalog, &index, &texts, &mut summary)?;
    println!("tool_search {}", summary.join(" "));
    Ok(())
}

/// Prints each of `questions` with its ground truth and the first five of pleach's ranking and of
/// plain BM25 (`*` marks a function of the ground truth), then the category's recall.
fn explain_category(category: &str, questions: &[Query], index: &ToolIndex, baseline: &PlainBm25) {
    let ours = |text: &str| -> Vec<String> {
        index
            .search(text, 5)
            .into_iter()
            .map(|hit| hit.name().to_owned())
            .collect()
    };
    let marked = |query: &Query, found: Vec<String>| -> String {
        found
            .into_iter()
            .map(|name| {
                if query.truth.contains(&name) {
                    format!("*{name}")
                } else {
                    name
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (i, query) in questions.iter().enumerate() {
        println!("{category} #{i}: {}", query.text.replace('\n', " "));
        println!(
            "  truth:  {}",
            query.truth.iter().cloned().collect::<Vec<_>>().join(" ")
        );
        println!("  pleach: {}", marked(query, ours(&query.text)));
        println!(
            "  bm25:   {}",
            marked(query, baseline.search(&query.text, 5))
        );
    }
    let ours = recall(questions, ours);
    let plain = recall(questions, |text| baseline.search(text, 5));
    println!(
        "{category}: {} queries, bm25 @1 {:.3} @5 {:.3}, pleach @1 {:.3} @5 {:.3}",
        questions.len(),
        plain.0,
        plain.1,
        ours.0,
        ours.1
    );
}

/// Bytes of tool definitions in a request (OpenAI Chat's `tools` array, compact JSON): the whole
/// catalog and a 1,000-tool gateway (its first 1,000 by name) sent whole, against the search tool
/// alone (the first step) and the search tool with the tools one search loads (the mean over
/// the questions of their first five results).
fn request_sizes(
    catalog: &[Function],
    index: &ToolIndex,
    texts: &[&str],
    summary: &mut Vec<String>,
) -> Result<(), Box<dyn Error>> {
    let by_name: HashMap<&str, usize> = catalog
        .iter()
        .map(|function| (function.name.as_str(), wire_bytes(function)))
        .collect();
    let search = pleach_core::search::ToolSearch::new([]).definition()?;
    let search_bytes = serde_json::to_vec(&serde_json::json!({
        "type": "function",
        "function": {
            "name": search.name(),
            "description": search.description(),
            "parameters": search.input_schema(),
        }
    }))?
    .len();
    let mut names: Vec<&str> = by_name.keys().copied().collect();
    names.sort_unstable();
    for size in [catalog.len(), 1_000] {
        let kept: BTreeSet<&str> = names.iter().take(size).copied().collect();
        let all: usize = kept.iter().map(|name| by_name[name]).sum();
        let gateway = ToolIndex::new(
            catalog
                .iter()
                .filter(|function| kept.contains(function.name.as_str()))
                .map(document),
        );
        let index = if size == catalog.len() {
            index
        } else {
            &gateway
        };
        let mut loaded = 0;
        for text in texts {
            loaded += index
                .search(text, 5)
                .iter()
                .map(|hit| by_name[hit.name()])
                .sum::<usize>();
        }
        let loaded = loaded / texts.len().max(1);
        println!(
            "tool_search_request tools={size} all_bytes={all} deferred_first_bytes={search_bytes} \
             deferred_loaded_bytes={}",
            search_bytes + loaded
        );
        summary.push(format!(
            "request_bytes_{size}={all} deferred_bytes_{size}={}",
            search_bytes + loaded
        ));
    }
    Ok(())
}

/// One function's definition as OpenAI Chat's `tools` carries it, in bytes.
fn wire_bytes(function: &Function) -> usize {
    let wire = serde_json::json!({
        "type": "function",
        "function": {
            "name": function.name,
            "description": function.description,
            "parameters": function.parameters,
        }
    });
    serde_json::to_vec(&wire).map_or(0, |bytes| bytes.len())
}

/// A catalog function as the index reads it.
fn document(function: &Function) -> ToolDocument {
    ToolDocument::new(
        &*function.name,
        &*function.description,
        &function.parameters,
    )
}

/// Mean recall at 1 and at 5 of `search` over `queries`.
fn recall(queries: &[Query], search: impl Fn(&str) -> Vec<String>) -> (f64, f64) {
    let mut at_1 = 0.0;
    let mut at_5 = 0.0;
    for query in queries {
        let found = search(&query.text);
        #[allow(clippy::cast_precision_loss)]
        let share = |k: usize| {
            let hits = query
                .truth
                .iter()
                .filter(|name| found.iter().take(k).any(|f| f == *name))
                .count();
            hits as f64 / query.truth.len() as f64
        };
        at_1 += share(1);
        at_5 += share(5);
    }
    #[allow(clippy::cast_precision_loss)]
    let count = queries.len().max(1) as f64;
    (at_1 / count, at_5 / count)
}

/// `size` tools from the catalog: the first `size` by name, or copies (see the module docs).
fn synthesise(catalog: &[Function], size: usize) -> Vec<ToolDocument> {
    let mut tools: Vec<ToolDocument> = catalog.iter().map(document).collect();
    let mut copy = 1;
    while tools.len() < size {
        for (i, function) in catalog.iter().enumerate() {
            let other = &catalog[(i + copy) % catalog.len()];
            tools.push(ToolDocument::new(
                format!("{}_copy{copy}", function.name),
                format!("{} {}", function.description, other.description),
                &function.parameters,
            ));
        }
        copy += 1;
    }
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    tools.truncate(size);
    tools
}

/// The median build time of an index over `tools`, in milliseconds, and the index.
fn time_build(tools: &[ToolDocument], builds: usize) -> (f64, ToolIndex) {
    let mut times = Vec::new();
    let mut index = ToolIndex::new([]);
    for _ in 0..builds {
        let docs = tools.to_vec();
        let start = Instant::now();
        let built = ToolIndex::new(docs);
        times.push(start.elapsed().as_secs_f64() * 1e3);
        index = built; // the previous one is dropped outside the timing
    }
    (quantile(&mut times, 0.5), index)
}

/// The median and 99th percentile of one query's time, in microseconds, over `rounds` passes.
fn time_queries(index: &ToolIndex, texts: &[&str], rounds: usize) -> (f64, f64) {
    let mut times = Vec::with_capacity(texts.len() * rounds);
    for text in texts.iter().take(200) {
        std::hint::black_box(index.search(text, 5)); // warm-up
    }
    for _ in 0..rounds {
        for text in texts {
            let start = Instant::now();
            std::hint::black_box(index.search(text, 5));
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    (quantile(&mut times, 0.5), quantile(&mut times, 0.99))
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let at = ((values.len() - 1) as f64 * q).round() as usize;
    values[at]
}

/// The unpacked `bfcl_eval/data` directory in the cache, fetched and unpacked if missing.
fn fetch() -> Result<PathBuf, Box<dyn Error>> {
    let cache = cache_dir()?.join(format!("bfcl-eval-{BFCL_VERSION}"));
    let data = cache.join("bfcl_eval").join("data");
    if data.join("BFCL_v4_multiple.json").is_file() {
        return Ok(data);
    }
    std::fs::create_dir_all(&cache)?;
    eprintln!("fetching bfcl-eval {BFCL_VERSION} into {}", cache.display());
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
        ])
        .arg(&cache)
        .arg(format!("bfcl-eval=={BFCL_VERSION}"))
        .status()
        .map_err(|e| format!("running `python3 -m pip download`: {e} (or pass --bfcl DIR)"))?;
    if !status.success() {
        return Err(format!("`pip download bfcl-eval=={BFCL_VERSION}` failed: {status}").into());
    }
    let wheel = std::fs::read_dir(&cache)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or("pip downloaded no wheel")?;
    let status = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&cache)
        .status()?;
    if !status.success() || !data.is_dir() {
        return Err(format!("unpacking {} failed: {status}", wheel.display()).into());
    }
    Ok(data)
}

fn cache_dir() -> Result<PathBuf, Box<dyn Error>> {
    if let Some(dir) = std::env::var_os("PLEACH_BENCH_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("pleach-bench"));
    }
    let home = std::env::var_os("HOME").ok_or("no cache directory: set PLEACH_BENCH_CACHE")?;
    Ok(PathBuf::from(home).join(".cache").join("pleach-bench"))
}

/// The catalog (one function per name, in first-seen order) and each category's questions.
fn load(data: &Path) -> Result<(Vec<Function>, Categories), Box<dyn Error>> {
    let mut catalog = Vec::new();
    let mut seen = BTreeSet::new();
    let mut queries = Vec::new();
    for category in CATEGORIES {
        let questions = json_lines(&data.join(format!("BFCL_v4_{category}.json")))?;
        let answers: HashMap<String, Value> = json_lines(
            &data
                .join("possible_answer")
                .join(format!("BFCL_v4_{category}.json")),
        )?
        .into_iter()
        .filter_map(|answer| Some((answer.get("id")?.as_str()?.to_owned(), answer)))
        .collect();
        let mut list = Vec::new();
        for question in questions {
            for function in question["function"].as_array().into_iter().flatten() {
                let name = function["name"].as_str().unwrap_or_default().to_owned();
                if seen.insert(name.clone()) {
                    catalog.push(Function {
                        name,
                        description: function["description"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        parameters: function["parameters"].clone(),
                    });
                }
            }
            let id = question["id"].as_str().unwrap_or_default();
            let truth: BTreeSet<String> = answers
                .get(id)
                .and_then(|answer| answer["ground_truth"].as_array())
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
                .flat_map(|call| call.keys().cloned())
                .collect();
            let text = question["question"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_array)
                .flatten()
                .filter(|message| message["role"] == "user")
                .filter_map(|message| message["content"].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if !truth.is_empty() {
                list.push(Query { text, truth });
            }
        }
        queries.push((category, list));
    }
    Ok((catalog, queries))
}

fn json_lines(path: &Path) -> Result<Vec<Value>, Box<dyn Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).map_err(|e| format!("{}: {e}", path.display()).into())
        })
        .collect()
}

/// Plain BM25 over one text per tool: the baseline.
struct PlainBm25 {
    names: Vec<String>,
    postings: HashMap<String, Vec<(usize, f64)>>,
}

impl PlainBm25 {
    fn new(catalog: &[Function]) -> Self {
        const K1: f64 = 1.5;
        const B: f64 = 0.75;
        let docs: Vec<Vec<String>> = catalog
            .iter()
            .map(|function| {
                let mut text = format!("{} {}", function.name, function.description);
                parameter_text(&function.parameters, &mut text);
                plain_words(&text)
            })
            .collect();
        #[allow(clippy::cast_precision_loss)]
        let count = docs.len().max(1) as f64;
        #[allow(clippy::cast_precision_loss)]
        let average = docs.iter().map(Vec::len).sum::<usize>() as f64 / count;
        let mut frequencies: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        for (id, words) in docs.iter().enumerate() {
            let mut tf: HashMap<&str, f64> = HashMap::new();
            for word in words {
                *tf.entry(word).or_insert(0.0) += 1.0;
            }
            #[allow(clippy::cast_precision_loss)]
            let norm = 1.0 - B + B * words.len() as f64 / average;
            for (word, f) in tf {
                frequencies
                    .entry(word.to_owned())
                    .or_default()
                    .push((id, f * (K1 + 1.0) / (f + K1 * norm)));
            }
        }
        for list in frequencies.values_mut() {
            #[allow(clippy::cast_precision_loss)]
            let n = list.len() as f64;
            let idf = ((count - n + 0.5) / (n + 0.5) + 1.0).ln();
            for (_, score) in &mut *list {
                *score *= idf;
            }
        }
        PlainBm25 {
            names: catalog.iter().map(|f| f.name.clone()).collect(),
            postings: frequencies,
        }
    }

    fn search(&self, query: &str, limit: usize) -> Vec<String> {
        let mut scores: HashMap<usize, f64> = HashMap::new();
        let words: BTreeSet<String> = plain_words(query).into_iter().collect();
        for word in &words {
            for &(id, score) in self.postings.get(word).into_iter().flatten() {
                *scores.entry(id).or_insert(0.0) += score;
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.names[a.0].cmp(&self.names[b.0]))
        });
        ranked
            .into_iter()
            .take(limit)
            .map(|(id, _)| self.names[id].clone())
            .collect()
    }
}

fn plain_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Appends the parameters' names and descriptions of `schema`, at every depth.
fn parameter_text(schema: &Value, out: &mut String) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            out.push(' ');
            out.push_str(name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                out.push(' ');
                out.push_str(description);
            }
            parameter_text(property, out);
        }
    }
    if let Some(items) = schema.get("items") {
        parameter_text(items, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn function(name: &str, description: &str) -> Function {
        Function {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters: json!({"type": "dict", "properties": {"city": {"type": "string", "description": "The city."}}}),
        }
    }

    #[test]
    fn synthesised_catalogs_have_the_size_asked_and_distinct_names() {
        let catalog = vec![
            function("a", "one"),
            function("b", "two"),
            function("c", "three"),
        ];
        let tools = synthesise(&catalog, 8);
        let names: BTreeSet<&str> = tools.iter().map(ToolDocument::name).collect();
        assert_eq!((tools.len(), names.len()), (8, 8));
        assert_eq!(synthesise(&catalog, 2).len(), 2);
    }

    #[test]
    fn recall_counts_the_share_of_the_truth_found() {
        let queries = [Query {
            text: "q".into(),
            truth: ["a".to_owned(), "b".to_owned()].into(),
        }];
        let (at_1, at_5) = recall(&queries, |_| vec!["b".into(), "x".into(), "a".into()]);
        assert!((at_1 - 0.5).abs() < 1e-9 && (at_5 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_baseline_ranks_by_shared_words() {
        let catalog = vec![
            function("weather", "Weather for a city."),
            function("stocks", "Stock prices."),
        ];
        assert_eq!(
            PlainBm25::new(&catalog).search("stock prices today", 5),
            ["stocks"]
        );
    }
}
