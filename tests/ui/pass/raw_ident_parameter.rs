//! A raw-identifier parameter (`r#type`) is the property `type`: the model never sees `r#`.
#![deny(warnings)]

use pleach_core::{ToolContext, serde_json::json, tool};

/// Creates a record.
#[tool]
async fn create_record(r#type: String, #[arg(default = 1)] r#ref: u32) -> String {
    // Clippy would inline these, but a format string cannot name a raw identifier.
    #![allow(clippy::uninlined_format_args)]
    format!("{type} {ref}", type = r#type, ref = r#ref)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let definition = create_record::definition();
    let properties = definition.input_schema()["properties"].as_object().unwrap();
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["ref", "type"]);
    assert_eq!(definition.input_schema()["required"], json!(["type"]));

    let out = definition
        .call(r#"{"type":"note"}"#, ToolContext::new("c1"))
        .await;
    assert_eq!(out.unwrap(), json!("note 1"));

    assert_eq!(create_record("task".into(), 2).await, "task 2");
}
