//! `stream`: one tool call's arguments streamed in ~10-byte deltas, assembled three ways, at
//! three sizes (2,000, 20,000 and 200,000 bytes), in one process:
//!
//! | column | what one assembly is |
//! | --- | --- |
//! | `final parse` | the floor: `serde_json::from_str::<Value>` of the whole text, once (no deltas) |
//! | `pleach` | `StreamAssembler`: `begin`, one `push` per delta (its `tool.delta` event built and dropped), `partial_value` every 100 deltas, `end`, `finish` |
//! | `reparse` | what re-parsing clients do: append the delta to a buffer and `serde_json::from_str::<Value>` the whole buffer, on every delta |
//!
//! A fourth row, `pleach parser`, is context and not in the summary lines: `IncrementalJson`
//! alone (`feed` per delta, `partial_value` every 100 deltas, `finish`), without the assembler's
//! per-call bookkeeping and events.
//!
//! The deltas are cut before timing: about 10 bytes each, each a whole number of UTF-8
//! characters (as providers send them: fragments are JSON strings in their events). Each
//! column's final value is checked against one `serde_json` parse before anything is timed.
//! `reparse` is quadratic, so it runs fewer rounds than the others (the table says how many).

use std::error::Error;
use std::hint::black_box;
use std::time::{Duration, Instant};

use pleach_core::assemble::{IncrementalJson, StreamAssembler};
use serde_json::Value;
use tokio::runtime::Runtime;

use crate::measure::{self, Contender, Plan, Summary};

/// The sizes measured, in bytes of arguments text.
const SIZES: [usize; 3] = [2_000, 20_000, 200_000];

/// The length a delta is cut at (then lengthened to the next character boundary).
const DELTA_BYTES: usize = 10;

/// How often, in deltas, the `pleach` columns read the partial value (as a UI would).
const PARTIAL_EVERY: usize = 100;

/// The provider key, id and tool name of the streamed call.
const KEY: &str = "0";
const CALL_ID: &str = "call_1";
const TOOL: &str = "insert_rows";

const LABEL_FINAL: &str = "final parse";
const LABEL_PLEACH: &str = "pleach";
const LABEL_PARSER: &str = "pleach parser";
const LABEL_REPARSE: &str = "reparse";

/// Runs the `stream` measurement and prints a table per size, the ratios and one summary line
/// per size.
pub(crate) fn run(quick: bool) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    println!(
        "pleach-bench stream: one call's arguments in ~{DELTA_BYTES}-byte deltas, partial value \
         read every {PARTIAL_EVERY} deltas; columns interleaved{}",
        if quick { " (--quick)" } else { "" },
    );
    println!(
        "serde_json objects in this build: {}",
        crate::dispatch::serde_json_object_kind()
    );

    let mut lines = Vec::new();
    let mut ratios = Vec::new();
    for size in SIZES {
        let text = arguments_text(size);
        let input = Input {
            text: &text,
            deltas: cut_into_deltas(&text),
        };
        let (mut fast, mut slow) = columns(&input);
        for contender in fast.iter_mut().chain(slow.iter_mut()) {
            contender.verify(&runtime).map_err(|problem| {
                format!(
                    "`{}` gave a wrong value at {size} bytes: {problem}",
                    contender.label()
                )
            })?;
        }
        let (fast_plan, slow_plan) = plans(size, quick);
        let mut summaries = measure::run(fast_plan, &runtime, &mut fast);
        summaries.extend(measure::run(slow_plan, &runtime, &mut slow));

        println!();
        println!(
            "size {size} bytes, {} deltas: {} batches of {} assemblies after {} warm-up rounds \
             ({LABEL_REPARSE}: {} of {} after {})",
            input.deltas.len(),
            fast_plan.rounds,
            fast_plan.batch_calls,
            fast_plan.warmup_rounds,
            slow_plan.rounds,
            slow_plan.batch_calls,
            slow_plan.warmup_rounds,
        );
        let contenders: Vec<&dyn Contender> = fast
            .iter()
            .chain(slow.iter())
            .map(|contender| &**contender as &dyn Contender)
            .collect();
        print_table(&summaries, &contenders);

        let median_us = |label: &str| -> Result<f64, Box<dyn Error>> {
            summaries
                .iter()
                .find(|summary| summary.label == label)
                .map(|summary| summary.median() / 1e3)
                .ok_or_else(|| format!("no column `{label}`").into())
        };
        let final_parse = median_us(LABEL_FINAL)?;
        let pleach = median_us(LABEL_PLEACH)?;
        let reparse = median_us(LABEL_REPARSE)?;
        ratios.push(format!(
            "size={size}: pleach/final_parse = {:.2}x  (project target: <= 3x)  \
             reparse/pleach = {:.0}x",
            pleach / final_parse,
            reparse / pleach,
        ));
        lines.push(format!(
            "stream size={size} final_parse_us={final_parse:.1} pleach_us={pleach:.1} \
             reparse_us={reparse:.1}"
        ));
    }
    println!();
    for line in ratios.iter().chain(&lines) {
        println!("{line}");
    }
    Ok(())
}

