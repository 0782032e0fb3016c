//! Size limits of one call: its arguments' bytes and nesting, checked on the text before
//! anything is parsed, and its result's bytes, a structured value counted without writing it and
//! text blocks cut to what is left.

use std::fmt::Write as _;

use serde_json::Value;

use super::shared::Limits;
use crate::content::{Block, ToolOutput};
use crate::error::{ErrorCode, ToolError};
use crate::schema;

/// The arguments text against the size and nesting limits, as a verdict (keyword `limits`): for
/// hosts checking a call or an edit before it runs.
pub(crate) fn limits_verdict(arguments: &str, limits: Limits) -> Option<crate::ValidationResult> {
    let over = check_limits(arguments, limits).err()?;
    Some(crate::ValidationResult::invalid(vec![
        crate::schema::ValidationError {
            path: String::new(),
            keyword: "limits".to_owned(),
            message: over.message().to_owned(),
        },
    ]))
}

/// Size and nesting limits, checked on the text before anything is parsed.
pub(super) fn check_limits(arguments: &str, limits: Limits) -> Result<(), ToolError> {
    if arguments.len() > limits.max_argument_bytes {
        return Err(ToolError::new(
            ErrorCode::ArgumentsTooLarge,
            format!(
                "the arguments are {} bytes, over the limit of {}; send less data",
                arguments.len(),
                limits.max_argument_bytes
            ),
        ));
    }
    // Each level opens with a byte of its own: text no longer than the limit cannot pass it.
    if arguments.len() <= limits.max_argument_depth {
        return Ok(());
    }
    let depth = schema::nesting_depth(arguments);
    if depth > limits.max_argument_depth {
        return Err(ToolError::new(
            ErrorCode::ArgumentsTooLarge,
            format!(
                "the arguments nest {depth} levels deep, over the limit of {}; flatten them",
                limits.max_argument_depth
            ),
        ));
    }
    Ok(())
}

/// A result within `cap` bytes: its structured value's JSON text (over the cap: 1002) and its
/// blocks' bytes. A medium that does not fit in what is left fails the call (1019); text blocks
/// are cut to what is left, each cut marked with how much was dropped.
#[inline]
pub(super) fn cap_result(output: &mut ToolOutput, cap: usize) -> Result<(), ToolError> {
    // A number, a boolean or null alone is at most `SCALAR_LEN` bytes of JSON: most results of
    // most tools, and nothing to count.
    let scalar = matches!(
        output.structured,
        None | Some(Value::Null | Value::Bool(_) | Value::Number(_))
    );
    if scalar && output.content.is_empty() && cap >= SCALAR_LEN {
        return Ok(());
    }
    let mut used = match &output.structured {
        Some(value) => json_len_within(value, cap).ok_or_else(|| {
            ToolError::new(
                ErrorCode::OutputInvalid,
                format!(
                    "the tool's result is larger than this runtime's limit of {cap} bytes; ask \
                     for less (a narrower query, a page of the data)"
                ),
            )
        })?,
        None => 0,
    };
    if output.content.is_empty() {
        return Ok(());
    }
    // Media first: they cannot be cut, so they take their room before the text does.
    for block in output
        .content
        .iter()
        .filter(|block| block.as_text().is_none())
    {
        let bytes = block.len();
        if used.saturating_add(bytes) > cap {
            return Err(ToolError::new(
                ErrorCode::ContentRefused,
                format!(
                    "the tool's {} is over the result cap of {} ({} left for it); ask for a \
                     smaller one (a lower resolution, fewer pages)",
                    block.summary(),
                    crate::content::human_size(cap),
                    crate::content::human_size(cap - used),
                ),
            ));
        }
        used += bytes;
    }
    for block in &mut output.content {
        if let Block::Text(text) = &mut block.block {
            let left = cap - used;
            used += if text.len() > left {
                cut_text(text, left, cap)
            } else {
                text.len()
            };
        }
    }
    Ok(())
}

/// Cuts `text` to at most `keep` bytes (at a character boundary) and says so on a line of its
/// own: how much was dropped, the cap, and how to get the rest. Returns the bytes kept.
fn cut_text(text: &mut String, keep: usize, cap: usize) -> usize {
    let total = text.len();
    let mut end = keep.min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    let _ = write!(
        text,
        "\n[cut: {} of {total} bytes dropped at the result cap of {}; ask for the rest in parts \
         (a range, an offset, the next page) or for less]",
        total - end,
        crate::content::human_size(cap),
    );
    end
}

