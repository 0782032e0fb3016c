//! Bearer tokens read from a file: the tokens `pleach mcp --http --token-file` takes, and the one
//! `--mcp-token-file` sends to remote servers.

use std::path::Path;

use crate::usage::UsageError;

/// The tokens of a token file: one a line, trimmed; blank lines and `#` comments skipped. A file
/// with none is an error (a server meant to need a token would otherwise take none).
pub(crate) fn read_tokens(file: &Path) -> Result<Vec<String>, UsageError> {
    let text = std::fs::read_to_string(file).map_err(|error| {
        UsageError(format!(
            "cannot read the token file `{}`: {error}",
            file.display()
        ))
    })?;
    let tokens: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if tokens.is_empty() {
        return Err(UsageError(format!(
            "the token file `{}` holds no token (one a line)",
            file.display()
        )));
    }
    Ok(tokens)
}

/// The first token of a token file.
pub(crate) fn read_token(file: &Path) -> Result<String, UsageError> {
    let mut tokens = read_tokens(file)?;
    Ok(tokens.swap_remove(0))
}
