//! Each subcommand of the built `pleach` binary, run as a user runs it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1 as otlp_metrics;
use opentelemetry_proto::tonic::collector::trace::v1 as otlp_traces;
use serde_json::{Value, json};

#[path = "cli/http.rs"]
mod http;

fn pleach(args: &[&str]) -> Output {
    pleach_with_stdin(args, "")
}

fn pleach_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())
        .expect("stdin takes the input");
    child.wait_with_output().expect("the binary finishes")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

fn ndjson(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// The events of one type.
fn of_type<'a>(events: &'a [Value], event_type: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == event_type).collect()
}

/// `pleach replay --provider PROVIDER FILE --json`.
fn replay_json(provider: &str, file: &Path) -> Output {
    pleach(&[
        "replay",
        "--provider",
        provider,
        file.to_str().unwrap(),
        "--json",
    ])
}

fn fixture(folder: &str, prefix: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/provider-streams")
        .join(folder);
    std::fs::read_dir(&dir)
        .expect("the fixtures are there")
        .map(|entry| entry.expect("readable").path())
        .find(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .unwrap_or_else(|| panic!("no fixture {folder}/{prefix}*"))
}

#[test]
fn demo_runs_the_scripted_conversation_fast_with_one_clear_failure() {
    let started = Instant::now();
    let output = pleach(&["demo"]);
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("scripted model"), "{text}");
    for tool in [
        "math",
        "unit_convert",
        "datetime",
        "parse_structured",
        "scratchpad",
        "text_search",
    ] {
        assert!(text.contains(&format!("✓ {tool} ")), "{tool}: {text}");
    }
    assert_eq!(text.matches("✗ ").count(), 1, "{text}");
    assert!(
        text.contains("✗ unit_convert") && text.contains("error 1001"),
        "{text}"
    );
    // Not a terminal: no spinner, no colour codes.
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(took < Duration::from_secs(2), "the demo took {took:?}");
}

