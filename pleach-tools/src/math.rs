//! The `math` tool: one arithmetic expression in, one finite number out.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_tools::math::math;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let out = math::definition()
//!     .call(r#"{"expression": "2 * (3 + 4)"}"#, ToolContext::new("call_1"))
//!     .await
//!     .unwrap();
//! assert_eq!(out, serde_json::json!({"result": 14.0}));
//!
//! // A model can fix what goes wrong: the message says what and where.
//! let err = math::definition()
//!     .call(r#"{"expression": "1 / 0"}"#, ToolContext::new("call_2"))
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert_eq!(err.message(), "division by zero: `1 / 0` at column 3; results must be finite numbers");
//! # });
//! ```
//!
//! # The evaluator
//!
//! A small recursive-descent parser in this module rather than a crate. The candidates fell short:
//! `exmex` 0.21 (MIT/Apache-2.0) binds unary minus tighter than `^` (`-3^2` is 9 there, -9 in
//! mathematics and Python), cannot read scientific notation (`1e5` fails), takes unknown names as
//! free variables, and reports errors in its own terms ("we have 0 ops and 2 node"), none of which a
//! model can act on; `evalexpr` is AGPL; `meval` and `fasteval` are unmaintained. Written here, the
//! precedence is the conventional one, every error names the column and the fix, and the stack is
//! bounded: the parser recurses only into parentheses, whose depth is checked on the raw text
//! before parsing, while chains of signs and powers are read in loops.

use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{ErrorCode, ToolError, tool};

use crate::number::{round_significant, show};
use crate::suggest::{close_matches, one_of};

/// The longest expression accepted, in bytes.
const MAX_EXPRESSION_BYTES: usize = 1_000;

/// The deepest nesting of parentheses accepted; a function call's parentheses count.
const MAX_NESTING: usize = 64;

/// The significant digits of a result: what spreadsheets show, and below the noise of `f64`.
const SIGNIFICANT_DIGITS: usize = 15;

/// The result of `math`, e.g. `{"result": 14.0}` for `2 * (3 + 4)`.
///
/// ```
/// use pleach_tools::math::math;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let out = math("0.1 + 0.2".to_owned()).await.unwrap();
/// assert_eq!(out.result, 0.3); // rounded to 15 significant digits, not 0.30000000000000004
/// # }
/// ```
// An object rather than a bare number: the schema names the value, and fields can be added later
// (an exact fraction, a unit) without breaking callers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `math`, e.g. `{\"result\": 14.0}` for `2 * (3 + 4)`."
)]
#[non_exhaustive]
pub struct MathOutput {
    /// The value of the expression: a finite number, rounded to 15 significant digits.
    pub result: f64,
}

/// Evaluates an arithmetic expression and returns `{"result": <number>}`; for example
/// `2 * (3 + 4)` gives 14 and `sqrt(16) + 2^10` gives 1028.
///
/// Operators from loosest to tightest: `+ -`, then `* / %` (`%` is the remainder, signed like the
/// left operand), then unary minus, then `^` (or `**`), which groups from the right: `2^3^2` is
/// 512 and `-3^2` is -9. Numbers may use scientific
/// notation (`1.5e-3`); there is no implicit multiplication (write `2 * pi`, not `2pi`).
///
/// Functions: sqrt, cbrt, abs, exp, ln, log, log10, log2, sin, cos, tan, asin, acos, atan, atan2,
/// sinh, cosh, tanh, floor, ceil, round, trunc, min, max. `log(x)` is the natural logarithm like
/// `ln(x)`, and `log(x, b)` the base-b one; `atan2(y, x)`; `min` and `max` take any number of
/// arguments; angles are in radians. Constants: pi, e, tau. There are no variables.
///
/// The result is rounded to 15 significant digits. An expression whose value, or any step of it,
/// is not a finite number (`1 / 0`, `sqrt(-1)`, `1e308 * 10`) is an error, as is an expression
/// longer than 1000 bytes or nesting parentheses more than 64 deep.
#[tool]
pub async fn math(
    #[arg(description = "The expression to evaluate, e.g. `2 * (3 + 4)` or `sin(pi / 6)`")]
    expression: String,
) -> Result<MathOutput, ToolError> {
    evaluate(&expression).map(|result| MathOutput { result })
}

