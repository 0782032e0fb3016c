//! The fast path and the schema agree. For tools whose parameters are plain data, the runtime reads
//! the arguments text straight into the typed input and runs the generic validator only to explain
//! a refusal (`ToolDefinition` docs). These properties hold it to the JSON Schema 2020-12 verdict
//! of the tool's own input schema on generated arguments: whatever the schema accepts runs, and
//! whatever it refuses fails with 1001 before the tool runs.

use pleach_core::providers::profile::remove_strict_nulls;
use pleach_core::{ErrorCode, ToolContext, tool};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Probes the verdicts.
#[tool]
#[allow(clippy::too_many_arguments)]
async fn v_probe(
    #[arg(min = -5, max = 5)] small: i64,
    count: u8,
    #[arg(min = 0.5, max = 2.5)] ratio: f64,
    label: Option<String>,
    flags: Vec<bool>,
    ids: Vec<u16>,
    maybe: Option<i32>,
    #[arg(default = 3, max = 10)] limit: u32,
) -> bool {
    let _ = (small, count, ratio, label, flags, ids, maybe, limit);
    true
}

const FIELDS: [&str; 8] = [
    "small", "count", "ratio", "label", "flags", "ids", "maybe", "limit",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-300i64..300).prop_map(Value::from),
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just(-1i64 << 40),
            Just(1i64 << 40)
        ]
        .prop_map(Value::from),
        prop_oneof![Just(u64::MAX), Just(1u64 << 63)].prop_map(Value::from),
        (-10i32..10).prop_map(|i| json!(f64::from(i))), // whole numbers written as floats
        (-1000i32..1000).prop_map(|i| json!(f64::from(i) / 8.0)), // fractions (and some whole ones)
        Just(json!(1e300)),
        "[a-z]{0,6}".prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(scalar(), 0..4).prop_map(Value::from),
        1 => Just(json!({ "nested": 1 })),
    ]
}

fn arguments() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(prop::option::of(value()), FIELDS.len()),
        prop::option::of(("[a-z]{1,5}", value())),
    )
        .prop_map(|(values, extra)| {
            let mut object = Map::new();
            for (field, value) in FIELDS.iter().zip(values) {
                if let Some(value) = value {
                    object.insert((*field).to_owned(), value);
                }
            }
            if let Some((key, value)) = extra {
                object.insert(key, value);
            }
            Value::Object(object)
        })
}

/// Arguments more likely to be valid: every required field, mostly in range.
fn near_valid() -> impl Strategy<Value = Value> {
    (
        -7i64..7,
        -2i64..300,
        prop_oneof![
            (0i32..30).prop_map(|i| json!(f64::from(i) / 10.0)),
            (0i64..4).prop_map(Value::from)
        ],
        prop::option::of(prop_oneof![
            Just(Value::Null),
            "[a-z]{0,4}".prop_map(Value::from)
        ]),
        prop::collection::vec(any::<bool>(), 0..3),
        prop::collection::vec(
            prop_oneof![(-2i64..70000).prop_map(Value::from), Just(json!(7.0))],
            0..3,
        ),
        prop::option::of(prop_oneof![
            Just(Value::Null),
            (-5i64..5).prop_map(Value::from),
            Just(json!(2.0))
        ]),
        prop::option::of(0i64..12),
    )
        .prop_map(|(small, count, ratio, label, flags, ids, maybe, limit)| {
            let mut object = Map::new();
            object.insert("small".into(), small.into());
            object.insert("count".into(), count.into());
            object.insert("ratio".into(), ratio);
            if let Some(label) = label {
                object.insert("label".into(), label);
            }
            object.insert("flags".into(), flags.into());
            object.insert("ids".into(), ids.into());
            if let Some(maybe) = maybe {
                object.insert("maybe".into(), maybe);
            }
            if let Some(limit) = limit {
                object.insert("limit".into(), limit.into());
            }
            Value::Object(object)
        })
}

fn check(arguments: &Value) {
    check_tool(&v_probe::definition(), arguments);
}

