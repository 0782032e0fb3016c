//! [`ToolDocument`]: what the index reads of one tool, from a registry's definition or from any
//! name, description and input schema (a remote server's listing, a catalog read from a file).

use serde_json::Value;

use crate::UnifiedToolDefinition;

/// The searchable text of one tool: its name, description, category and schema key, and what its
/// input schema says (parameter names and descriptions at every depth, enum values).
///
/// Built from a registry's tool with `From`, or from the parts with [`ToolDocument::new`] for tools
/// that have no definition in this process (a remote server's `tools/list`, a catalog on disk).
///
/// ```
/// use pleach_core::search::ToolDocument;
/// use serde_json::json;
///
/// let doc = ToolDocument::new(
///     "get_weather",
///     "Current weather for a city.",
///     &json!({"type": "object", "properties": {"city": {"type": "string"}}}),
/// )
/// .with_category("travel");
/// assert_eq!(doc.name(), "get_weather");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDocument {
    name: String,
    description: String,
    parameter_names: String,
    parameter_descriptions: String,
    enum_values: String,
    meta: String,
}

impl ToolDocument {
    /// A document for the tool `name` described by `description` whose input schema is
    /// `input_schema` (any JSON Schema; a value that is not one adds nothing).
    ///
    /// ```
    /// use pleach_core::search::ToolDocument;
    /// let doc = ToolDocument::new("ping", "Answers pong.", &serde_json::json!({}));
    /// assert_eq!(doc.name(), "ping");
    /// ```
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: &Value,
    ) -> Self {
        let mut doc = ToolDocument {
            name: name.into(),
            description: description.into(),
            parameter_names: String::new(),
            parameter_descriptions: String::new(),
            enum_values: String::new(),
            meta: String::new(),
        };
        doc.read_schema(input_schema, 0);
        doc
    }

    /// Adds the tool's category to what is searched.
    ///
    /// ```
    /// use pleach_core::search::{ToolDocument, ToolIndex};
    /// let doc = ToolDocument::new("lookup", "Looks a thing up.", &serde_json::json!({}))
    ///     .with_category("billing");
    /// let index = ToolIndex::new([doc]);
    /// assert_eq!(index.search("billing", 1)[0].name(), "lookup");
    /// ```
    #[must_use]
    pub fn with_category(mut self, category: impl AsRef<str>) -> Self {
        self.push_meta(category.as_ref());
        self
    }

    /// Adds the tool's schema key (the name of its input type) to what is searched.
    ///
    /// ```
    /// use pleach_core::search::{ToolDocument, ToolIndex};
    /// let doc = ToolDocument::new("file", "Files it.", &serde_json::json!({}))
    ///     .with_schema_key("ExpenseReport");
    /// let index = ToolIndex::new([doc]);
    /// assert_eq!(index.search("expense report", 1)[0].name(), "file");
    /// ```
    #[must_use]
    pub fn with_schema_key(mut self, schema_key: impl AsRef<str>) -> Self {
        self.push_meta(schema_key.as_ref());
        self
    }

    /// The tool's name.
    ///
    /// ```
    /// # use pleach_core::search::ToolDocument;
    /// assert_eq!(ToolDocument::new("a", "", &serde_json::json!({})).name(), "a");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fields with their text, in the order [`super::index::FIELD_WEIGHTS`] weighs them.
    pub(crate) fn fields(&self) -> [&str; super::index::FIELDS] {
        [
            &self.name,
            &self.description,
            &self.parameter_names,
            &self.parameter_descriptions,
            &self.enum_values,
            &self.meta,
        ]
    }

    fn push_meta(&mut self, text: &str) {
        push_word(&mut self.meta, text);
    }

    /// Collects parameter names and descriptions and enum values from every depth of `schema`
    /// (`properties`, `items`, `anyOf`, `$defs` alike), to a depth no real schema reaches (a
    /// hostile remote schema cannot make the walk recurse without end).
    fn read_schema(&mut self, schema: &Value, depth: usize) {
        const MAX_DEPTH: usize = 32;
        if depth > MAX_DEPTH {
            return;
        }
        match schema {
            Value::Object(map) => {
                if depth > 0
                    && let Some(Value::String(text)) = map.get("description")
                {
                    push_word(&mut self.parameter_descriptions, text);
                }
                if let Some(Value::Array(values)) = map.get("enum") {
                    for value in values {
                        match value {
                            Value::String(text) => push_word(&mut self.enum_values, text),
                            Value::Number(n) => push_word(&mut self.enum_values, &n.to_string()),
                            _ => {}
                        }
                    }
                }
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("properties", Value::Object(properties)) => {
                            for (name, property) in properties {
                                push_word(&mut self.parameter_names, name);
                                self.read_schema(property, depth + 1);
                            }
                        }
                        // Values, not schemas: read above, or examples of a value.
                        ("enum" | "description" | "const" | "default" | "examples", _) => {}
                        _ => self.read_schema(value, depth + 1),
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.read_schema(item, depth + 1);
                }
            }
            _ => {}
        }
    }
}

fn push_word(field: &mut String, text: &str) {
    if !field.is_empty() {
        field.push('\n');
    }
    field.push_str(text);
}

/// A registry's tool: its name, description, input schema, category and schema key.
impl From<&UnifiedToolDefinition> for ToolDocument {
    fn from(tool: &UnifiedToolDefinition) -> Self {
        let definition = tool.definition();
        ToolDocument::new(
            tool.name(),
            definition.description(),
            definition.input_schema(),
        )
        .with_category(tool.category())
        .with_schema_key(tool.schema_key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_text_is_read_at_every_depth() {
        let doc = ToolDocument::new(
            "book",
            "Books a table.",
            &json!({
                "type": "object",
                "description": "top level, not a parameter",
                "properties": {
                    "party": {"type": "object", "description": "Who comes.", "properties": {
                        "size": {"type": "integer", "description": "How many."}
                    }},
                    "cuisine": {"anyOf": [{"enum": ["Indian", "Thai", 3]}, {"type": "null"}]}
                }
            }),
        );
        assert_eq!(doc.parameter_names, "cuisine\nparty\nsize");
        assert_eq!(doc.parameter_descriptions, "Who comes.\nHow many.");
        assert_eq!(doc.enum_values, "Indian\nThai\n3");
    }

    #[test]
    fn a_schema_too_deep_is_read_to_a_bound() {
        let mut schema = json!({"enum": ["bottom"]});
        for _ in 0..100 {
            schema = json!({ "items": schema });
        }
        let doc = ToolDocument::new("deep", "", &schema);
        assert!(doc.enum_values.is_empty());
    }
}
