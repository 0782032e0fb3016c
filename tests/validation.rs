//! Validation before dispatch and the one-call pipeline: arguments are checked against the input
//! schema (with JSON pointers and keywords) before the tool runs, results against the output
//! schema after, and whatever error a tool returns becomes a `ToolError` with a stable code
//! (`docs/error-codes.md`).

use std::sync::{Mutex, PoisonError};

use pleach_core::schemars::JsonSchema;
use pleach_core::serde::{Deserialize, Serialize};
use pleach_core::{
    ErrorCode, ToolCall, ToolContext, ToolDefinition, ToolError, ValidationResult, tool,
    validate_tool_call,
};
use serde_json::json;

/// The queries `search_corpus` ran. Other tests of this binary run it at the same time, so a test
/// asks about its own queries, not how many runs there were.
static SEARCHED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Free-text search over the host corpus.
#[tool]
pub(crate) async fn search_corpus(
    #[arg(description = "What to look for")] query: String,
    #[arg(default = 10, min = 1, max = 50)] limit: u32,
    language: Option<String>,
) -> Vec<String> {
    SEARCHED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(query.clone());
    (0..limit.min(3))
        .map(|i| format!("{query} #{i} {}", language.as_deref().unwrap_or("any")))
        .collect()
}

/// One line of an order.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // read through the schema, not the code
#[serde(crate = "pleach_core::serde", deny_unknown_fields)]
#[schemars(crate = "pleach_core::schemars")]
struct Line {
    sku: String,
    #[schemars(range(min = 1))]
    quantity: u32,
}

/// An order.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // read through the schema, not the code
#[serde(crate = "pleach_core::serde", deny_unknown_fields)]
#[schemars(crate = "pleach_core::schemars")]
struct Order {
    customer_id: String,
    lines: Vec<Line>,
}

/// The placed order.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
struct Placed {
    items: u32,
}

/// Places an order.
#[tool]
async fn place_order(#[input] order: Order) -> Result<Placed, ToolError> {
    if order.lines.is_empty() {
        return Err(
            ToolError::new(ErrorCode::InputInvalid, "an order needs at least one line")
                .with_location("/lines", "minItems"),
        );
    }
    Ok(Placed {
        items: order.lines.iter().map(|l| l.quantity).sum(),
    })
}

fn verdict(name: &str, arguments: &str) -> ValidationResult {
    validate_tool_call(&ToolCall::new("call_1", name, arguments))
}

fn locations(result: &ValidationResult) -> Vec<(&str, &str)> {
    let mut found: Vec<(&str, &str)> = result
        .errors
        .iter()
        .map(|e| (e.path.as_str(), e.keyword.as_str()))
        .collect();
    found.sort_unstable();
    found
}

