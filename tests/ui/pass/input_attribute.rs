//! `#[input]` on a type derives `Deserialize` and `JsonSchema` through pleach-core's re-exports:
//! nested types, a plain enum, documented variants, an enum with data, the type's own serde
//! attributes, a `Serialize` the user adds (served by the same `#[serde(crate = …)]`), and a
//! derive and crate attribute the user already wrote (not added twice: a second `Deserialize`
//! impl would not compile). `#[input]` on the tool's parameter, in the same file under one
//! `use pleach_core::*;`, still marks the whole input. This package names pleach-core and tokio
//! alone, so no `serde` or `schemars` of the user's is in reach.
#![deny(warnings)]

use pleach_core::serde::{Deserialize, Serialize};
#[allow(clippy::wildcard_imports)] // the one glob import is part of what this case shows
use pleach_core::*;

/// A point on the map.
#[input]
#[derive(Serialize)]
struct Point {
    x: i64,
    y: i64,
}

/// How to travel.
#[input]
#[serde(rename_all = "snake_case")]
#[derive(Serialize)]
enum Mode {
    /// On foot.
    Walk,
    /// By bicycle.
    Cycle,
}

/// What to avoid.
#[input]
#[derive(Serialize)]
enum Avoid {
    Tolls,
    Ferries,
}

/// Where to stop on the way.
#[input]
#[derive(Serialize)]
enum Stop {
    /// A named place.
    Named(String),
    /// A point.
    At { point: Point },
}

/// Derived and pointed at the re-export by hand: `#[input]` adds only `JsonSchema` and its
/// crate attribute.
#[input]
#[derive(Deserialize, Serialize)]
#[serde(crate = "pleach_core::serde", deny_unknown_fields)]
struct Limits {
    /// Kilometres, at most.
    max_km: u32,
}

/// A route request.
#[input]
#[derive(Serialize)]
struct Route {
    /// Where to start.
    from: Point,
    /// Where to end.
    to: Point,
    /// How to travel; on foot when absent.
    mode: Option<Mode>,
    /// What to avoid.
    #[serde(default)]
    avoid: Vec<Avoid>,
    /// Stops on the way.
    #[serde(default)]
    stops: Vec<Stop>,
    limits: Option<Limits>,
}

/// Plans a route: here, gives the request back as read.
#[tool]
async fn plan_route(#[input] route: Route) -> Route {
    route
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let definition = plan_route::definition();
    let schema = definition.input_schema();
    assert_eq!(schema["required"], serde_json::json!(["from", "to"]));
    assert_eq!(
        schema["$defs"]["Avoid"]["enum"],
        serde_json::json!(["Tolls", "Ferries"])
    );
    assert_eq!(schema["$defs"]["Mode"]["oneOf"][1]["const"], "cycle");
    assert_eq!(schema["$defs"]["Limits"]["additionalProperties"], false);

    let request = serde_json::json!({
        "from": { "x": 0, "y": 0 },
        "to": { "x": 3, "y": 4 },
        "mode": "cycle",
        "avoid": ["Tolls"],
        "stops": [{ "Named": "Inn" }, { "At": { "point": { "x": 1, "y": 1 } } }],
        "limits": { "max_km": 9 },
    });
    let out = definition
        .call(&request.to_string(), ToolContext::new("c1"))
        .await
        .unwrap();
    assert_eq!(out, request);

    let refused = definition
        .call(
            r#"{"from":{"x":0,"y":0},"to":{"x":1,"y":1},"mode":"fly"}"#,
            ToolContext::new("c2"),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.path(), Some("/mode"));
}
