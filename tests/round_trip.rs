//! Provider round trips (`docs/providers.md`, "How the runtime reads calls"): for every form pleach
//! sends a tool in (OpenAI strict, OpenAI plain, Anthropic, Gemini, MCP), arguments valid under
//! the schema sent are accepted by the runtime, with the meaning the tool's own types give them:
//! a `null` for a field the profile made nullable is absent (its default applies), an enum the
//! profile rewrote reads back, an inlined `$ref` validates.
//!
//! Arguments are generated from the schema as sent (a generator for the subset of JSON Schema and
//! Gemini's OpenAPI schemas that pleach's profiles emit), checked against that schema, then read by
//! the tool: the catalog's through `validate_arguments` (running them would touch files and the
//! network), this module's typed tools through a call, whose echo of the typed input is compared
//! with the arguments read as the documented rule says.

use std::collections::BTreeMap;

use pleach_core::providers::anthropic::Anthropic;
use pleach_core::providers::gemini::Gemini;
use pleach_core::providers::openai_chat::OpenAiChat;
use pleach_core::providers::profile::remove_strict_nulls;
use pleach_core::providers::{Profile, ProviderFormat, mcp_tools};
use pleach_core::{
    ErrorCode, Runtime, SessionOptions, ToolCall, ToolContext, ToolDefinition,
    UnifiedToolDefinition, input, tool, tool_registry,
};
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use proptest::test_runner::{Config, TestRunner};
use serde::Serialize;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Typed tools: nested structs, `Option<enum>`, defaults, a recursive type, maps.

/// How fast an order ships.
#[input]
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum RtSpeed {
    /// With the weekly run.
    Slow,
    /// Next day.
    Fast,
}

/// What is sold.
#[input]
#[derive(Serialize, Debug, Clone, PartialEq)]
enum RtItem {
    /// A thing by its stock number.
    Sku(String),
    /// A service, by the hour.
    Hours {
        /// How many hours.
        count: u32,
        /// Who does it, if it matters.
        who: Option<String>,
    },
    /// A gift card.
    Card,
}

/// One line of an order.
#[input]
#[derive(Serialize, Debug, Clone, PartialEq)]
struct RtLine {
    /// What.
    item: RtItem,
    /// How many; 1 if absent.
    #[serde(default = "one")]
    quantity: u64,
    /// A note for the packer.
    note: Option<String>,
    /// Gift wrapping.
    #[serde(default)]
    wrapped: bool,
}

fn one() -> u64 {
    1
}

fn eur() -> String {
    "EUR".to_owned()
}

/// An order.
#[input]
#[derive(Serialize, Debug, Clone, PartialEq)]
struct RtOrder {
    /// The lines, at least one.
    #[schemars(length(min = 1))]
    lines: Vec<RtLine>,
    /// The currency; EUR if absent.
    #[serde(default = "eur")]
    currency: String,
    /// How fast; the shop decides if absent.
    speed: Option<RtSpeed>,
    /// A discount in percent.
    #[serde(default)]
    #[schemars(range(max = 50))]
    discount: u8,
    /// Signed adjustment in cents.
    #[serde(default)]
    adjustment: i64,
}

/// A category tree.
#[input]
#[derive(Serialize, Debug, Clone, PartialEq)]
struct RtTree {
    /// The category's name.
    name: String,
    /// Its weight; 0 if absent.
    #[serde(default)]
    weight: u32,
    /// Subcategories.
    #[serde(default)]
    children: Vec<RtTree>,
    /// The one favoured subcategory.
    favourite: Option<Box<RtTree>>,
}

/// Labels by key.
#[input]
#[derive(Serialize, Debug, Clone, PartialEq)]
struct RtLabels {
    /// Counts by label.
    counts: BTreeMap<String, u32>,
    /// Per label, a speed.
    #[serde(default)]
    speeds: BTreeMap<String, Option<RtSpeed>>,
    /// A title.
    #[serde(default = "eur")]
    title: String,
}

/// Echoes the order it read.
#[tool]
async fn rt_order(#[input] order: RtOrder) -> Value {
    serde_json::to_value(order).unwrap_or_default()
}

/// Echoes the tree it read.
#[tool]
async fn rt_tree(#[input] tree: RtTree) -> Value {
    serde_json::to_value(tree).unwrap_or_default()
}

/// Echoes the labels it read.
#[tool]
async fn rt_labels(#[input] labels: RtLabels) -> Value {
    serde_json::to_value(labels).unwrap_or_default()
}

