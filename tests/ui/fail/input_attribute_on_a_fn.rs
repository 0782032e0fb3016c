// Rule: `#[input]` goes on a struct or an enum; on a fn it is an error naming both places it
// belongs.
use pleach_core::input;

#[input]
async fn find(text: String) -> String {
    text
}

fn main() {
    let _ = find(String::new());
}