#[test]
fn demo_json_is_the_event_stream() {
    let output = pleach(&["demo", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let events = ndjson(&output);
    let started = of_type(&events, "tool.started").len();
    let completed = of_type(&events, "tool.completed").len();
    let failed: Vec<&Value> = of_type(&events, "tool.failed");
    assert_eq!(started, 9);
    assert_eq!(completed + failed.len(), 9, "every call ends once");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["error"]["code"], 1001);
    let speed = events
        .iter()
        .find(|e| {
            e["type"] == "tool.completed" && e["toolCall"]["args"]["expression"] == "42 / 2.25"
        })
        .expect("the speed is computed");
    assert!((speed["result"]["result"].as_f64().unwrap() - 18.666_666).abs() < 1e-3);
}

#[test]
fn list_gives_name_tier_batching_and_description() {
    let output = pleach(&["list", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let rows: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let rows = rows.as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(row("math")["batching"], "parallel");
    assert_eq!(row("math")["tier"], Value::Null);
    assert_eq!(row("fs_write")["tier"], "standard");
    // A read may run again after a durable worker's death; a write may not.
    assert_eq!(row("math")["idempotent"], true);
    assert_eq!(row("fs_write")["idempotent"], false);
    assert_eq!(row("scratchpad")["batching"], "chunked(key)");
    assert!(
        row("shell_exec")["description"]
            .as_str()
            .unwrap()
            .contains("program")
    );
    assert!(
        rows.iter().any(|r| r["name"] == "url_fetch"),
        "every feature is on"
    );

    // The catalog's reads and pure computations may run again; whatever changes something may
    // not (a lost call of it ends with 1018).
    for safe in [
        "fs_read",
        "fs_list",
        "text_search",
        "url_fetch",
        "datetime",
        "unit_convert",
        "parse_structured",
    ] {
        assert_eq!(row(safe)["idempotent"], true, "{safe}");
    }
    for unsafe_twice in ["shell_exec", "http_request", "scratchpad"] {
        assert_eq!(row(unsafe_twice)["idempotent"], false, "{unsafe_twice}");
    }

    let table = stdout(&pleach(&["list"]));
    assert!(table.starts_with("NAME"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("fs_write") && l.contains("standard"))
    );
}

#[test]
fn schema_prints_each_provider_format() {
    let own: Value = serde_json::from_str(&stdout(&pleach(&["schema", "math"]))).unwrap();
    assert_eq!(own["inputSchema"]["required"], json!(["expression"]));
    let openai: Value = serde_json::from_str(&stdout(&pleach(&[
        "schema",
        "math",
        "--provider",
        "openai",
    ])))
    .unwrap();
    assert_eq!(openai["type"], "function");
    assert_eq!(openai["function"]["name"], "math");
    let strict: Value = serde_json::from_str(&stdout(&pleach(&[
        "schema",
        "math",
        "--provider",
        "openai-strict",
    ])))
    .unwrap();
    assert_eq!(strict["function"]["strict"], true);
    let anthropic: Value = serde_json::from_str(&stdout(&pleach(&[
        "schema",
        "math",
        "--provider",
        "anthropic",
    ])))
    .unwrap();
    assert_eq!(anthropic["input_schema"]["type"], "object");
    let gemini: Value = serde_json::from_str(&stdout(&pleach(&[
        "schema",
        "math",
        "--provider",
        "gemini",
    ])))
    .unwrap();
    assert_eq!(gemini["name"], "math");
    let mcp: Value = serde_json::from_str(&stdout(&pleach(&[
        "schema",
        "fs_write",
        "--provider",
        "mcp",
    ])))
    .unwrap();
    assert_eq!(mcp["annotations"]["destructiveHint"], true);
    assert!(mcp["inputSchema"].is_object());

    let all: Value = serde_json::from_str(&stdout(&pleach(&["schema", "--all"]))).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 12);

    let unknown = pleach(&["schema", "maths"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no tool named `maths`"));
}

/// The definitions and calls the validate tests share, with an independent 2020-12 verdict.
const TOOLS: &str = r#"[
  {"type": "function", "function": {"name": "search", "description": "Searches.", "parameters": {
    "type": "object",
    "properties": {
      "query": {"type": "string", "minLength": 1},
      "limit": {"type": "integer", "minimum": 1, "maximum": 50},
      "filters": {"type": "object", "properties": {"lang": {"enum": ["en", "de"]}}, "additionalProperties": false},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}
    },
    "required": ["query"],
    "additionalProperties": false
  }}},
  {"name": "ping", "parameters": {"type": "object", "properties": {}}}
]"#;

const CALLS: &[&str] = &[
    r#"{"name": "search", "arguments": {"query": "rust"}}"#,
    r#"{"name": "search", "arguments": "{\"query\": \"rust\", \"limit\": 10}"}"#,
    r#"{"name": "search", "arguments": {"query": "", "limit": 80}}"#,
    r#"{"name": "search", "arguments": {"limit": 5}}"#,
    r#"{"name": "search", "arguments": {"query": "x", "filters": {"lang": "fr"}}}"#,
    r#"{"name": "search", "arguments": {"query": "x", "tags": ["a", 2, "c", "d"]}}"#,
    r#"{"name": "search", "arguments": {"query": "x", "extra": true}}"#,
    r#"{"name": "search", "arguments": {"query": 7, "limit": "ten"}}"#,
    r#"{"name": "ping"}"#,
    r#"{"name": "ping", "arguments": {"anything": [1, 2]}}"#,
];

/// `--provider` is spelled the same by `schema`, `replay` and `chat`; the spellings from before
/// (`openai`, `openai-strict`, `anthropic-strict`) still work and mean the same.
#[test]
fn provider_spellings_are_one_set_and_the_old_ones_still_work() {
    let printed = |args: &[&str]| -> Value {
        let mut all = vec!["schema", "math"];
        all.extend(args);
        let output = pleach(&all);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        serde_json::from_str(&stdout(&output)).unwrap()
    };
    let chat = printed(&["--provider", "openai-chat"]);
    assert_eq!(chat["function"]["strict"], false);
    assert_eq!(printed(&["--provider", "openai"]), chat);
    let strict = printed(&["--provider", "openai-chat", "--strict"]);
    assert_eq!(strict["function"]["strict"], true);
    assert_eq!(printed(&["--provider", "openai-strict"]), strict);
    let anthropic_strict = printed(&["--provider", "anthropic", "--strict"]);
    assert_eq!(anthropic_strict["strict"], true);
    assert_eq!(
        printed(&["--provider", "anthropic-strict"]),
        anthropic_strict
    );
    let responses = printed(&["--provider", "openai-responses", "--strict"]);
    assert_eq!(responses["name"], "math");
    assert_eq!(responses["strict"], true);

    // A format without strict mode, `--strict` without a format: the user's mistake, exit 2.
    for args in [
        &["schema", "math", "--provider", "gemini", "--strict"][..],
        &["schema", "math", "--provider", "mcp", "--strict"],
        &["schema", "math", "--strict"],
    ] {
        let output = pleach(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(stdout(&output), "", "{args:?}");
    }
    assert!(
        stderr(&pleach(&[
            "schema",
            "math",
            "--provider",
            "gemini",
            "--strict"
        ]))
        .contains("`gemini` has no strict mode")
    );

    // The same names in every command's help; the old ones are not advertised.
    for command in ["schema", "replay", "chat"] {
        let help = stdout(&pleach(&[command, "--help"]));
        assert!(help.contains("openai-chat"), "{command}: {help}");
        assert!(help.contains("anthropic"), "{command}: {help}");
        assert!(!help.contains("openai-strict"), "{command}: {help}");
    }
    // `chat` has a client for each; one whose key is missing is refused before any request.
    let gemini_chat = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args([
            "chat",
            "--provider",
            "gemini",
            "--base-url",
            "http://127.0.0.1:9",
        ])
        .args(["--model", "m", "--message", "hi"])
        .env_remove("GEMINI_API_KEY")
        .output()
        .expect("the binary runs");
    assert_eq!(gemini_chat.status.code(), Some(2));
    assert!(stderr(&gemini_chat).contains("GEMINI_API_KEY"));
    assert_eq!(stdout(&gemini_chat), "", "no turn was started");
}

/// Two tools in OpenAI's function format: one every provider can take, one (a map of labels)
/// strict mode and Gemini cannot express.
const TWO_TOOLS: &str = r#"[
  {"type": "function", "function": {"name": "search", "description": "Searches the corpus.",
    "parameters": {"type": "object",
      "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
      "required": ["query"]}}},
  {"type": "function", "function": {"name": "tag", "description": "Tags a document.",
    "parameters": {"type": "object",
      "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
      "required": ["labels"]}}}
]"#;

#[test]
fn schema_converts_a_file_of_tool_definitions_for_each_provider() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(&path, TWO_TOOLS).unwrap();
    let defs = path.to_str().unwrap();
    let schema = |args: &[&str]| {
        let mut all = vec!["schema", "--tools", defs];
        all.extend(args);
        pleach(&all)
    };

    // Both tools, in the file's order, in each format that can express them.
    for (provider, name_at) in [
        ("openai", "/function/name"),
        ("anthropic", "/name"),
        ("mcp", "/name"),
    ] {
        let output = schema(&["--provider", provider]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{provider}: {}",
            stderr(&output)
        );
        let tools: Value = serde_json::from_str(&stdout(&output)).unwrap();
        let names: Vec<&Value> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool.pointer(name_at).unwrap())
            .collect();
        assert_eq!(names, [&json!("search"), &json!("tag")], "{provider}");
    }
    let anthropic: Value =
        serde_json::from_str(&stdout(&schema(&["--provider", "anthropic"]))).unwrap();
    let original: Value = serde_json::from_str(TWO_TOOLS).unwrap();
    assert_eq!(
        anthropic[1]["input_schema"],
        original[1]["function"]["parameters"]
    );

    // A NAME picks one tool: one object, converted.
    let output = schema(&["search", "--provider", "openai-strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let search: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(search["function"]["strict"], true);
    assert_eq!(
        search["function"]["parameters"]["required"],
        json!(["limit", "query"])
    );
    assert_eq!(
        search["function"]["parameters"]["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );

    // A tool the provider's format cannot express: exit 1, each problem on stderr with its
    // tool and path, nothing on stdout (not even the tool that converted).
    for provider in ["openai-strict", "gemini"] {
        let output = schema(&["--provider", provider]);
        assert_eq!(output.status.code(), Some(1), "{provider}");
        assert_eq!(stdout(&output), "", "{provider}");
        let problems = stderr(&output);
        assert!(
            problems
                .lines()
                .all(|line| line.starts_with("error: tag: at `/properties/labels")),
            "{provider}: {problems}"
        );
        assert!(!problems.is_empty(), "{provider}");
    }

    // The user's mistakes: exit 2.
    let unknown = schema(&["fetch", "--provider", "openai"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no tool named `fetch`")
            && stderr(&unknown).contains("search, tag"),
        "{}",
        stderr(&unknown)
    );
    let missing = pleach(&["schema", "--tools", "no-such-file.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no-such-file.json"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn validate_agrees_with_json_schema_2020_12_and_gives_paths() {
    let dir = tempfile::tempdir().unwrap();
    let tools_path = dir.path().join("tools.json");
    std::fs::write(&tools_path, TOOLS).unwrap();
    let calls_path = dir.path().join("calls.jsonl");
    std::fs::write(&calls_path, CALLS.join("\n")).unwrap();
    let output = pleach(&[
        "validate",
        "--tools",
        tools_path.to_str().unwrap(),
        "--calls",
        calls_path.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "some calls are invalid");
    let verdicts = ndjson(&output);
    assert_eq!(verdicts.len(), CALLS.len(), "one verdict a call, in order");

    let tools: Value = serde_json::from_str(TOOLS).unwrap();
    let schema_of = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.get("function").unwrap_or(t))
            .find(|f| f["name"] == name)
            .unwrap()["parameters"]
            .clone()
    };
    for (line, verdict) in CALLS.iter().zip(&verdicts) {
        let call: Value = serde_json::from_str(line).unwrap();
        let arguments = match &call["arguments"] {
            Value::String(text) => serde_json::from_str(text).unwrap(),
            Value::Null => json!({}),
            other => other.clone(),
        };
        let validator = jsonschema::draft202012::new(&schema_of(call["name"].as_str().unwrap()))
            .expect("the schema compiles");
        let expected = validator.is_valid(&arguments);
        assert_eq!(verdict["valid"], expected, "{line}: {verdict}");
        if !expected {
            let errors = verdict["errors"].as_array().unwrap();
            assert!(!errors.is_empty(), "{line}");
            let reference: Vec<String> = validator
                .iter_errors(&arguments)
                .map(|e| e.instance_path().to_string())
                .collect();
            for error in errors {
                let path = error["path"].as_str().expect("each error has a path");
                assert!(error["keyword"].is_string() && error["message"].is_string());
                assert!(
                    reference.contains(&path.to_owned()),
                    "{line}: {path} not in {reference:?}"
                );
            }
        }
    }
    assert!(
        verdicts[2]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "/query")
    );
    assert!(
        verdicts[2]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "/limit")
    );
    assert_eq!(verdicts[4]["errors"][0]["path"], "/filters/lang");
    assert!(
        verdicts[5]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "/tags/1")
    );
}

#[test]
fn validate_reads_stdin_and_defaults_to_the_registry() {
    let input = concat!(
        r#"{"name": "math", "arguments": {"expression": "6*7"}}"#,
        "\n\n",
        r#"{"name": "math", "arguments": {"expression": 6}}"#,
        "\n",
        r#"{"name": "nope", "arguments": {}}"#,
        "\n",
        r#"{"name": "math", "arguments": "{not json"}"#,
        "\n",
    );
    let output = pleach_with_stdin(&["validate"], input);
    assert_eq!(output.status.code(), Some(1));
    let verdicts = ndjson(&output);
    assert_eq!(verdicts.len(), 4);
    assert_eq!(verdicts[0], json!({ "valid": true, "errors": [] }));
    assert_eq!(verdicts[1]["errors"][0]["path"], "/expression");
    assert_eq!(verdicts[1]["errors"][0]["keyword"], "type");
    assert_eq!(verdicts[2]["errors"][0]["keyword"], "unknownTool");
    assert_eq!(verdicts[3]["errors"][0]["keyword"], "json");

    let all_good = pleach_with_stdin(
        &["validate"],
        r#"{"name": "math", "arguments": {"expression": "1"}}"#,
    );
    assert_eq!(all_good.status.code(), Some(0));
}

#[test]
fn validate_refuses_unreadable_input_with_exit_2() {
    let bad_line = pleach_with_stdin(&["validate"], "{oops\n");
    assert_eq!(bad_line.status.code(), Some(2));
    assert!(
        stderr(&bad_line).contains("stdin line 1"),
        "{}",
        stderr(&bad_line)
    );

    let missing = pleach(&["validate", "--tools", "/no/such/tools.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read `/no/such/tools.json`"));

    let dir = tempfile::tempdir().unwrap();
    let not_a_list = dir.path().join("tools.json");
    std::fs::write(&not_a_list, r#"{"name": "x"}"#).unwrap();
    let output = pleach(&["validate", "--tools", not_a_list.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("a JSON list"));
}

#[test]
fn validate_reads_definitions_in_every_format_schema_prints() {
    let dir = tempfile::tempdir().unwrap();
    // The second call sends `null` for an optional property whose schema takes it: valid in every
    // format (Gemini's OpenAPI schema says so with `nullable`, which JSON Schema does not have).
    let call = concat!(
        r#"{"name": "math", "arguments": {"expression": 42}}"#,
        "\n",
        r#"{"name": "fs_read", "arguments": {"path": "notes.md", "offset": null}}"#,
    );
    for provider in [
        None,
        Some("openai"),
        Some("anthropic"),
        Some("gemini"),
        Some("mcp"),
    ] {
        let mut args = vec!["schema", "--all"];
        args.extend(provider.iter().flat_map(|p| ["--provider", p]));
        let definitions = pleach(&args);
        assert_eq!(definitions.status.code(), Some(0), "{provider:?}");
        let path = dir.path().join("defs.json");
        std::fs::write(&path, &definitions.stdout).unwrap();
        let output = pleach_with_stdin(&["validate", "--tools", path.to_str().unwrap()], call);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{provider:?}: {}",
            stdout(&output)
        );
        let verdict = &ndjson(&output)[0];
        assert_eq!(verdict["errors"][0]["path"], "/expression", "{provider:?}");
        assert_eq!(verdict["errors"][0]["keyword"], "type", "{provider:?}");
        assert_eq!(
            ndjson(&output)[1]["valid"],
            true,
            "{provider:?}: {}",
            stdout(&output)
        );
    }

    // No schema key: a tool that takes no arguments. Two: refused, not guessed.
    let path = dir.path().join("defs.json");
    std::fs::write(&path, r#"[{"name": "ping"}]"#).unwrap();
    let tools = path.to_str().unwrap();
    let output = pleach_with_stdin(
        &["validate", "--tools", tools],
        "{\"name\": \"ping\"}\n{\"name\": \"ping\", \"arguments\": {\"x\": 1}}\n",
    );
    let verdicts = ndjson(&output);
    assert_eq!(verdicts[0]["valid"], true);
    assert_eq!(verdicts[1]["errors"][0]["keyword"], "additionalProperties");
    std::fs::write(
        &path,
        r#"[{"name": "ping", "parameters": {"type": "object"}, "input_schema": {"type": "object"}}]"#,
    )
    .unwrap();
    let output = pleach_with_stdin(&["validate", "--tools", tools], "");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("more than one input schema"),
        "{}",
        stderr(&output)
    );

    // A bad name is reported without pleach's own source location.
    std::fs::write(&path, r#"[{"name": "my.tool"}]"#).unwrap();
    let output = pleach_with_stdin(&["validate", "--tools", tools], "");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("tool name `my.tool` is invalid"));
    assert!(!stderr(&output).contains(".rs:"), "{}", stderr(&output));
}

#[test]
fn validate_sees_a_repeated_key_in_object_arguments() {
    let output = pleach_with_stdin(
        &["validate"],
        r#"{"id": "call_1", "name": "math", "arguments": {"expression": "2", "expression": "1"}}"#,
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(ndjson(&output)[0]["errors"][0]["keyword"], "duplicateKey");
}

#[cfg(target_os = "linux")]
#[test]
fn validate_reports_a_failed_write_with_exit_2() {
    let out = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .arg("validate")
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"name": "math", "arguments": {"expression": "1"}}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot write to stdout"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn call_runs_one_call_through_the_runtime() {
    let output = pleach(&[
        "call",
        "math",
        "--args",
        r#"{"expression":"6*7"}"#,
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let events = ndjson(&output);
    assert_eq!(events[0]["type"], "tool.started");
    assert_eq!(events[1]["type"], "tool.completed");
    assert_eq!(events[1]["result"]["result"], 42.0);

    let human = pleach(&["call", "math", "--args", r#"{"expression":"6*7"}"#]);
    assert!(stdout(&human).contains("✓ math"), "{}", stdout(&human));

    let failed = pleach(&["call", "math", "--args", r#"{"expression":6}"#, "--json"]);
    assert_eq!(failed.status.code(), Some(1), "a failed call exits 1");
    assert_eq!(ndjson(&failed)[1]["error"]["code"], 1001);

    let bad_json = pleach(&["call", "math", "--args", "{oops"]);
    assert_eq!(bad_json.status.code(), Some(2));
    assert!(stderr(&bad_json).contains("`--args` is not JSON"));

    // JSON nested past `serde_json`'s 128 levels is still JSON: the runtime refuses it as too
    // deep (1006), a failed call, not a usage error.
    let deep = format!("{{\"expression\":{}1{}}}", "[".repeat(200), "]".repeat(200));
    let too_deep = pleach(&["call", "math", "--args", &deep, "--json"]);
    assert_eq!(too_deep.status.code(), Some(1), "{}", stderr(&too_deep));
    assert_eq!(ndjson(&too_deep)[1]["error"]["code"], 1006);
}

#[test]
fn call_reads_a_strict_mode_null_as_an_absent_field() {
    // What OpenAI strict mode sends for the defaulted `time_zone` (issue 20): the default, UTC,
    // applies.
    let output = pleach(&[
        "call",
        "datetime",
        "--args",
        r#"{"operation":"parse","datetime":"2024-03-10 14:30","time_zone":null,"span":null,"other":null,"format":null}"#,
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let events = ndjson(&output);
    assert_eq!(events[1]["type"], "tool.completed", "{events:?}");
    assert_eq!(
        events[1]["result"]["datetime"], "2024-03-10T14:30:00+00:00",
        "{events:?}"
    );
}

#[test]
fn an_image_read_by_a_call_shows_as_one_line_and_its_size_in_ndjson() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&1280u32.to_be_bytes());
    png.extend_from_slice(&720u32.to_be_bytes());
    png.resize(84 * 1024, 0);
    std::fs::write(dir.path().join("shot.png"), &png).unwrap();
    let root = dir.path().to_str().unwrap();
    let args = [
        "call",
        "fs_read",
        "--args",
        r#"{"path":"shot.png"}"#,
        "--root",
        root,
    ];

    let human = pleach(&args);
    assert_eq!(human.status.code(), Some(0), "{}", stdout(&human));
    assert!(
        stdout(&human)
            .lines()
            .any(|line| line.trim() == "image/png 1280×720 84 KB"),
        "{}",
        stdout(&human)
    );

    let json = pleach(&[&args[..], &["--json"]].concat());
    let completed = &ndjson(&json)[1];
    assert_eq!(
        completed["content"],
        serde_json::json!([{ "type": "image", "mimeType": "image/png", "size": 84 * 1024 }])
    );
    assert_eq!(completed["result"]["mime_type"], "image/png");
}

#[test]
fn call_maps_root_allow_program_and_timeout_to_the_tools_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hi there").unwrap();
    let root = dir.path().to_str().unwrap();

    let read = pleach(&[
        "call",
        "fs_read",
        "--args",
        r#"{"path":"hello.txt"}"#,
        "--root",
        root,
        "--json",
    ]);
    assert_eq!(read.status.code(), Some(0), "{}", stdout(&read));
    assert_eq!(ndjson(&read)[1]["result"]["content"], "hi there");

    // Without --root the fs tools have no configuration: 1008 with what to configure.
    let unconfigured = pleach(&[
        "call",
        "fs_read",
        "--args",
        r#"{"path":"hello.txt"}"#,
        "--json",
    ]);
    assert_eq!(unconfigured.status.code(), Some(1));
    assert_eq!(ndjson(&unconfigured)[1]["error"]["code"], 1008);

    let ls = pleach(&[
        "call",
        "shell_exec",
        "--args",
        r#"{"program":"ls"}"#,
        "--root",
        root,
        "--allow-program",
        "ls",
        "--timeout",
        "5s",
        "--json",
    ]);
    assert_eq!(ls.status.code(), Some(0), "{}", stdout(&ls));
    assert!(
        ndjson(&ls)[1]["result"]["stdout"]
            .as_str()
            .unwrap()
            .contains("hello.txt")
    );

    let refused = pleach(&[
        "call",
        "shell_exec",
        "--args",
        r#"{"program":"ls"}"#,
        "--root",
        root,
        "--json",
    ]);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "ls is not allowed without --allow-program"
    );

    let needs_root = pleach(&["call", "shell_exec", "--allow-program", "ls"]);
    assert_eq!(
        needs_root.status.code(),
        Some(2),
        "--allow-program needs --root"
    );
}

#[test]
fn replay_fails_unknown_tools_with_1003_carrying_the_assembled_arguments() {
    let file = fixture("openai-chat", "openai-python-f82268f2");
    let output = replay_json("openai-chat", &file);
    assert_eq!(output.status.code(), Some(1), "the calls failed");
    let events = ndjson(&output);
    let failed: Vec<&Value> = of_type(&events, "tool.failed");
    assert_eq!(failed.len(), 2);
    for event in &failed {
        assert_eq!(event["error"]["code"], 1003);
    }
    assert_eq!(failed[0]["toolCall"]["args"]["city"], "Edinburgh");
    assert_eq!(failed[1]["toolCall"]["args"]["ticker"], "AAPL");
    let started = of_type(&events, "tool.started").len();
    assert_eq!(started, 2, "one tool.started a call");
    assert!(
        events.iter().any(|e| e["type"] == "tool.delta"),
        "argument fragments are streamed"
    );
}

#[test]
fn replay_fails_a_truncated_call_with_1007() {
    let file = fixture("anthropic", "anthropic-sdk-python-incomplete_partial_json");
    let output = replay_json("anthropic", &file);
    assert_eq!(output.status.code(), Some(1));
    let events = ndjson(&output);
    let failed: Vec<&Value> = of_type(&events, "tool.failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["error"]["code"], 1007);
    assert_eq!(failed[0]["toolCall"]["name"], "make_file");
}

#[test]
fn replay_refuses_a_recording_it_cannot_read_and_fails_on_a_provider_error() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    // Not this provider's stream, or nothing at all: exit 2 and a reason, in either output mode.
    let not_json = write("bad.sse", b"data: {not json}\n\n");
    let empty = write("empty.sse", b"");
    let other = fixture("openai-chat", "openai-python-");
    for (provider, file) in [
        ("openai-chat", &not_json),
        ("openai-chat", &empty),
        ("anthropic", &other),
    ] {
        let output = replay_json(provider, file);
        assert_eq!(output.status.code(), Some(2), "{provider} {file:?}");
        assert!(output.stdout.is_empty());
        assert!(
            stderr(&output).starts_with("error: "),
            "{}",
            stderr(&output)
        );
    }

    // A provider's error in the middle of a call: the call fails (1007), the error is on stderr,
    // the replay exits 1.
    let overloaded = write(
        "overloaded.sse",
        concat!(
            "event: content_block_start\n",
            r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"math","input":{}}}"#,
            "\n\nevent: content_block_delta\n",
            r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"expression\": \"1"}}"#,
            "\n\nevent: error\n",
            r#"data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            "\n\n",
        )
        .as_bytes(),
    );
    let output = replay_json("anthropic", &overloaded);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        of_type(&ndjson(&output), "tool.failed")[0]["error"]["code"],
        1007
    );
    assert!(
        stderr(&output).contains("Overloaded"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn replay_reads_json_lines_and_runs_known_tools() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("math.chunks.txt");
    let lines = [
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "math", "arguments": "{\"expres"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "sion\":\"6*7\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&stream, text.join("\n")).unwrap();
    let output = replay_json("openai-chat", &stream);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let events = ndjson(&output);
    let done = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(done["result"]["result"], 42.0);

    let human = pleach(&[
        "replay",
        "--provider",
        "openai-chat",
        stream.to_str().unwrap(),
    ]);
    assert!(
        stdout(&human).contains(r#"✓ math {"expression":"6*7"}"#),
        "{}",
        stdout(&human)
    );
}

#[test]
fn mcp_answers_a_handshake_and_a_call_on_stdio() {
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "math", "arguments": {"expression": "6*7"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "math", "arguments": {"expression": 6}}}),
    ];
    let text: Vec<String> = input.iter().map(Value::to_string).collect();
    let output = pleach_with_stdin(&["mcp"], &(text.join("\n") + "\n"));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let replies = ndjson(&output);
    let reply = |id: u64| replies.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(reply(1)["result"]["serverInfo"]["name"], "pleach");
    assert_eq!(reply(2)["result"]["structuredContent"]["result"], 42.0);
    // `resultType` is 2026-07-28's: a client of 2025-06-18 gets the shape it knows.
    assert_eq!(reply(2)["result"].get("resultType"), None, "{}", reply(2));
    assert_eq!(reply(3)["result"]["isError"], true);
    assert!(
        reply(3)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("error 1001:")
    );
}

/// MCP's stdio shutdown is the client closing stdin; a client that closes it before its first
/// request (or after lines rmcp drops as unreadable) has simply gone: exit 0, nothing on stderr,
/// as the official SDKs' servers do, rather than a failed handshake.
#[test]
fn mcp_exits_0_when_the_client_closes_stdin_before_any_request() {
    for input in ["", "not json\n", "\u{ff}\n"] {
        let output = pleach_with_stdin(&["mcp"], input);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{input:?}: {}",
            stderr(&output)
        );
        assert_eq!(stderr(&output), "", "{input:?}");
        assert_eq!(stdout(&output), "", "{input:?}");
    }
}

/// A client of MCP 2026-07-28 (the Python SDK's default `Client`): `server/discover`, then each
/// request with its `_meta` envelope. Every result carries `resultType`, which that version
/// requires (the Python SDK refuses a `tools/call` result without it).
#[test]
fn mcp_answers_a_2026_07_28_client_with_a_result_type_on_every_result() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "math", "arguments": {"expression": "6*7"}, "_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "math", "arguments": {"expression": 6}, "_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}, "_meta": meta}}),
    ];
    let text: Vec<String> = input.iter().map(Value::to_string).collect();
    let output = pleach_with_stdin(&["mcp"], &(text.join("\n") + "\n"));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let replies = ndjson(&output);
    let reply = |id: u64| replies.iter().find(|r| r["id"] == id).unwrap().clone();
    assert!(
        reply(1)["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{}",
        reply(1)
    );
    for id in 1..=4 {
        assert_eq!(
            reply(id)["result"]["resultType"],
            "complete",
            "{}",
            reply(id)
        );
    }
    assert_eq!(reply(3)["result"]["structuredContent"]["result"], 42.0);
    assert_eq!(reply(4)["result"]["isError"], true);
    // The client's mistake is the client's to see: no warning on the server's stderr.
    assert_eq!(reply(5)["error"]["code"], -32602, "{}", reply(5));
    assert_eq!(stderr(&output), "");
}

