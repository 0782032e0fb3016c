//! Test fixture: a user's input types, nested, in a crate whose `Cargo.toml` names `pleach-core`
//! alone. Each type carries `#[input]` and no `serde` or `schemars` attribute: a struct holding a
//! struct, a `Vec` of a plain enum, an `Option` of an enum whose variants carry doc comments, and
//! an enum with data. The tool echoes what it read, so a test sees each value arrive. The macro
//! `input` is in scope where the tool's parameter is marked `#[input]`: `#[tool]` reads that
//! marker itself.

use pleach_core::{input, output, tool};

/// Who is paid.
#[input]
#[derive(Debug)]
pub struct Payee {
    /// The payee's name.
    pub name: String,
    /// Their account, when known.
    pub account: Option<String>,
}

/// What an expense was for (a plain enum: its schema is an `enum` of strings). Taken and
/// returned: both attributes.
#[input]
#[output]
#[derive(Debug)]
#[allow(missing_docs)] // on purpose: a variant's doc comment would make the schema a `oneOf`
pub enum Category {
    Food,
    Travel,
    Lodging,
    Other,
}

/// How soon the expense is reviewed (variants with doc comments: a `oneOf` of `const`s).
#[input]
#[derive(Debug)]
pub enum Priority {
    /// With the monthly batch.
    Low,
    /// Within the week.
    High,
}

/// How much, one way or another (an enum with data).
#[input]
#[derive(Debug)]
pub enum Amount {
    /// A whole amount in cents.
    Cents(u64),
    /// An amount shared between people.
    Split {
        /// The whole amount in cents.
        cents: u64,
        /// How many people share it.
        people: u32,
    },
}

/// An expense to file.
#[input]
#[derive(Debug)]
pub struct Expense {
    /// Who is paid.
    pub payee: Payee,
    /// What it was for.
    pub categories: Vec<Category>,
    /// How soon to review it; the monthly batch when absent.
    pub priority: Option<Priority>,
    /// How much.
    pub amount: Amount,
}

/// Files an expense and says what it read.
#[tool]
pub async fn file_expense(#[input] expense: Expense) -> String {
    format!("{expense:?}")
}

/// What was filed: a type the tool returns, `#[output]` and no `serde` or `schemars` attribute.
#[output]
#[derive(Debug)]
pub struct Receipt {
    /// The filed expense's number.
    pub number: u64,
    /// What it was for.
    pub categories: Vec<Category>,
}

/// Files an expense and returns its receipt.
#[tool]
pub async fn file_receipt(#[input] expense: Expense) -> Receipt {
    Receipt {
        number: 1,
        categories: expense.categories,
    }
}

/// Keeps this crate's tools in the binary that calls it (the README's "Tools in your own
/// crates").
pub fn link() {
    pleach_core::link_tools!(file_expense, file_receipt);
}
