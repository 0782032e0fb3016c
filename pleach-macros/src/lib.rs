//! # pleach-macros
//!
//! The `#[tool]` and `#[unified_tool]` attributes of [pleach](https://docs.rs/pleach-core), and
//! `#[input]` for the types of tools' inputs. Use them through `pleach-core`, which re-exports
//! them and everything the generated code needs: a crate that writes tools lists `pleach-core` in
//! its `Cargo.toml` and nothing else.
//!
//! ```
//! use pleach_core::{tool, ToolSource};
//!
//! /// Adds two integers.
//! #[tool]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! assert!(pleach_core::tool_registry().contains("add"));
//! ```
//!
//! The two macros differ the way the TypeScript spec's `defineTool` and `createUnifiedTool` do:
//! `#[tool]` takes the basic shape's keys only (`name`, `description`), and a key of the
//! registry-level shape (`safety_tier`, `id`, …) on it is a compile error on that key naming
//! `#[unified_tool]`.
//!
//! ## While the fn is being typed
//!
//! An IDE expands the macros on every keystroke. They read the fn's signature and keep its body
//! as tokens, so a half-typed body (`let x = ;`, a `match` without its arms) keeps the handle
//! (`my_tool::definition()`, `my_tool::NAME`) and the registration: the body is emitted as
//! written, and the only error is the compiler's own, on the syntax where it is. A mistake the
//! macro reports (a wrong key or value, a rule of the signature) is one error on its token, and
//! the handle is still emitted, with the same items, so code using it elsewhere gets no second
//! error; its fns are never run, as the crate does not compile until the mistake is fixed.

mod ast;
mod attr;
mod check;
mod ctxt;
mod expand;
mod fallback;
mod handle;
mod input;
mod paths;
mod suspend;

use proc_macro::TokenStream;

