//! [`UnifiedToolDefinition`]: the registry-level shape, a [`ToolDefinition`] plus `id`,
//! `display_name`, `category`, `schema_key` and an optional [`SafetyTier`].

use std::sync::Arc;

use super::ToolDefinition;
use crate::tier::SafetyTier;

/// The registry-level tool shape: a [`ToolDefinition`] plus `id`, `display_name`, `category`,
/// `schema_key` and the optional [`SafetyTier`]. The Rust form of the TypeScript spec's
/// `UnifiedToolDefinition`; the registry holds these. A basic definition converts with `From`
/// (the TypeScript spec's `createUnifiedTool`), with these defaults: `id` = the name,
/// `display_name` = the name in title case, `category` = `"general"`, `schema_key` = the name in
/// `CamelCase` + `Input`, no safety tier.
///
/// ```
/// use pleach_core::{SafetyTier, ToolError, UnifiedToolDefinition, ToolDefinition};
///
/// let lookup = ToolDefinition::builder("dangerous_lookup", "Looks up an account.")
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// let unified = UnifiedToolDefinition::from(lookup.clone())
///     .with_category("analysis")
///     .with_safety_tier(SafetyTier::Critical);
/// assert_eq!(unified.id(), "dangerous_lookup");
/// assert_eq!(unified.display_name(), "Dangerous Lookup");
/// assert_eq!(unified.schema_key(), "DangerousLookupInput");
/// assert_eq!(unified.safety_tier(), Some(SafetyTier::Critical));
///
/// let plain = UnifiedToolDefinition::from(lookup);
/// assert_eq!(plain.safety_tier(), None);
/// assert_eq!(plain.category(), "general");
/// ```
#[doc(alias = "createUnifiedTool")]
#[doc(alias = "create_unified_tool")]
#[derive(Debug, Clone)]
pub struct UnifiedToolDefinition {
    definition: ToolDefinition,
    // Shared so that sessions and registries clone a tool for two reference-count bumps.
    meta: Arc<UnifiedMeta>,
}

#[derive(Debug, Clone)]
struct UnifiedMeta {
    id: String,
    display_name: String,
    category: String,
    schema_key: String,
    safety_tier: Option<SafetyTier>,
}

/// Lifts a [`ToolDefinition`] to the registry-level shape with the defaults (see
/// [`UnifiedToolDefinition`]).
impl From<ToolDefinition> for UnifiedToolDefinition {
    fn from(definition: ToolDefinition) -> Self {
        let name = definition.name();
        let meta = UnifiedMeta {
            id: name.to_owned(),
            display_name: title_case(name),
            category: "general".to_owned(),
            schema_key: format!("{}Input", camel_case(name)),
            safety_tier: None,
        };
        UnifiedToolDefinition {
            definition,
            meta: Arc::new(meta),
        }
    }
}

impl UnifiedToolDefinition {
    /// Sets the registry id.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::UnifiedToolDefinition::from(def).with_id("payments.wire");
    /// assert_eq!(tool.id(), "payments.wire");
    /// ```
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).id = id.into();
        self
    }

    /// Sets the name shown to people.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::UnifiedToolDefinition::from(def).with_display_name("Wire transfer");
    /// assert_eq!(tool.display_name(), "Wire transfer");
    /// ```
    #[must_use]
    pub fn with_display_name(mut self, display_name: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).display_name = display_name.into();
        self
    }

    /// Sets the category (`"analysis"`, `"filesystem"`, …).
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::UnifiedToolDefinition::from(def).with_category("payments");
    /// assert_eq!(tool.category(), "payments");
    /// ```
    #[must_use]
    pub fn with_category(mut self, category: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).category = category.into();
        self
    }

    /// Sets the key of the input schema in the host's schema catalog.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::UnifiedToolDefinition::from(def).with_schema_key("WireInput");
    /// assert_eq!(tool.schema_key(), "WireInput");
    /// ```
    #[must_use]
    pub fn with_schema_key(mut self, schema_key: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.meta).schema_key = schema_key.into();
        self
    }

    /// Sets the safety tier (see [`SafetyTier`]).
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// use pleach_core::SafetyTier;
    /// let tool = pleach_core::UnifiedToolDefinition::from(def).with_safety_tier(SafetyTier::Critical);
    /// assert_eq!(tool.safety_tier(), Some(SafetyTier::Critical));
    /// ```
    #[must_use]
    pub fn with_safety_tier(mut self, tier: SafetyTier) -> Self {
        Arc::make_mut(&mut self.meta).safety_tier = Some(tier);
        self
    }

    /// The basic definition.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// let tool = pleach_core::UnifiedToolDefinition::from(def);
    /// assert_eq!(tool.definition().description(), "Sends money.");
    /// ```
    #[inline]
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The tool's name (the definition's).
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::UnifiedToolDefinition::from(def).name(), "wire_transfer");
    /// ```
    #[inline]
    pub fn name(&self) -> &str {
        self.definition.name()
    }

    /// The registry id.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::UnifiedToolDefinition::from(def).id(), "wire_transfer"); // the name by default
    /// ```
    pub fn id(&self) -> &str {
        &self.meta.id
    }

    /// The name shown to people.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::UnifiedToolDefinition::from(def).display_name(), "Wire Transfer");
    /// ```
    pub fn display_name(&self) -> &str {
        &self.meta.display_name
    }

    /// The category.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::UnifiedToolDefinition::from(def).category(), "general");
    /// ```
    pub fn category(&self) -> &str {
        &self.meta.category
    }

    /// The key of the input schema in the host's schema catalog.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::UnifiedToolDefinition::from(def).schema_key(), "WireTransferInput");
    /// ```
    pub fn schema_key(&self) -> &str {
        &self.meta.schema_key
    }

    /// The safety tier, if set.
    ///
    /// ```
    /// # let def = pleach_core::ToolDefinition::builder("wire_transfer", "Sends money.").execute_json(|_, _| async { Ok::<_, pleach_core::ToolError>(serde_json::json!(null)) }).unwrap();
    /// assert_eq!(pleach_core::UnifiedToolDefinition::from(def).safety_tier(), None);
    /// ```
    #[inline]
    pub fn safety_tier(&self) -> Option<SafetyTier> {
        self.meta.safety_tier
    }
}

/// `dangerous_lookup` → `Dangerous Lookup`.
fn title_case(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|w| !w.is_empty())
        .map(capitalize)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `dangerous_lookup` → `DangerousLookup`.
fn camel_case(name: &str) -> String {
    name.split(['_', '-']).map(capitalize).collect()
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names() {
        assert_eq!(title_case("get-user_profile"), "Get User Profile");
        assert_eq!(camel_case("get_user"), "GetUser");
    }
}