/// `definition`'s two readings of `arguments` (`validate_arguments` and a call) agree with its
/// input schema's verdict (on the arguments as they are, or without the `null`s that stand for
/// an absent field); a refusal is 1001 with a pointer.
fn check_tool(definition: &pleach_core::ToolDefinition, arguments: &Value) {
    // Valid as they are, or once the `null`s standing for absent fields are removed (what a
    // strict-mode model sends for a defaulted field: `docs/providers.md`).
    let validator = jsonschema::validator_for(definition.input_schema())
        .expect("the generated schema compiles");
    let schema_verdict = validator.is_valid(arguments)
        || validator.is_valid(&remove_strict_nulls(definition.input_schema(), arguments));
    let text = arguments.to_string();
    assert_eq!(
        definition.validate_arguments(&text).valid,
        schema_verdict,
        "validate_arguments disagrees with the schema on {text}"
    );
    let outcome = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(definition.call(&text, ToolContext::new("c")));
    match outcome {
        Ok(value) => assert!(
            schema_verdict,
            "ran on {text} (-> {value:?}) though the schema refuses it"
        ),
        Err(error) => {
            assert!(
                !schema_verdict,
                "refused {text} though the schema accepts it: {error}"
            );
            assert_eq!(error.code(), ErrorCode::InputInvalid, "{text}: {error}");
            assert!(
                error.path().is_some(),
                "{text}: the refusal has a pointer: {error}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_fast_path_agrees_with_the_schema_on_any_arguments(arguments in arguments()) {
        check(&arguments);
    }

    #[test]
    fn the_fast_path_agrees_with_the_schema_near_the_boundaries(arguments in near_valid()) {
        check(&arguments);
    }
}

#[test]
fn both_outcomes_are_exercised() {
    // The generators reach both verdicts, so the properties cannot pass vacuously.
    let valid =
        json!({ "small": 0, "count": 1, "ratio": 1.0, "flags": [], "ids": [2.0], "maybe": null });
    let invalid = json!({ "small": 6, "count": 1, "ratio": 1.0, "flags": [], "ids": [] });
    let validator =
        jsonschema::validator_for(v_probe::definition().input_schema()).expect("compiles");
    assert!(validator.is_valid(&valid));
    assert!(!validator.is_valid(&invalid));
    check(&valid);
    check(&invalid);
}

/// Probes the verdicts of length and size bounds: `#[arg(min/max)]` on a string bounds its length
/// in characters (`minLength`/`maxLength`, Unicode code points), on a list its size
/// (`minItems`/`maxItems`); a fractional bound rounds inward, a negative `max` acts as 0.
#[tool]
async fn v_lengths(
    #[arg(min = 1, max = 4)] name: String,
    #[arg(max = 2)] tags: Vec<String>,
    #[arg(min = 1.5, max = 3.5)] word: Option<String>,
    #[arg(max = -1)] none: Option<Vec<u8>>,
    #[arg(default = "ab", min = 1, max = 3)] code: String,
) -> bool {
    let _ = (name, tags, word, none, code);
    true
}

const LENGTH_FIELDS: [&str; 5] = ["name", "tags", "word", "none", "code"];

fn text_or_list() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => "[ab\u{e9}\u{1f600}]{0,6}".prop_map(Value::from),
        2 => prop::collection::vec("[ab]{0,2}".prop_map(Value::from), 0..4).prop_map(Value::from),
        1 => prop::collection::vec((0u8..3).prop_map(Value::from), 0..2).prop_map(Value::from),
        1 => Just(Value::Null),
        1 => (0i64..5).prop_map(Value::from),
    ]
}

fn length_arguments() -> impl Strategy<Value = Value> {
    prop::collection::vec(prop::option::of(text_or_list()), LENGTH_FIELDS.len()).prop_map(
        |values| {
            let mut object = Map::new();
            for (field, value) in LENGTH_FIELDS.iter().zip(values) {
                if let Some(value) = value {
                    object.insert((*field).to_owned(), value);
                }
            }
            Value::Object(object)
        },
    )
}

fn check_lengths(arguments: &Value) {
    check_tool(&v_lengths::definition(), arguments);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn length_and_size_bounds_agree_with_the_schema(arguments in length_arguments()) {
        check_lengths(&arguments);
    }
}

#[test]
fn length_and_size_bounds_are_the_schemas_keywords() {
    let schema = v_lengths::definition().input_schema().clone();
    let property = |name: &str| schema["properties"][name].clone();
    assert_eq!(property("name")["minLength"], 1);
    assert_eq!(property("name")["maxLength"], 4);
    assert!(property("name").get("minimum").is_none());
    assert_eq!(property("tags")["maxItems"], 2);
    assert_eq!(property("word")["minLength"], 2, "1.5 rounds up");
    assert_eq!(property("word")["maxLength"], 3, "3.5 rounds down");
    assert_eq!(property("none")["maxItems"], 0, "a negative max acts as 0");
    assert_eq!(property("code")["default"], "ab");
    // Characters, not bytes or UTF-16 units: four emoji are four characters.
    let four = json!({ "name": "\u{1f600}\u{1f600}\u{1f600}\u{1f600}", "tags": [] });
    let five = json!({ "name": "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}", "tags": [] });
    let long_list = json!({ "name": "a", "tags": ["a", "b", "c"] });
    for (arguments, valid) in [(&four, true), (&five, false), (&long_list, false)] {
        check_lengths(arguments);
        assert_eq!(
            v_lengths::definition()
                .validate_arguments(&arguments.to_string())
                .valid,
            valid,
            "{arguments}"
        );
    }
}