/// Makes an `async fn` a tool: the basic shape (the TypeScript spec's `defineTool`).
///
/// The fn stays exactly as written and callable. Beside it the macro adds a handle type of the same
/// name (`my_tool::definition()`, `my_tool::unified()`, `my_tool::NAME`) and registers the tool at
/// compile time in [`tool_registry()`](https://docs.rs/pleach-core/latest/pleach_core/fn.tool_registry.html).
///
/// # Keys
///
/// | key | value | default |
/// | --- | --- | --- |
/// | `name` | `"…"` matching `^[A-Za-z0-9_-]{1,64}$` | the fn's name |
/// | `description` | `"…"`, not empty | the doc comment (neither is an error) |
///
/// No other key: `safety_tier`, `id`, `display_name`, `category` and `schema_key` belong to
/// [`#[unified_tool]`](macro@unified_tool); batching and timeouts are runtime configuration.
///
/// ## `name`
///
/// ```
/// /// Looks a word up.
/// #[pleach_core::tool(name = "dictionary-lookup")]
/// async fn lookup(word: String) -> String {
///     word
/// }
/// assert_eq!(lookup::NAME, "dictionary-lookup");
/// ```
///
/// ```compile_fail
/// /// Looks a word up.
/// #[pleach_core::tool(name = "dictionary lookup")] // a space: providers refuse it
/// async fn lookup(word: String) -> String {
///     word
/// }
/// ```
///
/// ## `description`
///
/// ```
/// #[pleach_core::tool(description = "Echoes its input.")]
/// async fn echo(text: String) -> String {
///     text
/// }
/// assert_eq!(echo::definition().description(), "Echoes its input.");
/// ```
///
/// ```compile_fail
/// #[pleach_core::tool] // no doc comment and no `description`
/// async fn echo(text: String) -> String {
///     text
/// }
/// ```
///
/// ## Not a key: `safety_tier` (and the other registry-level fields)
///
/// ```compile_fail
/// /// Deletes an account.
/// #[pleach_core::tool(safety_tier = "critical")] // error: use `#[unified_tool]`
/// async fn delete_account(id: String) {}
/// ```
///
/// # Arguments
///
/// Each parameter is a property of the input schema, named as the parameter; `Option<T>` is
/// optional. `#[arg(…)]` adds a `description`, a `default` (which makes it optional) and a `min` /
/// `max` — the Rust form of `z.number().int().min(1).max(50).default(10)`. As with Zod's `.min`,
/// on a number they bound its value (`minimum`/`maximum`), on a string its length in characters
/// (`minLength`/`maxLength`: `z.string().min(1)`), on a list (`Vec`, a set) its size
/// (`minItems`/`maxItems`); a fractional bound of a length rounds inward, a negative `max` acts
/// as 0:
///
/// ```
/// use pleach_core::tool;
///
/// /// Free-text search.
/// #[tool]
/// async fn search(
///     #[arg(description = "What to look for", min = 1)] query: String,
///     #[arg(default = 10, min = 1, max = 50)] limit: u32,
///     #[arg(max = 5)] languages: Option<Vec<String>>,
/// ) -> Vec<String> {
///     vec![format!("{query} ({limit}, {languages:?})")]
/// }
///
/// let schema = search::definition().input_schema().clone();
/// assert_eq!(schema["properties"]["query"]["minLength"], 1);
/// assert_eq!(schema["properties"]["languages"]["maxItems"], 5);
/// assert_eq!(schema["properties"]["limit"]["default"], 10);
/// assert_eq!(schema["properties"]["limit"]["minimum"], 1);
/// assert_eq!(schema["required"], pleach_core::serde_json::json!(["query"]));
/// assert_eq!(schema["additionalProperties"], false);
/// ```
///
/// An argument the tool does not take is refused (1001, keyword `additionalProperties`), where
/// Zod's default `z.object` would drop it silently: a model that invents a parameter learns so
/// and can retry, instead of getting an answer to a question it did not ask. (An `#[input]` type
/// decides for itself: without `#[serde(deny_unknown_fields)]` it takes extra keys.)
///
/// Each `#[arg]` key, wrongly:
///
/// ```compile_fail
/// /// Free-text search.
/// #[pleach_core::tool]
/// async fn search(#[arg(description = 5)] query: String) {} // `description` takes a string literal
/// ```
///
/// ```compile_fail
/// /// Free-text search.
/// #[pleach_core::tool]
/// async fn search(#[arg(default = "ten")] limit: u32) {} // the default must have the parameter's type
/// ```
///
/// ```compile_fail
/// /// Free-text search.
/// #[pleach_core::tool]
/// async fn search(#[arg(min = 1, min = 2)] limit: u32) {} // duplicate key `min`
/// ```
///
/// ```compile_fail
/// /// Free-text search.
/// #[pleach_core::tool]
/// async fn search(#[arg(maximum = 50)] limit: u32) {} // the key is `max`
/// ```
///
/// Or one parameter marked `#[input]` is the whole input, a type that is `Deserialize` and
/// `JsonSchema`; the attribute [`#[input]`](macro@input) on its definition derives both through
/// `pleach-core`'s re-exports:
///
/// ```
/// use pleach_core::{input, tool};
///
/// #[input]
/// struct Query {
///     /// What to look for.
///     text: String,
/// }
///
/// /// Free-text search.
/// #[tool]
/// async fn find(#[input] query: Query) -> String {
///     query.text
/// }
/// assert_eq!(find::definition().input_schema()["required"], pleach_core::serde_json::json!(["text"]));
/// ```
///
/// ```compile_fail
/// struct NoSchema { text: String }
///
/// /// Free-text search.
/// #[pleach_core::tool]
/// async fn find(query: NoSchema) -> String { query.text } // `NoSchema` has no JSON Schema
/// ```
///
/// ```compile_fail
/// use pleach_core::{input, tool};
///
/// #[input]
/// struct Query { text: String }
///
/// /// Free-text search.
/// #[tool]
/// async fn find(#[input] query: Query, limit: u32) -> String { query.text } // `limit` belongs in `Query`
/// ```
///
/// A `ToolContext` parameter is injected by the runtime and is not in the schema. At most one.
///
/// ```
/// use pleach_core::{tool, ToolContext};
///
/// /// Waits until cancelled.
/// #[tool]
/// async fn wait(ctx: ToolContext) -> &'static str {
///     ctx.signal.cancelled().await;
///     "cancelled"
/// }
/// assert!(wait::definition().input_schema()["properties"].as_object().unwrap().is_empty());
/// ```
///
/// # Output
///
/// The fn returns `T` or `Result<T, E>` (or an alias named `Result`: `io::Result<T>`,
/// `anyhow::Result<T>`; the macro reads the name, so an alias of another name, such as
/// `type Fallible<T> = Result<T, String>`, is a compile error asking for `Result<…, …>`). `T` must be
/// `Serialize`; with `T: JsonSchema` the output schema is derived and results are validated against
/// it. `E` can be a [`ToolError`](https://docs.rs/pleach-core/latest/pleach_core/struct.ToolError.html)
/// (kept as is), anything `Into<ToolError>`, a `std::error::Error`, or anything `Display`: those
/// fail the call with code 1008 and the error's text.
///
/// ```compile_fail
/// struct NotSerialize;
///
/// /// Makes something.
/// #[pleach_core::tool]
/// async fn make() -> NotSerialize { NotSerialize }
/// ```
///
/// # Rules
///
/// The fn must be `async`, free (no `self`), not generic, with plain parameter names and concrete
/// types. Each rule is a compile error on the offending token that says how to fix it.
///
/// The fn must also stand at module level (or in a fn body), not inside an `impl` block: the
/// macro adds a handle type beside the fn, and an attribute cannot see that it sits in an `impl`,
/// so there the compiler reports that a struct is not allowed in an `impl` (a struct you did not
/// write: the handle). Write the tool as a free fn that calls the method.
///
/// ```compile_fail
/// /// Not async.
/// #[pleach_core::tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
/// ```
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(attr::Shape::Basic, args.into(), item.into()).into()
}