/// The length of `value`'s JSON text if it is at most `limit` bytes. Walks the value and stops as
/// soon as the limit is passed, so a small result costs a few steps and a huge one no more than
/// the limit.
fn json_len_within(value: &Value, limit: usize) -> Option<usize> {
    /// Takes `bytes` from the budget; false once it is spent.
    fn take(budget: &mut usize, bytes: usize) -> bool {
        *budget = budget.saturating_sub(bytes);
        *budget > 0
    }
    fn size(value: &Value, budget: &mut usize) -> bool {
        match value {
            Value::Null | Value::Bool(true) => take(budget, 4),
            Value::Bool(false) => take(budget, 5),
            Value::Number(number) => take(budget, number_len(number)),
            // Escapes can make the text longer than the string; the limit is a guard, not a
            // byte-exact count.
            Value::String(text) => take(budget, text.len() + 2),
            // Brackets, and a comma before every item but the first.
            Value::Array(items) => {
                take(budget, 2)
                    && items.iter().enumerate().all(|(index, item)| {
                        take(budget, usize::from(index > 0)) && size(item, budget)
                    })
            }
            // Braces; per member its quoted key, the colon, and a comma before all but the first.
            Value::Object(map) => {
                take(budget, 2)
                    && map.iter().enumerate().all(|(index, (key, item))| {
                        take(budget, key.len() + 3 + usize::from(index > 0)) && size(item, budget)
                    })
            }
        }
    }
    let start = limit.saturating_add(1);
    let mut budget = start;
    size(value, &mut budget).then(|| start - budget)
}

/// The most bytes a number, a boolean or null takes as JSON text as [`json_len_within`] counts
/// it: 24 for a fractional number (the longest shortest form of an `f64`), 20 for the longest
/// integer.
const SCALAR_LEN: usize = 24;

/// The length of a number's JSON text: exact for an integer, at most 24 bytes (the longest
/// shortest form of an `f64`) for the rest.
fn number_len(number: &serde_json::Number) -> usize {
    fn digits(n: u64) -> usize {
        n.checked_ilog10().map_or(1, |log| log as usize + 1)
    }
    if let Some(n) = number.as_u64() {
        digits(n)
    } else if let Some(n) = number.as_i64() {
        digits(n.unsigned_abs()) + 1
    } else {
        24
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{cap_result, json_len_within};
    use crate::content::{ContentBlock, ToolOutput};
    use crate::error::ErrorCode;

    /// The smallest limit each result fits under is its JSON text's length, for the results whose
    /// length the guard counts exactly (everything but floats and strings with escapes).
    #[test]
    fn the_result_size_guard_counts_numbers_literals_and_containers_exactly() {
        for result in [
            json!(3),
            json!(0),
            json!(-7),
            json!(12345),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(true),
            json!(false),
            Value::Null,
            json!([1, 22, -333]),
            json!({ "a": [true, null], "bc": "text" }),
            json!([]),
            json!({}),
        ] {
            let length = result.to_string().len();
            assert_eq!(json_len_within(&result, length), Some(length), "{result}");
            assert_eq!(json_len_within(&result, length - 1), None, "{result}");
        }
        // A float counts as the longest shortest form of an `f64`: never less than its text.
        let float = json!(0.1);
        assert!(json_len_within(&float, 24).is_some());
        assert!(json_len_within(&float, 23).is_none());
    }

    #[test]
    fn over_the_cap_text_is_cut_and_marked_and_media_refused() {
        let out = ToolOutput::new(json!("ok"))
            .block(ContentBlock::text("é".repeat(10))) // 20 bytes
            .block(ContentBlock::text("cut to a byte"));
        // 4 bytes for `"ok"`, 7 left: the first text keeps 3 whole characters (6 bytes).
        let mut capped = out;
        cap_result(&mut capped, 11).unwrap();
        let first = capped.content[0].as_text().unwrap();
        assert!(
            first.starts_with("ééé\n[cut: 14 of 20 bytes dropped at the result cap of 11 B"),
            "{first}"
        );
        // One byte was left for the second.
        let second = capped.content[1].as_text().unwrap();
        assert!(second.starts_with("c\n[cut: 12 of 13 bytes"), "{second}");

        let image = ToolOutput::from_blocks([ContentBlock::image(vec![0u8; 100], "image/png")]);
        let error = cap_result(&mut image.clone(), 99).unwrap_err();
        assert_eq!(error.code(), ErrorCode::ContentRefused);
        assert!(
            error
                .message()
                .contains("image/png 100 B is over the result cap of 99 B"),
            "{}",
            error.message()
        );
        assert!(cap_result(&mut image.clone(), 100).is_ok());

        // A scalar fits any cap of `SCALAR_LEN` bytes unchecked; under a smaller one it is
        // counted like any result.
        for scalar in [json!(u64::MAX), json!(-0.1), json!(true), Value::Null] {
            assert!(cap_result(&mut ToolOutput::new(scalar.clone()), super::SCALAR_LEN).is_ok());
        }
        assert_eq!(
            cap_result(&mut ToolOutput::new(json!(12345)), 4)
                .unwrap_err()
                .code(),
            ErrorCode::OutputInvalid
        );
        assert!(cap_result(&mut ToolOutput::new(json!(12345)), 5).is_ok());

        let mut big = ToolOutput::new(json!("x".repeat(50)));
        assert_eq!(
            cap_result(&mut big, 10).unwrap_err().code(),
            ErrorCode::OutputInvalid
        );
    }
}