/// Echoes its parameters (the form without an input type): a defaulted string, an optional enum,
/// a bounded integer.
#[tool]
async fn rt_params(
    #[arg(description = "The zone", default = "UTC")] zone: String,
    #[arg(description = "How fast")] speed: Option<RtSpeed>,
    #[arg(description = "How many", min = 1, max = 10, default = 3)] count: u16,
    #[arg(description = "Ids")] ids: Option<Vec<u64>>,
) -> Value {
    json!({ "zone": zone, "speed": speed, "count": count, "ids": ids })
}

/// What each typed tool means by arguments: serde's reading of them once the `null`s that stand
/// for an absent field are removed, serialized back.
fn meant(name: &str, schema: &Value, arguments: &Value) -> Value {
    let read = remove_strict_nulls(schema, arguments);
    match name {
        "rt_order" => echo::<RtOrder>(read),
        "rt_tree" => echo::<RtTree>(read),
        "rt_labels" => echo::<RtLabels>(read),
        "rt_params" => json!({
            "zone": read.get("zone").cloned().unwrap_or(json!("UTC")),
            "speed": read.get("speed").cloned().unwrap_or(Value::Null),
            "count": read.get("count").cloned().unwrap_or(json!(3)),
            "ids": read.get("ids").cloned().unwrap_or(Value::Null),
        }),
        other => panic!("no reading for {other}"),
    }
}

/// `value` read into `T` and written back.
fn echo<T: serde::de::DeserializeOwned + Serialize>(value: Value) -> Value {
    let typed: T = serde_json::from_value(value).expect("the reading is valid for the type");
    serde_json::to_value(typed).unwrap()
}

const TYPED: &[&str] = &["rt_order", "rt_tree", "rt_labels", "rt_params"];

// ---------------------------------------------------------------------------------------------
// The forms a tool is sent in.

#[derive(Debug, Clone, Copy, PartialEq)]
enum Sent {
    OpenAiStrict,
    OpenAiPlain,
    Anthropic,
    AnthropicStrict,
    Gemini,
    Mcp,
}

const SENT: [Sent; 6] = [
    Sent::OpenAiStrict,
    Sent::OpenAiPlain,
    Sent::Anthropic,
    Sent::AnthropicStrict,
    Sent::Gemini,
    Sent::Mcp,
];

/// The parameters schema `tool` is sent with, or `None` where the profile refuses the tool (a
/// map under OpenAI or Anthropic strict, recursion under Gemini or Anthropic strict: pinned by
/// `tests/providers.rs`).
fn sent_schema(tool: &ToolDefinition, sent: Sent) -> Option<Value> {
    match sent {
        Sent::OpenAiStrict => OpenAiChat
            .strict_definition(tool)
            .ok()
            .map(|d| d["function"]["parameters"].clone()),
        Sent::OpenAiPlain => {
            Some(OpenAiChat.definition(tool).unwrap()["function"]["parameters"].clone())
        }
        Sent::Anthropic => Anthropic
            .definition(tool)
            .ok()
            .map(|d| d["input_schema"].clone()),
        Sent::AnthropicStrict => Anthropic
            .strict_definition(tool)
            .ok()
            .map(|d| d["input_schema"].clone()),
        Sent::Gemini => Gemini.definition(tool).ok().map(|d| {
            d.get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({ "type": "object", "properties": {} }))
        }),
        Sent::Mcp => mcp_tools::definition(&UnifiedToolDefinition::from(tool.clone()))
            .ok()
            .map(|d| d["inputSchema"].clone()),
    }
}