/// The value of `expression`, finite and rounded, or an error (code 1001) a model can act on.
fn evaluate(expression: &str) -> Result<f64, ToolError> {
    check_limits(expression)?;
    let mut parser = Parser {
        text: expression,
        tokens: tokenize(expression)?,
        next: 0,
    };
    let value = parser.sum()?;
    parser.end()?;
    // Every literal and every step is checked, so this holds; a non-finite number would reach the
    // model as `null`, so it is checked once more.
    if !value.is_finite() {
        return Err(
            ToolError::failed("the expression did not evaluate to a finite number")
                .with_detail(format!("non-finite result {value} for {expression:?}")),
        );
    }
    Ok(round_significant(value, SIGNIFICANT_DIGITS))
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

/// The checks on the raw text, before any parsing: they bound the parser's work and its stack.
fn check_limits(expression: &str) -> Result<(), ToolError> {
    if expression.trim().is_empty() {
        return Err(invalid(
            "the expression is empty; pass one such as `2 * (3 + 4)`".to_owned(),
        ));
    }
    if expression.len() > MAX_EXPRESSION_BYTES {
        return Err(invalid(format!(
            "the expression is {} bytes long, over the limit of {MAX_EXPRESSION_BYTES}; split the \
             computation into shorter expressions",
            expression.len()
        )));
    }
    let mut depth = 0_usize;
    let mut deepest = 0_usize;
    for byte in expression.bytes() {
        match byte {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_NESTING {
        return Err(invalid(format!(
            "the expression nests parentheses {deepest} levels deep, over the limit of \
             {MAX_NESTING}; remove redundant parentheses or split the computation"
        )));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TokenKind<'a> {
    Number(f64),
    Name(&'a str),
    Operator(Operator),
    Open,
    Close,
    Comma,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Add,
    Subtract,
    Multiply,
    Divide,
    Remainder,
    Power,
}

impl Operator {
    fn symbol(self) -> &'static str {
        match self {
            Operator::Add => "+",
            Operator::Subtract => "-",
            Operator::Multiply => "*",
            Operator::Divide => "/",
            Operator::Remainder => "%",
            Operator::Power => "^",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: TokenKind<'a>,
    /// The token as written.
    text: &'a str,
    /// Byte offset in the expression.
    start: usize,
}

/// The 1-based column (in characters) of byte offset `start`, as messages give it.
fn column(text: &str, start: usize) -> usize {
    text.get(..start).map_or(0, |before| before.chars().count()) + 1
}

fn tokenize(text: &str) -> Result<Vec<Token<'_>>, ToolError> {
    let mut tokens = Vec::new();
    let mut index = 0;
    while let Some(c) = text.get(index..).and_then(|rest| rest.chars().next()) {
        let start = index;
        index += c.len_utf8();
        let kind = match c {
            c if c.is_whitespace() => continue,
            '0'..='9' | '.' => {
                index = start + number_len(&text[start..]);
                TokenKind::Number(parse_number(text, start, index)?)
            }
            c if c.is_alphabetic() || c == '_' => {
                index = start + name_len(&text[start..]);
                TokenKind::Name(&text[start..index])
            }
            '+' => TokenKind::Operator(Operator::Add),
            '-' | '\u{2212}' => TokenKind::Operator(Operator::Subtract),
            '*' if text[index..].starts_with('*') => {
                index += 1;
                TokenKind::Operator(Operator::Power)
            }
            '*' | '×' => TokenKind::Operator(Operator::Multiply),
            '/' | '÷' => TokenKind::Operator(Operator::Divide),
            '%' => TokenKind::Operator(Operator::Remainder),
            '^' => TokenKind::Operator(Operator::Power),
            '(' => TokenKind::Open,
            ')' => TokenKind::Close,
            ',' => TokenKind::Comma,
            other => {
                return Err(invalid(format!(
                    "unexpected character `{other}` at column {}; an expression has numbers, the \
                     operators + - * / % ^, parentheses, commas between function arguments, and \
                     function or constant names",
                    column(text, start)
                )));
            }
        };
        tokens.push(Token {
            kind,
            text: &text[start..index],
            start,
        });
    }
    tokens.push(Token {
        kind: TokenKind::End,
        text: "",
        start: text.len(),
    });
    Ok(tokens)
}

/// The length in bytes of the number at the start of `text`: digits, an optional fraction, and an
/// exponent only when digits follow the `e` (so `2e` is `2` then the name `e`).
fn number_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let digits = |from: usize| {
        bytes.get(from..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let mut len = digits(0);
    if bytes.get(len) == Some(&b'.') {
        len += 1 + digits(len + 1);
    }
    if matches!(bytes.get(len), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(len + 1), Some(b'+' | b'-')));
        let exponent = digits(len + 1 + sign);
        if exponent > 0 {
            len += 1 + sign + exponent;
        }
    }
    len
}

/// The length in bytes of the name at the start of `text`.
fn name_len(text: &str) -> usize {
    text.char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(text.len(), |(end, _)| end)
}

fn parse_number(text: &str, start: usize, end: usize) -> Result<f64, ToolError> {
    let literal = &text[start..end];
    match literal.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        Ok(_) => Err(invalid(format!(
            "the number `{literal}` at column {} is too large; numbers must be within about \
             ±1.8e308",
            column(text, start)
        ))),
        Err(_) => Err(invalid(format!(
            "`{literal}` at column {} is not a number; write numbers like `42`, `0.5` or `1.5e3`",
            column(text, start)
        ))),
    }
}

/// How a function takes its arguments.
#[derive(Clone, Copy)]
enum Function {
    One(fn(f64) -> f64),
    Two(fn(f64, f64) -> f64),
    OneOrTwo(fn(f64) -> f64, fn(f64, f64) -> f64),
    /// One or more arguments, folded left to right.
    Fold(fn(f64, f64) -> f64),
}

impl Function {
    fn arity(self) -> &'static str {
        match self {
            Function::One(_) => "1 argument",
            Function::Two(_) => "2 arguments",
            Function::OneOrTwo(..) => "1 or 2 arguments",
            Function::Fold(_) => "1 or more arguments",
        }
    }
}

/// The functions, by lowercase name. The tool's description lists them; a test keeps it in step.
const FUNCTIONS: &[(&str, Function)] = &[
    ("sqrt", Function::One(f64::sqrt)),
    ("cbrt", Function::One(f64::cbrt)),
    ("abs", Function::One(f64::abs)),
    ("exp", Function::One(f64::exp)),
    ("ln", Function::One(f64::ln)),
    ("log", Function::OneOrTwo(f64::ln, log_base)),
    ("log10", Function::One(f64::log10)),
    ("log2", Function::One(f64::log2)),
    ("sin", Function::One(f64::sin)),
    ("cos", Function::One(f64::cos)),
    ("tan", Function::One(f64::tan)),
    ("asin", Function::One(f64::asin)),
    ("acos", Function::One(f64::acos)),
    ("atan", Function::One(f64::atan)),
    ("atan2", Function::Two(f64::atan2)),
    ("sinh", Function::One(f64::sinh)),
    ("cosh", Function::One(f64::cosh)),
    ("tanh", Function::One(f64::tanh)),
    ("floor", Function::One(f64::floor)),
    ("ceil", Function::One(f64::ceil)),
    ("round", Function::One(f64::round)),
    ("trunc", Function::One(f64::trunc)),
    ("min", Function::Fold(f64::min)),
    ("max", Function::Fold(f64::max)),
];

/// `log(x, base)`. A logarithm's base must be positive (and not 1, whose logarithm divides by
/// zero: an infinite step, refused as such): `f64::log` answers 0 for base 0 (`ln x / -inf`),
/// which is no logarithm; NaN makes the step report "not a real number".
fn log_base(x: f64, base: f64) -> f64 {
    if base > 0.0 { x.log(base) } else { f64::NAN }
}

/// The constants, by lowercase name (`π` too).
const CONSTANTS: &[(&str, f64)] = &[
    ("pi", std::f64::consts::PI),
    ("π", std::f64::consts::PI),
    ("e", std::f64::consts::E),
    ("tau", std::f64::consts::TAU),
];

/// One step of the evaluation, for messages about its result.
enum Step<'a> {
    Binary(Operator, f64, f64),
    Call(&'a str, &'a [f64]),
}

impl std::fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Binary(operator, a, b) => {
                write!(f, "{} {} {}", show(*a), operator.symbol(), show(*b))
            }
            Step::Call(name, args) => {
                let args: Vec<String> = args.iter().map(|arg| show(*arg)).collect();
                write!(f, "{name}({})", args.join(", "))
            }
        }
    }
}