/// Bounds a number cannot be written as (infinite, NaN, past 64 bits), or a default written as an
/// expression: the definition is refused, or its two paths agree with its schema.
mod unusual_bounds {
    use super::*;

    /// Probes an infinite length bound.
    #[tool]
    async fn v_inf_max(#[arg(max = f64::INFINITY)] name: String) -> bool {
        let _ = name;
        true
    }

    /// Probes a NaN length bound.
    #[tool]
    async fn v_nan_min(#[arg(min = f64::NAN)] name: String) -> bool {
        let _ = name;
        true
    }

    /// Probes a size bound past 64 bits.
    #[tool]
    async fn v_huge_min(#[arg(min = 1u128 << 70)] tags: Vec<String>) -> bool {
        let _ = tags;
        true
    }

    /// Probes a number bound past 64 bits.
    #[tool]
    async fn v_huge_num(#[arg(min = 1u128 << 70)] n: u64) -> u64 {
        n
    }

    /// Probes a default, written as an expression, that its own length bound refuses.
    #[tool]
    async fn v_expr_default(#[arg(default = String::new(), min = 1)] name: String) -> usize {
        name.len()
    }

    /// Probes a set's size bound (Rust's `Eq` can merge items JSON tells apart).
    #[tool]
    async fn v_path_set(
        #[arg(min = 2)] paths: std::collections::HashSet<std::path::PathBuf>,
    ) -> usize {
        paths.len()
    }

    /// Probes an empty default under a negative `max` (which acts as 0).
    #[tool]
    async fn v_neg_default(#[arg(default = "", max = -1)] text: String) -> usize {
        text.len()
    }

    /// Probes the other string and list types a bound measures.
    #[tool]
    async fn v_other_types(
        #[arg(min = 1, max = 3)] path: std::path::PathBuf,
        #[arg(max = 2)] boxed: Option<Box<[u8]>>,
        #[arg(min = 2)] cow: Option<std::borrow::Cow<'static, str>>,
    ) -> bool {
        let _ = (path, boxed, cow);
        true
    }

    /// The definition is refused (it panics when built), or it agrees with its schema.
    fn refused_or_agrees(definition: fn() -> pleach_core::ToolDefinition, arguments: &Value) {
        if let Ok(definition) = std::panic::catch_unwind(definition) {
            check_tool(&definition, arguments);
        }
    }

    #[test]
    fn are_refused_or_agree_with_the_schema() {
        for arguments in [json!({ "name": "abc" }), json!({ "name": "" })] {
            refused_or_agrees(v_inf_max::definition, &arguments);
            refused_or_agrees(v_nan_min::definition, &arguments);
        }
        check_tool(&v_huge_min::definition(), &json!({ "tags": ["a"] }));
        check_tool(&v_huge_num::definition(), &json!({ "n": 5 }));
        refused_or_agrees(v_expr_default::definition, &json!({}));
        assert!(
            std::panic::catch_unwind(v_expr_default::definition).is_err(),
            "a default its own bounds refuse is refused when the definition is built"
        );
        check_tool(
            &v_path_set::definition(),
            &json!({ "paths": ["a/b", "a//b"] }),
        );
        check_tool(&v_neg_default::definition(), &json!({}));
        check_tool(&v_neg_default::definition(), &json!({ "text": "x" }));
        for arguments in [
            json!({ "path": "a/\u{e9}" }),
            json!({ "path": "" }),
            json!({ "path": "abcd" }),
            json!({ "path": "a", "boxed": [1, 2, 3] }),
            json!({ "path": "a", "boxed": [1] }),
            json!({ "path": "a", "cow": "x" }),
            json!({ "path": "a", "cow": "xy" }),
        ] {
            check_tool(&v_other_types::definition(), &arguments);
        }
        let schema = v_other_types::definition().input_schema().clone();
        assert_eq!(schema["properties"]["path"]["maxLength"], 3);
        assert_eq!(schema["properties"]["boxed"]["maxItems"], 2);
        assert_eq!(schema["properties"]["cow"]["minLength"], 2);
    }
}