/// A Gemini schema as JSON Schema, to check generated values against: `nullable` as a `null`
/// branch; the `enum` format (an annotation) dropped.
fn gemini_as_json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let converted = match key.as_str() {
                    "nullable" => continue,
                    "enum" | "default" | "example" => value.clone(),
                    "properties" => Value::Object(
                        value
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(name, s)| (name.clone(), gemini_as_json_schema(s)))
                            .collect(),
                    ),
                    _ => gemini_as_json_schema(value),
                };
                out.insert(key.clone(), converted);
            }
            if map.get("nullable") == Some(&Value::Bool(true)) {
                json!({ "anyOf": [Value::Object(out), { "type": "null" }] })
            } else {
                Value::Object(out)
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(gemini_as_json_schema).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Arguments from a schema: object, properties, required, `type` (one or a list), `nullable`,
// `anyOf`/`oneOf`, `enum`, `const`, `items`, bounds, lengths, `pattern`, string formats, local
// `$ref`s, `additionalProperties` as a schema (maps).

/// Below this depth, recursion stops: optional fields left out, `null` branches taken.
const DEEP: u32 = 3;

fn arguments(schema: &Value, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    let Some(map) = schema.as_object() else {
        return Just(Value::Null).boxed();
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = root
            .pointer(reference.trim_start_matches('#'))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| panic!("unresolved {reference}"));
        let mut merged = target;
        for (key, value) in map {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        return arguments(&Value::Object(merged), root, depth + 1);
    }
    let value = not_nullable(map, root, depth);
    if map.get("nullable") == Some(&Value::Bool(true)) {
        if depth > DEEP {
            return Just(Value::Null).boxed();
        }
        prop_oneof![1 => Just(Value::Null), 3 => value].boxed()
    } else {
        value
    }
}

fn not_nullable(map: &Map<String, Value>, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    if let Some(constant) = map.get("const") {
        return Just(constant.clone()).boxed();
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        let mut values = values.clone();
        if depth > DEEP && values.contains(&Value::Null) {
            values = vec![Value::Null];
        }
        return prop::sample::select(values).boxed();
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(keyword) {
            let null = json!({ "type": "null" });
            let branches: Vec<&Value> = if depth > DEEP && branches.contains(&null) {
                vec![&null]
            } else {
                branches.iter().collect()
            };
            return Union::new(branches.into_iter().map(|b| arguments(b, root, depth + 1))).boxed();
        }
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ if map.contains_key("properties") => vec!["object"],
        _ => vec!["string"],
    };
    let types: Vec<&str> = if depth > DEEP && types.contains(&"null") {
        vec!["null"]
    } else {
        types
    };
    Union::new(types.into_iter().map(|t| of_type(t, map, root, depth))).boxed()
}

fn bound(map: &Map<String, Value>, inclusive: &str, exclusive: &str) -> Option<(f64, bool)> {
    map.get(inclusive)
        .and_then(Value::as_f64)
        .map(|b| (b, false))
        .or_else(|| {
            map.get(exclusive)
                .and_then(Value::as_f64)
                .map(|b| (b, true))
        })
}

fn length(map: &Map<String, Value>, key: &str) -> Option<usize> {
    map.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
}

#[allow(clippy::cast_possible_truncation)] // bounds are clamped to a small window first
fn of_type(kind: &str, map: &Map<String, Value>, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    match kind {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" => {
            let low = bound(map, "minimum", "exclusiveMinimum").map_or(-1000.0, |(b, ex)| {
                if ex { b.floor() + 1.0 } else { b.ceil() }
            });
            let high = bound(map, "maximum", "exclusiveMaximum").map_or(1000.0, |(b, ex)| {
                if ex { b.ceil() - 1.0 } else { b.floor() }
            });
            // A window of at most 2000 values, within ±10^6.
            let low = low.max(high.min(1.0e6) - 2000.0).max(-1.0e6);
            let high = high.min(low + 2000.0);
            let (low, high) = (low as i64, high as i64);
            (low..=high.max(low)).prop_map(Value::from).boxed()
        }
        "number" => {
            let low = bound(map, "minimum", "exclusiveMinimum")
                .map_or(-1000.0, |(b, ex)| if ex { b + 0.5 } else { b })
                .max(-1.0e6);
            let high = bound(map, "maximum", "exclusiveMaximum")
                .map_or(1000.0, |(b, ex)| if ex { b - 0.5 } else { b })
                .min(1.0e6);
            (low..=high.max(low))
                .prop_map(|n| serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
                .boxed()
        }
        "string" => string(map),
        "array" => {
            let items = map.get("items").map_or_else(
                || Just(json!("x")).boxed(),
                |s| arguments(s, root, depth + 1),
            );
            let low = length(map, "minItems").unwrap_or(0);
            let high = if depth > DEEP {
                low
            } else {
                length(map, "maxItems").unwrap_or(low + 3).min(low + 3)
            };
            prop::collection::vec(items, low..=high)
                .prop_map(Value::Array)
                .boxed()
        }
        "object" => object(map, root, depth),
        other => panic!("no generator for type {other}"),
    }
}

fn string(map: &Map<String, Value>) -> BoxedStrategy<Value> {
    let low = length(map, "minLength").unwrap_or(0);
    let high = length(map, "maxLength").unwrap_or(low + 12).min(low + 12);
    let pattern = match map.get("format").and_then(Value::as_str) {
        Some("date-time") => "20[0-9]{2}-0[1-9]-1[0-9]T1[0-9]:[0-5][0-9]:[0-5][0-9]Z".to_owned(),
        Some("date") => "20[0-9]{2}-0[1-9]-1[0-9]".to_owned(),
        Some("time") => "1[0-9]:[0-5][0-9]:[0-5][0-9]Z".to_owned(),
        Some("email") => "[a-z]{1,8}@example\\.com".to_owned(),
        Some("uuid") => "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}".to_owned(),
        Some("ipv4") => "10\\.[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}".to_owned(),
        Some("hostname") => "[a-z]{1,8}\\.example".to_owned(),
        _ => match map.get("pattern").and_then(Value::as_str) {
            Some(pattern) => pattern.to_owned(),
            None => format!("[a-zA-Z0-9 _./-]{{{low},{high}}}"),
        },
    };
    let strategy = proptest::string::string_regex(&pattern)
        .unwrap_or_else(|e| panic!("pattern {pattern}: {e}"));
    strategy
        .prop_filter("length", move |s| {
            (low..=high.max(low)).contains(&s.chars().count())
        })
        .prop_map(Value::String)
        .boxed()
}

fn object(map: &Map<String, Value>, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut members: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (name, schema) in map
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let name = name.clone();
        // Built only when used: a recursive type's strategy would never end.
        if required.contains(&name.as_str()) {
            let value = arguments(schema, root, depth + 1);
            members.push(value.prop_map(move |v| Some((name.clone(), v))).boxed());
        } else if depth <= DEEP {
            let value = arguments(schema, root, depth + 1);
            members.push(
                prop::option::of(value)
                    .prop_map(move |v| v.map(|v| (name.clone(), v)))
                    .boxed(),
            );
        }
    }
    let extra = match map.get("additionalProperties") {
        Some(schema @ Value::Object(_)) if depth <= DEEP => {
            prop::collection::btree_map("[a-z]{1,6}", arguments(schema, root, depth + 1), 0..3)
                .boxed()
        }
        _ => Just(BTreeMap::new()).boxed(),
    };
    (members, extra)
        .prop_map(|(members, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            object.extend(members.into_iter().flatten());
            Value::Object(object)
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// The property.

/// Generated arguments for `tool` under each form it can be sent in, each checked against the
/// schema sent, then handed to `check`.
fn for_each_sent_form(
    tool: &ToolDefinition,
    cases: u32,
    check: &dyn Fn(Sent, &Value) -> Result<(), TestCaseError>,
) -> usize {
    let mut forms = 0;
    for sent in SENT {
        let Some(schema) = sent_schema(tool, sent) else {
            continue;
        };
        forms += 1;
        let as_json_schema = if sent == Sent::Gemini {
            gemini_as_json_schema(&schema)
        } else {
            schema.clone()
        };
        let validator = jsonschema::validator_for(&as_json_schema)
            .unwrap_or_else(|e| panic!("{} {sent:?}: {e}: {schema:#}", tool.name()));
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        // Anthropic's strict form states bounds, lengths and patterns in the descriptions (the
        // API cannot hold them): a model told so sends values within them. Those values are the
        // plain form's; the premise below still holds each to the strict form's structure.
        let generated = if sent == Sent::AnthropicStrict {
            sent_schema(tool, Sent::Anthropic).expect("the strict form implies the plain one")
        } else {
            schema.clone()
        };
        let result = runner.run(&arguments(&generated, &generated, 0), |value| {
            // The premise: the model sent what it was told it may.
            prop_assume!(validator.is_valid(&value));
            check(sent, &value)
        });
        if let Err(failure) = result {
            panic!(
                "{} sent as {sent:?}: {failure}\nschema sent: {schema:#}",
                tool.name()
            );
        }
    }
    forms
}

#[test]
fn arguments_valid_under_every_sent_schema_are_accepted_for_every_catalog_tool() {
    pleach_tools::link();
    let registry = tool_registry();
    for name in pleach_tools::tool_names() {
        let tool = registry.definition(name).expect("linked");
        let forms = for_each_sent_form(tool, 24, &|sent, value| {
            let text = value.to_string();
            let verdict = tool.validate_arguments(&text);
            prop_assert!(
                verdict.valid,
                "{name} as {sent:?}: {text} refused: {:?}",
                verdict.errors
            );
            Ok(())
        });
        // The catalog fits every profile (`the_catalog_fits_every_profile`).
        assert_eq!(forms, SENT.len(), "{name}");
    }
}

#[test]
fn arguments_valid_under_every_sent_schema_mean_what_the_types_say() {
    let registry = tool_registry();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for name in TYPED {
        let tool = registry.definition(name).expect("registered");
        let forms = for_each_sent_form(tool, 48, &|sent, value| {
            let text = value.to_string();
            let verdict = tool.validate_arguments(&text);
            prop_assert!(
                verdict.valid,
                "{name} as {sent:?}: {text} refused: {:?}",
                verdict.errors
            );
            let read = rt.block_on(tool.call(&text, ToolContext::new("c")));
            let read = read.map_err(|e| {
                TestCaseError::fail(format!("{name} as {sent:?}: {text} refused: {e}"))
            })?;
            prop_assert_eq!(
                &read,
                &meant(name, tool.input_schema(), value),
                "{} as {:?}: {}",
                name,
                sent,
                text
            );
            Ok(())
        });
        assert!(forms >= 3, "{name}: {forms} forms");
    }
}

// ---------------------------------------------------------------------------------------------
// The case of issue 20, by hand: each reading pinned.

#[tokio::test]
async fn a_strict_null_is_absent_and_an_options_null_is_none() {
    let tool = rt_order::definition();
    let strict = OpenAiChat.strict_definition(&tool).unwrap();
    let sent = &strict["function"]["parameters"];
    assert_eq!(
        sent["properties"]["currency"]["type"],
        json!(["string", "null"])
    );
    let text = r#"{"lines":[{"item":{"Hours":{"count":2,"who":null}},"quantity":null,"note":null,"wrapped":null}],
                   "currency":null,"speed":null,"discount":null,"adjustment":null}"#;
    assert!(tool.validate_arguments(text).valid);
    let read = tool.call(text, ToolContext::new("c")).await.unwrap();
    assert_eq!(
        read,
        json!({
            "lines": [{ "item": { "Hours": { "count": 2, "who": null } }, "quantity": 1, "note": null, "wrapped": false }],
            "currency": "EUR", "speed": null, "discount": 0, "adjustment": 0
        })
    );
    // A `null` where the field is required is still refused, with its pointer.
    let err = tool
        .call(r#"{"lines":null}"#, ToolContext::new("c"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InputInvalid);
    assert_eq!(err.path(), Some("/lines"));
    // The profile's rewritten enum (`null` added) reads back.
    assert_eq!(
        tool.call(
            r#"{"lines":[{"item":"Card"}],"speed":"fast"}"#,
            ToolContext::new("c")
        )
        .await
        .unwrap()
        .value()["speed"],
        "fast"
    );
}

#[tokio::test]
async fn a_strict_null_goes_through_a_session_as_pleach_call_sends_it() {
    // `pleach call` runs its one call in a session of every tool: the same pipeline.
    let runtime = Runtime::builder().build().unwrap();
    let session = runtime.create_session(SessionOptions::all()).unwrap();
    let turn = session.run_turn(vec![ToolCall::new(
        "call_1",
        "rt_params",
        r#"{"zone":null,"speed":null,"count":null,"ids":null}"#,
    )]);
    let results = turn.finish().await;
    let outcome = results[0].outcome.as_ref().expect("accepted");
    assert_eq!(
        outcome,
        &json!({ "zone": "UTC", "speed": null, "count": 3, "ids": null })
    );
}

#[test]
fn the_fields_strict_mode_makes_nullable_are_the_ones_read_as_absent() {
    // Defaulted fields are made nullable by the profile, and their `null` is read as absent;
    // `Option` fields take `null` already, and it stays (it means `None`).
    let tool = rt_params::definition();
    let strict = Profile::OpenAiStrict.apply_tool(&tool).unwrap();
    let original = tool.input_schema();
    for (name, absent) in [
        ("zone", true),
        ("count", true),
        ("speed", false),
        ("ids", false),
    ] {
        let read = remove_strict_nulls(original, &json!({ name: null }));
        assert_eq!(read == json!({}), absent, "{name}: {read}");
    }
    assert_eq!(
        strict["properties"]["zone"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        strict["properties"]["count"]["type"],
        json!(["integer", "null"])
    );
}