/// Whether `pid` is a live process (a zombie, killed and waiting for its parent, is not).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// How `pleach mcp` ended when sent `signal` (a name `kill` takes) with a `shell_exec` call still
/// running: its exit status, whether the call's program outlived it, and its stderr. Before the
/// signal, stdin is closed, as a client that shuts down does first.
#[cfg(target_os = "linux")]
fn mcp_signalled_mid_call(signal: &str) -> (std::process::ExitStatus, bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(["mcp", "--root", dir.path().to_str().unwrap()])
        .args(["--allow-program", "sh", "--timeout", "60s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shell_exec", "arguments": {"program": "sh", "args": ["-c", "echo $$ > pid; exec sleep 60"]}}}),
    ];
    let mut stdin = server.stdin.take().expect("piped");
    for message in input {
        writeln!(stdin, "{message}").expect("stdin takes the input");
    }
    let pid_file = dir.path().join("pid");
    let started = Instant::now();
    let program = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the program never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    std::thread::sleep(Duration::from_millis(300));
    let sent = Command::new("sh")
        .args(["-c", &format!("kill -{signal} {}", server.id())])
        .status()
        .expect("sh runs kill");
    assert!(sent.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.try_wait().expect("the server can be waited for") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = server.kill();
            break server.wait().expect("a killed server ends");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let started = Instant::now();
    while alive(program) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = alive(program);
    if survived {
        // Leave nothing running behind the test.
        let _ = Command::new("sh")
            .args(["-c", &format!("kill -KILL {program}")])
            .status();
    }
    let mut errors = String::new();
    let _ = std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut errors);
    (status, survived, errors)
}

