//! A tool's return value as JSON, and its output schema, by autoref specialization on the type.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::errors::lost;

use crate::error::ToolError;
use crate::schema;

/// A tool's output type: anything `Serialize`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's output: it does not implement `Serialize`",
    label = "the tool returns this type, which cannot be written as JSON",
    note = "derive it: `#[derive(Serialize)]` (through pleach's re-export `pleach_core::serde::Serialize`, add `#[serde(crate = \"pleach_core::serde\")]` too), or return a type that is already `Serialize`"
)]
pub trait ToolOutput {
    fn to_output(&self) -> Result<Value, ToolError>;
}

impl<T: Serialize + ?Sized> ToolOutput for T {
    fn to_output(&self) -> Result<Value, ToolError> {
        schema::output_to_value(self)
    }
}

/// The result of a tool that returns `T`.
pub fn output<T: ToolOutput + ?Sized>(value: &T) -> Result<Value, ToolError> {
    value.to_output()
}

// A return type the macro did not read as a `Result`, by autoref specialization:
// `(&&PlainProbe::<T>::new()).plain_output(&value)` is `output(&value)`, unless `T` is a `Result`
// after all (behind an alias of another name), which is a compile error: serialized, its `Err`
// would reach the model as a successful `{"Err": …}`.

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

pub trait PlainOutputResult<T, E> {
    fn plain_output(&self, value: &Result<T, E>) -> Result<Value, ToolError>
    where
        Result<T, E>: ResultSpelledOut;
}

impl<T, E> PlainOutputResult<T, E> for &PlainProbe<Result<T, E>> {
    fn plain_output(&self, _: &Result<T, E>) -> Result<Value, ToolError>
    where
        Result<T, E>: ResultSpelledOut,
    {
        Err(lost())
    }
}

pub trait PlainOutputOther<T: ?Sized> {
    fn plain_output(&self, value: &T) -> Result<Value, ToolError>
    where
        T: ToolOutput;
}

impl<T: ?Sized> PlainOutputOther<T> for PlainProbe<T> {
    fn plain_output(&self, value: &T) -> Result<Value, ToolError>
    where
        T: ToolOutput,
    {
        value.to_output()
    }
}

// Output schema, by autoref specialization: `(&&OutputProbe::<T>::new()).output_schema()` is the
// derived schema when `T: JsonSchema`, and none otherwise.

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
