// PENDING (not run): a signature still being typed.
// Today: rustc's syntax error (`expected type, found `)``), then ours over the whole fn, "`#[tool]`
// goes on an `async fn`", which is wrong: it is on one. (Where rustc cannot recover, as for a bare
// `-> {`, it does not run the macro and its error is the only one.) A half-typed body, by contrast,
// gives rustc's error alone (ui/fail/half_typed_body.rs).
// Wanted: rustc's error alone, and the handle kept. Needs expand.rs: when the item reads as
// `… fn <name>` but syn cannot read the rest of the signature, emit the tokens as written with the
// stub handle (fallback.rs) and no error of ours. That is only safe once it is shown that syn reads
// every signature rustc accepts; otherwise a tool syn cannot read would compile without an error
// and without being registered.
use pleach_core::tool;

/// Looks a word up.
#[tool]
async fn lookup(word: ) -> String {
    String::new()
}

fn main() {
    let _ = lookup::definition();
}