/// MCP's stdio shutdown as the official SDKs do it: close stdin, wait (2 s), then SIGTERM. With a
/// call still running, rmcp's drain outlasts that wait; the SIGTERM must end the server cleanly
/// and take the call's program with it (`shell_exec` runs it in its own process group, which a
/// SIGTERM to the server's group does not reach).
#[cfg(target_os = "linux")]
#[test]
fn mcp_ended_by_sigterm_mid_call_exits_0_and_stops_the_calls_program() {
    let (status, survived, errors) = mcp_signalled_mid_call("TERM");
    assert_eq!(status.code(), Some(0), "{status:?}; stderr: {errors}");
    assert!(!survived, "the call's program outlived the server");
    assert_eq!(errors, "", "nothing on stderr");
}

/// The official SDKs start the server in the client's process group: Ctrl-C in the client's
/// terminal sends SIGINT to the server too, and closing that terminal SIGHUP. Either ends the
/// server as SIGTERM does, the call's program with it (its own process group gets neither).
#[cfg(target_os = "linux")]
#[test]
fn mcp_interrupted_or_hung_up_mid_call_exits_0_and_stops_the_calls_program() {
    for signal in ["INT", "HUP"] {
        let (status, survived, errors) = mcp_signalled_mid_call(signal);
        assert_eq!(
            status.code(),
            Some(0),
            "SIG{signal}: {status:?}; stderr: {errors}"
        );
        assert!(
            !survived,
            "SIG{signal}: the call's program outlived the server"
        );
        assert_eq!(errors, "", "SIG{signal}: nothing on stderr");
    }
}

