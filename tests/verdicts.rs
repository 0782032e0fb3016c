//! The fast path and the schema agree. For tools whose parameters are plain data, the runtime reads
//! the arguments text straight into the typed input and runs the generic validator only to explain
//! a refusal (`ToolDefinition` docs). These properties hold it to the JSON Schema 2020-12 verdict
//! of the tool's own input schema on generated arguments: whatever the schema accepts runs, and
//! whatever it refuses fails with 1001 before the tool runs.

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
    let definition = v_probe::definition();
    let schema_verdict = jsonschema::validator_for(definition.input_schema())
        .expect("the generated schema compiles")
        .is_valid(arguments);
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
            "ran on {text} (-> {value}) though the schema refuses it"
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
