//! Every return form: plain `T`, `()`, and `Result<T, E>` with `ToolError` (kept as is),
//! `std::io::Error` and `String` (a 1008 failure with the error's text), also through an alias
//! (`std::io::Result<T>`). `T: JsonSchema` gives an output schema; a `Serialize`-only `T` none.
#![deny(warnings)]

use pleach_core::serde::Serialize;
use pleach_core::{ErrorCode, ToolContext, ToolDefinition, ToolError, serde_json::Value, tool};
use std::io;

#[derive(Serialize)]
#[serde(crate = "pleach_core::serde")]
struct Summary {
    words: usize,
}

/// Returns a number.
#[tool]
async fn plain() -> u32 {
    7
}

/// Returns nothing.
#[tool]
async fn unit() {}

/// Returns a type without a schema.
#[tool]
async fn summary() -> Summary {
    Summary { words: 3 }
}

/// Fails with a `ToolError`.
#[tool]
async fn with_tool_error(fail: bool) -> Result<u32, ToolError> {
    if fail {
        return Err(ToolError::failed("quota exhausted").with_detail("shard 3"));
    }
    Ok(1)
}

/// Fails with an I/O error.
#[tool]
async fn with_io_error(fail: bool) -> Result<u32, io::Error> {
    if fail {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "notes.txt not found",
        ));
    }
    Ok(2)
}

/// Fails with a string.
#[tool]
async fn with_string_error(fail: bool) -> Result<u32, String> {
    if fail {
        return Err("no such city".to_owned());
    }
    Ok(3)
}

/// Fails through an alias of `Result`.
#[tool]
async fn with_alias(fail: bool) -> io::Result<String> {
    if fail {
        return Err(io::Error::other("disk full"));
    }
    Ok("written".to_owned())
}

async fn call(definition: ToolDefinition, fail: bool) -> Result<Value, ToolError> {
    let arguments = format!(r#"{{"fail":{fail}}}"#);
    definition
        .call(&arguments, ToolContext::new("c"))
        .await
        .map(|out| out.value().clone())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let plain_tool = plain::definition();
    assert_eq!(
        plain_tool.call("{}", ToolContext::new("c")).await.unwrap(),
        pleach_core::serde_json::json!(7)
    );
    assert_eq!(plain_tool.output_schema().unwrap()["type"], "integer");

    let unit_tool = unit::definition();
    assert_eq!(
        unit_tool.call("{}", ToolContext::new("c")).await.unwrap(),
        Value::Null
    );

    let summary_tool = summary::definition();
    assert_eq!(
        summary_tool
            .call("{}", ToolContext::new("c"))
            .await
            .unwrap()
            .value()["words"],
        3
    );
    assert!(summary_tool.output_schema().is_none());

    assert_eq!(call(with_tool_error::definition(), false).await.unwrap(), 1);
    let kept = call(with_tool_error::definition(), true).await.unwrap_err();
    assert_eq!(
        (kept.code(), kept.message(), kept.detail()),
        (ErrorCode::ToolFailed, "quota exhausted", Some("shard 3"))
    );
    assert!(with_tool_error::definition().output_schema().is_some());

    assert_eq!(call(with_io_error::definition(), false).await.unwrap(), 2);
    let io_error = call(with_io_error::definition(), true).await.unwrap_err();
    assert_eq!(
        (io_error.code(), io_error.message()),
        (ErrorCode::ToolFailed, "notes.txt not found")
    );

    assert_eq!(
        call(with_string_error::definition(), false).await.unwrap(),
        3
    );
    let string_error = call(with_string_error::definition(), true)
        .await
        .unwrap_err();
    assert_eq!(
        (string_error.code(), string_error.message()),
        (ErrorCode::ToolFailed, "no such city")
    );

    assert_eq!(
        call(with_alias::definition(), false).await.unwrap(),
        "written"
    );
    assert_eq!(
        with_alias::definition().output_schema().unwrap()["type"],
        "string"
    );
    let alias_error = call(with_alias::definition(), true).await.unwrap_err();
    assert_eq!(
        (alias_error.code(), alias_error.message()),
        (ErrorCode::ToolFailed, "disk full")
    );

    // Each fn is still an ordinary fn with its own return type.
    assert_eq!(plain().await, 7);
    unit().await;
    assert_eq!(summary().await.words, 3);
    assert_eq!(
        with_string_error(true).await,
        Err("no such city".to_owned())
    );
    assert_eq!(with_alias(false).await.unwrap(), "written");
}