#[test]
fn bad_flags_exit_2_and_every_subcommand_has_help() {
    let unknown = pleach(&["demo", "--nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    let provider = pleach(&["replay", "--provider", "cohere", "x"]);
    assert_eq!(provider.status.code(), Some(2));
    assert!(
        stderr(&provider).contains("openai-chat"),
        "{}",
        stderr(&provider)
    );
    let neither = pleach(&["schema"]);
    assert_eq!(neither.status.code(), Some(2));
    for command in [
        "demo", "list", "schema", "validate", "call", "replay", "chat", "mcp",
    ] {
        let help = pleach(&[command, "--help"]);
        assert_eq!(help.status.code(), Some(0), "{command}");
        assert!(stdout(&help).contains("Usage: pleach"), "{command}");
    }
}

#[test]
fn a_duration_is_a_number_and_a_unit_and_anything_else_a_usage_error() {
    // Each refused before anything runs: exit 2, the flag and the reason on stderr.
    for (value, reason) in [
        ("5000", "time unit needed, for example 5000sec or 5000ms"),
        ("5x", "unknown time unit \"x\""),
        ("0s", "must be longer than 0"),
        ("18446744073709551615s 1000ms", "too long"),
    ] {
        let output = pleach(&["call", "math", "--timeout", value]);
        let errors = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{value}: {errors}");
        assert!(
            errors.contains(&format!(
                "invalid value '{value}' for '--timeout <DURATION>': {reason}"
            )),
            "{value}: {errors}"
        );
        assert!(!errors.contains("panicked"), "{value}: {errors}");
        assert_eq!(stdout(&output), "", "{value}");
    }
    // The same rule on every duration flag; Redis keeps a session for whole seconds.
    for args in [
        &["mcp", "--http", "127.0.0.1:0", "--drain", "30"][..],
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--drain-notice",
            "5 parsecs",
        ],
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--session-store",
            "redis://127.0.0.1:1/0",
            "--session-ttl",
            "1500ms",
        ],
    ] {
        let output = pleach(args);
        let errors = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {errors}");
        assert!(errors.contains("<DURATION>': "), "{args:?}: {errors}");
    }
}

#[test]
fn call_honours_a_timeout_given_with_a_unit() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = pleach(&[
        "call",
        "shell_exec",
        "--args",
        r#"{"program":"sleep","args":["20"]}"#,
        "--root",
        dir.path().to_str().unwrap(),
        "--allow-program",
        "sleep",
        "--timeout",
        "300ms",
        "--json",
    ]);
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let events = ndjson(&output);
    let failed = of_type(&events, "tool.failed");
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0]["error"]["code"], 1010, "{events:?}");
    let message = failed[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("300 ms"), "{message}");
    assert!(took < Duration::from_secs(10), "the call took {took:?}");
}

/// Every flag of `pleach mcp` but the ones every host command has (`--root`, `--mcp`, …, as
/// `pleach call` lists them) and the listing's (`--tool-search`, `--always`: both transports)
/// shapes the HTTP server: without `--http` it is a usage error, never silently ignored by a
/// stdio server.
#[test]
fn an_http_only_flag_without_http_is_a_usage_error() {
    let flags = |command: &str| -> Vec<(String, Option<String>)> {
        let help = stdout(&pleach(&[command, "--help"]));
        help.lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let flag = words.next().filter(|word| word.starts_with("--"))?;
                let value = words
                    .next()
                    .filter(|word| word.starts_with('<') || word.starts_with("[<"));
                Some((flag.to_owned(), value.map(str::to_owned)))
            })
            .collect()
    };
    let shared: Vec<String> = flags("call").into_iter().map(|(flag, _)| flag).collect();
    let http_only: Vec<(String, Option<String>)> = flags("mcp")
        .into_iter()
        .filter(|(flag, _)| {
            !["--http", "--tool-search", "--always"].contains(&flag.as_str())
                && !shared.contains(flag)
        })
        .collect();
    assert!(http_only.len() >= 14, "{http_only:?}");
    for (flag, value) in &http_only {
        // A value each flag's parser takes, so that what is refused is the missing `--http`.
        let value = value.as_deref().map(|value| match value {
            "<DURATION>" => "1s",
            "<N>" => "1",
            "<URL>" => "http://127.0.0.1:1/x",
            _ => "x",
        });
        let mut args = vec!["mcp", flag.as_str()];
        args.extend(value);
        let output = pleach(&args);
        let errors = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {errors}");
        assert!(
            errors.contains("required arguments were not provided")
                && errors.contains("--http <ADDR>"),
            "{args:?}: {errors}"
        );
        assert_eq!(stdout(&output), "", "{args:?}");
    }
}

/// A loopback model endpoint: answers each request with the next SSE body, recording each
/// request (head and body) it received.
fn model_server(bodies: Vec<String>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    use std::io::{BufRead, BufReader, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/v1", listener.local_addr().expect("an address"));
    let handle = std::thread::spawn(move || {
        let mut requests = Vec::new();
        for body in bodies {
            let Ok((stream, _)) = listener.accept() else {
                break;
            };
            let mut reader = BufReader::new(stream.try_clone().expect("a stream"));
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            requests.push(format!("{head}\n{}", String::from_utf8_lossy(&request)));
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
        requests
    });
    (url, handle)
}

fn sse(chunks: &[Value]) -> String {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    body
}

#[test]
fn chat_runs_the_agent_loop_against_an_endpoint() {
    let call = sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"math","arguments":"{\"expression\":"}}]},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"6*7\"}"}}]},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ]);
    let answer = sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"It is 42."},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
    ]);
    let (url, server) = model_server(vec![call, answer]);
    let output = pleach(&[
        "chat",
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--message",
        "what is 6*7?",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("user: what is 6*7?"), "{text}");
    assert!(text.contains("math"), "{text}");
    assert!(text.contains("42"), "{text}");
    assert!(text.contains("model: It is 42."), "{text}");
    let requests = server.join().expect("the server ends");
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0].starts_with("POST /v1/chat/completions"),
        "{}",
        requests[0]
    );
    assert!(
        requests[0].contains("\"model\":\"test-model\""),
        "{}",
        requests[0]
    );
    // The second request carries the tool's result back to the model.
    assert!(requests[1].contains("\"role\":\"tool\""), "{}", requests[1]);
    assert!(
        requests[1].contains("\"tool_call_id\":\"call_1\""),
        "{}",
        requests[1]
    );
}

/// The JSON body of a request `model_server` recorded.
fn request_body(request: &str) -> Value {
    let (_, body) = request
        .split_once("\r\n\n")
        .unwrap_or_else(|| panic!("a head and a body: {request}"));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The definition `pleach chat` sent for the tool `name`.
fn sent_tool<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"]
        .as_array()
        .expect("tools are sent")
        .iter()
        .find(|tool| tool["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no tool `{name}` in {body}"))
}

