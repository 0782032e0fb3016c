//! What a command ends in: an exit code, or a failure the user can fix (exit 2).

use std::path::Path;
use std::process::ExitCode;

/// A failure the user can fix: printed as `error: …`, exit code 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl<T: Into<String>> From<T> for UsageError {
    fn from(message: T) -> Self {
        UsageError(message.into())
    }
}

/// What a command asks the process to exit with.
pub(crate) type Outcome = Result<ExitCode, UsageError>;

/// Reads a file the user named, or says which one could not be read.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, UsageError> {
    std::fs::read(path)
        .map_err(|error| UsageError(format!("cannot read `{}`: {error}", path.display())))
}
