//! **rig**: rig-core's type-erased tool call, for an `Add` tool implementing rig's `Tool` trait.
//!
//! rig-core 0.44 has no `ToolSet`/`ToolDyn` any more: its object-safe tool form is `ErasedTool`,
//! implemented for every `Tool`. The `rig` column is one `ErasedTool::execute(args, &mut ctx)`
//! through a `&dyn ErasedTool`: the arguments as an owned `String` (the signature takes one), a
//! fresh `ToolContext`, the boxed future, `serde_json::from_str` into the `Args` struct, the
//! method, and the `i64` turned into a `ToolResult` holding one JSON content block. No lookup by
//! name, no schema validation, no events, timeout or panic catching.
//!
//! The extra `rig (handler)` row is the next layer out, the boundary rig's bus dispatches to: the
//! tool wrapped once in a `ToolAdapter` and erased into an `ErasedHandler`, then per call
//! `serve_inline` of an `EffectKind::ToolCall { name, args }` (a `Dispatch` with its scopes, the
//! name check, the handler's boxed future, `ErasedTool::execute`, the `Outcome` back).

use std::convert::Infallible;
use std::hint::black_box;
use std::time::{Duration, Instant};

use rig_core::effect::{EffectKind, Outcome};
use rig_core::serve::adapters::ToolAdapter;
use rig_core::serve::{ErasedHandler, serve_inline};
use rig_core::tool::{ErasedTool, Tool, ToolContext, ToolResult};
use serde::Deserialize;
use serde_json::Value;
use tokio::runtime::Runtime;

use super::ARGUMENTS;
use crate::measure::Contender;

/// The column's name.
pub(super) const LABEL: &str = "rig";

#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers, as a rig `Tool`.
struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    type Args = AddArgs;
    type Output = i64;
    type Error = Infallible;

    fn description(&self) -> String {
        "Adds two integers.".to_owned()
    }

    fn parameters(&self) -> Value {
        schemars::schema_for!(AddArgs).to_value()
    }

    async fn call(&self, _context: &mut ToolContext, args: AddArgs) -> Result<i64, Infallible> {
        Ok(args.a + args.b)
    }
}

/// Whether `result` is a success holding the JSON value 3.
fn check(result: &ToolResult) -> Result<(), String> {
    if result.is_success() && result.output().as_json() == Some(&Value::from(3)) {
        Ok(())
    } else {
        Err(format!("{result:?}"))
    }
}

/// `ErasedTool::execute` through a trait object.
pub(super) struct ErasedExecute {
    tool: Box<dyn ErasedTool>,
}

impl ErasedExecute {
    pub(super) fn new() -> Self {
        ErasedExecute {
            tool: Box::new(Add),
        }
    }

    async fn call(&self, arguments: &str) -> ToolResult {
        let mut context = ToolContext::new();
        self.tool.execute(arguments.to_owned(), &mut context).await
    }
}

impl Contender for ErasedExecute {
    fn label(&self) -> &'static str {
        LABEL
    }

    fn describe(&self) -> &'static str {
        "<dyn ErasedTool>::execute(String, &mut ToolContext)"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        check(&runtime.block_on(self.call(ARGUMENTS)))
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for _ in 0..calls {
                black_box(self.call(black_box(ARGUMENTS)).await);
            }
            start.elapsed()
        })
    }
}

/// `serve_inline` of a tool-call effect on the tool's `ErasedHandler`.
pub(super) struct HandlerServe {
    handler: ErasedHandler,
}

impl HandlerServe {
    pub(super) fn new() -> Self {
        HandlerServe {
            handler: ErasedHandler::new(ToolAdapter::new(Add)),
        }
    }

    async fn call(&self, arguments: &str) -> Result<ToolResult, String> {
        let kind = EffectKind::ToolCall {
            name: Add::NAME.to_owned(),
            args: arguments.to_owned(),
        };
        match serve_inline(&self.handler, kind).await {
            Ok(Outcome::ToolResult { result }) => Ok(result),
            Ok(other) => Err(format!("not a tool result: {}", other.family())),
            Err(report) => Err(report.to_string()),
        }
    }
}

impl Contender for HandlerServe {
    fn label(&self) -> &'static str {
        "rig (handler)"
    }

    fn describe(&self) -> &'static str {
        "serve_inline(ErasedHandler(ToolAdapter), EffectKind::ToolCall)"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        check(&runtime.block_on(self.call(ARGUMENTS))?)
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for _ in 0..calls {
                black_box(self.call(black_box(ARGUMENTS)).await.ok());
            }
            start.elapsed()
        })
    }
}
