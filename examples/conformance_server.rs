//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`) tests:
//! its tools written as `#[tool]`s returning content blocks, logging, reporting progress and
//! asking the client's model and user through `ToolContext`, its resources, prompts and
//! completion from an rmcp handler given to [`McpServer::features`], served over Streamable HTTP
//! on loopback behind pleach's guard. Names and answers follow the suite's reference
//! "everything server".
//!
//! ```sh
//! cargo run -p pleach-examples --example conformance_server            # a free port
//! cargo run -p pleach-examples --example conformance_server 127.0.0.1:3000
//! ```
//!
//! It prints `listening on http://127.0.0.1:PORT/mcp` once it listens, and drains on SIGTERM
//! or Ctrl-C. `pleach-cli/tests/conformance/run.sh` runs the suite against it.

use std::time::Duration;

use pleach_core::client::{Elicited, LogLevel, Progress, SamplingRequest};
use pleach_core::content::{ContentBlock, EmbeddedResource, wire};
use pleach_core::serde_json::{Value, json};
use pleach_core::tool::DefinitionError;
use pleach_core::{PleachPlugin, Runtime, ToolContext, ToolDefinition, ToolError, output, tool};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer, shutdown_signal};
use pleach_mcp::rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use pleach_mcp::rmcp::service::RequestContext;
use pleach_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};

/// A 1×1 red PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x05, 0x02, 0x00, 0x5f, 0xc8, 0xf1, 0xd2, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of one silent sample.
const WAV: &[u8] = &[
    0x52, 0x49, 0x46, 0x46, 0x26, 0x00, 0x00, 0x00, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20,
    0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x40, 0x1f, 0x00, 0x00, 0x00, 0x7d, 0x00, 0x00,
    0x02, 0x00, 0x10, 0x00, 0x64, 0x61, 0x74, 0x61, 0x02, 0x00, 0x00, 0x00,
];

// ===== Tools =====

/// Tests simple text content response
#[tool]
async fn test_simple_text() -> ContentBlock {
    ContentBlock::text("This is a simple text response for testing.")
}

/// Tests image content response
#[tool]
async fn test_image_content() -> ContentBlock {
    ContentBlock::image(PNG, "image/png")
}

/// Tests audio content response
#[tool]
async fn test_audio_content() -> ContentBlock {
    ContentBlock::audio(WAV, "audio/wav")
}

/// Tests embedded resource content response
#[tool]
async fn test_embedded_resource() -> ContentBlock {
    EmbeddedResource::text(
        "test://embedded-resource",
        "This is an embedded resource content.",
    )
    .mime_type("text/plain")
    .into()
}

/// Tests response with multiple content types (text, image, resource)
#[tool]
async fn test_multiple_content_types() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::image(PNG, "image/png"),
        EmbeddedResource::text(
            "test://mixed-content-resource",
            json!({"test": "data", "value": 123}).to_string(),
        )
        .mime_type("application/json")
        .into(),
    ]
}

/// Tests error response handling
#[tool]
async fn test_error_handling() -> Result<ContentBlock, ToolError> {
    Err(ToolError::failed(
        "This tool intentionally returns an error for testing",
    ))
}

/// Tests SSE stream disconnection and client reconnection (SEP-1699)
#[tool]
async fn test_reconnection() -> ContentBlock {
    ContentBlock::text(
        "Reconnection test completed successfully. If you received this, the client properly \
         reconnected after stream closure.",
    )
}

// ===== Tools that talk to the client =====

/// Tests tool that emits log messages during execution
#[tool]
async fn test_tool_with_logging(ctx: ToolContext) -> ContentBlock {
    for (step, message) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LogLevel::Info, message);
    }
    ContentBlock::text("Tool with logging executed successfully")
}

/// Tests tool that reports progress notifications
#[tool]
async fn test_tool_with_progress(ctx: ToolContext) -> ContentBlock {
    for done in [0.0, 50.0, 100.0] {
        if done > 0.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.report_progress(
            Progress::new(done)
                .total(100.0)
                .message(format!("Completed step {done} of 100")),
        );
    }
    ContentBlock::text("Progress reported: 0, 50 and 100 of 100")
}

/// Tests server-initiated sampling (LLM completion request)
#[tool]
async fn test_sampling(
    ctx: ToolContext,
    #[arg(description = "The prompt to send to the LLM")] prompt: String,
) -> Result<ContentBlock, ToolError> {
    let answer = ctx
        .sample(SamplingRequest::new(prompt).max_tokens(100))
        .await?;
    Ok(ContentBlock::text(format!(
        "LLM response: {}",
        answer.text().unwrap_or("No response")
    )))
}

