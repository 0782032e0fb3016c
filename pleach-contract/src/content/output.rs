//! [`ToolOutput`]: a tool's structured result and its content blocks.

use serde_json::Value;

use super::{Block, ContentBlock};

/// A tool's result: its structured (JSON) value, its content blocks, or both — MCP's
/// `CallToolResult` (`structuredContent` and `content`).
///
/// A `#[tool]` fn returns it to give blocks beside a typed value: `ToolOutput<Report>` keeps
/// `Report`'s output schema, and the schema check (1002) applies to the structured part. The
/// runtime carries every result as a `ToolOutput` (of [`Value`]): a plain JSON result is one with
/// no blocks.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::content::{ContentBlock, ToolOutput};
/// use pleach_core::{ToolContext, tool};
///
/// /// Renders a chart of the numbers.
/// #[tool]
/// async fn chart(numbers: Vec<f64>) -> ToolOutput<usize> {
///     let png = vec![0x89, b'P', b'N', b'G'];
///     ToolOutput::new(numbers.len()).block(ContentBlock::image(png, "image/png"))
/// }
///
/// let out = chart::definition().call(r#"{"numbers":[1,2]}"#, ToolContext::new("c1")).await.unwrap();
/// assert_eq!(out.structured, Some(serde_json::json!(2)));
/// assert_eq!(out.content[0].kind(), "image");
/// assert_eq!(chart::definition().output_schema().unwrap()["type"], "integer");
/// # }
/// ```
#[doc(alias = "CallToolResult")]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput<T = Value> {
    /// The structured result, if the tool gives one.
    #[doc(alias = "structuredContent")]
    pub structured: Option<T>,
    /// The content blocks, in the tool's order.
    pub content: Vec<ContentBlock>,
}

impl<T> ToolOutput<T> {
    /// A structured result with no blocks yet.
    ///
    /// ```
    /// let out = pleach_core::content::ToolOutput::new(3);
    /// assert_eq!(out.structured, Some(3));
    /// assert!(out.content.is_empty());
    /// ```
    pub fn new(structured: T) -> Self {
        ToolOutput {
            structured: Some(structured),
            content: Vec::new(),
        }
    }

    /// Adds a block after those already there.
    ///
    /// ```
    /// use pleach_core::content::{ContentBlock, ToolOutput};
    /// let out = ToolOutput::new("ok").block(ContentBlock::text("and a note"));
    /// assert_eq!(out.content.len(), 1);
    /// ```
    #[must_use]
    pub fn block(mut self, block: impl Into<ContentBlock>) -> Self {
        self.content.push(block.into());
        self
    }

    /// A result of blocks alone, with no structured value.
    ///
    /// ```
    /// use pleach_core::content::{ContentBlock, ToolOutput};
    /// let out: ToolOutput = ToolOutput::from_blocks([ContentBlock::text("a"), ContentBlock::text("b")]);
    /// assert_eq!(out.structured, None);
    /// assert_eq!(out.content.len(), 2);
    /// ```
    pub fn from_blocks(blocks: impl IntoIterator<Item = ContentBlock>) -> Self {
        ToolOutput {
            structured: None,
            content: blocks.into_iter().collect(),
        }
    }
}

impl ToolOutput {
    /// The structured value, `null` when there is none: what a result without blocks is.
    ///
    /// ```
    /// use pleach_core::ToolOutput;
    /// let out = ToolOutput::new(serde_json::json!({ "n": 1 }));
    /// assert_eq!(out.value()["n"], 1);
    /// assert!(ToolOutput::from_blocks([]).value().is_null());
    /// ```
    pub fn value(&self) -> &Value {
        const NULL: &Value = &Value::Null;
        self.structured.as_ref().unwrap_or(NULL)
    }

    /// The text a model that reads text only is given: the structured value as JSON text, then
    /// each text block, one per line. Media and resources are left out (the provider formats
    /// carry them as blocks).
    ///
    /// ```
    /// use pleach_core::content::{ContentBlock, ToolOutput};
    /// let out = ToolOutput::new(serde_json::json!({"n": 1})).block(ContentBlock::text("done"));
    /// assert_eq!(out.text(), "{\"n\":1}\ndone");
    /// let none: ToolOutput = ToolOutput::from_blocks([ContentBlock::image(vec![], "image/png")]);
    /// assert_eq!(none.text(), "");
    /// ```
    pub fn text(&self) -> String {
        let mut text = self
            .structured
            .as_ref()
            .map(|value| serde_json::to_string(value).unwrap_or_default())
            .unwrap_or_default();
        for block in &self.content {
            if let Block::Text(part) = &block.block {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(part);
            }
        }
        text
    }

    /// The blocks that are not text (media, links, resources), in order.
    ///
    /// ```
    /// use pleach_core::content::{ContentBlock, ToolOutput};
    /// let out: ToolOutput = ToolOutput::from_blocks([ContentBlock::text("a"), ContentBlock::image(vec![], "image/png")]);
    /// assert_eq!(out.attachments().count(), 1);
    /// ```
    pub fn attachments(&self) -> impl Iterator<Item = &ContentBlock> {
        self.content
            .iter()
            .filter(|block| !matches!(block.block, Block::Text(_)))
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::new(value)
    }
}

/// A result with no blocks equals its structured value: `assert_eq!(out, json!(3))` reads as
/// it did before results had blocks.
impl PartialEq<Value> for ToolOutput {
    fn eq(&self, other: &Value) -> bool {
        self.content.is_empty() && self.structured.as_ref() == Some(other)
    }
}
