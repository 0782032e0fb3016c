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
        tool_registry().len() >= names.len(),
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
    assert_eq!(out.value()["result"], 42.0);
    let err = math
        .call(r#"{"expression":"1/0"}"#, ToolContext::new("call_2"))
        .await
        .expect_err("1/0 is not finite");
    assert_eq!(err.code().as_u16(), 1001);
}

/// A wrong value of a catalog enum is refused naming every value the model may send: `datetime`'s
/// `operation` (variants with doc comments: a `oneOf` of `const`s in the schema) and
/// `text_search`'s `mode`.
#[tokio::test]
async fn a_wrong_enum_value_names_every_allowed_value() {
    pleach_tools::link();
    let datetime = tool_registry().definition("datetime").expect("linked");
    let err = datetime
        .call(r#"{"operation":"bogus"}"#, ToolContext::new("call_1"))
        .await
        .expect_err("no such operation");
    assert_eq!(err.code(), pleach_core::ErrorCode::InputInvalid);
    assert_eq!(
        (err.path(), err.keyword()),
        (Some("/operation"), Some("oneOf"))
    );
    assert_eq!(
        err.message(),
        r#"invalid arguments: at `/operation`: "bogus" is not one of "now", "parse", "format", "add", "subtract" or "difference" (oneOf)"#
    );

    // The same words without running anything.
    let verdict = pleach_core::validate_tool_call(&pleach_core::ToolCall::new(
        "call_2",
        "text_search",
        r#"{"query":"x","text":"y","mode":"glob"}"#,
    ));
    let error = &verdict.errors[0];
    assert_eq!(
        (error.path.as_str(), error.keyword.as_str()),
        ("/mode", "oneOf")
    );
    assert_eq!(
        error.message,
        r#""glob" is not one of "literal", "regex" or "fuzzy""#
    );
}

mod session_tools {
    //! The catalog's tools that read host configuration or session state, through a real
    //! runtime: what `RuntimeBuilder::provide` and `PleachPlugin::provide` give them, and what
    //! each session keeps.

    use std::time::Duration;

    use pleach_core::{
        BatchingStrategy, ErrorCode, PleachPlugin, Runtime, SessionOptions, ToolCall,
    };
    use pleach_tools::fs::FsConfig;
    use pleach_tools::scratchpad::Scratchpad;
    use pleach_tools::shell::ShellConfig;
    use serde_json::{Value, json};

    async fn call(
        session: &pleach_core::Session,
        name: &str,
        args: Value,
    ) -> Result<Value, pleach_core::ToolError> {
        session
            .call(ToolCall::from_value("call_1", name, &args))
            .await
            .outcome
            .map(|out| out.value().clone())
    }

    #[tokio::test]
    async fn scratchpad_notes_belong_to_their_session() {
        pleach_tools::link();
        let runtime = Runtime::builder().build().unwrap();
        let options = || SessionOptions::enabled(["scratchpad", "text_search"]);
        let first = runtime.create_session(options()).unwrap();
        let second = runtime.create_session(options()).unwrap();

        let set = json!({"operation": "set", "key": "log", "value": "ok\nerror: disk full"});
        call(&first, "scratchpad", set).await.unwrap();
        let found = call(
            &first,
            "text_search",
            json!({"query": "disk", "key": "log"}),
        )
        .await
        .unwrap();
        assert_eq!(found["matches"][0]["line"], 2);
        assert_eq!(
            first.state::<Scratchpad>().get("log").as_deref(),
            Some("ok\nerror: disk full")
        );

        let err = call(
            &second,
            "scratchpad",
            json!({"operation": "get", "key": "log"}),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InputInvalid);
        assert!(second.state::<Scratchpad>().keys().is_empty());
    }

    #[tokio::test]
    async fn fs_tools_work_in_the_root_the_host_provides() {
        pleach_tools::link();
        let root = tempfile::tempdir().unwrap();
        let runtime = Runtime::builder()
            .provide(FsConfig::new(root.path()).unwrap())
            .build()
            .unwrap();
        let session = runtime
            .create_session(SessionOptions::enabled(["fs_read", "fs_write", "fs_list"]))
            .unwrap();
        call(
            &session,
            "fs_write",
            json!({"path": "a/b.txt", "content": "hi"}),
        )
        .await
        .unwrap();
        let out = call(&session, "fs_read", json!({"path": "a/b.txt"}))
            .await
            .unwrap();
        assert_eq!(out["content"], "hi");
        let out = call(&session, "fs_list", json!({"path": "a"}))
            .await
            .unwrap();
        assert_eq!(out["entries"][0]["name"], "b.txt");
        let err = call(&session, "fs_read", json!({"path": "../x"}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InputInvalid);

        for name in ["fs_read", "fs_write", "fs_list"] {
            assert_eq!(
                runtime.batching_strategy(name),
                Some(BatchingStrategy::Chunked { key: "path".into() })
            );
        }
    }

    #[tokio::test]
    async fn a_plugin_can_provide_the_configuration() {
        pleach_tools::link();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("x.txt"), "from the plugin's root").unwrap();
        let plugin = PleachPlugin::new("files").provide(FsConfig::new(root.path()).unwrap());
        let runtime = Runtime::builder().plugin(plugin).build().unwrap();
        let session = runtime
            .create_session(SessionOptions::enabled(["fs_read"]))
            .unwrap();
        let out = call(&session, "fs_read", json!({"path": "x.txt"}))
            .await
            .unwrap();
        assert_eq!(out["content"], "from the plugin's root");

        let bare = Runtime::builder().build().unwrap();
        let session = bare
            .create_session(SessionOptions::enabled(["fs_read"]))
            .unwrap();
        let err = call(&session, "fs_read", json!({"path": "x.txt"}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(!err.is_recoverable());
    }

    /// The runtime's own timeout fires the call's signal; `shell_exec` kills the program's whole
    /// group, grandchildren included, and the call ends with 1010.
    #[tokio::test]
    async fn a_runtime_timeout_stops_a_program_and_its_children() {
        pleach_tools::link();
        let root = tempfile::tempdir().unwrap();
        let config = ShellConfig::new(root.path())
            .unwrap()
            .allow_program("sh")
            .unwrap();
        let runtime = Runtime::builder()
            .provide(config)
            // Long enough for the script to write its pid on a loaded machine; far under its 30 s.
            .tool_timeout("shell_exec", Duration::from_secs(2))
            .build()
            .unwrap();
        let session = runtime
            .create_session(SessionOptions::enabled(["shell_exec"]))
            .unwrap();
        let script = "sleep 30 & echo $! > pid; sleep 30";
        let started = std::time::Instant::now();
        let err = call(
            &session,
            "shell_exec",
            json!({"program": "sh", "args": ["-c", script]}),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );

        let pid: i32 = std::fs::read_to_string(root.path().join("pid"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .expect("the script wrote its grandchild's pid within the timeout");
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
                !state.is_some_and(|rest| rest.starts_with('Z') || rest.starts_with('X'))
            })
        };
        for _ in 0..250 {
            if !alive() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the grandchild {pid} outlived the call");
    }
}
