//! `fs_write`: a text file replaced whole and atomically, through a temporary file beside it.

use std::io::{self, Write};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{ToolContext, ToolError, unified_tool};

use super::config;
use crate::sandbox::{blocking, invalid, io_error, quoted, relative_path};

/// The result of `fs_write`.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::fs::{FsConfig, fs_write};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// let config = FsConfig::new(root.path()).unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
///
/// let path = "notes/today.md".to_owned();
/// let first = fs_write(ctx.clone(), path.clone(), "- ship it\n".to_owned(), true).await.unwrap();
/// assert_eq!((first.bytes, first.created), (10, true));
/// let second = fs_write(ctx, path, "- shipped\n".to_owned(), true).await.unwrap();
/// assert!(!second.created); // replaced
/// assert_eq!(std::fs::read_to_string(root.path().join("notes/today.md")).unwrap(), "- shipped\n");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `fs_write`."
)]
#[non_exhaustive]
pub struct FsWriteOutput {
    /// The path written, as given.
    pub path: String,
    /// How many bytes were written.
    pub bytes: usize,
    /// Whether the file is new (false: an existing file was replaced).
    pub created: bool,
}

/// Writes a text file under the root directory, replacing it whole; for example `{"path":
/// "notes/today.md", "content": "- ship it\n"}` gives `{"path": "notes/today.md", "bytes": 10,
/// "created": true}`.
///
/// `path` is relative to the root (no `..`, not absolute); missing directories on the way are
/// created. The write is atomic: readers see the old content or the new, never a mix. With
/// `overwrite` false, an existing file is an error instead. Content is at most the host's write
/// limit (1 MiB by default). Symbolic links are never written through.
///
/// Safety tier `standard`: a write a host's detector flags as built on fabricated input goes to
/// the user for approval. Not `critical`: the root bounds what a write can reach, and a wrong
/// write is undone by another write.
#[unified_tool(safety_tier = "standard", category = "filesystem")]
pub async fn fs_write(
    ctx: ToolContext,
    #[arg(
        description = "The file to write, relative to the root directory, e.g. `notes/today.md`"
    )]
    path: String,
    #[arg(description = "The whole new content of the file")] content: String,
    #[arg(
        description = "Whether to replace a file that exists (false: fail instead)",
        default = true
    )]
    overwrite: bool,
) -> Result<FsWriteOutput, ToolError> {
    let config = config(&ctx, "fs_write")?;
    let root = config.root.clone();
    let relative = relative_path("path", &path)?;
    let names_a_file = matches!(
        relative.components().next_back(),
        Some(Component::Normal(_))
    ) && !path.ends_with('/')
        && !path.ends_with("/.");
    if !names_a_file {
        return Err(invalid(format!(
            "`path` must name a file, e.g. `notes/today.md`; got `{}`",
            quoted(&path)
        )));
    }
    if content.len() > config.max_write_bytes {
        return Err(invalid(format!(
            "`content` is {} bytes long, over the write limit of {}; write less, or split it \
             across files",
            content.len(),
            config.max_write_bytes
        )));
    }
    blocking(move || write(&root, &path, content.as_bytes(), overwrite)).await
}

/// Tells temporary files of one process apart.
static NEXT_TEMPORARY: AtomicU64 = AtomicU64::new(0);