/// The plans for the linear columns and for `reparse` at `size`: a batch of the linear columns
/// takes at least a few hundred microseconds; `reparse` at 200,000 bytes takes seconds per
/// assembly, so it gets few rounds and no warm-up.
fn plans(size: usize, quick: bool) -> (Plan, Plan) {
    let batch_calls = u32::try_from(SIZES[2] / size.max(1)).unwrap_or(1).max(1);
    let fast = if quick {
        Plan {
            warmup_rounds: 2,
            rounds: 21,
            batch_calls,
        }
    } else {
        Plan {
            warmup_rounds: 10,
            rounds: 201,
            batch_calls,
        }
    };
    let (warmup_rounds, rounds) = match (size, quick) {
        (..=2_000, true) => (1, 11),
        (..=2_000, false) => (5, 101),
        (..=20_000, true) => (0, 3),
        (..=20_000, false) => (1, 11),
        (_, true) => (0, 1),
        (_, false) => (0, 3),
    };
    let slow = Plan {
        warmup_rounds,
        rounds,
        batch_calls: 1,
    };
    (fast, slow)
}

/// Arguments text of exactly `size` bytes (for any `size` of 100 or more), shaped like a bulk
/// insert: rows of short strings (some with escapes and non-ASCII characters), integers, floats,
/// booleans, nulls and a nested array, then a comment that pads to the size.
fn arguments_text(size: usize) -> String {
    const CLOSE: &str = r#"],"comment":""}"#;
    let mut text = String::from(r#"{"table":"events","rows":["#);
    let mut row_index = 0u32;
    loop {
        let row = format!(
            r#"{}{{"id":{row_index},"name":"Zoë row {row_index}","tags":["a","b\u00e9"],"score":{}.5,"note":"line \"{row_index}\"\n","ok":{},"parent":null}}"#,
            if row_index == 0 { "" } else { "," },
            row_index % 97,
            row_index.is_multiple_of(2),
        );
        if text.len() + row.len() + CLOSE.len() > size {
            break;
        }
        text.push_str(&row);
        row_index += 1;
    }
    text.push_str(r#"],"comment":""#);
    while text.len() + 2 < size {
        text.push('x');
    }
    text.push_str("\"}");
    text
}

/// `text` cut into deltas of about [`DELTA_BYTES`] bytes, each ending on a character boundary.
fn cut_into_deltas(text: &str) -> Vec<&str> {
    let mut deltas = Vec::with_capacity(text.len() / DELTA_BYTES + 1);
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + DELTA_BYTES).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        deltas.push(&text[start..end]);
        start = end;
    }
    deltas
}

/// The text of one size and its deltas.
struct Input<'a> {
    text: &'a str,
    deltas: Vec<&'a str>,
}

/// One column: a way to get the arguments value from the input.
struct Column<'a> {
    label: &'static str,
    describe: &'static str,
    input: &'a Input<'a>,
    assemble: fn(&Input<'_>) -> Option<Value>,
    /// The largest text whose assembly `verify` checks: one `reparse` of 200,000 bytes takes
    /// seconds, and its loop is the one checked at the smaller sizes.
    verify_up_to: usize,
}

impl Contender for Column<'_> {
    fn label(&self) -> &'static str {
        self.label
    }

    fn describe(&self) -> &'static str {
        self.describe
    }

    fn verify(&mut self, _: &Runtime) -> Result<(), String> {
        if self.input.text.len() > self.verify_up_to {
            return Ok(());
        }
        check((self.assemble)(self.input), self.input.text)
    }

    /// Times `calls` assemblies (the runtime is not needed: nothing here is async).
    fn time_batch(&mut self, _: &Runtime, calls: u32) -> Duration {
        let start = Instant::now();
        for _ in 0..calls {
            black_box((self.assemble)(black_box(self.input)));
        }
        start.elapsed()
    }
}

/// Columns, as `measure::run` takes them.
type Columns<'a> = Vec<Box<dyn Contender + 'a>>;