#[test]
fn valid_calls_pass() {
    assert_eq!(
        verdict("search_corpus", r#"{"query":"rust"}"#),
        ValidationResult::ok()
    );
    assert!(
        verdict(
            "search_corpus",
            r#"{"query":"rust","limit":50,"language":"en"}"#
        )
        .valid
    );
    assert!(verdict("search_corpus", r#"{"query":"rust","language":null}"#).valid);
    assert!(
        verdict(
            "place_order",
            r#"{"customer_id":"c1","lines":[{"sku":"a","quantity":2}]}"#
        )
        .valid
    );
}

#[test]
fn each_violation_has_a_pointer_and_a_keyword() {
    // (tool, arguments, the (pointer, keyword) of every violation)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: &[Case<'_>] = &[
        ("search_corpus", "{}", &[("", "required")]),
        ("search_corpus", r#"{"query":5}"#, &[("/query", "type")]),
        (
            "search_corpus",
            r#"{"query":"x","limit":80}"#,
            &[("/limit", "maximum")],
        ),
        (
            "search_corpus",
            r#"{"query":"x","limit":0}"#,
            &[("/limit", "minimum")],
        ),
        (
            "search_corpus",
            r#"{"query":"x","limit":2.5}"#,
            &[("/limit", "type")],
        ),
        (
            "search_corpus",
            r#"{"query":"x","limt":5}"#,
            &[("", "additionalProperties")],
        ),
        ("search_corpus", "[]", &[("", "type")]),
        (
            "place_order",
            r#"{"customer_id":"c","lines":[{"sku":"a","quantity":1},{"sku":7,"quantity":0}]}"#,
            &[("/lines/1/quantity", "minimum"), ("/lines/1/sku", "type")],
        ),
    ];
    for (name, arguments, expected) in cases {
        let result = verdict(name, arguments);
        assert!(!result.valid, "{arguments}");
        assert_eq!(locations(&result), *expected, "{arguments}: {result:?}");
        assert!(result.errors.iter().all(|e| !e.message.is_empty()));
    }
}

#[test]
fn text_that_is_not_json_or_repeats_a_key_is_refused() {
    for (arguments, keyword, path) in [
        (r#"{"query":"x""#, "json", ""),
        (r#"{"query":"x"} {}"#, "json", ""),
        ("\u{feff}{\"query\":\"x\"}", "json", ""),
        (r#"{"query":"safe","query":"rm -rf /"}"#, "duplicateKey", ""),
        (
            r#"{"customer_id":"c","lines":[{"sku":"a","sku":"b","quantity":1}]}"#,
            "duplicateKey",
            "/lines/0",
        ),
    ] {
        let name = if arguments.contains("lines") {
            "place_order"
        } else {
            "search_corpus"
        };
        let result = verdict(name, arguments);
        assert_eq!(locations(&result), [(path, keyword)], "{arguments}");
    }
}

#[test]
fn unknown_tools_are_reported() {
    let result = verdict("no_such_tool", "{}");
    assert_eq!(locations(&result), [("", "unknownTool")]);
    assert!(result.errors[0].message.contains("`no_such_tool`"));
}

/// Found by `fuzz/tool_arguments` (input `["62239999.99"]` to `math`): serde reads a struct from
/// an array too, so the typed fast path ran a tool on arguments its schema refuses.
#[tokio::test]
async fn arguments_that_are_not_an_object_never_run_a_tool() {
    // A refusal means it did not run (a run returns the tool's result); other tests of this
    // binary run `search_corpus` at the same time, so its run counter cannot tell.
    let tool = search_corpus::definition();
    for arguments in [
        r#"["rust"]"#,
        r#" ["rust", 3, null]"#,
        r#""rust""#,
        "42",
        "null",
    ] {
        assert!(!tool.validate_arguments(arguments).valid, "{arguments}");
        let err = tool
            .call(arguments, ToolContext::new("c1"))
            .await
            .expect_err(arguments);
        assert_eq!(err.code(), ErrorCode::InputInvalid, "{arguments}");
        assert_eq!(err.keyword(), Some("type"), "{arguments}");
    }
}

#[tokio::test]
async fn invalid_input_fails_before_the_tool_runs() {
    let tool = search_corpus::definition();
    let err = tool
        .call(r#"{"query":"x","limit":99}"#, ToolContext::new("c1"))
        .await
        .expect_err("limit is over the maximum");
    assert_eq!(err.code(), ErrorCode::InputInvalid);
    assert_eq!(err.path(), Some("/limit"));
    assert_eq!(err.keyword(), Some("maximum"));
    assert!(
        err.message().contains("50"),
        "the message says what was expected: {}",
        err.message()
    );
    assert!(err.is_recoverable());

    let err = tool
        .call(r#"{"query":"a","query":"b"}"#, ToolContext::new("c2"))
        .await
        .expect_err("duplicate key");
    assert_eq!(err.code(), ErrorCode::ArgumentsNotJson);

    let err = tool
        .call("not json", ToolContext::new("c3"))
        .await
        .expect_err("not JSON");
    assert_eq!(err.code(), ErrorCode::ArgumentsNotJson);
    let searched = SEARCHED.lock().unwrap_or_else(PoisonError::into_inner);
    assert!(
        !searched
            .iter()
            .any(|query| ["x", "a", "b"].contains(&query.as_str())),
        "the tool never ran: {searched:?}"
    );
}

#[tokio::test]
async fn defaults_apply_and_results_come_back_as_json() {
    let out = search_corpus::definition()
        .call(r#"{"query":"rust"}"#, ToolContext::new("c1"))
        .await
        .expect("valid call");
    assert_eq!(out, json!(["rust #0 any", "rust #1 any", "rust #2 any"]));
    let schema = search_corpus::definition().input_schema().clone();
    assert_eq!(schema["properties"]["limit"]["default"], 10);
    assert_eq!(
        schema["properties"]["query"]["description"],
        "What to look for"
    );
}

#[tokio::test]
async fn a_result_that_breaks_the_output_schema_fails_with_1002() {
    let liar = ToolDefinition::builder("liar", "Promises a string, returns a number.")
        .output_schema(json!({ "type": "string" }))
        .execute_json(|_, _| async { Ok::<_, ToolError>(json!(5)) })
        .expect("valid definition");
    let err = liar
        .call("{}", ToolContext::new("c1"))
        .await
        .expect_err("5 is not a string");
    assert_eq!(err.code(), ErrorCode::OutputInvalid);
    assert!(
        !err.is_recoverable(),
        "the model cannot fix the tool's output"
    );
}

/// Returns a map keyed by pairs, which JSON cannot hold (object keys are strings).
#[tool]
async fn pair_table() -> std::collections::BTreeMap<(u8, u8), u8> {
    [((1, 2), 3)].into_iter().collect()
}

#[tokio::test]
async fn a_result_that_cannot_be_written_as_json_fails_with_1002() {
    let err = pair_table::definition()
        .call("{}", ToolContext::new("c1"))
        .await
        .expect_err("a map keyed by pairs is no JSON object");
    assert_eq!(err.code(), ErrorCode::OutputInvalid);
    assert!(!err.is_recoverable());
    assert_eq!(
        err.message(),
        "the tool's result could not be written as JSON"
    );
    // serde's reason is the operator's, and stays out of what the model reads.
    assert!(err.detail().is_some_and(|detail| detail.contains("key")));
    let wire = serde_json::to_string(&err).unwrap();
    assert!(!wire.contains("key must be"), "{wire}");
}

#[tokio::test]
async fn a_tools_own_tool_error_keeps_its_code_and_location() {
    let err = place_order::definition()
        .call(r#"{"customer_id":"c","lines":[]}"#, ToolContext::new("c1"))
        .await
        .expect_err("no lines");
    assert_eq!(err.code(), ErrorCode::InputInvalid);
    assert_eq!(err.path(), Some("/lines"));
    let ok = place_order::definition()
        .call(
            r#"{"customer_id":"c","lines":[{"sku":"a","quantity":2},{"sku":"b","quantity":3}]}"#,
            ToolContext::new("c2"),
        )
        .await
        .expect("valid order");
    assert_eq!(ok, json!({ "items": 5 }));
}

/// Opens a file.
#[tool]
async fn open_file(path: String) -> std::io::Result<String> {
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("{path} not found"),
    ))
}

/// Always fails with text.
#[tool]
async fn fail_with_string() -> Result<u8, String> {
    Err("the service said no".to_owned())
}

/// A host error type with its own mapping to codes.
#[derive(Debug)]
struct Busy;

impl From<Busy> for ToolError {
    fn from(_: Busy) -> Self {
        ToolError::new(
            ErrorCode::Overloaded,
            "the backend is busy; retry in a minute",
        )
    }
}

/// Always busy.
#[tool]
async fn busy() -> Result<u8, Busy> {
    Err(Busy)
}

/// An error type with `Debug` only.
#[derive(Debug)]
#[allow(dead_code)]
struct Opaque(u32);

/// Fails with a Debug-only error.
#[tool]
async fn opaque() -> Result<u8, Opaque> {
    Err(Opaque(7))
}

#[tokio::test]
async fn any_error_type_becomes_a_tool_error() {
    let ctx = || ToolContext::new("c");
    let err = open_file::definition()
        .call(r#"{"path":"a.txt"}"#, ctx())
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::ToolFailed, "a.txt not found")
    );

    let err = fail_with_string::definition()
        .call("{}", ctx())
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::ToolFailed, "the service said no")
    );

    let err = busy::definition().call("{}", ctx()).await.unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::Overloaded,
        "a user's own From impl wins"
    );

    let err = opaque::definition().call("{}", ctx()).await.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::ToolFailed, "Opaque(7)")
    );
}

#[tokio::test]
async fn the_context_reaches_the_tool() {
    /// Reports its call id, or that it was cancelled.
    #[tool]
    async fn whoami(ctx: ToolContext) -> String {
        if ctx.signal.is_cancelled() {
            "cancelled".to_owned()
        } else {
            ctx.tool_call_id
        }
    }
    let def = whoami::definition();
    assert_eq!(
        def.call("{}", ToolContext::new("call_42")).await.unwrap(),
        json!("call_42")
    );
    let ctx = ToolContext::new("call_43");
    ctx.signal.cancel();
    assert_eq!(def.call("{}", ctx).await.unwrap(), json!("cancelled"));
}

/// A shipment: counts nested where the `#[tool]` macro's own integer reading does not reach.
#[derive(Debug, Deserialize, JsonSchema)]
struct Shipment {
    boxes: u32,
    weights: std::collections::BTreeMap<String, u8>,
    labels: Option<Vec<u16>>,
}

/// Ships boxes.
#[tool]
async fn ship(#[input] shipment: Shipment) -> u64 {
    u64::from(shipment.boxes)
        + shipment
            .weights
            .values()
            .map(|w| u64::from(*w))
            .sum::<u64>()
        + shipment
            .labels
            .unwrap_or_default()
            .iter()
            .map(|l| u64::from(*l))
            .sum::<u64>()
}

/// Counts pages.
#[tool]
async fn count_pages(pages: Option<Vec<u8>>, size: usize) -> usize {
    pages.unwrap_or_default().len() + size
}

#[tokio::test]
async fn whole_floats_are_integers_wherever_the_schema_says_integer() {
    // JSON Schema counts `3.0` and `1e1` as integers; so does the call, nested or not, and
    // `validate_tool_call` agrees with it.
    let cases = [
        (
            "ship",
            r#"{"boxes":3.0,"weights":{"a":1e1},"labels":[2.0]}"#,
            json!(15),
        ),
        ("count_pages", r#"{"pages":[1.0,2.0],"size":4.0}"#, json!(6)),
    ];
    for (name, arguments, expected) in cases {
        assert!(verdict(name, arguments).valid, "{name} {arguments}");
        let definition = pleach_core::tool_registry().definition(name).unwrap();
        let out = definition.call(arguments, ToolContext::new("c1")).await;
        assert_eq!(out.unwrap(), expected, "{name} {arguments}");
    }
    // A fraction is still refused, by both.
    for (name, arguments) in [
        ("ship", r#"{"boxes":3.5,"weights":{}}"#),
        ("count_pages", r#"{"size":4.5}"#),
    ] {
        assert!(!verdict(name, arguments).valid, "{name} {arguments}");
        let definition = pleach_core::tool_registry().definition(name).unwrap();
        let error = definition
            .call(arguments, ToolContext::new("c2"))
            .await
            .unwrap_err();
        assert_eq!(error.code(), ErrorCode::InputInvalid, "{name} {arguments}");
    }
}

/// Sets a volume; its bounds are looser than `u8` on both sides.
#[tool]
async fn set_volume(#[arg(min = -5, max = 300)] level: u8) -> u8 {
    level
}

/// An `#[arg]` bound looser than the integer type narrows nothing: the schema keeps the type's own
/// range, so the model is not told 256 fits a `u8`, and a call of 256 is refused by the schema
/// (pointer and keyword) rather than by the typed read.
#[tokio::test]
async fn a_bound_looser_than_the_type_keeps_the_types_range() {
    let tool = set_volume::definition();
    let level = &tool.input_schema()["properties"]["level"];
    assert_eq!(
        (&level["minimum"], &level["maximum"]),
        (&json!(0), &json!(255))
    );
    for (arguments, keyword) in [
        (r#"{"level":256}"#, "maximum"),
        (r#"{"level":-1}"#, "minimum"),
    ] {
        let err = tool
            .call(arguments, ToolContext::new("c1"))
            .await
            .expect_err(arguments);
        assert_eq!(err.code(), ErrorCode::InputInvalid, "{arguments}");
        assert_eq!(
            (err.path(), err.keyword()),
            (Some("/level"), Some(keyword)),
            "{arguments}"
        );
    }
}