fn write(
    root: &Dir,
    path: &str,
    content: &[u8],
    overwrite: bool,
) -> Result<FsWriteOutput, ToolError> {
    let failed = |err: io::Error| io_error(&err, "write", path, root);
    let relative = Path::new(path);
    let (Some(name), parent) = (relative.file_name(), relative.parent()) else {
        return Err(invalid(format!(
            "`path` must name a file; got `{}`",
            quoted(path)
        )));
    };
    let parent = parent
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match root.create_dir_all(parent) {
        // Something is in the way (a file, a link): opening it as a directory says what.
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(failed(err)),
    }
    let dir = root.open_dir(parent).map_err(failed)?;
    let existing = match dir.symlink_metadata(name) {
        Ok(metadata) => Some(metadata),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(failed(err)),
    };
    if let Some(metadata) = &existing {
        if metadata.is_symlink() {
            return Err(invalid(format!(
                "`{}` is a symbolic link, and fs_write does not write through links; write to a \
                 regular file's path",
                quoted(path)
            )));
        }
        if metadata.is_dir() {
            return Err(invalid(format!(
                "`{}` is a directory; name a file inside it",
                quoted(path)
            )));
        }
        if !overwrite {
            return Err(exists(path));
        }
    }
    let temporary = format!(
        ".pleach-tmp-{}-{}",
        std::process::id(),
        NEXT_TEMPORARY.fetch_add(1, Ordering::Relaxed)
    );
    let outcome = write_temporary(&dir, &temporary, content, existing.as_ref()).and_then(|()| {
        if overwrite {
            dir.rename(&temporary, &dir, name)
        } else {
            dir.hard_link(&temporary, &dir, name)
        }
    });
    // After a rename there is nothing left; after a link or a failure, the temporary name goes.
    if !(overwrite && outcome.is_ok()) {
        let _ = dir.remove_file(&temporary);
    }
    match outcome {
        Ok(()) => Ok(FsWriteOutput {
            path: path.to_owned(),
            bytes: content.len(),
            created: existing.is_none(),
        }),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(exists(path)),
        Err(err) => Err(failed(err)),
    }
}

/// Creates `name` in `dir` (exclusively), writes `content` to it and syncs it to disk, with the
/// permission bits of the file it will replace.
fn write_temporary(
    dir: &Dir,
    name: &str,
    content: &[u8],
    replacing: Option<&cap_std::fs::Metadata>,
) -> io::Result<()> {
    let mut file = dir.open_with(name, OpenOptions::new().write(true).create_new(true))?;
    file.write_all(content)?;
    if let Some(old) = replacing {
        file.set_permissions(old.permissions())?;
    }
    file.sync_all()
}

fn exists(path: &str) -> ToolError {
    invalid(format!(
        "`{}` exists already; pass `overwrite: true` to replace it, or choose another path",
        quoted(path)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::fixture::{Fixture, leftovers};
    use pleach_core::extensions::SessionState;
    use serde_json::json;

    #[tokio::test]
    async fn overwrite_false_never_replaces() {
        let fx = Fixture::new();
        fx.refusal(
            fx.write(json!({"path": "a.txt", "content": "x", "overwrite": false}))
                .await,
            "`a.txt` exists already; pass `overwrite: true`",
        );
        assert_eq!(
            std::fs::read_to_string(fx.path("a.txt")).unwrap(),
            "alpha\n"
        );
        let out = fx
            .write(json!({"path": "fresh.txt", "content": "x", "overwrite": false}))
            .await
            .unwrap();
        assert_eq!(out["created"], true);
        assert_eq!(std::fs::read_to_string(fx.path("fresh.txt")).unwrap(), "x");
        assert!(leftovers(fx.root.path()).is_empty());
    }

    #[tokio::test]
    async fn concurrent_writes_leave_whole_files() {
        let fx = Fixture::new();
        let contents: Vec<String> = (0..8).map(|i| i.to_string().repeat(100_000)).collect();
        let mut writes = tokio::task::JoinSet::new();
        for content in contents.clone() {
            let extensions = fx.extensions.clone();
            writes.spawn(async move {
                let ctx = ToolContext::new("call_1").with_scope(extensions, SessionState::new());
                let args = json!({"path": "same.txt", "content": content}).to_string();
                fs_write::definition().call(&args, ctx).await
            });
        }
        while let Some(outcome) = writes.join_next().await {
            outcome.unwrap().unwrap();
        }
        let written = std::fs::read_to_string(fx.path("same.txt")).unwrap();
        assert!(contents.contains(&written), "a mix of writes");
        assert!(leftovers(fx.root.path()).is_empty());
    }

    #[tokio::test]
    async fn content_over_the_write_limit_is_refused() {
        let fx = Fixture::with(|c| c.max_write_bytes(8));
        fx.refusal(
            fx.write(json!({"path": "a.txt", "content": "123456789"}))
                .await,
            "`content` is 9 bytes long, over the write limit of 8",
        );
        assert_eq!(
            std::fs::read_to_string(fx.path("a.txt")).unwrap(),
            "alpha\n"
        );
    }
}
