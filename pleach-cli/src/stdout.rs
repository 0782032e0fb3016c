//! The command's output on stdout, through `out!` and `outln!`.

use std::io::Write;

/// Writes to stdout. A reader that went away (`| head`) is no error of ours: exit at once, 0;
/// any other write failure exits 2.
pub(crate) fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(error) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {error}");
        std::process::exit(2);
    }
}
