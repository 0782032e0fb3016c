//! Tools defined in another crate (the catalog) appear in this binary's registry once the crate is
//! linked, and a registry that lost them is caught by a test instead of vanishing silently.

use pleach_core::{ToolContext, tool_registry};

#[test]
fn the_catalog_is_in_the_registry_once_linked() {
    pleach_tools::link();
    let names = pleach_tools::tool_names();
    assert!(
        names.len() >= 2,
        "the catalog has at least two tools: {names:?}"
    );
    // The one-line assertion users put in their own test suites.
    pleach_core::registry::assert_tools_linked(names);
    assert!(
        tool_registry().size() >= names.len(),
        "the registry is not empty"
    );
    for name in names {
        let tool = tool_registry().definition(name).expect("linked");
        assert!(
            tool.site().file().contains("pleach-tools"),
            "{name} comes from the catalog crate: {}",
            tool.site()
        );
    }
}

#[tokio::test]
async fn catalog_tools_run_through_their_registry_definition() {
    pleach_tools::link();
    let math = tool_registry().definition("math").expect("linked");
    let out = math
        .call(r#"{"expression":"6*7"}"#, ToolContext::new("call_1"))
        .await
        .expect("6*7 is fine");
    assert_eq!(out["result"], 42.0);
    let err = math
        .call(r#"{"expression":"1/0"}"#, ToolContext::new("call_2"))
        .await
        .expect_err("1/0 is not finite");
    assert_eq!(err.code().as_u16(), 1001);
}
