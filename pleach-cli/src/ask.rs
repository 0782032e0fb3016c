//! The user asked on the terminal for a call waiting for approval (`--approve TOOL` in `call` and
//! `chat`): `y` runs it, anything else rejects it with what the user typed as the reason.

use std::io::{BufRead as _, BufReader, Write as _};

use pleach_core::Session;
use pleach_core::safety::{Decision, Interrupt};

/// Asks the user about `interrupt` on the terminal and gives `session` the answer. Without a
/// terminal (a script, a pipe) nobody can answer: the call is rejected, saying so.
pub(crate) fn answer(session: &Session, interrupt: &Interrupt) {
    let decision = ask(interrupt).unwrap_or_else(|error| {
        interrupt.reject(format!(
            "the user was not asked (no terminal to ask on: {error}); run it where they can answer"
        ))
    });
    // A decision the session no longer waits for (the turn ended meanwhile) has nothing to do.
    let _ = session.resolve(decision);
}

/// The user's answer, read from the controlling terminal (stdin may be the conversation's).
fn ask(interrupt: &Interrupt) -> std::io::Result<Decision> {
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    let mut prompt = terminal.try_clone()?;
    let call = &interrupt.tool_call;
    writeln!(prompt, "approve: {} {}", call.name(), call.arguments())?;
    for finding in &interrupt.findings {
        writeln!(prompt, "  {}", finding.reason)?;
    }
    write!(prompt, "run it? [y/N, or a reason to refuse] ")?;
    prompt.flush()?;
    let mut line = String::new();
    BufReader::new(terminal).read_line(&mut line)?;
    let line = line.trim();
    Ok(match line {
        "y" | "Y" | "yes" => interrupt.accept(),
        "" | "n" | "N" | "no" => interrupt.reject("the user refused"),
        reason => interrupt.reject(reason),
    })
}
