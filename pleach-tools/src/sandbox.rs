//! What the tools that touch the host's files share: the checks on a path a model gives, before
//! cap-std resolves it beneath the root; the reading of io errors as messages a model can act on,
//! which never name the host's own paths; and running blocking file work off the async threads.

use std::io;
use std::path::{Component, Path};

use cap_std::fs::Dir;
use pleach_core::{ErrorCode, ToolError};

use crate::shorten::first_chars;
use crate::suggest::{close_matches, one_of};

/// The longest path accepted, in bytes: far beyond any sensible layout, and well under `PATH_MAX`.
pub(crate) const MAX_PATH_BYTES: usize = 1024;

/// How many entries of a directory a "did you mean" reads, at most.
const MAX_SUGGESTION_SCAN: usize = 1000;

pub(crate) fn invalid(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

/// The error of a tool whose configuration the host has not provided: nothing the model can fix.
pub(crate) fn not_configured(tool: &str, needs: &str) -> ToolError {
    ToolError::failed(format!(
        "{tool} is not set up on this host: it needs {needs}, which the host provides to the \
         runtime"
    ))
    .with_recoverable(false)
}

/// `path` (the argument named `argument`) as a path beneath the root: relative, without `..`, NUL
/// bytes or excessive length. cap-std refuses escapes too; these checks come first so that the
/// message says exactly what to change. An empty path is the root itself.
pub(crate) fn relative_path<'p>(argument: &str, path: &'p str) -> Result<&'p Path, ToolError> {
    if path.contains('\0') {
        return Err(invalid(format!(
            "`{argument}` contains a NUL byte, which no file name can; remove it"
        )));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid(format!(
            "`{argument}` is {} bytes long, over the limit of {MAX_PATH_BYTES}; use a shorter path",
            path.len()
        )));
    }
    let relative = Path::new(path);
    for component in relative.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                return Err(invalid(format!(
                    "`{argument}` must be relative to the root directory, e.g. `notes/today.md`, \
                     not `{}`; absolute paths are refused",
                    quoted(path)
                )));
            }
            Component::ParentDir => {
                return Err(invalid(format!(
                    "`{argument}` must not contain `..`: paths stay inside the root directory; \
                     got `{}`",
                    quoted(path)
                )));
            }
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    Ok(relative)
}

/// `path` as a message quotes it: cut short if long.
pub(crate) fn quoted(path: &str) -> String {
    first_chars(path, 120)
}

/// Whether `err` is cap-std's refusal of a path that resolves outside its directory: a symbolic
/// link pointing out, or to an absolute path. cap-std gives it as `PermissionDenied` with its own
/// message (`cap_primitives::fs::errors::escape_attempt`); the tests pin that wording.
pub(crate) fn is_escape(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied
        && err.to_string().contains("outside of the filesystem")
}

/// A failed file operation as an error for the model: a path it can change is 1001 with what to
/// change; a failure of the host is 1008, with the io error as operator detail only (cap-std's
/// errors hold no host paths, and the model's own relative path is all the message names).
///
/// `verb` says what was being done to `path`, e.g. "read".
pub(crate) fn io_error(err: &io::Error, verb: &str, path: &str, root: &Dir) -> ToolError {
    use io::ErrorKind as Kind;
    let shown = quoted(path);
    let (code, message) = match err.kind() {
        _ if is_escape(err) => (
            ErrorCode::InputInvalid,
            format!(
                "`{shown}` leads outside the root directory through a symbolic link; use a path \
                 that stays inside it"
            ),
        ),
        Kind::NotFound => (
            ErrorCode::InputInvalid,
            format!(
                "there is no file or directory at `{shown}`{}",
                suggestions(root, path)
            ),
        ),
        Kind::NotADirectory => (
            ErrorCode::InputInvalid,
            format!(
                "`{shown}` goes through a file as if it were a directory; check each part of the \
                 path"
            ),
        ),
        Kind::IsADirectory => (
            ErrorCode::InputInvalid,
            format!("`{shown}` is a directory; list it with fs_list"),
        ),
        Kind::InvalidFilename => (
            ErrorCode::InputInvalid,
            format!(
                "`{shown}` has a name the file system refuses (too long, or with characters it \
                 does not allow); use a shorter, plainer name"
            ),
        ),
        Kind::PermissionDenied => (
            ErrorCode::ToolFailed,
            format!("the host is not permitted to {verb} `{shown}`"),
        ),
        Kind::StorageFull | Kind::QuotaExceeded => (
            ErrorCode::ToolFailed,
            format!("could not {verb} `{shown}`: the host's disk is full"),
        ),
        Kind::ReadOnlyFilesystem => (
            ErrorCode::ToolFailed,
            format!("could not {verb} `{shown}`: the host's file system is read-only"),
        ),
        _ => (ErrorCode::ToolFailed, format!("could not {verb} `{shown}`")),
    };
    ToolError::new(code, message).with_detail(format!("{verb} `{shown}`: {err} ({:?})", err.kind()))
}

/// "; did you mean `a`?" with the names in `path`'s directory close to its last part, or nothing.
fn suggestions(root: &Dir, path: &str) -> String {
    let path = Path::new(path);
    let (Some(name), parent) = (path.file_name(), path.parent()) else {
        return String::new();
    };
    let parent = parent.filter(|p| !p.as_os_str().is_empty());
    let Ok(entries) = root.read_dir(parent.unwrap_or(Path::new("."))) else {
        return String::new();
    };
    let names: Vec<String> = entries
        .take(MAX_SUGGESTION_SCAN)
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    let close: Vec<String> = close_matches(
        &name.to_string_lossy(),
        names.iter().map(|n| (n.as_str(), ())),
    )
    .into_iter()
    .take(3)
    .map(|(spelling, ())| match parent {
        Some(parent) => format!("`{}`", parent.join(spelling).display()),
        None => format!("`{spelling}`"),
    })
    .collect();
    if close.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", one_of(&close))
    }
}

/// Runs blocking file work on Tokio's blocking threads. A panic there becomes code 1009, as a
/// panic in the tool itself would.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(err) => Err(ToolError::new(
            ErrorCode::ToolPanicked,
            "the file operation failed unexpectedly",
        )
        .with_detail(err.to_string())),
    }
}
