//! The code half of a generated definition and the registry-level fields of `#[unified_tool]`.

use std::sync::Arc;

use serde_json::Value;

use crate::error::ToolError;
use crate::tier::SafetyTier;
use crate::tool::{
    DefinitionError, DefinitionParts, DefinitionSite, Started, ToolContext, ToolDefinition,
    UnifiedToolDefinition,
};

/// The code half of a generated definition.
#[derive(Clone, Copy)]
// Independent facts the macro proved about the code, each read on its own.
#[allow(clippy::struct_excessive_bools)]
pub struct Code {
    /// Arguments text in, a started tool out (the text read straight into the input).
    pub invoke: fn(&str, &mut Option<ToolContext>) -> Result<Started, ToolError>,
    /// The same reading without starting anything.
    pub check: fn(&str) -> Result<(), ToolError>,
    /// Whether a successful read implies the input schema accepts the text.
    pub checked_by_type: bool,
    /// Whether every value of the output type meets the derived output schema (integers,
    /// `bool`, `String`, and `Option` / `Vec` of them), so results need no output check.
    pub output_checked_by_type: bool,
    /// Whether the fn's body cannot suspend, so `invoke` runs it to the end.
    pub in_place: bool,
    /// Whether the fn takes a `ToolContext`.
    pub takes_context: bool,
}

/// Builds the definition of a `#[tool]` fn.
#[allow(clippy::too_many_arguments)]
pub fn definition(
    name: &str,
    description: &str,
    input_schema: Value,
    output_schema: Option<Value>,
    code: Code,
    file: &'static str,
    line: u32,
    column: u32,
) -> Result<ToolDefinition, DefinitionError> {
    ToolDefinition::from_parts(DefinitionParts {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
        output_schema,
        invoke: crate::tool::Invoke::Generated(code.invoke),
        check: Some(Arc::new(code.check)),
        checked_by_type: code.checked_by_type,
        output_checked_by_type: code.output_checked_by_type,
        in_place: code.in_place,
        takes_context: code.takes_context,
        site: DefinitionSite::new(file, line, column),
    })
}

/// The registry-level fields of a `#[unified_tool]`; `None` keeps the default.
pub struct UnifiedFields {
    pub id: Option<&'static str>,
    pub display_name: Option<&'static str>,
    pub category: Option<&'static str>,
    pub schema_key: Option<&'static str>,
    pub safety_tier: Option<SafetyTier>,
}

pub fn unified(definition: ToolDefinition, fields: &UnifiedFields) -> UnifiedToolDefinition {
    let mut tool = UnifiedToolDefinition::from(definition);
    if let Some(id) = fields.id {
        tool = tool.with_id(id);
    }
    if let Some(display_name) = fields.display_name {
        tool = tool.with_display_name(display_name);
    }
    if let Some(category) = fields.category {
        tool = tool.with_category(category);
    }
    if let Some(schema_key) = fields.schema_key {
        tool = tool.with_schema_key(schema_key);
    }
    if let Some(tier) = fields.safety_tier {
        tool = tool.with_safety_tier(tier);
    }
    tool
}