/// The columns at one size: the linear ones, then `reparse`.
fn columns<'a>(input: &'a Input<'a>) -> (Columns<'a>, Columns<'a>) {
    let column = |label, describe, assemble, verify_up_to| -> Box<dyn Contender + 'a> {
        Box::new(Column {
            label,
            describe,
            input,
            assemble,
            verify_up_to,
        })
    };
    let linear = vec![
        column(
            LABEL_FINAL,
            "serde_json::from_str::<Value> of the whole text, once",
            final_parse,
            usize::MAX,
        ),
        column(
            LABEL_PLEACH,
            "StreamAssembler: begin, push per delta (events), partial_value every 100, end, finish",
            assemble_with_pleach,
            usize::MAX,
        ),
        column(
            LABEL_PARSER,
            "IncrementalJson: feed per delta, partial_value every 100, finish",
            assemble_with_parser,
            usize::MAX,
        ),
    ];
    let quadratic = vec![column(
        LABEL_REPARSE,
        "append the delta, serde_json::from_str::<Value> of the whole buffer, per delta",
        reparse_per_delta,
        SIZES[1],
    )];
    (linear, quadratic)
}

/// **final parse**: the whole text, parsed once.
fn final_parse(input: &Input<'_>) -> Option<Value> {
    serde_json::from_str(input.text).ok()
}

/// **pleach**: the streamed call through `StreamAssembler`, as a provider adapter drives it;
/// every event is built and dropped.
fn assemble_with_pleach(input: &Input<'_>) -> Option<Value> {
    let mut assembler = StreamAssembler::new();
    black_box(assembler.begin(KEY, CALL_ID, TOOL).ok());
    for (index, delta) in input.deltas.iter().enumerate() {
        black_box(assembler.push(KEY, delta).ok());
        if (index + 1) % PARTIAL_EVERY == 0 {
            black_box(assembler.partial_value(KEY));
        }
    }
    black_box(assembler.end(KEY).ok());
    assembler.finish().pop()?.parsed.ok()
}

/// **pleach parser** (context): `IncrementalJson` alone.
fn assemble_with_parser(input: &Input<'_>) -> Option<Value> {
    let mut parser = IncrementalJson::new();
    for (index, delta) in input.deltas.iter().enumerate() {
        parser.feed(delta).ok()?;
        if (index + 1) % PARTIAL_EVERY == 0 {
            black_box(parser.partial_value());
        }
    }
    parser.finish().ok()
}

/// **reparse**: the whole buffer parsed again on every delta.
fn reparse_per_delta(input: &Input<'_>) -> Option<Value> {
    let mut buffer = String::new();
    let mut last = None;
    for delta in &input.deltas {
        buffer.push_str(delta);
        last = serde_json::from_str::<Value>(&buffer).ok();
        black_box(&last);
    }
    last
}

/// Whether an assembly gave what one parse of `text` gives.
fn check(value: Option<Value>, text: &str) -> Result<(), String> {
    let expected: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    match value {
        Some(value) if value == expected => Ok(()),
        Some(_) => Err("a value other than serde_json's".to_owned()),
        None => Err("no value".to_owned()),
    }
}

fn print_table(summaries: &[Summary], contenders: &[&dyn Contender]) {
    let width = measure::label_width(summaries);
    println!(
        "{:<width$}  {:>10}  {:>10}  {:>10}  one assembly",
        "column", "median us", "min us", "p90 us"
    );
    for (summary, contender) in summaries.iter().zip(contenders) {
        println!(
            "{:<width$}  {:>10.1}  {:>10.1}  {:>10.1}  {}",
            summary.label,
            summary.median() / 1e3,
            summary.min() / 1e3,
            summary.p90() / 1e3,
            contender.describe(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_have_the_exact_size_and_parse() {
        for size in SIZES {
            let text = arguments_text(size);
            assert_eq!(text.len(), size);
            let value: Value = serde_json::from_str(&text).unwrap();
            assert!(value["rows"].as_array().unwrap().len() > 5);
        }
    }

    #[test]
    fn deltas_are_short_whole_characters_and_join_to_the_text() {
        let text = arguments_text(SIZES[0]);
        let deltas = cut_into_deltas(&text);
        assert_eq!(deltas.concat(), text);
        assert!(
            deltas
                .iter()
                .all(|d| (DELTA_BYTES..DELTA_BYTES + 4).contains(&d.len())
                    || std::ptr::eq(*d, *deltas.last().unwrap()))
        );
    }

    #[test]
    fn every_column_gives_serde_jsons_value() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let text = arguments_text(SIZES[0]);
        let input = Input {
            text: &text,
            deltas: cut_into_deltas(&text),
        };
        let (linear, quadratic) = columns(&input);
        for mut column in linear.into_iter().chain(quadratic) {
            column.verify(&runtime).unwrap();
        }
    }
}
