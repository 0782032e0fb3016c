//! The compile-time slice [`TOOLS`]: a [`ToolEntry`] for every `#[tool]` and `#[unified_tool]`,
//! and the one non-generic build of an entry's definition, kept per entry.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::error::ToolError;
use crate::tier::SafetyTier;
use crate::tool::{
    DefinitionError, DefinitionParts, DefinitionSite, Started, ToolContext, ToolDefinition,
    UnifiedToolDefinition,
};

#[allow(unsafe_code)] // linkme places the slice in a link section; no unsafe code of ours.
mod slice {
    use super::ToolEntry;

    /// Every tool the macros registered, in no particular order.
    #[linkme::distributed_slice]
    pub static TOOLS: [ToolEntry];
}

#[doc(hidden)]
pub use slice::TOOLS;

/// One `#[tool]` / `#[unified_tool]` in the compile-time slice: what its definition is built
/// from. Built by the macros; not API. Every definition is built here, by one non-generic fn, and
/// kept per entry ([`ToolEntry::try_unified`]): a tool's expansion holds data and its own fns,
/// no cache or builder of its own.
#[doc(hidden)]
pub struct ToolEntry {
    /// The tool's name.
    pub name: &'static str,
    /// Its description.
    pub description: &'static str,
    /// Builds the input schema.
    pub input_schema: fn() -> Value,
    /// Builds the output schema, if the output type has one.
    pub output_schema: fn() -> Option<Value>,
    /// The generated code and what the macro proved about it.
    pub code: Code,
    /// The registry-level fields `#[unified_tool]` sets.
    pub unified: UnifiedFields,
    /// Where the tool is defined: file, line, column.
    pub site: (&'static str, u32, u32),
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.name)
            .field("site", &self.site)
            .finish_non_exhaustive()
    }
}

impl ToolEntry {
    /// The registry-level definition, built on first use (schemas generated, validators
    /// compiled) and shared: the compile-time registry and the tool's handle read the same one.
    pub fn try_unified(&'static self) -> Result<UnifiedToolDefinition, DefinitionError> {
        match built().get(self.index()) {
            Some(built) => built.get_or_init(|| self.build()).clone(),
            // Not in `TOOLS` (no macro builds such an entry): built, not kept.
            None => self.build(),
        }
    }

    /// [`try_unified`](Self::try_unified), for the handle's `unified()`.
    ///
    /// # Panics
    ///
    /// If the definition is refused, with the error (the handle's documented behaviour).
    #[track_caller]
    pub fn unified(&'static self) -> UnifiedToolDefinition {
        match self.try_unified() {
            Ok(tool) => tool,
            Err(error) => panic!("{error}"),
        }
    }

    /// The basic definition, for the handle's `definition()`.
    ///
    /// # Panics
    ///
    /// As [`unified`](Self::unified).
    #[track_caller]
    pub fn definition(&'static self) -> ToolDefinition {
        self.unified().definition().clone()
    }

    fn build(&self) -> Result<UnifiedToolDefinition, DefinitionError> {
        let (file, line, column) = self.site;
        let code = self.code;
        let definition = ToolDefinition::from_parts(DefinitionParts {
            name: self.name.to_owned(),
            description: self.description.to_owned(),
            input_schema: (self.input_schema)(),
            output_schema: (self.output_schema)(),
            invoke: crate::tool::Invoke::Generated(code.invoke),
            check: Some(Arc::new(code.check)),
            checked_by_type: code.checked_by_type,
            output_checked_by_type: code.output_checked_by_type,
            in_place: code.in_place,
            takes_context: code.takes_context,
            site: DefinitionSite::new(file, line, column),
        })?;
        let fields = &self.unified;
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
        Ok(tool)
    }

    /// This entry's place in [`TOOLS`], from its address (linkme lays the entries out as one
    /// array); `usize::MAX` for an entry outside it.
    fn index(&self) -> usize {
        let start = TOOLS.as_ptr() as usize;
        let offset = (std::ptr::from_ref(self) as usize).wrapping_sub(start);
        let size = std::mem::size_of::<ToolEntry>().max(1);
        if offset.is_multiple_of(size) && offset / size < TOOLS.len() {
            offset / size
        } else {
            usize::MAX
        }
    }
}

/// An entry's definition, once built.
type Built = OnceLock<Result<UnifiedToolDefinition, DefinitionError>>;

/// One cell per entry of [`TOOLS`], each filled with its definition on first use.
fn built() -> &'static [Built] {
    static BUILT: OnceLock<Box<[Built]>> = OnceLock::new();
    BUILT.get_or_init(|| TOOLS.iter().map(|_| OnceLock::new()).collect())
}

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

/// The registry-level fields of a `#[unified_tool]`; `None` keeps the default.
pub struct UnifiedFields {
    /// `id = "…"`.
    pub id: Option<&'static str>,
    /// `display_name = "…"`.
    pub display_name: Option<&'static str>,
    /// `category = "…"`.
    pub category: Option<&'static str>,
    /// `schema_key = "…"`.
    pub schema_key: Option<&'static str>,
    /// `safety_tier = "…"`.
    pub safety_tier: Option<SafetyTier>,
}

impl UnifiedFields {
    /// No key set: what every `#[tool]` carries.
    pub const NONE: UnifiedFields = UnifiedFields {
        id: None,
        display_name: None,
        category: None,
        schema_key: None,
        safety_tier: None,
    };
}
