//! A tool in a nested module with `pub(crate)` visibility: registered wherever it is defined,
//! reachable by path like any item, with its handle sharing the fn's visibility.
#![deny(warnings)]

mod catalog {
    pub(crate) mod notes {
        use pleach_core::tool;

        /// Reads a note.
        #[tool]
        pub(crate) async fn read_note(key: String) -> String {
            format!("note {key}")
        }
    }
}

use catalog::notes::read_note;
use pleach_core::{ToolContext, serde_json::json};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert!(pleach_core::tool_registry().contains("read_note"));
    assert_eq!(read_note::NAME, "read_note");
    assert_eq!(
        catalog::notes::read_note::definition().description(),
        "Reads a note."
    );

    let out = read_note::definition()
        .call(r#"{"key":"a"}"#, ToolContext::new("c1"))
        .await;
    assert_eq!(out.unwrap(), json!("note a"));

    assert_eq!(read_note("b".into()).await, "note b");
}
