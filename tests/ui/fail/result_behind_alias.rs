// Rule: the macro reads `Result` by its name (`Result<T, E>`, `io::Result<T>`); a `Result` behind
// an alias of another name would otherwise be serialized as a successful `{"Err": …}`. The error is
// our message on the return type, naming the two spellings that work.
use pleach_core::tool;

type Fallible<T> = Result<T, String>;

/// Looks a city up.
#[tool]
async fn find_city(name: String) -> Fallible<String> {
    Err(format!("no such city: {name}"))
}

fn main() {
    let _ = find_city(String::new());
}
