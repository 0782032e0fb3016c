// PENDING (not run): `#[input]` written below the type's `#[derive(…)]`.
// Today: rustc expands a derive written above an attribute macro first, on the item as written,
// and does not pass it on. So serde's `Serialize` here never sees the `#[serde(crate = …)]` that
// `#[input]` adds: in a crate without `serde` of its own that is "can't find crate for `serde`" on
// the derive; and a `Deserialize` listed there is derived twice ("conflicting implementations",
// on `#[input]`). The docs of `#[input]` say to write it above the derives.
// Wanted: one error on the derive saying to move `#[input]` above it. Needs rustc to tell an
// attribute macro which derives precede it; the macro sees neither the derive nor its position.
use pleach_core::input;
use pleach_core::serde::Serialize;

#[derive(Serialize)]
#[input]
struct Point {
    x: i64,
    y: i64,
}

fn main() {}
