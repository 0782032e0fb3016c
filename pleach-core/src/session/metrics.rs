//! The tool-call metrics (feature `otel`, `docs/observability.md`), recorded through the
//! OpenTelemetry API on the meter the host gives ([`RuntimeBuilder::meter`]): a duration
//! histogram per tool and outcome, and the calls in flight, refused by backpressure and waiting
//! for approval. Without a meter nothing is measured, not even the time.
//!
//! [`RuntimeBuilder::meter`]: crate::RuntimeBuilder::meter

use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};

use crate::error::{ErrorCode, ToolError};

/// The instruments, made once from the host's meter when the runtime is built.
#[derive(Debug)]
pub(crate) struct Instruments {
    duration: Histogram<f64>,
    in_flight: UpDownCounter<i64>,
    refused: Counter<u64>,
    awaiting_approval: UpDownCounter<i64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Instruments {
        Instruments {
            duration: meter
                .f64_histogram("pleach.tool.call.duration")
                .with_unit("s")
                .with_description("How long tool calls took, from dispatch to their result")
                .build(),
            in_flight: meter
                .i64_up_down_counter("pleach.tool.calls.in_flight")
                .with_unit("{call}")
                .with_description("Tool calls dispatched and not ended")
                .build(),
            refused: meter
                .u64_counter("pleach.tool.calls.refused")
                .with_unit("{call}")
                .with_description("Tool calls refused because the runtime was at capacity (1014)")
                .build(),
            awaiting_approval: meter
                .i64_up_down_counter("pleach.tool.calls.awaiting_approval")
                .with_unit("{call}")
                .with_description("Tool calls waiting for the user's approval")
                .build(),
        }
    }

    /// A call of `tool` starts: its clock.
    pub(crate) fn started(&self, tool: &str) -> Instant {
        self.in_flight.add(1, &[tool_name(tool)]);
        Instant::now()
    }

    /// A call of `tool` started at `started` ended with `outcome`.
    pub(crate) fn ended(
        &self,
        tool: &str,
        started: Instant,
        outcome: &Result<crate::content::ToolOutput, ToolError>,
    ) {
        let name = tool_name(tool);
        self.in_flight.add(-1, std::slice::from_ref(&name));
        let attributes = match outcome {
            Ok(_) => vec![name, KeyValue::new("pleach.outcome", "ok")],
            Err(error) => {
                if error.code() == ErrorCode::Overloaded {
                    self.refused.add(1, std::slice::from_ref(&name));
                }
                vec![
                    name,
                    KeyValue::new("pleach.outcome", "error"),
                    KeyValue::new("pleach.error.code", i64::from(error.code().as_u16())),
                    KeyValue::new("error.type", format!("{:?}", error.code())),
                ]
            }
        };
        self.duration
            .record(started.elapsed().as_secs_f64(), &attributes);
    }

    /// A call of `tool` starts (`1`) or stops (`-1`) waiting for approval.
    pub(crate) fn awaiting_approval(&self, tool: &str, change: i64) {
        self.awaiting_approval.add(change, &[tool_name(tool)]);
    }
}

fn tool_name(tool: &str) -> KeyValue {
    KeyValue::new("gen_ai.tool.name", tool.to_owned())
}
