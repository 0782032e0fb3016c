//! `fs_list`: one directory's entries, sorted, up to the listing limit.

use std::io;

use cap_std::fs::Dir;
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{ToolContext, ToolError, tool};

use super::config;
use crate::sandbox::{blocking, invalid, io_error, quoted, relative_path};

/// What a directory entry is. Symbolic links are reported as links, not followed.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::fs::{EntryKind, FsConfig, fs_list};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// std::fs::create_dir(root.path().join("notes")).unwrap();
/// std::fs::write(root.path().join("todo.txt"), "ship it").unwrap();
/// let config = FsConfig::new(root.path()).unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
///
/// let out = fs_list(ctx, ".".to_owned()).await.unwrap();
/// let kinds: Vec<EntryKind> = out.entries.iter().map(|entry| entry.kind).collect();
/// assert_eq!(kinds, [EntryKind::Directory, EntryKind::File]); // `notes`, `todo.txt`
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde", rename_all = "snake_case")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "What a directory entry is. Symbolic links are reported as links, not followed."
)]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// Anything else: a device, socket or pipe.
    Other,
}

/// One entry of a listing.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::fs::{EntryKind, FsConfig, fs_list};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// std::fs::create_dir(root.path().join("notes")).unwrap();
/// std::fs::write(root.path().join("todo.txt"), "ship it").unwrap();
/// let config = FsConfig::new(root.path()).unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
///
/// let out = fs_list(ctx, ".".to_owned()).await.unwrap();
/// let todo = &out.entries[1];
/// assert_eq!((todo.name.as_str(), todo.kind, todo.size), ("todo.txt", EntryKind::File, Some(7)));
/// assert_eq!(out.entries[0].size, None); // directories have no size
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "One entry of a listing."
)]
#[non_exhaustive]
pub struct FsEntry {
    /// The entry's name (not UTF-8 parts replaced with `�`).
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
    /// Files only: the size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// The result of `fs_list`.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::fs::{FsConfig, fs_list};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// std::fs::create_dir(root.path().join("notes")).unwrap();
/// std::fs::write(root.path().join("todo.txt"), "ship it").unwrap();
/// let config = FsConfig::new(root.path()).unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
///
/// let out = fs_list(ctx, ".".to_owned()).await.unwrap();
/// let names: Vec<&str> = out.entries.iter().map(|entry| entry.name.as_str()).collect();
/// assert_eq!(names, ["notes", "todo.txt"]); // sorted
/// assert_eq!(out.path, ".");
/// assert!(!out.truncated);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `fs_list`."
)]
#[non_exhaustive]
pub struct FsListOutput {
    /// The directory listed, as given.
    pub path: String,
    /// Its entries, sorted by name.
    pub entries: Vec<FsEntry>,
    /// Whether the directory has more entries than the listing limit; the entries shown are then
    /// the first the file system gave, sorted.
    pub truncated: bool,
}

/// Lists a directory under the root directory: each entry's name, kind (file, directory, symlink,
/// other) and, for files, size; for example `{"path": "notes"}` gives `{"path": "notes",
/// "entries": [{"name": "today.md", "kind": "file", "size": 10}], "truncated": false}`.
///
/// `path` is relative to the root (no `..`, not absolute); `.` (the default) is the root itself.
/// At most the host's limit of entries (1,000 by default) are listed; `truncated` says when there
/// are more. Not recursive: list a subdirectory by its path.
#[tool]
pub async fn fs_list(
    ctx: ToolContext,
    #[arg(
        description = "The directory to list, relative to the root directory; `.` is the root",
        default = "."
    )]
    path: String,
) -> Result<FsListOutput, ToolError> {
    let config = config(&ctx, "fs_list")?;
    let (root, max) = (config.root.clone(), config.max_list_entries);
    relative_path("path", &path)?;
    blocking(move || list(&root, &path, max)).await
}

fn list(root: &Dir, path: &str, max: usize) -> Result<FsListOutput, ToolError> {
    let failed = |err: io::Error| io_error(&err, "list", path, root);
    let target = if path.is_empty() { "." } else { path };
    let metadata = root.metadata(target).map_err(failed)?;
    if !metadata.is_dir() {
        return Err(invalid(format!(
            "`{}` is a file, not a directory; read it with fs_read",
            quoted(path)
        )));
    }
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in root.read_dir(target).map_err(failed)? {
        if entries.len() == max {
            truncated = true;
            break;
        }
        let entry = entry.map_err(failed)?;
        let file_type = entry.file_type().map_err(failed)?;
        let kind = if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Directory
        } else if file_type.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        let size = match kind {
            EntryKind::File => entry.metadata().ok().map(|m| m.len()),
            _ => None,
        };
        entries.push(FsEntry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(FsListOutput {
        path: path.to_owned(),
        entries,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use crate::fs::fixture::Fixture;
    use serde_json::json;

    #[tokio::test]
    async fn listings_stop_at_the_entry_limit() {
        let fx = Fixture::with(|c| c.max_list_entries(3));
        for i in 0..5 {
            std::fs::write(fx.path(&format!("dir/f{i}")), "").unwrap();
        }
        let listing = fx.list(json!({"path": "dir"})).await.unwrap();
        assert_eq!(listing["entries"].as_array().unwrap().len(), 3);
        assert_eq!(listing["truncated"], true);
    }
}
