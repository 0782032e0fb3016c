//! [`ProviderFormat`]: the one shape every model API's wire format has — tool definitions (plain
//! and strict, one tool or a registry), the request's `tools` value, calls read out of a whole
//! response, results and messages written back, and a fresh stream parser.

use std::fmt;

use serde_json::Value;

use super::profile::{Profile, ProfileError, ProfileProblem};
use super::{ResponseError, StreamParser};
use crate::call::ToolCall;
use crate::content::ToolOutput;
use crate::conversation::Message;
use crate::error::ToolError;
use crate::registry::ToolSource;
use crate::tool::{ToolDefinition, UnifiedToolDefinition};

/// A model API's wire format: how tools are described to it, how its calls are read, and how
/// results and the conversation go back. One unit struct per format implements it
/// ([`OpenAiChat`](super::openai_chat::OpenAiChat),
/// [`OpenAiResponses`](super::openai_responses::OpenAiResponses),
/// [`Anthropic`](super::anthropic::Anthropic), [`Gemini`](super::gemini::Gemini),
/// [`GeminiJsonSchema`](super::gemini::GeminiJsonSchema)); the trait is object-safe, so a host
/// picks the format at run time as a `&dyn ProviderFormat`.
///
/// MCP's `tools/list` is not a model API (no calls, no messages): its form is
/// [`mcp_tools`](super::mcp_tools), apart.
///
/// ```
/// use pleach_core::providers::{anthropic::Anthropic, openai_chat::OpenAiChat, ProviderFormat};
/// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
///
/// let ping = ToolDefinition::builder("ping", "Answers pong.")
///     .input_schema(serde_json::json!({ "type": "object", "properties": {} }))
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
///
/// let use_anthropic = true;
/// let format: &dyn ProviderFormat = if use_anthropic { &Anthropic } else { &OpenAiChat };
/// let tools = format.request_tools(format.strict_definitions(&registry).unwrap());
/// assert_eq!(tools[0]["name"], "ping");
/// assert_eq!(tools[0]["strict"], true);
/// ```
pub trait ProviderFormat: fmt::Debug + Send + Sync {
    /// The schema profile [`definition`](ProviderFormat::definition) holds a tool to, or `None`
    /// when the schema goes as it is (but for bounds past 2^53, `docs/providers.md`, "Numbers")
    /// and no tool is refused.
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::Anthropic, openai_chat::OpenAiChat, Profile, ProviderFormat};
    /// assert_eq!(Anthropic.profile(), Some(Profile::Anthropic));
    /// assert_eq!(OpenAiChat.profile(), None);
    /// ```
    fn profile(&self) -> Option<Profile>;

    /// The schema profile of the format's strict mode (the model's arguments held to the schema
    /// as they are sampled), or `None` when the format has none: then
    /// [`strict_definition`](ProviderFormat::strict_definition) refuses every tool, saying so.
    ///
    /// ```
    /// use pleach_core::providers::{gemini::Gemini, openai_responses::OpenAiResponses, Profile, ProviderFormat};
    /// assert_eq!(OpenAiResponses.strict_profile(), Some(Profile::OpenAiStrict));
    /// assert_eq!(Gemini.strict_profile(), None);
    /// ```
    fn strict_profile(&self) -> Option<Profile>;

    /// A tool's definition, or every problem [`profile`](ProviderFormat::profile) finds in it.
    ///
    /// ```
    /// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
    /// use pleach_core::{ToolError, ToolDefinition};
    ///
    /// let tool = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let def = OpenAiChat.definition(&tool).unwrap();
    /// assert_eq!(def["function"]["name"], "ping");
    /// assert_eq!(def["function"]["strict"], false);
    /// ```
    ///
    /// # Errors
    ///
    /// Every problem of the tool's name and input schema for the format's profile.
    fn definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>>;

    /// A tool's definition in the format's strict mode, its schema through
    /// [`strict_profile`](ProviderFormat::strict_profile); or every problem found.
    ///
    /// ```
    /// use pleach_core::providers::{gemini::Gemini, openai_chat::OpenAiChat, ProviderFormat};
    /// use pleach_core::{ToolError, ToolDefinition};
    ///
    /// let tool = ToolDefinition::builder("ping", "Answers pong.")
    ///     .input_schema(serde_json::json!({ "type": "object", "properties": {} }))
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(OpenAiChat.strict_definition(&tool).unwrap()["function"]["strict"], true);
    /// // Gemini has no strict mode: the problem says so.
    /// let problems = Gemini.strict_definition(&tool).unwrap_err();
    /// assert_eq!(problems[0].keyword, "strict");
    /// ```
    ///
    /// # Errors
    ///
    /// Every problem strict mode finds in the tool's name and input schema, or one saying that
    /// the format has no strict mode.
    fn strict_definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>>;

    /// [`definition`](ProviderFormat::definition) for every tool of a registry.
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    /// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
    /// assert_eq!(Anthropic.definitions(&registry).unwrap()[0]["name"], "ping");
    /// ```
    ///
    /// # Errors
    ///
    /// Every problem of every tool, by tool name.
    fn definitions(&self, registry: &dyn ToolSource) -> Result<Vec<Value>, ProfileError> {
        each_definition(registry, self.profile(), |tool| {
            self.definition(tool.definition())
        })
    }

    /// [`strict_definition`](ProviderFormat::strict_definition) for every tool of a registry.
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::Anthropic, Profile, ProviderFormat};
    /// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let any = ToolDefinition::builder("any_input", "Takes any object.")
    ///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(any).build().unwrap();
    /// let err = Anthropic.strict_definitions(&registry).unwrap_err();
    /// assert_eq!(err.profile(), Some(Profile::AnthropicStrict));
    /// assert_eq!(err.problems()[0].0, "any_input");
    /// ```
    ///
    /// # Errors
    ///
    /// Every problem of every tool, by tool name.
    fn strict_definitions(&self, registry: &dyn ToolSource) -> Result<Vec<Value>, ProfileError> {
        each_definition(registry, self.strict_profile(), |tool| {
            self.strict_definition(tool.definition())
        })
    }

    /// The value of a request's `tools` field holding `definitions`: the list itself, or (Gemini)
    /// one tool of `functionDeclarations`.
    ///
    /// ```
    /// use pleach_core::providers::{gemini::Gemini, openai_chat::OpenAiChat, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let declaration = json!({ "name": "ping", "description": "Answers pong." });
    /// assert_eq!(Gemini.request_tools(vec![declaration.clone()]), json!([{ "functionDeclarations": [declaration] }]));
    /// assert_eq!(OpenAiChat.request_tools(Vec::new()), json!([]));
    /// ```
    fn request_tools(&self, definitions: Vec<Value>) -> Value {
        Value::Array(definitions)
    }

    /// The tool calls of a whole (non-streamed) response body, in order.
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    ///
    /// let body = r#"{"type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"ping","input":{}}]}"#;
    /// let calls = Anthropic.tool_calls(body).unwrap();
    /// assert_eq!(calls[0].id(), "toolu_1");
    /// ```
    ///
    /// # Errors
    ///
    /// The body is not JSON of the format's shape, the provider answered with an error, or a
    /// call has no id or name, or an id used twice; the error points at the value.
    fn tool_calls(&self, body: &str) -> Result<Vec<ToolCall>, ResponseError>;

    /// A call's outcome, as the format takes it back: a message, an input item, a content block
    /// or a part, its content blocks included as the format carries them (`docs/providers.md`,
    /// "Content blocks"; Chat Completions carries media in a user message of its own, which only
    /// [`messages`](Self::messages) writes).
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::Anthropic, openai_chat::OpenAiChat, ProviderFormat};
    /// use pleach_core::{ContentBlock, ToolCall, ToolOutput};
    /// use serde_json::json;
    ///
    /// let call = ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(OpenAiChat.tool_result(&call, &Ok(json!(3).into()))["content"], "3");
    /// let shot = ToolOutput::new(json!("ok")).block(ContentBlock::image(vec![1u8, 2, 3], "image/png"));
    /// let block = Anthropic.tool_result(&call, &Ok(shot));
    /// assert_eq!(block["content"][1]["source"]["data"], "AQID");
    /// ```
    fn tool_result(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Value;

    /// What carries an assistant turn (its text, if any, and its calls): one message, or (the
    /// Responses API) one input item each.
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    /// use pleach_core::ToolCall;
    ///
    /// let messages = Anthropic.assistant_messages(Some("Checking."), &[ToolCall::new("toolu_1", "ping", "{}")]);
    /// assert_eq!(messages.len(), 1);
    /// assert_eq!(messages[0]["content"][1]["type"], "tool_use");
    /// ```
    fn assistant_messages(&self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value>;

    /// A conversation as the format's messages (`messages`, `input` or `contents`).
    ///
    /// ```
    /// use pleach_core::providers::{gemini::Gemini, ProviderFormat};
    /// use pleach_core::Message;
    ///
    /// let contents = Gemini.messages(&[Message::User { content: "hi".into() }]);
    /// assert_eq!(contents[0]["parts"][0]["text"], "hi");
    /// ```
    fn messages(&self, conversation: &[Message]) -> Vec<Value>;

    /// A parser for one streamed response of this format.
    ///
    /// ```
    /// use pleach_core::providers::{openai_chat::OpenAiChat, Decoder, ProviderEvent, ProviderFormat};
    ///
    /// let mut decoder = Decoder::sse(OpenAiChat.stream_parser());
    /// let events = decoder.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n");
    /// assert_eq!(events, [ProviderEvent::Text { delta: "Hi".into() }]);
    /// ```
    fn stream_parser(&self) -> Box<dyn StreamParser + Send>;
}

/// The definitions of every tool of a registry, by a format that can refuse a tool (by
/// `profile`); every refusal of every tool is reported.
pub(crate) fn each_definition(
    registry: &dyn ToolSource,
    profile: Option<Profile>,
    f: impl Fn(&UnifiedToolDefinition) -> Result<Value, Vec<ProfileProblem>>,
) -> Result<Vec<Value>, ProfileError> {
    let mut definitions = Vec::new();
    let mut problems = Vec::new();
    for tool in registry.tools() {
        match f(tool) {
            Ok(definition) => definitions.push(definition),
            Err(found) => problems.extend(
                found
                    .into_iter()
                    .map(|problem| (tool.name().to_owned(), problem)),
            ),
        }
    }
    if problems.is_empty() {
        Ok(definitions)
    } else {
        Err(ProfileError::new(profile, problems))
    }
}

/// The problem of a format without strict mode asked for a strict definition.
pub(crate) fn no_strict_mode(format: &str) -> Vec<ProfileProblem> {
    vec![ProfileProblem {
        path: String::new(),
        keyword: "strict".to_owned(),
        message: format!(
            "{format} has no strict mode; send the tool's plain definition (`ProviderFormat::definition`)"
        ),
    }]
}