/// Precedence climbing over the tokens, evaluating as it goes. Recursion happens only through
/// `primary` into parentheses, so the stack grows with the nesting `check_limits` bounds.
struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token<'a>>,
    next: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token<'a> {
        self.tokens.get(self.next).copied().unwrap_or(Token {
            kind: TokenKind::End,
            text: "",
            start: self.text.len(),
        })
    }

    fn bump(&mut self) -> Token<'a> {
        let token = self.peek();
        if token.kind != TokenKind::End {
            self.next += 1;
        }
        token
    }

    fn column(&self, token: Token<'_>) -> usize {
        column(self.text, token.start)
    }

    /// `product (("+" | "-") product)*`
    fn sum(&mut self) -> Result<f64, ToolError> {
        let mut value = self.product()?;
        while let TokenKind::Operator(operator @ (Operator::Add | Operator::Subtract)) =
            self.peek().kind
        {
            let token = self.bump();
            let rhs = self.product()?;
            value = self.apply(operator, value, rhs, token)?;
        }
        Ok(value)
    }

    /// `signed (("*" | "/" | "%") signed)*`
    fn product(&mut self) -> Result<f64, ToolError> {
        let mut value = self.signed()?;
        while let TokenKind::Operator(
            operator @ (Operator::Multiply | Operator::Divide | Operator::Remainder),
        ) = self.peek().kind
        {
            let token = self.bump();
            let rhs = self.signed()?;
            value = self.apply(operator, value, rhs, token)?;
        }
        Ok(value)
    }

    /// `("+" | "-")* power`: the sign applies to the whole power, so `-3^2` is -9.
    fn signed(&mut self) -> Result<f64, ToolError> {
        let negative = self.signs();
        let value = self.power()?;
        Ok(if negative { -value } else { value })
    }

    /// Reads a run of signs; whether they negate.
    fn signs(&mut self) -> bool {
        let mut negative = false;
        while let TokenKind::Operator(operator @ (Operator::Add | Operator::Subtract)) =
            self.peek().kind
        {
            self.bump();
            negative ^= operator == Operator::Subtract;
        }
        negative
    }

    /// `primary ("^" ("+" | "-")* primary)*`, grouped from the right: `2^-3^2` is `2^(-(3^2))`.
    /// Read in a loop and folded, so a long chain costs no stack.
    fn power(&mut self) -> Result<f64, ToolError> {
        let base = self.primary()?;
        let mut chain = Vec::new();
        while self.peek().kind == TokenKind::Operator(Operator::Power) {
            let token = self.bump();
            let negative = self.signs();
            let operand = self.primary()?;
            chain.push((token, negative, operand));
        }
        let Some((mut token, mut negative, mut exponent)) = chain.pop() else {
            return Ok(base);
        };
        while let Some((previous_token, previous_negative, operand)) = chain.pop() {
            let signed = if negative { -exponent } else { exponent };
            exponent = self.apply(Operator::Power, operand, signed, token)?;
            (token, negative) = (previous_token, previous_negative);
        }
        let signed = if negative { -exponent } else { exponent };
        self.apply(Operator::Power, base, signed, token)
    }

    /// A number, a constant, a function call, or a parenthesized sum.
    fn primary(&mut self) -> Result<f64, ToolError> {
        let token = self.bump();
        match token.kind {
            TokenKind::Number(value) => Ok(value),
            TokenKind::Name(name) => self.name(token, name),
            TokenKind::Open => {
                let value = self.sum()?;
                self.close(token)?;
                Ok(value)
            }
            TokenKind::End => Err(invalid(format!(
                "the expression ends too early at column {}; complete it with a number, a name \
                 or `(`",
                self.column(token)
            ))),
            TokenKind::Operator(_) | TokenKind::Close | TokenKind::Comma => Err(invalid(format!(
                "expected a number, a name or `(` at column {}, found `{}`",
                self.column(token),
                token.text
            ))),
        }
    }

    fn name(&mut self, token: Token<'a>, name: &str) -> Result<f64, ToolError> {
        let lowercase = name.to_lowercase();
        if let Some(&(_, value)) = CONSTANTS.iter().find(|(known, _)| *known == lowercase) {
            if self.peek().kind == TokenKind::Open {
                return Err(invalid(format!(
                    "`{name}` at column {} is a constant, not a function; use it as a number, \
                     e.g. `2 * {name}`",
                    self.column(token)
                )));
            }
            return Ok(value);
        }
        if let Some(&(_, function)) = FUNCTIONS.iter().find(|(known, _)| *known == lowercase) {
            let open = self.peek();
            if open.kind != TokenKind::Open {
                return Err(invalid(format!(
                    "`{name}` at column {} is a function; call it with parentheses, e.g. \
                     `{name}(2)`",
                    self.column(token)
                )));
            }
            self.bump();
            let args = self.arguments(open)?;
            return self.call(token, &lowercase, function, &args);
        }
        Err(self.unknown_name(token, name))
    }

    fn unknown_name(&self, token: Token<'_>, name: &str) -> ToolError {
        let known = FUNCTIONS
            .iter()
            .map(|(known, _)| (*known, ()))
            .chain(CONSTANTS.iter().map(|(known, _)| (*known, ())));
        let suggestions: Vec<String> = close_matches(name, known)
            .into_iter()
            .take(3)
            .map(|(known, ())| format!("`{known}`"))
            .collect();
        let hint = if suggestions.is_empty() {
            "expressions have no variables: use numbers, the constants pi, e and tau, and \
             functions such as sqrt, ln or sin"
                .to_owned()
        } else {
            format!("did you mean {}?", one_of(&suggestions))
        };
        invalid(format!(
            "unknown name `{name}` at column {}; {hint}",
            self.column(token)
        ))
    }

    /// The arguments of a call whose `(` has been read, through the closing `)`.
    fn arguments(&mut self, open: Token<'_>) -> Result<Vec<f64>, ToolError> {
        let mut args = Vec::new();
        if self.peek().kind == TokenKind::Close {
            self.bump();
            return Ok(args);
        }
        loop {
            args.push(self.sum()?);
            if self.peek().kind == TokenKind::Comma {
                self.bump();
            } else {
                self.close(open)?;
                return Ok(args);
            }
        }
    }

    fn call(
        &self,
        token: Token<'_>,
        name: &str,
        function: Function,
        args: &[f64],
    ) -> Result<f64, ToolError> {
        let value = match (function, args) {
            (Function::One(f) | Function::OneOrTwo(f, _), &[x]) => f(x),
            (Function::Two(f) | Function::OneOrTwo(_, f), &[x, y]) => f(x, y),
            (Function::Fold(f), &[first, ref rest @ ..]) => {
                rest.iter().fold(first, |acc, &x| f(acc, x))
            }
            _ => {
                return Err(invalid(format!(
                    "`{name}` at column {} takes {}, got {}",
                    self.column(token),
                    function.arity(),
                    args.len()
                )));
            }
        };
        self.finite(value, &Step::Call(name, args), token)
    }

    fn apply(
        &self,
        operator: Operator,
        a: f64,
        b: f64,
        token: Token<'_>,
    ) -> Result<f64, ToolError> {
        let value = match operator {
            Operator::Add => a + b,
            Operator::Subtract => a - b,
            Operator::Multiply => a * b,
            Operator::Divide => a / b,
            Operator::Remainder => a % b,
            Operator::Power => a.powf(b),
        };
        self.finite(value, &Step::Binary(operator, a, b), token)
    }

    /// `value` if it is finite; otherwise an error naming the step that left the finite numbers.
    fn finite(&self, value: f64, step: &Step<'_>, token: Token<'_>) -> Result<f64, ToolError> {
        if value.is_finite() {
            return Ok(value);
        }
        let column = self.column(token);
        let divides_by_zero = match *step {
            Step::Binary(Operator::Divide | Operator::Remainder, _, b) => b == 0.0,
            Step::Binary(Operator::Power, a, b) => a == 0.0 && b < 0.0,
            _ => false,
        };
        let problem = if divides_by_zero {
            format!("division by zero: `{step}` at column {column}")
        } else if value.is_nan() {
            format!("`{step}` at column {column} is not a real number")
        } else if let Step::Binary(..) = step {
            format!("`{step}` at column {column} overflows: every step must stay within ±1.8e308")
        } else {
            format!("`{step}` at column {column} is infinite")
        };
        Err(invalid(format!(
            "{problem}; results must be finite numbers"
        )))
    }

    /// `)` closing `open`.
    fn close(&mut self, open: Token<'_>) -> Result<(), ToolError> {
        let token = self.peek();
        match token.kind {
            TokenKind::Close => {
                self.bump();
                Ok(())
            }
            TokenKind::End => Err(invalid(format!(
                "the `(` at column {} is never closed; add a `)`",
                self.column(open)
            ))),
            _ => Err(self.after_value(token, "`)` or an operator")),
        }
    }

    /// The end of the text, after a complete expression.
    fn end(&mut self) -> Result<(), ToolError> {
        let token = self.peek();
        match token.kind {
            TokenKind::End => Ok(()),
            TokenKind::Close => Err(invalid(format!(
                "unmatched `)` at column {}; remove it or add a `(` before it",
                self.column(token)
            ))),
            _ => Err(self.after_value(token, "an operator")),
        }
    }

    /// The error for `token` found where a complete value ends and `expected` should follow.
    fn after_value(&self, token: Token<'_>, expected: &str) -> ToolError {
        let column = self.column(token);
        let found = token.text;
        invalid(match token.kind {
            TokenKind::Comma => format!(
                "unexpected `,` at column {column}; commas only separate function arguments \
                 (write `1000`, not `1,000`)"
            ),
            TokenKind::Number(_) | TokenKind::Name(_) | TokenKind::Open => format!(
                "expected {expected} before `{found}` at column {column}; there is no implicit \
                 multiplication, so write `2 * pi`, not `2pi`"
            ),
            _ => format!("expected {expected} at column {column}, found `{found}`"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::ToolContext;
    use serde_json::json;

    fn value(expression: &str) -> f64 {
        match evaluate(expression) {
            Ok(value) => value,
            Err(err) => panic!("{expression:?} failed: {}", err.message()),
        }
    }

    #[track_caller]
    fn assert_value(expression: &str, expected: f64) {
        let actual = value(expression);
        let tolerance = 1e-12 * expected.abs().max(1.0);
        assert!(
            (actual - expected).abs() <= tolerance,
            "{expression:?} gave {actual}, expected {expected}"
        );
    }

    /// The message of the error `expression` must fail with (code 1001, lowercase first letter).
    #[track_caller]
    fn error(expression: &str) -> String {
        crate::test_support::refusal(evaluate(expression), &expression)
    }

    #[track_caller]
    fn assert_error(expression: &str, needle: &str) {
        let message = error(expression);
        assert!(
            message.contains(needle),
            "{expression:?}: {message:?} lacks {needle:?}"
        );
    }

    #[test]
    fn arithmetic() {
        assert_value("6*7", 42.0);
        assert_value("2^10", 1024.0);
        assert_value("2 ** 10", 1024.0);
        assert_value("1 + 2 * 3", 7.0);
        assert_value("(1 + 2) * 3", 9.0);
        assert_value("1 - 2 - 3", -4.0);
        assert_value("1 - 2 + 3", 2.0);
        assert_value("8 / 2 / 2", 2.0);
        assert_value("8 / 2 * 4", 16.0);
        assert_value("10 % 3", 1.0);
        assert_value("-7 % 3", -1.0);
        assert_value("  12\t/\n4 ", 3.0);
        assert_value("3 × 4 ÷ 2 − 1", 5.0);
    }

    #[test]
    fn signs_and_powers_follow_mathematical_convention() {
        assert_value("-3^2", -9.0);
        assert_value("-(3)^2", -9.0);
        assert_value("(-3)^2", 9.0);
        assert_value("2^3^2", 512.0);
        assert_value("2^-1", 0.5);
        assert_value("2^-3^2", 2_f64.powi(-9));
        assert_value("2 * -3", -6.0);
        assert_value("--3", 3.0);
        assert_value("1 - -1", 2.0);
        assert_value("+4", 4.0);
        assert_value("1 + + 1", 2.0);
        assert_value("4 / 2^2", 1.0);
        assert_value("2 * -3^2", -18.0);
    }

    #[test]
    fn numbers() {
        assert_value("1.5e3", 1500.0);
        assert_value("2.5E-3", 0.0025);
        assert_value("1e+2", 100.0);
        assert_value(".5 + 5.", 5.5);
        assert_value("1e-400", 0.0);
        assert_eq!(value("0.1 + 0.2").to_bits(), 0.3_f64.to_bits(), "rounded");
        assert_eq!(value("-0").to_bits(), 0.0_f64.to_bits(), "no negative zero");
        assert_eq!(
            value("-sin(0)").to_bits(),
            0.0_f64.to_bits(),
            "no negative zero"
        );
    }

    #[test]
    fn functions_and_constants() {
        assert_value("sqrt(16)", 4.0);
        assert_value("cbrt(-27)", -3.0);
        assert_value("abs(-3)", 3.0);
        assert_value("exp(0)", 1.0);
        assert_value("ln(e)", 1.0);
        assert_value("log(e^2)", 2.0);
        assert_value("log(8, 2)", 3.0);
        assert_value("log10(1000)", 3.0);
        assert_value("log2(1024)", 10.0);
        assert_value("sin(pi / 2)", 1.0);
        assert_value("cos(0)", 1.0);
        assert_value("tan(pi / 4)", 1.0);
        assert_value("asin(1)", std::f64::consts::FRAC_PI_2);
        assert_value("acos(1)", 0.0);
        assert_value("atan(1)", std::f64::consts::FRAC_PI_4);
        assert_value("atan2(1, 1)", std::f64::consts::FRAC_PI_4);
        assert_value("sinh(0) + cosh(0) + tanh(0)", 1.0);
        assert_value("floor(2.7) + ceil(2.1) + round(2.5) + trunc(-2.7)", 6.0);
        assert_value("min(3, 1, 2)", 1.0);
        assert_value("max(1, 5)", 5.0);
        assert_value("min(4)", 4.0);
        assert_value("tau / pi", 2.0);
        assert_value("π", std::f64::consts::PI);
        assert_value(
            "PI + E - Sqrt(4)",
            std::f64::consts::PI + std::f64::consts::E - 2.0,
        );
        assert_value("sqrt(16) + 2^10", 1028.0);
        assert_value("max(min(2, 3), sqrt((4)))", 2.0);
    }

    #[test]
    fn non_finite_results_are_errors() {
        assert_error("1/0", "division by zero: `1 / 0` at column 2");
        assert_error("0/0", "division by zero");
        assert_error("5 % 0", "division by zero");
        assert_error("0^-1", "division by zero");
        assert_error(
            "1e308*10",
            "`1e308 * 10` at column 6 overflows: every step must stay within ±1.8e308",
        );
        assert_error("2^1024", "overflows");
        assert_error("-1e308 - 1e308", "overflows");
        assert_error("sqrt(-1)", "`sqrt(-1)` at column 1 is not a real number");
        assert_error("(-8)^(1/3)", "is not a real number");
        assert_error("asin(2)", "is not a real number");
        assert_error("ln(0)", "`ln(0)` at column 1 is infinite");
        assert_error("exp(1000)", "is infinite");
        assert_error("1e400", "the number `1e400` at column 1 is too large");
        // A non-finite step is an error even when a later step would make it finite again.
        assert_error("1 / (1 / 0)", "division by zero");
        assert!(error("1/0").ends_with("results must be finite numbers"));
    }

    #[test]
    fn limits_are_checked_before_parsing() {
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_error(
            &deep,
            "the expression is 20001 bytes long, over the limit of 1000",
        );

        let nested = |levels: usize| format!("{}1{}", "(".repeat(levels), ")".repeat(levels));
        assert_value(&nested(64), 1.0);
        assert_error(
            &nested(65),
            "nests parentheses 65 levels deep, over the limit of 64",
        );
        // Unbalanced text cannot sneak past the depth count.
        assert_error(&"(".repeat(500), "500 levels deep");
        assert_error(&format!("{}1", "sqrt(".repeat(65)), "65 levels deep");

        let longest = format!("1{}", "+1".repeat(499));
        assert_eq!(longest.len(), 999);
        assert_value(&longest, 500.0);
        assert_error(&format!("1{}", "+1".repeat(500)), "1001 bytes long");
    }

    #[test]
    fn long_chains_of_signs_and_powers_need_no_stack() {
        assert_value(&format!("{}1", "-".repeat(998)), 1.0);
        assert_value(&format!("{}1", "1^".repeat(499)), 1.0);
        assert_error(&format!("{}2", "2^".repeat(499)), "overflows");
    }

    #[test]
    fn empty_expressions_are_errors() {
        assert_error(
            "",
            "the expression is empty; pass one such as `2 * (3 + 4)`",
        );
        assert_error(" \n\t", "the expression is empty");
    }

    #[test]
    fn malformed_expressions_say_where_and_what() {
        assert_error(
            "2 +* 3",
            "expected a number, a name or `(` at column 4, found `*`",
        );
        assert_error("2 3", "expected an operator before `3` at column 3");
        assert_error("2pi", "there is no implicit multiplication");
        assert_error("2(3)", "expected an operator before `(` at column 2");
        assert_error("2 +", "the expression ends too early at column 4");
        assert_error(
            "*3",
            "expected a number, a name or `(` at column 1, found `*`",
        );
        assert_error("(1 + 2", "the `(` at column 1 is never closed");
        assert_error("1 + 2)", "unmatched `)` at column 6");
        assert_error("()", "found `)`");
        assert_error("1,000", "commas only separate function arguments");
        assert_error("(1, 2)", "commas only separate function arguments");
        assert_error("2 # 3", "unexpected character `#` at column 3");
        assert_error(".", "`.` at column 1 is not a number");
        assert_error("1.2.3", "expected an operator before `.3` at column 4");
        assert_error("2 = 2", "unexpected character `=`");
        assert_error("é + 1", "unknown name `é` at column 1");
    }

    #[test]
    fn names_are_checked() {
        assert_error(
            "x + 1",
            "unknown name `x` at column 1; expressions have no variables",
        );
        assert_error(
            "sine(1)",
            "unknown name `sine` at column 1; did you mean `sin` or `sinh`?",
        );
        assert_error("sqr(4)", "did you mean `sqrt`?");
        assert_error(
            "sqrt",
            "`sqrt` at column 1 is a function; call it with parentheses",
        );
        assert_error("sqrt 4", "is a function");
        assert_error("pi(2)", "`pi` at column 1 is a constant, not a function");
        assert_error("sqrt(1, 2)", "`sqrt` at column 1 takes 1 argument, got 2");
        assert_error("sqrt()", "takes 1 argument, got 0");
        assert_error("atan2(1)", "takes 2 arguments, got 1");
        assert_error("log(1, 2, 3)", "takes 1 or 2 arguments, got 3");
        // No base 0 or below: `f64::log` gives 0 for base 0, which is no logarithm.
        for base in ["0", "-2"] {
            assert_error(&format!("log(8, {base})"), "is not a real number");
        }
        assert_error("log(8, 1)", "results must be finite numbers");
        assert_error("min()", "takes 1 or more arguments, got 0");
        assert_error(
            "max(1,)",
            "expected a number, a name or `(` at column 7, found `)`",
        );
    }

    #[test]
    fn the_description_lists_every_function_and_constant() {
        let description = math::definition().description().replace('\n', " ");
        let listed = |label: &str| -> Vec<String> {
            let after = description.split_once(label).map_or("", |(_, after)| after);
            let sentence = after
                .split_once('.')
                .map_or(after, |(sentence, _)| sentence);
            sentence.split(", ").map(str::to_owned).collect()
        };
        let functions: Vec<&str> = FUNCTIONS.iter().map(|(name, _)| *name).collect();
        assert_eq!(listed("Functions: "), functions);
        let constants: Vec<&str> = CONSTANTS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| *name != "π")
            .collect();
        assert_eq!(listed("Constants: "), constants);
    }

    /// Random text from the expression alphabet: any input gives a finite number or an error.
    #[test]
    fn random_input_never_panics() {
        const PIECES: &[&str] = &[
            "1", "0", "2.5", "1e308", "9", "+", "-", "*", "/", "%", "^", "**", "(", ")", ",", " ",
            "sqrt", "log", "min", "pi", "e", "x", ".", "é", "1e", "E5",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = next() % 24;
            let expression: String = (0..len)
                .map(|_| {
                    let index = usize::try_from(next() % PIECES.len() as u64).unwrap_or(0);
                    PIECES[index]
                })
                .collect();
            if let Ok(value) = evaluate(&expression) {
                assert!(value.is_finite(), "{expression:?} gave {value}");
            }
        }
    }

    #[tokio::test]
    async fn calls_go_through_the_schema() {
        let tool = math::definition();
        let call = |args: &'static str| tool.call(args, ToolContext::new("call_1"));

        assert_eq!(
            call(r#"{"expression":"6*7"}"#).await.unwrap(),
            json!({"result": 42.0})
        );

        let wrong_type = call(r#"{"expression":5}"#).await.unwrap_err();
        assert_eq!(wrong_type.code(), ErrorCode::InputInvalid);
        assert_eq!(wrong_type.path(), Some("/expression"));

        let missing = call("{}").await.unwrap_err();
        assert_eq!(missing.code(), ErrorCode::InputInvalid);

        let extra = call(r#"{"expression":"1","precision":3}"#)
            .await
            .unwrap_err();
        assert_eq!(extra.code(), ErrorCode::InputInvalid);

        let infinite = call(r#"{"expression":"1e308*10"}"#).await.unwrap_err();
        assert_eq!(infinite.code(), ErrorCode::InputInvalid);
        assert!(
            infinite.message().contains("overflows"),
            "{}",
            infinite.message()
        );
    }

    #[tokio::test]
    async fn the_fn_is_still_an_ordinary_fn() {
        let out = math("2 * (3 + 4)".to_owned()).await.unwrap();
        assert_eq!(out, MathOutput { result: 14.0 });
    }

    #[test]
    fn the_output_schema_names_the_result() {
        let tool = math::definition();
        let schema = tool.output_schema().unwrap();
        assert_eq!(schema["properties"]["result"]["type"], "number");
        assert_eq!(schema["required"], json!(["result"]));
    }
}