/// The answer `test_elicitation` asks for.
#[output]
#[pleach_core::input]
struct UserResponse {
    /// User's response
    response: String,
}

/// `elicited`'s action and content as the reference server words them.
fn elicited_text<T: pleach_core::serde::Serialize>(
    prefix: &str,
    elicited: Elicited<T>,
) -> ContentBlock {
    let action = elicited.action();
    let content = elicited
        .accepted()
        .and_then(|content| pleach_core::serde_json::to_value(content).ok())
        .unwrap_or_else(|| json!({}));
    ContentBlock::text(format!("{prefix}: action={action}, content={content}"))
}

/// Tests server-initiated elicitation (user input request)
#[tool]
async fn test_elicitation(
    ctx: ToolContext,
    #[arg(description = "The message to show the user")] message: String,
) -> Result<ContentBlock, ToolError> {
    let elicited = ctx.elicit::<UserResponse>(message).await?;
    Ok(elicited_text("User response", elicited))
}

/// A user's status.
#[output]
#[pleach_core::input]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

/// The form of `test_elicitation_sep1034_defaults`: every primitive type with a default.
#[output]
#[pleach_core::input]
struct Defaults {
    /// User name
    #[serde(default = "Defaults::name")]
    name: String,
    /// User age
    #[serde(default = "Defaults::age")]
    age: i64,
    /// User score
    #[serde(default = "Defaults::score")]
    score: f64,
    /// User status
    #[serde(default = "Defaults::status")]
    status: Status,
    /// Verification status
    #[serde(default = "Defaults::verified")]
    verified: bool,
}

impl Defaults {
    fn name() -> String {
        "John Doe".to_owned()
    }
    fn age() -> i64 {
        30
    }
    fn score() -> f64 {
        95.5
    }
    fn status() -> Status {
        Status::Active
    }
    fn verified() -> bool {
        true
    }
}

/// Tests elicitation with default values per SEP-1034
#[tool]
async fn test_elicitation_sep1034_defaults(ctx: ToolContext) -> Result<ContentBlock, ToolError> {
    let elicited = ctx
        .elicit::<Defaults>("Please review and update the form fields with defaults")
        .await?;
    Ok(elicited_text("Elicitation completed", elicited))
}

/// Three options, untitled.
#[output]
#[pleach_core::input]
#[serde(rename_all = "lowercase")]
enum Untitled {
    Option1,
    Option2,
    Option3,
}

/// Three options with titles (SEP-1330's titled single-select).
#[output]
#[pleach_core::input]
#[serde(rename_all = "lowercase")]
enum TitledOption {
    #[schemars(title = "First Option")]
    Value1,
    #[schemars(title = "Second Option")]
    Value2,
    #[schemars(title = "Third Option")]
    Value3,
}

/// Three options titled the deprecated way, by `enumNames`.
#[output]
#[pleach_core::input]
#[serde(rename_all = "lowercase")]
#[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

/// Three choices with titles (SEP-1330's titled multi-select).
#[output]
#[pleach_core::input]
#[serde(rename_all = "lowercase")]
enum TitledChoice {
    #[schemars(title = "First Choice")]
    Value1,
    #[schemars(title = "Second Choice")]
    Value2,
    #[schemars(title = "Third Choice")]
    Value3,
}

/// The form of `test_elicitation_sep1330_enums`: each kind of enum SEP-1330 defines.
#[output]
#[pleach_core::input]
struct Enums {
    /// Select one option
    #[serde(rename = "untitledSingle")]
    untitled_single: Option<Untitled>,
    /// Select one option with titles
    #[serde(rename = "titledSingle")]
    titled_single: Option<TitledOption>,
    /// Select one option (legacy)
    #[serde(rename = "legacyEnum")]
    legacy_enum: Option<Legacy>,
    /// Select multiple options
    #[serde(rename = "untitledMulti")]
    #[schemars(length(min = 1, max = 3))]
    untitled_multi: Option<Vec<Untitled>>,
    /// Select multiple options with titles
    #[serde(rename = "titledMulti")]
    #[schemars(length(min = 1, max = 3))]
    titled_multi: Option<Vec<TitledChoice>>,
}

/// Tests elicitation with enum schema improvements per SEP-1330
#[tool]
async fn test_elicitation_sep1330_enums(ctx: ToolContext) -> Result<ContentBlock, ToolError> {
    let elicited = ctx
        .elicit::<Enums>("Please select options from the enum fields")
        .await?;
    Ok(elicited_text("Elicitation completed", elicited))
}