/// Makes an `async fn` a tool with the registry-level shape (the TypeScript spec's
/// `createUnifiedTool`): everything [`#[tool]`](macro@tool) takes, plus `id`, `display_name`,
/// `category`, `schema_key` and `safety_tier`.
///
/// # Keys
///
/// | key | value | default |
/// | --- | --- | --- |
/// | `name` | as for `#[tool]` | the fn's name |
/// | `description` | as for `#[tool]` | the doc comment |
/// | `id` | `"…"` | the name |
/// | `display_name` | `"…"` | the name in title case (`dangerous_lookup` → `Dangerous Lookup`) |
/// | `category` | `"…"` | `"general"` |
/// | `schema_key` | `"…"` | the name in `CamelCase` + `Input` |
/// | `safety_tier` | `"critical"`, `"standard"` or `"advisory"` | none |
///
/// ```
/// use pleach_core::{unified_tool, SafetyTier};
///
/// /// Looks up an account by id.
/// #[unified_tool(
///     id = "dangerous_lookup",
///     display_name = "Dangerous Lookup",
///     category = "analysis",
///     schema_key = "DangerousLookupInput",
///     safety_tier = "critical",
/// )]
/// async fn dangerous_lookup(account_id: String) -> String {
///     account_id
/// }
///
/// let tool = dangerous_lookup::unified();
/// assert_eq!(tool.safety_tier(), Some(SafetyTier::Critical));
/// assert_eq!(tool.category(), "analysis");
/// assert_eq!(tool.display_name(), "Dangerous Lookup");
/// ```
///
/// ## `safety_tier`
///
/// A tier says what a **finding** on a call means, and a finding comes only from a fabrication
/// detector registered on the runtime (`RuntimeBuilder::detector`). Without a detector that
/// covers the tool, its calls run as if it had no tier:
///
/// | tier | a detector flags the call | no detector covers the tool |
/// | --- | --- | --- |
/// | `critical` | hard halt: never runs (1012) | `Runtime::build` fails: a critical tool must be covered |
/// | `standard` | approval interrupt: waits for the host's accept / edit / reject | runs, nothing asked |
/// | `advisory` | `safety.probe` event, then runs | runs |
///
/// "Always ask before deleting" is `standard` plus `pleach_core::safety::ApprovalRequired`
/// (it flags every call of the tools it names); `ProvenanceDetector` flags only values the turn
/// never saw. `docs/safety.md` is the contract.
///
/// ```compile_fail
/// /// Looks up an account by id.
/// #[pleach_core::unified_tool(safety_tier = "urgent")] // one of critical, standard, advisory
/// async fn lookup(account_id: String) -> String { account_id }
/// ```
///
/// ## `id`, `display_name`, `category`, `schema_key`
///
/// Each takes a string literal.
///
/// ```
/// /// Reads a note.
/// #[pleach_core::unified_tool(id = "notes.read", display_name = "Read note", category = "notes", schema_key = "ReadNote")]
/// async fn read_note(key: String) -> String { key }
/// let tool = read_note::unified();
/// assert_eq!((tool.id(), tool.display_name(), tool.category(), tool.schema_key()),
///            ("notes.read", "Read note", "notes", "ReadNote"));
/// ```
///
/// ```compile_fail
/// /// Reads a note.
/// #[pleach_core::unified_tool(id = 7)] // `id` takes a string literal
/// async fn read_note(key: String) -> String { key }
/// ```
///
/// ```compile_fail
/// /// Reads a note.
/// #[pleach_core::unified_tool(display_name = "Read", display_name = "Read note")] // duplicate key
/// async fn read_note(key: String) -> String { key }
/// ```
///
/// ```compile_fail
/// /// Reads a note.
/// #[pleach_core::unified_tool(category = notes)] // not a string literal
/// async fn read_note(key: String) -> String { key }
/// ```
///
/// ```compile_fail
/// /// Reads a note.
/// #[pleach_core::unified_tool(schema_key)] // a key without its value
/// async fn read_note(key: String) -> String { key }
/// ```
///
/// ```compile_fail
/// /// Reads a note.
/// #[pleach_core::unified_tool(catgory = "notes")] // did you mean `category`?
/// async fn read_note(key: String) -> String { key }
/// ```
#[proc_macro_attribute]
pub fn unified_tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(attr::Shape::Unified, args.into(), item.into()).into()
}

