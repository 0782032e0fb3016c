//! Reading the arguments and starting the fn: at once for a body that cannot suspend, boxed otherwise.

use crate::content::ToolOutput;
use crate::error::ToolError;
use crate::schema;
use crate::tool::{Started, ToolContext};
use serde::de::DeserializeOwned;

/// Reads the arguments text into the tool's input.
pub fn parse_input<T: DeserializeOwned>(arguments: &str) -> Result<T, ToolError> {
    schema::deserialize_input(arguments)
}

/// The context a `#[tool]` fn that takes one receives (always provided for it by the runtime).
/// Taken only once the arguments were read: a refusal leaves it for another reading.
pub fn context(ctx: &mut Option<ToolContext>) -> ToolContext {
    ctx.take().unwrap_or_else(ToolContext::detached)
}

/// Boxes a tool's future; the `Send` bound is spelled here so a non-`Send` tool is reported on
/// its name (generated code calls this with the fn's span).
pub fn boxed<F>(future: F) -> Started
where
    F: std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    Started::Running(Box::pin(future))
}

/// Runs a tool whose body cannot suspend (the macro found no `.await` in it, and no macro that
/// could hide one) to completion on the caller's stack and converts its value: one poll, no
/// allocation, no `async` block around the fn's future. Same bounds on the future as [`boxed`],
/// so a tool compiles (or not) the same whichever way it is run.
pub fn run_now<F, C>(future: F, convert: C) -> Started
where
    F: std::future::Future + Send + 'static,
    C: FnOnce(F::Output) -> Result<ToolOutput, ToolError>,
{
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(value) => Started::Ready(convert(value)),
        // Unreachable for a body with no suspension point; should a macro the scan trusted hide
        // an `.await` after all, the call fails cleanly rather than hang.
        std::task::Poll::Pending => Started::Ready(Err(crate::tool::not_finished_in_place())),
    }
}