/// `json_schema_2020_12_tool` (SEP-1613): a tool whose input schema is written by hand in JSON
/// Schema 2020-12, listed as written (`$schema`, `$defs`, `additionalProperties`).
fn json_schema_2020_12_tool() -> Result<ToolDefinition, DefinitionError> {
    ToolDefinition::builder(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    )
    .input_schema(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" } },
        "additionalProperties": false
    }))
    .execute_json(|arguments, _| async move {
        Ok::<_, ToolError>(Value::String(format!(
            "JSON Schema 2020-12 tool called with: {arguments}"
        )))
    })
}

// ===== Resources, prompts, completion =====

/// The suite's resources and prompts: an rmcp handler whose non-tool methods the MCP server
/// answers with ([`McpServer::features`]).
struct Catalog;

/// `value` as the rmcp type `T`: the suite's shapes written as the JSON it expects.
fn typed<T: pleach_core::serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    pleach_core::serde_json::from_value(value)
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))
}

/// `block` as MCP JSON (base64 data for bytes), for a prompt message or a resource's contents.
fn block_json(block: impl Into<ContentBlock>) -> Value {
    wire::to_value(&block.into())
}

impl ServerHandler for Catalog {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        typed(json!({"resources": [
            {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
             "description": "A static text resource for testing", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary",
             "title": "Static Binary Resource",
             "description": "A static binary resource (image) for testing",
             "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource",
             "title": "Watched Resource", "description": "A resource that can be subscribed to",
             "mimeType": "text/plain"},
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        typed(json!({"resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "template",
             "title": "Resource Template",
             "description": "A resource template with parameter substitution",
             "mimeType": "application/json"},
        ]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}),
            "test://watched-resource" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"})
            }
            "test://static-binary" => {
                block_json(EmbeddedResource::blob(uri, PNG).mime_type("image/png"))["resource"]
                    .take()
            }
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) if !id.is_empty() && !id.contains('/') => {
                    let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                    json!({"uri": uri, "mimeType": "application/json", "text": data.to_string()})
                }
                _ => {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource `{uri}`"),
                        None,
                    ));
                }
            },
        };
        typed::<ReadResourceResult>(json!({"contents": [contents]})).map(Into::into)
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The resources never change: a subscription is accepted and never notified.
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        typed(json!({"prompts": [
            {"name": "test_simple_prompt", "title": "Simple Test Prompt",
             "description": "A simple prompt without arguments"},
            {"name": "test_prompt_with_arguments", "title": "Prompt With Arguments",
             "description": "A prompt with required arguments", "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true},
             ]},
            {"name": "test_prompt_with_embedded_resource",
             "title": "Prompt With Embedded Resource",
             "description": "A prompt that includes an embedded resource", "arguments": [
                {"name": "resourceUri", "description": "URI of the resource to embed",
                 "required": true},
             ]},
            {"name": "test_prompt_with_image", "title": "Prompt With Image",
             "description": "A prompt that includes image content"},
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let argument = |name: &str| {
            arguments
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!("missing argument `{name}`"), None)
                })
        };
        let user = |content: Value| json!({"role": "user", "content": content});
        let text = |text: String| user(block_json(ContentBlock::text(text)));
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![text("This is a simple prompt for testing.".to_owned())],
            "test_prompt_with_arguments" => vec![text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                argument("arg1")?,
                argument("arg2")?
            ))],
            "test_prompt_with_embedded_resource" => vec![
                user(block_json(
                    EmbeddedResource::text(
                        argument("resourceUri")?,
                        "Embedded resource content for testing.",
                    )
                    .mime_type("text/plain"),
                )),
                text("Please process the embedded resource above.".to_owned()),
            ],
            "test_prompt_with_image" => vec![
                user(block_json(ContentBlock::image(PNG, "image/png"))),
                text("Please analyze the image above.".to_owned()),
            ],
            name => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt `{name}`"),
                    None,
                ));
            }
        };
        typed::<GetPromptResult>(json!({"messages": messages})).map(Into::into)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned())
        .parse()?;
    let runtime = Runtime::builder()
        .plugin(PleachPlugin::new("conformance").tools([json_schema_2020_12_tool()?]))
        .build()?;
    let server = McpServer::new(runtime)?
        .implementation("mcp-conformance-test-server", "1.0.0")
        .features(Catalog);
    let http = HttpServer::new(server, HttpOptions::new(listen))?;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    http.serve(listener, shutdown_signal()).await?;
    Ok(())
}
