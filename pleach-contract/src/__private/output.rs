//! A tool's return value as JSON, and its output schema, by autoref specialization on the type.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::errors::lost;

use crate::content::{ContentBlock, ToolOutput};
use crate::error::ToolError;
use crate::schema;

/// A tool's JSON output type: anything `Serialize`. (Content blocks take the probes' other
/// route, [`ContentShape`].)
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's output: a tool returns a `Serialize` type, content blocks (`ContentBlock`, `Vec<ContentBlock>`), or both (`ToolOutput<T>`)",
    label = "the tool returns this type, which is neither JSON nor content blocks",
    note = "for JSON, derive it: `#[derive(Serialize)]` (through pleach's re-export `pleach_core::serde::Serialize`, add `#[serde(crate = \"pleach_core::serde\")]` too); for blocks beside a value, return `ToolOutput<T>` (`ToolOutput::new(value).block(block)`)"
)]
pub trait ToolReturn {
    fn to_output(&self) -> Result<Value, ToolError>;
}

impl<T: Serialize + ?Sized> ToolReturn for T {
    fn to_output(&self) -> Result<Value, ToolError> {
        schema::output_to_value(self)
    }
}

/// The return types made of content blocks: one block, several, or blocks beside a value.
pub trait ContentShape {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;
}

impl ContentShape for ContentBlock {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::from_blocks([self]))
    }
}

impl ContentShape for Vec<ContentBlock> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::from_blocks(self))
    }
}

impl<T: ToolReturn> ContentShape for ToolOutput<T> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        let structured = self.structured.as_ref().map(T::to_output).transpose()?;
        Ok(ToolOutput {
            structured,
            content: self.content,
        })
    }
}

// The result of a tool whose `Ok` type is `T`, by autoref specialization:
// `(&&ShapeProbe::<T>::new()).tool_output(value)` takes content shapes as they are and writes any
// other type as JSON.

pub struct ShapeProbe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> ShapeProbe<T> {
    pub const fn new() -> Self {
        ShapeProbe(PhantomData)
    }
}

impl<T: ?Sized> Default for ShapeProbe<T> {
    fn default() -> Self {
        ShapeProbe::new()
    }
}

pub trait ShapeContent<T> {
    fn tool_output(&self, value: T) -> Result<ToolOutput, ToolError>;
}

impl<T: ContentShape> ShapeContent<T> for &ShapeProbe<T> {
    fn tool_output(&self, value: T) -> Result<ToolOutput, ToolError> {
        value.into_tool_output()
    }
}

pub trait ShapeJson<T> {
    fn tool_output(&self, value: T) -> Result<ToolOutput, ToolError>
    where
        T: ToolReturn;
}

impl<T> ShapeJson<T> for ShapeProbe<T> {
    fn tool_output(&self, value: T) -> Result<ToolOutput, ToolError>
    where
        T: ToolReturn,
    {
        value.to_output().map(ToolOutput::new)
    }
}

// A return type the macro did not read as a `Result`, by autoref specialization:
// `(&&&PlainProbe::<T>::new()).plain_output(value)` is a content shape as it is, or the value as
// JSON, unless `T` is a `Result` after all (behind an alias of another name), which is a compile
// error: serialized, its `Err` would reach the model as a successful `{"Err": …}`.

pub struct PlainProbe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> PlainProbe<T> {
    pub const fn new() -> Self {
        PlainProbe(PhantomData)
    }
}

impl<T: ?Sized> Default for PlainProbe<T> {
    fn default() -> Self {
        PlainProbe::new()
    }
}

/// Never implemented: the bound that reports a `Result` return type the macro could not see.
#[diagnostic::on_unimplemented(
    message = "this tool returns `{Self}` behind an alias the macro cannot read as a `Result`; write `Result<…, …>` in the signature",
    label = "a `Result` under another name",
    note = "the macro fails the call on `Err` when the return type is spelled `Result<T, E>` or is an alias named `Result` (`io::Result<T>`, `anyhow::Result<T>`); under another name the `Err` would be sent to the model as a successful result"
)]
pub trait ResultSpelledOut {}

pub trait PlainOutputContent<T> {
    fn plain_output(&self, value: T) -> Result<ToolOutput, ToolError>;
}

impl<T: ContentShape> PlainOutputContent<T> for &&PlainProbe<T> {
    fn plain_output(&self, value: T) -> Result<ToolOutput, ToolError> {
        value.into_tool_output()
    }
}

pub trait PlainOutputResult<T, E> {
    fn plain_output(&self, value: Result<T, E>) -> Result<ToolOutput, ToolError>
    where
        Result<T, E>: ResultSpelledOut;
}

impl<T, E> PlainOutputResult<T, E> for &PlainProbe<Result<T, E>> {
    fn plain_output(&self, _: Result<T, E>) -> Result<ToolOutput, ToolError>
    where
        Result<T, E>: ResultSpelledOut,
    {
        Err(lost())
    }
}

pub trait PlainOutputOther<T> {
    fn plain_output(&self, value: T) -> Result<ToolOutput, ToolError>
    where
        T: ToolReturn;
}

impl<T> PlainOutputOther<T> for PlainProbe<T> {
    fn plain_output(&self, value: T) -> Result<ToolOutput, ToolError>
    where
        T: ToolReturn,
    {
        value.to_output().map(ToolOutput::new)
    }
}

// Output schema, by autoref specialization: `(&&&OutputProbe::<T>::new()).output_schema()` is
// the derived schema of `U` for `ToolOutput<U>` (the structured part), of `T` when
// `T: JsonSchema`, and none otherwise (content blocks alone have no schema).

pub struct OutputProbe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> OutputProbe<T> {
    pub const fn new() -> Self {
        OutputProbe(PhantomData)
    }
}

impl<T: ?Sized> Default for OutputProbe<T> {
    fn default() -> Self {
        OutputProbe::new()
    }
}

pub trait OutputSchemaStructured {
    fn output_schema(&self) -> Option<Value>;
}

impl<T: JsonSchema> OutputSchemaStructured for &&OutputProbe<ToolOutput<T>> {
    fn output_schema(&self) -> Option<Value> {
        schema::output_schema_for::<T>()
    }
}

pub trait OutputSchemaDerived {
    fn output_schema(&self) -> Option<Value>;
}

impl<T: JsonSchema + ?Sized> OutputSchemaDerived for &OutputProbe<T> {
    fn output_schema(&self) -> Option<Value> {
        schema::output_schema_for::<T>()
    }
}

pub trait OutputSchemaNone {
    fn output_schema(&self) -> Option<Value>;
}

impl<T: ?Sized> OutputSchemaNone for OutputProbe<T> {
    fn output_schema(&self) -> Option<Value> {
        None
    }
}
