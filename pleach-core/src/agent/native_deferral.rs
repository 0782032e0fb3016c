//! Native deferral: a request's deferred tools, and its search tool's calls and results, written
//! as the provider's own tool search (docs/tool-search.md, "Native deferral").
//!
//! The search is pleach's either way ([`ToolSearch`](crate::search::ToolSearch)): it runs on the
//! client, as any tool, and only the way its results reach the model changes. Over Anthropic
//! every deferred tool is in `tools` with `defer_loading: true`, and a search's `tool_result`
//! names what it found as `tool_reference` blocks, which the API expands into the definitions.
//! Over OpenAI Responses the search tool is a client-run `tool_search` tool, its calls are
//! `tool_search_call` items, and its results `tool_search_output` items that carry the
//! definitions found.

use serde_json::Value;

use super::client::{ModelError, ModelRequest};
use super::http::{self, StrictFallbacks};
use crate::providers::ProviderFormat;
use crate::providers::anthropic::{self, Anthropic};
use crate::providers::openai_responses::{self, OpenAiResponses};
use crate::search::found_names;
use crate::tool::UnifiedToolDefinition;

/// The deferred tools a search result's text names, in its order; none when the text is not a
/// search result (a failed search's error).
fn found<'a>(text: &str, deferred: &'a [UnifiedToolDefinition]) -> Vec<&'a UnifiedToolDefinition> {
    let Ok(result) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    found_names(&result)
        .filter_map(|name| deferred.iter().find(|tool| tool.name() == name))
        .collect()
}

/// The search tool's name, when the request defers tools natively.
fn search_tool<'a>(request: &ModelRequest<'a>) -> Option<&'a str> {
    request.search_tool.filter(|_| !request.deferred.is_empty())
}

/// Anthropic: the deferred tools join `tools` with `defer_loading: true` (plain, not strict: one
/// request's strict schemas are capped at 20), and each search's result in `messages` becomes
/// `tool_reference` blocks.
///
/// # Errors
///
/// [`ModelError::Config`] naming the deferred tools the Anthropic profile refuses.
pub(super) fn anthropic(
    body: &mut Value,
    request: &ModelRequest<'_>,
    fallbacks: &StrictFallbacks,
) -> Result<(), ModelError> {
    let Some(search) = search_tool(request) else {
        return Ok(());
    };
    let deferred = http::request_tools(
        &Anthropic,
        "Anthropic API",
        request.deferred,
        false,
        fallbacks,
        |_| Ok(()),
    )?;
    if let (Some(tools), Value::Array(deferred)) = (body["tools"].as_array_mut(), deferred) {
        tools.extend(deferred.into_iter().map(anthropic::deferred_definition));
    }
    if let Some(messages) = body["messages"].as_array_mut() {
        anthropic::reference_search_results(messages, search, |text| {
            found(text, request.deferred)
                .into_iter()
                .map(|tool| tool.name().to_owned())
                .collect()
        });
    }
    Ok(())
}

/// OpenAI Responses: the search tool's function definition becomes the client-run `tool_search`
/// tool, and its calls and results in `input` become `tool_search_call` and `tool_search_output`
/// items, the latter carrying the definitions of the tools found with `defer_loading: true`.
///
/// A `tool_choice` forcing the search tool names that tool as the API knows it: no function of
/// that name is sent, and `tool_choice`'s own types have none for `tool_search`, so it becomes
/// `allowed_tools` with mode `required` and the `tool_search` tool alone.
pub(super) fn responses(body: &mut Value, request: &ModelRequest<'_>) {
    let Some(search) = search_tool(request) else {
        return;
    };
    if body["tool_choice"]["type"] == "function" && body["tool_choice"]["name"] == search {
        body["tool_choice"] = openai_responses::tool_search_choice();
    }
    if let Some(tools) = body["tools"].as_array_mut() {
        for tool in tools
            .iter_mut()
            .filter(|tool| tool["type"] == "function" && tool["name"] == search)
        {
            let description = tool["description"].as_str().unwrap_or_default().to_owned();
            *tool = openai_responses::tool_search_tool(&description, &tool["parameters"]);
        }
    }
    if let Some(input) = body["input"].as_array_mut() {
        openai_responses::search_items(input, search, |text| {
            found(text, request.deferred)
                .into_iter()
                .filter_map(|tool| OpenAiResponses.definition(tool.definition()).ok())
                .map(openai_responses::deferred_definition)
                .collect()
        });
    }
}