/// Makes a struct or an enum the type of a tool's input: derives `Deserialize` and `JsonSchema`
/// through `pleach-core`'s re-exports, so a crate whose `Cargo.toml` names `pleach-core` alone
/// writes its input types, and the types nested in them, without `serde` or `schemars` of its
/// own.
///
/// ```
/// use pleach_core::{input, tool};
///
/// /// How an expense is filed.
/// #[input]
/// #[serde(rename_all = "snake_case")]
/// enum Category {
///     /// Meals and snacks.
///     Food,
///     /// Trains, planes and taxis.
///     Travel,
/// }
///
/// /// An expense to file.
/// #[input]
/// struct Expense {
///     /// What it cost, in cents.
///     cents: u64,
///     category: Category,
///     /// Anything the reviewer should know.
///     note: Option<String>,
/// }
///
/// /// Files an expense.
/// #[tool]
/// async fn file_expense(#[input] expense: Expense) -> String {
///     format!("{} cents filed", expense.cents)
/// }
///
/// let schema = file_expense::definition().input_schema().clone();
/// assert_eq!(schema["required"], pleach_core::serde_json::json!(["cents", "category"]));
/// ```
///
/// On the type it is the same as writing
///
/// ```
/// #[derive(pleach_core::serde::Deserialize, pleach_core::schemars::JsonSchema)]
/// #[serde(crate = "::pleach_core::serde")]
/// #[schemars(crate = "::pleach_core::schemars")]
/// struct Query {
///     text: String,
/// }
/// ```
///
/// (the two `crate` attributes tell the derives where their crate is: without them the derived
/// code names `serde` and `schemars`, which a crate that does not list them cannot find).
///
/// The type's own attributes stay as written and are read as usual: `#[serde(…)]` and
/// `#[schemars(…)]` on the type, its fields and its variants, and doc comments, which become
/// descriptions. A derive the type already lists (`Deserialize` or `JsonSchema`, by the last
/// segment of its path) is not added again, nor a `crate = …` it already gives. The added
/// `#[serde(crate = …)]` serves every serde derive of the type, so an input the tool also
/// returns derives `Serialize` through the re-export with nothing more:
///
/// ```
/// use pleach_core::{input, serde::Serialize};
///
/// #[input]
/// #[derive(Serialize)]
/// struct Point {
///     x: i64,
///     y: i64,
/// }
/// ```
///
/// Write `#[input]` above the type's `#[derive(…)]`s. The compiler expands attributes from the
/// top: a derive written above `#[input]` runs first, on the type as written, so it gets none of
/// the crate attributes (`can't find crate for serde`), and `#[input]` does not see it (a
/// `Deserialize` listed there is derived twice).
///
/// Inside a `#[tool]` fn, `#[input]` on a parameter marks it as the whole input (above); that
/// `#[tool]` reads and removes, so one `use pleach_core::*;` serves both.
///
/// `#[input]` takes no arguments, and goes on a struct or an enum only:
///
/// ```compile_fail
/// #[pleach_core::input(deny_unknown_fields)] // write `#[serde(deny_unknown_fields)]` beside it
/// struct Query { text: String }
/// ```
///
/// ```compile_fail
/// #[pleach_core::input] // a type, not a fn
/// async fn find(text: String) -> String { text }
/// ```
#[proc_macro_attribute]
pub fn input(args: TokenStream, item: TokenStream) -> TokenStream {
    input::expand(input::Role::Input, args.into(), item.into()).into()
}