#[test]
fn chat_sends_plain_definitions_to_a_local_server_unless_strict() {
    let answer = || {
        sse(&[
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello."},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
        ])
    };
    let schema = |provider: &str| -> Value {
        let output = pleach(&["schema", "datetime", "--provider", provider]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_str(&stdout(&output)).expect("the schema is JSON")
    };
    // A loopback server is no OpenAI endpoint: plain schemas unless `--strict`.
    for (flags, expected) in [
        (&[][..], schema("openai")),
        (&["--strict"][..], schema("openai-strict")),
        (&["--no-strict"][..], schema("openai")),
    ] {
        let (url, server) = model_server(vec![answer()]);
        let mut args = vec![
            "chat",
            "--base-url",
            url.as_str(),
            "--model",
            "m",
            "--message",
            "hi",
        ];
        args.extend(flags);
        let output = pleach(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let requests = server.join().expect("the server ends");
        let body = request_body(&requests[0]);
        // Exactly what `pleach schema` prints for that provider: strict mode's schema with
        // `"strict": true` with `--strict`, the tool's own schema with `"strict": false` else.
        assert_eq!(sent_tool(&body, "datetime"), &expected, "{flags:?}");
        let strict = flags.contains(&"--strict");
        assert_eq!(expected["function"]["strict"], strict);
        let tools = body["tools"].as_array().expect("tools");
        assert!(
            tools
                .iter()
                .all(|tool| tool["function"]["strict"] == strict),
            "the catalog fits strict mode, so every tool goes in it with --strict (else none): {body}"
        );
    }
}

#[test]
fn chat_with_anthropic_sends_strict_tool_use_only_when_asked_to_a_server_not_anthropics() {
    let answer = || {
        let events = [
            json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello."}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}),
            json!({"type":"message_stop"}),
        ];
        let mut body = String::new();
        for event in events {
            body.push_str("event: ");
            body.push_str(event["type"].as_str().unwrap());
            body.push_str("\ndata: ");
            body.push_str(&event.to_string());
            body.push_str("\n\n");
        }
        body
    };
    let all = |provider: &str| -> Vec<Value> {
        let output = pleach(&["schema", "--all", "--provider", provider]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_str::<Vec<Value>>(&stdout(&output)).expect("the schemas are JSON")
    };
    let (strict, plain) = (all("anthropic-strict"), all("anthropic"));
    for flag in [None, Some("--strict"), Some("--no-strict")] {
        let (url, server) = model_server(vec![answer()]);
        let base = url.trim_end_matches("/v1");
        let mut command = Command::new(env!("CARGO_BIN_EXE_pleach"));
        command
            .args(["chat", "--provider", "anthropic", "--base-url", base])
            .args(["--model", "m", "--message", "hi"])
            .env("ANTHROPIC_API_KEY", "test-key");
        command.args(flag);
        let no_strict = flag != Some("--strict");
        let output = command.output().expect("the binary runs");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let requests = server.join().expect("the server ends");
        assert!(
            requests[0].starts_with("POST /v1/messages"),
            "{}",
            requests[0]
        );
        let body = request_body(&requests[0]);
        let sent = body["tools"].as_array().expect("tools are sent");
        assert_eq!(sent.len(), plain.len());
        if no_strict {
            assert_eq!(sent, &plain);
            continue;
        }
        // Each tool as `pleach schema --provider anthropic-strict` prints it, until Anthropic's
        // limits for one request's strict schemas are reached; the rest as they are.
        assert_eq!(sent[0], strict[0], "the first tool fits strict mode");
        for (i, tool) in sent.iter().enumerate() {
            assert!(
                tool == &strict[i] || tool == &plain[i],
                "{}: {tool}",
                plain[i]["name"]
            );
        }
    }
}

#[test]
fn chat_speaks_openai_responses_and_gemini() {
    let delta = json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello."});
    let completed = json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":3,"output_tokens":2}}});
    let responses_answer = format!(
        "event: response.output_text.delta\ndata: {delta}\n\nevent: response.completed\ndata: {completed}\n\n"
    );
    let gemini_answer = format!(
        "data: {}\r\n\r\n",
        json!({"candidates":[{"content":{"role":"model","parts":[{"text":"Hello."}]},"finishReason":"STOP","index":0}],"responseId":"r1"})
    );
    for (provider, answer, target) in [
        ("openai-responses", responses_answer, "POST /v1/responses "),
        (
            "gemini",
            gemini_answer,
            "POST /v1/models/gemini-x:streamGenerateContent?alt=sse ",
        ),
    ] {
        let (url, server) = model_server(vec![answer]);
        let output = Command::new(env!("CARGO_BIN_EXE_pleach"))
            .args(["chat", "--provider", provider, "--base-url", &url])
            .args([
                "--model",
                "gemini-x",
                "--message",
                "hi",
                "--max-tokens",
                "64",
            ])
            .env("OPENAI_API_KEY", "test-openai-key")
            .env("GEMINI_API_KEY", "test-gemini-key")
            .output()
            .expect("the binary runs");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{provider}: {}",
            stderr(&output)
        );
        assert!(
            stdout(&output).contains("Hello."),
            "{provider}: {}",
            stdout(&output)
        );
        let requests = server.join().expect("the server ends");
        assert!(
            requests[0].starts_with(target),
            "{provider}: {}",
            requests[0]
        );
        let head = requests[0].to_ascii_lowercase();
        let body = request_body(&requests[0]);
        if provider == "gemini" {
            assert!(head.contains("x-goog-api-key: test-gemini-key"), "{head}");
            assert_eq!(body["contents"][0]["parts"][0]["text"], "hi");
            assert_eq!(body["generationConfig"]["maxOutputTokens"], 64);
            assert!(
                body["tools"][0]["functionDeclarations"]
                    .as_array()
                    .is_some_and(|d| !d.is_empty())
            );
        } else {
            assert!(
                head.contains("authorization: bearer test-openai-key"),
                "{head}"
            );
            assert_eq!(body["input"][0], json!({ "role": "user", "content": "hi" }));
            assert_eq!(body["max_output_tokens"], 64);
            assert!(body["tools"][0]["name"].is_string(), "{body}");
        }
    }
}

#[test]
fn chat_reports_an_endpoint_that_fails_and_refuses_bad_flags() {
    // Nothing listens on this port (bound, then dropped).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let output = pleach(&[
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--message",
        "hi",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("endpoint failed"),
        "{}",
        stderr(&output)
    );

    let no_model = pleach(&["chat", "--base-url", &url]);
    assert_eq!(no_model.status.code(), Some(2));
    let no_steps = pleach(&[
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--max-steps",
        "0",
    ]);
    assert_eq!(no_steps.status.code(), Some(2));
    assert!(
        stderr(&no_steps).contains("--max-steps"),
        "{}",
        stderr(&no_steps)
    );

    // A base URL no request can go to is the user's to fix (exit 2), said before any request.
    for (provider, base_url) in [
        ("openai", "localhost:11434/v1"),
        ("openai", "ftp://example.com/v1"),
        ("openai", "http://"),
        ("anthropic", "api.anthropic.com"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_pleach"))
            .args(["chat", "--provider", provider, "--base-url", base_url])
            .args(["--model", "m", "--message", "hi"])
            .env("ANTHROPIC_API_KEY", "test-key")
            .output()
            .expect("the binary runs");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{base_url}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(&format!("`{base_url}` is not an http or https URL")),
            "{}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "no turn was started");
    }
}

/// A text answer chunk and the end of the stream, with `finish_reason`.
fn answer_with(text: &str, finish_reason: &str) -> String {
    sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":text},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":finish_reason}]}),
    ])
}

#[test]
fn chat_sends_the_request_flags_and_offers_only_the_tools_named() {
    let (url, server) = model_server(vec![answer_with("Hello.", "stop")]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let system = dir.path().join("system.txt");
    std::fs::write(&system, "Use the math tool.").expect("written");
    let output = pleach(&[
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--message",
        "hi",
        "--tools",
        "math,datetime",
        "--max-tokens",
        "200",
        "--temperature",
        "0.1",
        "--tool-choice",
        "math",
        "--system",
        &format!("@{}", system.display()),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.join().expect("the server ends");
    let body = request_body(&requests[0]);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "Use the math tool."})
    );
    assert_eq!(body["max_tokens"], 200);
    assert_eq!(body["temperature"], 0.1);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "math"}})
    );
    let names: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["function"]["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["datetime", "math"]);

    // A tool name the catalog does not have is the user's to fix, with the closest name.
    for flags in [
        &["--tools", "maths"][..],
        &["--exclude-tools", "maths"][..],
        &["--tool-choice", "maths"][..],
    ] {
        let mut args = vec![
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--message",
            "hi",
        ];
        args.extend(flags);
        let output = pleach(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{flags:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("no such tool: `maths` (did you mean `math`?)"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn chat_json_carries_each_steps_text_and_the_answer() {
    let call = sse(&[
        json!({"choices":[{"index":0,"delta":{"content":"Let me compute.","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"math","arguments":"{\"expression\":\"6*7\"}"}}]},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ]);
    let (output, events) = chat_json(vec![call, answer_with("It is 42.", "stop")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let of_type = |kind: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|event| event["type"] == kind)
            .collect()
    };
    assert_eq!(of_type("tool.completed").len(), 1, "{events:?}");
    let steps = of_type("model.step");
    assert_eq!(steps.len(), 2, "{events:?}");
    assert_eq!(steps[0]["step"], 1);
    assert_eq!(steps[0]["text"], "Let me compute.");
    assert_eq!(steps[0]["finishReason"], "tool_calls");
    assert_eq!(steps[1]["text"], "It is 42.");
    assert_eq!(
        of_type("model.answer"),
        [&json!({"type": "model.answer", "text": "It is 42.", "cutOff": false})]
    );
    assert_eq!(
        events.last(),
        Some(&json!({"type": "model.answer", "text": "It is 42.", "cutOff": false}))
    );
}

/// `pleach chat --json --message hi` against a model server giving `bodies`: its output and its
/// NDJSON lines, parsed.
fn chat_json(bodies: Vec<String>) -> (std::process::Output, Vec<Value>) {
    let (url, server) = model_server(bodies);
    let output = pleach(&[
        "chat",
        "--base-url",
        &url,
        "--model",
        "m",
        "--message",
        "hi",
        "--json",
    ]);
    drop(server.join());
    let events = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    (output, events)
}

#[test]
fn chat_says_when_an_answer_was_cut_off_and_fails_a_scripted_turn() {
    let (output, events) = chat_json(vec![answer_with("The answer is", "length")]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the answer was cut off by the model's token limit"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        events.last(),
        Some(&json!({"type": "model.answer", "text": "The answer is", "cutOff": true}))
    );
}

#[test]
fn chat_reports_an_event_stream_without_an_answer() {
    let (output, events) = chat_json(vec![String::new()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("event stream ended without an answer"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        events.last().map(|event| &event["type"]),
        Some(&json!("turn.stopped"))
    );
}

/// `--mcp-stdio`: a remote MCP server's tools (the stdlib-only test server) beside the catalog,
/// offered to the model by `pleach chat` and run when it calls one.
#[test]
fn chat_offers_and_runs_a_remote_servers_tools() {
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/mcp-servers/hostile.py"
    );
    let remote = format!("h=python3 {server} normal");
    let call = sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"h__sum","arguments":"{\"a\":2,\"b\":40}"}}]},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ]);
    let answer = sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"It is 42."},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
    ]);
    let (url, model) = model_server(vec![call, answer]);
    let output = pleach(&[
        "chat",
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--message",
        "what is 2+40?",
        "--mcp-stdio",
        &remote,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = model.join().expect("the model server ends");
    let offered = request_body(&requests[0]);
    let sum = sent_tool(&offered, "h__sum");
    assert_eq!(sum["function"]["parameters"]["required"], json!(["a", "b"]));
    assert!(
        offered["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["function"]["name"] == "math"),
        "the catalog beside it"
    );
    // The remote server's result went back to the model.
    let second = request_body(&requests[1]);
    let result = sent_tool_result(&second);
    assert!(
        result["content"].as_str().unwrap().contains("42"),
        "{result}"
    );

    let listed = pleach(&["list", "--json", "--mcp-stdio", &remote]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let rows: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["name"].as_str())
        .filter(|name| name.starts_with("h__"))
        .collect();
    assert_eq!(
        names,
        ["h__bad_output", "h__oops", "h__ping", "h__slow", "h__sum"]
    );

    let unreachable = pleach(&["list", "--mcp-stdio", "/no/such/server --stdio"]);
    assert_eq!(unreachable.status.code(), Some(2));
    assert!(
        stderr(&unreachable).contains("cannot connect to the MCP server `server`"),
        "{}",
        stderr(&unreachable)
    );
}

/// `--otlp`: the call's span reaches an OTLP collector (a loopback stand-in that records what it
/// is sent) in each HTTP protocol, before the process exits.
#[test]
fn otlp_exports_the_calls_span_before_the_command_exits() {
    for (protocol, content_type) in [
        ("http/protobuf", "application/x-protobuf"),
        ("http/json", "application/json"),
    ] {
        let (url, collector) = model_server(vec![String::new(), String::new()]);
        let base = url.trim_end_matches("/v1");
        let output = Command::new(env!("CARGO_BIN_EXE_pleach"))
            .args(["call", "math", "--args", r#"{"expression": "6*7"}"#])
            .args(["--otlp", base])
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
            .output()
            .expect("pleach runs");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let requests = collector.join().expect("the collector ends");
        let request = requests
            .iter()
            .find(|request| request.starts_with("POST /v1/traces"))
            .unwrap_or_else(|| panic!("spans exported: {requests:?}"));
        let metrics = requests
            .iter()
            .find(|request| request.starts_with("POST /v1/metrics"))
            .unwrap_or_else(|| panic!("metrics exported: {requests:?}"));
        assert!(metrics.contains("pleach.tool.call.duration"), "{metrics}");
        assert!(
            request
                .to_ascii_lowercase()
                .contains(&format!("content-type: {content_type}")),
            "{protocol}: {request}"
        );
        for expected in [
            "execute_tool math",
            "gen_ai.tool.name",
            "gen_ai.operation.name",
        ] {
            assert!(
                request.contains(expected),
                "{protocol}: {expected} in {request}"
            );
        }
    }

    let refused = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(["call", "math", "--args", r#"{"expression": "1"}"#, "--otlp"])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
        .output()
        .expect("pleach runs");
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("not an OTLP protocol"),
        "{}",
        stderr(&refused)
    );
}

/// What a loopback OTLP collector serving OTLP's gRPC services was sent: span and metric names.
#[derive(Clone, Default)]
struct GrpcCollector {
    spans: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    metrics: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[tonic::async_trait]
impl otlp_traces::trace_service_server::TraceService for GrpcCollector {
    async fn export(
        &self,
        request: tonic::Request<otlp_traces::ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<otlp_traces::ExportTraceServiceResponse>, tonic::Status> {
        let names = request
            .into_inner()
            .resource_spans
            .into_iter()
            .flat_map(|resource| resource.scope_spans)
            .flat_map(|scope| scope.spans)
            .map(|span| span.name);
        self.spans.lock().unwrap().extend(names);
        Ok(tonic::Response::new(
            otlp_traces::ExportTraceServiceResponse::default(),
        ))
    }
}

#[tonic::async_trait]
impl otlp_metrics::metrics_service_server::MetricsService for GrpcCollector {
    async fn export(
        &self,
        request: tonic::Request<otlp_metrics::ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<otlp_metrics::ExportMetricsServiceResponse>, tonic::Status> {
        let names = request
            .into_inner()
            .resource_metrics
            .into_iter()
            .flat_map(|resource| resource.scope_metrics)
            .flat_map(|scope| scope.metrics)
            .map(|metric| metric.name);
        self.metrics.lock().unwrap().extend(names);
        Ok(tonic::Response::new(
            otlp_metrics::ExportMetricsServiceResponse::default(),
        ))
    }
}

/// `--otlp` with `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`: the call's span and metrics reach a
/// collector serving OTLP's gRPC services (the generated tonic servers of `opentelemetry-proto`)
/// before the process exits.
#[test]
fn otlp_exports_over_grpc() {
    use otlp_metrics::metrics_service_server::MetricsServiceServer;
    use otlp_traces::trace_service_server::TraceServiceServer;

    let collector = GrpcCollector::default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = runtime.spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(collector.clone()))
            .add_service(MetricsServiceServer::new(collector.clone()))
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(listener),
                async {
                    let _ = stopped.await;
                },
            ),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(["call", "math", "--args", r#"{"expression": "6*7"}"#])
        .args(["--otlp", &format!("http://{address}")])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .expect("pleach runs");
    let _ = stop.send(());
    runtime.block_on(server).unwrap().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("could not be exported"),
        "{}",
        stderr(&output)
    );
    let spans = collector.spans.lock().unwrap().clone();
    assert!(
        spans.iter().any(|name| name == "execute_tool math"),
        "{spans:?}"
    );
    let metrics = collector.metrics.lock().unwrap().clone();
    assert!(
        metrics
            .iter()
            .any(|name| name == "pleach.tool.call.duration"),
        "{metrics:?}"
    );
}

/// With `--otlp`, a model request carries the `chat` span's W3C `traceparent`, so a provider
/// that traces continues the trace.
#[test]
fn chat_with_otlp_sends_the_trace_context_to_the_model() {
    let answer = sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
    ]);
    let (url, model) = model_server(vec![answer]);
    // A collector stand-in: what it is sent is `otlp_exports_…`'s to check.
    let (collector_url, _collector) = model_server(vec![String::new(), String::new()]);
    let output = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args([
            "chat",
            "--base-url",
            &url,
            "--model",
            "test-model",
            "--message",
            "hello",
        ])
        .args(["--otlp", collector_url.trim_end_matches("/v1")])
        .output()
        .expect("pleach runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = model.join().expect("the model server ends");
    let head = requests[0].to_ascii_lowercase();
    let traceparent = head
        .lines()
        .find_map(|line| line.strip_prefix("traceparent:"))
        .unwrap_or_else(|| panic!("a traceparent header: {head}"))
        .trim()
        .to_owned();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!((parts[0], parts[1].len(), parts[2].len()), ("00", 32, 16));
}

/// `--approve TOOL` (`ApprovalRequired`): `pleach call` asks on the terminal before every call of
/// the tool; with none to ask on (a script: no controlling terminal) the call is rejected, 1013,
/// and does not run. The same flag, the same check of the name, in every command that runs
/// tools.
#[test]
fn approve_makes_a_call_wait_for_the_user_and_without_a_terminal_it_is_rejected() {
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().to_str().unwrap();
    let args = r#"{"path": "notes.txt", "content": "hello"}"#;
    // `setsid`: a new session, no controlling terminal, as under cron or CI.
    let asked = Command::new("setsid")
        .arg(env!("CARGO_BIN_EXE_pleach"))
        .args([
            "call",
            "fs_write",
            "--args",
            args,
            "--root",
            root_arg,
            "--approve",
            "fs_write",
            "--json",
        ])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(asked.status.code(), Some(1), "{asked:?}");
    let events = ndjson(&asked);
    assert_eq!(
        of_type(&events, "interrupt.requested").len(),
        1,
        "{events:?}"
    );
    let failed = of_type(&events, "tool.failed");
    assert_eq!(failed[0]["error"]["code"], 1013, "{failed:?}");
    assert!(!root.path().join("notes.txt").exists());

    let unasked = pleach(&["call", "fs_write", "--args", args, "--root", root_arg]);
    assert_eq!(unasked.status.code(), Some(0), "{unasked:?}");
    assert!(root.path().join("notes.txt").exists());

    // A name the registry does not have is refused before anything runs, in each command.
    for command in [
        &["call", "math", "--args", r#"{"expression": "1"}"#][..],
        &["mcp"][..],
        &[
            "chat",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--message",
            "hi",
        ][..],
    ] {
        let mut args = command.to_vec();
        args.extend(["--approve", "fs_wirte"]);
        let refused = pleach(&args);
        assert_eq!(refused.status.code(), Some(2), "{command:?}: {refused:?}");
        assert!(
            stderr(&refused).contains("fs_wirte"),
            "{command:?}: {refused:?}"
        );
    }
}

/// The first tool result in the conversation of a request body `pleach chat` sent.
fn sent_tool_result(body: &Value) -> &Value {
    body["messages"]
        .as_array()
        .expect("the messages")
        .iter()
        .find(|message| message["role"] == "tool")
        .expect("the tool's result")
}

/// `pleach chat --message …` with the test server's talking tools (`--mcp-stdio t=…`) against a
/// model that calls `t__{tool}` with `args`, then gives the `then` bodies: run by `runner` (a
/// program and its first arguments) with `typed` on its stdin. The output, the text of the
/// tool's result the model was sent last, and the model's requests.
fn chat_calling_a_talking_tool(
    runner: &[&str],
    tool: &str,
    args: &Value,
    typed: &str,
    extra: &[&str],
    then: Vec<String>,
) -> (Output, String, Vec<String>) {
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/mcp-servers/hostile.py"
    );
    let call = sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":format!("t__{tool}"),"arguments":args.to_string()}}]},"finish_reason":null}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ]);
    let expected = then.len() + 1;
    let mut bodies = vec![call];
    bodies.extend(then);
    let (url, model) = model_server(bodies);
    let remote = format!("t=python3 {server} talk");
    let mut chat = vec![
        env!("CARGO_BIN_EXE_pleach"),
        "chat",
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--message",
        "go",
        "--mcp-stdio",
        &remote,
    ];
    chat.extend_from_slice(extra);
    let mut command = Command::new(runner[0]);
    command.args(&runner[1..]);
    if runner[0] == "script" {
        // One command line for the shell `script` starts on its terminal.
        let quoted: Vec<String> = chat.iter().map(|arg| format!("'{arg}'")).collect();
        command.arg(quoted.join(" ")).arg("/dev/null");
    } else {
        command.args(&chat);
    }
    let mut child = command
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the runner starts");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(typed.as_bytes())
        .expect("stdin takes the input");
    let output = child.wait_with_output().expect("the chat finishes");
    let requests = model.join().expect("the model server ends");
    assert_eq!(requests.len(), expected, "{output:?}");
    let last = request_body(&requests[expected - 1]);
    let result = sent_tool_result(&last)["content"]
        .as_str()
        .unwrap()
        .to_owned();
    // The tool's text result, sent to the model as a JSON string.
    let result = match serde_json::from_str(&result) {
        Ok(Value::String(text)) => text,
        _ => result,
    };
    (output, result, requests)
}

/// `script`: the chat on a terminal of its own, whose input is what the test types.
const ON_A_TERMINAL: &[&str] = &["script", "-qec"];
/// `setsid`: a new session, no controlling terminal, as under cron or CI.
const WITHOUT_A_TERMINAL: &[&str] = &["setsid"];

/// A tool's question (`elicitation.requested`: the test server's `ask`, whose result is the
/// answer it got) is asked on the terminal as a form: accepted with the default or a typed
/// value, declined, cancelled; without a terminal it is declined at once, saying so.
#[test]
fn chat_asks_a_tools_question_on_the_terminal_and_declines_it_without_one() {
    let ask = |runner, typed| {
        let done = vec![answer_with("Done.", "stop")];
        let (output, result, _) = chat_calling_a_talking_tool(
            runner,
            "ask",
            &json!({"tag": "the cat"}),
            typed,
            &[],
            done,
        );
        (output, result)
    };
    let (output, result) = ask(ON_A_TERMINAL, "\n\n");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(result, r#"{"action":"accept","content":{"name":"Ada"}}"#);
    let shown = stdout(&output);
    assert!(shown.contains("question: Name for the cat?"), "{shown}");
    assert!(shown.contains("name * (text) [Ada]: "), "{shown}");

    let (_, result) = ask(ON_A_TERMINAL, "y\nGrace\n");
    assert_eq!(result, r#"{"action":"accept","content":{"name":"Grace"}}"#);
    let (_, result) = ask(ON_A_TERMINAL, "n\n");
    assert_eq!(result, r#"{"action":"decline"}"#);
    let (_, result) = ask(ON_A_TERMINAL, "c\n");
    assert_eq!(result, r#"{"action":"cancel"}"#);

    let (output, result) = ask(WITHOUT_A_TERMINAL, "");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(result, r#"{"action":"decline"}"#);
    assert!(
        stderr(&output).contains("declined the question of call call_1 (no terminal to ask on"),
        "{}",
        stderr(&output)
    );
}

/// A tool's sampling request (`sampling.requested`: the test server's `sample`, whose result is
/// the answer it got): with the user's `y` on the terminal, or `--sampling allow`, the chat's
/// model answers its messages, without tools; `n`, `--sampling deny`, or `ask` without a
/// terminal refuse it, saying why.
#[test]
fn chat_answers_a_tools_sampling_request_with_its_model_when_allowed() {
    let sample = |runner, typed, flags: &[&str], allowed: bool| {
        let mut then = vec![answer_with("Done.", "stop")];
        if allowed {
            then.insert(0, answer_with("Blue.", "stop"));
        }
        chat_calling_a_talking_tool(runner, "sample", &json!({}), typed, flags, then)
    };
    let answered = r#"{"content":{"text":"Blue.","type":"text"},"model":"test-model","role":"assistant","stopReason":"endTurn"}"#;
    let (output, result, requests) = sample(ON_A_TERMINAL, "y\n", &[], true);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(result, answered);
    assert!(
        stdout(&output).contains("user: Name a colour."),
        "{output:?}"
    );
    let asked = request_body(&requests[1]);
    assert_eq!(
        asked["messages"][0],
        json!({"role": "system", "content": "One word."})
    );
    assert_eq!(
        asked["messages"][1],
        json!({"role": "user", "content": "Name a colour."})
    );
    assert_eq!(asked["max_tokens"], 5);
    assert!(asked.get("tools").is_none(), "{asked}");

    let (_, result, _) = sample(WITHOUT_A_TERMINAL, "", &["--sampling", "allow"], true);
    assert_eq!(result, answered);

    for (runner, typed, flags, why) in [
        (ON_A_TERMINAL, "n\n", &[][..], "the user did not allow it"),
        (
            WITHOUT_A_TERMINAL,
            "",
            &["--sampling", "deny"][..],
            "--sampling deny",
        ),
        (WITHOUT_A_TERMINAL, "", &[][..], "no terminal to ask on"),
    ] {
        let (output, result, _) = sample(runner, typed, flags, false);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        assert!(result.starts_with("error "), "{result}");
        assert!(result.contains(why), "{why}: {result}");
    }
}