#[cfg(test)]
mod snapshots;

/// Makes a struct or an enum a type a tool returns: derives `Serialize` and `JsonSchema` (for the
/// tool's output schema) through `pleach-core`'s re-exports, so a crate whose `Cargo.toml` names
/// `pleach-core` alone needs no `serde` or `schemars` of its own. The twin of
/// [`#[input]`](macro@input), with the same rules: the type's own attributes stay as written, a
/// derive it already lists is not added again, and `#[output]` goes above its `#[derive(…)]`s.
///
/// ```
/// use pleach_core::{output, tool};
///
/// /// An expense on record.
/// #[output]
/// struct Expense {
///     /// Its id.
///     id: u64,
///     /// What it cost, in cents.
///     cents: u64,
/// }
///
/// /// Reads an expense.
/// #[tool]
/// async fn read_expense(id: u64) -> Expense {
///     Expense { id, cents: 4200 }
/// }
///
/// let schema = read_expense::definition().output_schema().cloned().unwrap();
/// assert_eq!(schema["required"], pleach_core::serde_json::json!(["id", "cents"]));
/// ```
///
/// A type that is both taken and returned takes `#[input]` and derives `Serialize` (the crate
/// attribute `#[input]` adds serves it), or takes both attributes:
///
/// ```
/// use pleach_core::{input, output};
///
/// #[input]
/// #[output]
/// #[derive(Clone, Copy, PartialEq)]
/// #[serde(rename_all = "snake_case")]
/// enum Category {
///     Food,
///     Travel,
/// }
/// ```
///
/// ```compile_fail
/// #[pleach_core::output] // a type, not a fn
/// async fn find(text: String) -> String { text }
/// ```
#[proc_macro_attribute]
pub fn output(args: TokenStream, item: TokenStream) -> TokenStream {
    input::expand(input::Role::Output, args.into(), item.into()).into()
}
