//! The `fs_read`, `fs_write` and `fs_list` tools: text files under one root directory the host
//! chooses, and nothing outside it.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_core::extensions::{Extensions, SessionState};
//! use pleach_tools::fs::{FsConfig, fs_read, fs_write};
//!
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! let root = tempfile::tempdir().unwrap();
//! let config = FsConfig::new(root.path()).unwrap().max_read_bytes(64 * 1024);
//! // A runtime gives every call its configuration (`RuntimeBuilder::provide(config)`); by hand:
//! let extensions = Extensions::new().with(config);
//! let ctx = || ToolContext::new("call_1").with_scope(extensions.clone(), SessionState::new());
//!
//! fs_write::definition()
//!     .call(r#"{"path": "notes/today.md", "content": "- ship it\n"}"#, ctx())
//!     .await
//!     .unwrap();
//! let out = fs_read::definition().call(r#"{"path": "notes/today.md"}"#, ctx()).await.unwrap();
//! assert_eq!(out.value()["content"], "- ship it\n");
//!
//! let err = fs_read::definition().call(r#"{"path": "../etc/passwd"}"#, ctx()).await.unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert!(err.message().starts_with("`path` must not contain `..`"));
//! # });
//! ```
//!
//! # The root
//!
//! [`FsConfig::new`] opens the root directory once, as a [`cap_std::fs::Dir`], and every path a
//! model gives is resolved beneath it by cap-std (with `openat2(RESOLVE_BENEATH)` on Linux, a
//! component-by-component walk elsewhere). Before that, a path with `..`, an absolute path, a NUL
//! byte or over 1,024 bytes is refused with a message that says so (code 1001), so the model
//! learns the rule rather than meeting a bare "permission denied". A symbolic link is followed
//! only while it stays inside the root: one that leads out (or to an absolute path) is refused
//! with code 1001 too, and `fs_write` never writes through a link at all. With no `FsConfig`
//! provided the tools fail (1008, not recoverable) and say what to configure: they never fall back
//! to the process's working directory.
//!
//! # Writes
//!
//! `fs_write` writes the new content to a temporary file in the target's own directory
//! (`.pleach-tmp-…`, created exclusively, synced to disk), then renames it over the target, so a
//! reader sees the old file or the new one and never a half-written one, and a failed write leaves
//! the old file as it was. The new file keeps the old one's permission bits (not its owner).
//! With `overwrite: false` the temporary file is hard-linked to the name instead, which fails if
//! the name exists, atomically.
//!
//! # Errors
//!
//! A path the model can change (missing, a directory where a file is expected, leading outside
//! the root, over a size limit) is code 1001, with the closest names when a file is missing. A
//! failure of the host (permissions, a full disk) is 1008, its io error kept as operator detail:
//! messages name only the model's own relative path, never the host's absolute one.
//!
//! # Limits
//!
//! [`FsConfig`]'s, by default: reads and writes up to 1 MiB, listings up to 1,000 entries. Text
//! only: `fs_read` refuses bytes that are not UTF-8, and reads regular files only (not a device,
//! socket or pipe): the kind is checked on the path, and again on the file opened, which is
//! opened without waiting, so a pipe swapped in between by a process writing inside the root is
//! refused rather than waited on.

mod list;
mod read;
mod write;

use std::io;
use std::path::Path;
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use pleach_core::{ToolContext, ToolError};

use crate::sandbox::not_configured;

pub use list::{EntryKind, FsEntry, FsListOutput, fs_list};
pub use read::{FsReadOutput, fs_read};
pub use write::{FsWriteOutput, fs_write};

/// The root directory the `fs_*` tools work in, and their limits. Provide it to the runtime
/// ([`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide) or
/// [`PleachPlugin::provide`](https://docs.rs/pleach-core/latest/pleach_core/plugin/struct.PleachPlugin.html#method.provide)); the CLI builds it from
/// `--root DIR`.
///
/// ```
/// use pleach_tools::fs::FsConfig;
///
/// let root = tempfile::tempdir().unwrap();
/// let config = FsConfig::new(root.path())
///     .unwrap()
///     .max_read_bytes(256 * 1024)
///     .max_write_bytes(64 * 1024)
///     .max_list_entries(200);
/// # use pleach as pleach_core; // the runtime, for this example
/// let runtime = pleach_core::Runtime::builder().provide(config).build().unwrap();
/// # let _ = runtime;
/// assert!(FsConfig::new(root.path().join("missing")).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct FsConfig {
    root: Arc<Dir>,
    max_read_bytes: u64,
    max_write_bytes: usize,
    max_list_entries: usize,
}

impl FsConfig {
    /// Opens `root` (which must be a directory) as the root; reads and writes up to 1 MiB,
    /// listings up to 1,000 entries. This is the one place the process's own file access is
    /// used: every later path is resolved beneath the opened directory.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use pleach_tools::fs::FsConfig;
    ///
    /// let root = tempfile::tempdir().unwrap();
    /// assert!(FsConfig::new(root.path()).is_ok());
    ///
    /// let err = FsConfig::new(root.path().join("missing")).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// assert!(err.to_string().starts_with("cannot open "));
    ///
    /// std::fs::write(root.path().join("notes.md"), "").unwrap();
    /// assert!(FsConfig::new(root.path().join("notes.md")).is_err()); // a file, not a directory
    /// ```
    pub fn new(root: impl AsRef<Path>) -> io::Result<FsConfig> {
        let root = root.as_ref();
        let dir = Dir::open_ambient_dir(root, ambient_authority()).map_err(|err| {
            io::Error::new(
                err.kind(),
                format!("cannot open {} as the fs root: {err}", root.display()),
            )
        })?;
        Ok(FsConfig::from_dir(dir))
    }

    /// A root directory opened already (with cap-std, or handed down by a host that holds it).
    ///
    /// ```
    /// use cap_std::{ambient_authority, fs::Dir};
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::fs::{FsConfig, fs_read};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let temp = tempfile::tempdir().unwrap();
    /// let root = Dir::open_ambient_dir(temp.path(), ambient_authority()).unwrap();
    /// root.write("hello.txt", "hi").unwrap();
    ///
    /// let config = FsConfig::from_dir(root);
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    /// let out = fs_read(ctx, "hello.txt".to_owned(), None, None).await.unwrap();
    /// assert_eq!(out.structured.unwrap().content, "hi");
    /// # }
    /// ```
    pub fn from_dir(root: Dir) -> FsConfig {
        FsConfig {
            root: Arc::new(root),
            max_read_bytes: 1024 * 1024,
            max_write_bytes: 1024 * 1024,
            max_list_entries: 1000,
        }
    }

    /// Reads return at most `max` bytes (at least 1; default 1 MiB); a larger file is read in parts (`offset`,
    /// `length`).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::fs::{FsConfig, fs_read};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let root = tempfile::tempdir().unwrap();
    /// std::fs::write(root.path().join("digits.txt"), "0123456789").unwrap();
    /// let config = FsConfig::new(root.path()).unwrap().max_read_bytes(4);
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///
    /// let err = fs_read(ctx.clone(), "digits.txt".to_owned(), None, None).await.unwrap_err();
    /// assert_eq!(err.code().as_u16(), 1001);
    /// assert!(err.message().contains("over the read limit of 4"));
    ///
    /// let part = fs_read(ctx, "digits.txt".to_owned(), Some(0), None).await.unwrap().structured.unwrap();
    /// assert_eq!((part.content.as_str(), part.next_offset), ("0123", Some(4)));
    /// # }
    /// ```
    #[must_use]
    pub fn max_read_bytes(mut self, max: u64) -> Self {
        // A part of 0 bytes would name its own offset as the next one: paging would never end.
        self.max_read_bytes = max.max(1);
        self
    }

    /// Writes take at most `max` bytes of content (default 1 MiB).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::fs::{FsConfig, fs_write};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let root = tempfile::tempdir().unwrap();
    /// let config = FsConfig::new(root.path()).unwrap().max_write_bytes(8);
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///
    /// let err = fs_write(ctx, "log.txt".to_owned(), "123456789".to_owned(), true).await.unwrap_err();
    /// assert_eq!(err.code().as_u16(), 1001);
    /// assert!(err.message().contains("over the write limit of 8"));
    /// assert!(!root.path().join("log.txt").exists());
    /// # }
    /// ```
    #[must_use]
    pub fn max_write_bytes(mut self, max: usize) -> Self {
        self.max_write_bytes = max;
        self
    }

    /// Listings show at most `max` entries (at least 1; default 1,000).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::fs::{FsConfig, fs_list};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let root = tempfile::tempdir().unwrap();
    /// for name in ["a.txt", "b.txt", "c.txt"] {
    ///     std::fs::write(root.path().join(name), "").unwrap();
    /// }
    /// let list = |max| {
    ///     let config = FsConfig::new(root.path()).unwrap().max_list_entries(max);
    ///     let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///     fs_list(ctx, ".".to_owned())
    /// };
    ///
    /// let out = list(2).await.unwrap();
    /// assert_eq!(out.entries.len(), 2);
    /// assert!(out.truncated);
    /// assert_eq!(list(0).await.unwrap().entries.len(), 1);
    /// # }
    /// ```
    #[must_use]
    pub fn max_list_entries(mut self, max: usize) -> Self {
        self.max_list_entries = max.max(1);
        self
    }
}

/// The configuration, or the error that says what the host must provide.
fn config<'c>(ctx: &'c ToolContext, tool: &str) -> Result<&'c FsConfig, ToolError> {
    ctx.get::<FsConfig>().ok_or_else(|| {
        not_configured(
            tool,
            "a root directory (an `FsConfig`, or `--root DIR` with the CLI)",
        )
    })
}

/// A root with files in it, for the tests of every tool of this module.
#[cfg(test)]
mod fixture {
    use std::path::Path;

    use pleach_core::extensions::{Extensions, SessionState};
    use pleach_core::{ToolContext, ToolDefinition, ToolError};
    use serde_json::Value;

    use super::{FsConfig, fs_list, fs_read, fs_write};

    /// A root with `a.txt`, `dir/b.txt`, and beside it a directory outside the root holding
    /// `secret.txt`.
    pub(super) struct Fixture {
        pub(super) root: tempfile::TempDir,
        pub(super) outside: tempfile::TempDir,
        pub(super) extensions: Extensions,
    }

    impl Fixture {
        pub(super) fn new() -> Fixture {
            Fixture::with(|config| config)
        }

        pub(super) fn with(limits: impl FnOnce(FsConfig) -> FsConfig) -> Fixture {
            let root = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
            std::fs::create_dir(root.path().join("dir")).unwrap();
            std::fs::write(root.path().join("dir/b.txt"), "beta\n").unwrap();
            std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
            let config = limits(FsConfig::new(root.path()).unwrap());
            Fixture {
                root,
                outside,
                extensions: Extensions::new().with(config),
            }
        }

        pub(super) fn path(&self, relative: &str) -> std::path::PathBuf {
            self.root.path().join(relative)
        }

        async fn call(&self, tool: &ToolDefinition, args: Value) -> Result<Value, ToolError> {
            let ctx =
                ToolContext::new("call_1").with_scope(self.extensions.clone(), SessionState::new());
            tool.call(&args.to_string(), ctx)
                .await
                .map(|out| out.value().clone())
        }

        pub(super) async fn read(&self, args: Value) -> Result<Value, ToolError> {
            self.call(&fs_read::definition(), args).await
        }

        pub(super) async fn write(&self, args: Value) -> Result<Value, ToolError> {
            self.call(&fs_write::definition(), args).await
        }

        pub(super) async fn list(&self, args: Value) -> Result<Value, ToolError> {
            self.call(&fs_list::definition(), args).await
        }

        /// The message of the refusal `outcome` must be (1001, lowercase first), which must not
        /// name the host's paths.
        #[track_caller]
        pub(super) fn refusal(&self, outcome: Result<Value, ToolError>, needle: &str) {
            let message = crate::test_support::refusal(outcome, &needle);
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
            for host in [self.root.path(), self.outside.path()] {
                let host = host.to_string_lossy();
                assert!(!message.contains(host.as_ref()), "{message:?} names {host}");
            }
        }
    }

    /// The temporary files `fs_write` left in `dir`.
    pub(super) fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".pleach-tmp"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{Fixture, leftovers};
    use super::*;
    use pleach_core::ErrorCode;
    use serde_json::json;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[tokio::test]
    async fn read_write_and_list() {
        let fx = Fixture::new();
        assert_eq!(
            fx.read(json!({"path": "a.txt"})).await.unwrap(),
            json!({"path": "a.txt", "content": "alpha\n", "offset": 0, "bytes": 6, "size": 6})
        );
        assert_eq!(
            fx.read(json!({"path": "./dir/b.txt"})).await.unwrap()["content"],
            "beta\n"
        );

        assert_eq!(
            fx.write(json!({"path": "new/deeper/c.md", "content": "ünï\n"}))
                .await
                .unwrap(),
            json!({"path": "new/deeper/c.md", "bytes": 6, "created": true})
        );
        assert_eq!(
            std::fs::read_to_string(fx.path("new/deeper/c.md")).unwrap(),
            "ünï\n"
        );

        std::fs::set_permissions(fx.path("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            fx.write(json!({"path": "a.txt", "content": "again"}))
                .await
                .unwrap(),
            json!({"path": "a.txt", "bytes": 5, "created": false})
        );
        assert_eq!(std::fs::read_to_string(fx.path("a.txt")).unwrap(), "again");
        let mode = std::fs::metadata(fx.path("a.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o640,
            "the replaced file's permissions are kept"
        );
        assert!(leftovers(fx.root.path()).is_empty());

        symlink("a.txt", fx.path("link")).unwrap();
        assert_eq!(
            fx.list(json!({})).await.unwrap(),
            json!({"path": ".", "entries": [
                {"name": "a.txt", "kind": "file", "size": 5},
                {"name": "dir", "kind": "directory"},
                {"name": "link", "kind": "symlink"},
                {"name": "new", "kind": "directory"},
            ], "truncated": false})
        );
        assert_eq!(
            fx.list(json!({"path": "dir"})).await.unwrap()["entries"],
            json!([{"name": "b.txt", "kind": "file", "size": 5}])
        );
        // A link that stays inside the root is followed.
        assert_eq!(
            fx.read(json!({"path": "link"})).await.unwrap()["content"],
            "again"
        );
    }

    #[tokio::test]
    async fn dot_dot_and_absolute_paths_are_refused() {
        let fx = Fixture::new();
        let outside = fx.outside.path().join("secret.txt");
        let outside = outside.to_str().unwrap();
        for path in ["../x", "a/../../x", "dir/../a.txt", ".."] {
            fx.refusal(
                fx.read(json!({"path": path})).await,
                "`path` must not contain `..`",
            );
            fx.refusal(
                fx.write(json!({"path": path, "content": "x"})).await,
                "`path` must not contain `..`",
            );
            fx.refusal(
                fx.list(json!({"path": path})).await,
                "`path` must not contain `..`",
            );
        }
        let absolute = "must be relative to the root directory";
        fx.refusal(fx.read(json!({"path": "/etc/passwd"})).await, absolute);
        let message =
            crate::test_support::refusal(fx.read(json!({"path": outside})).await, &outside);
        assert!(message.contains(absolute), "{message}");
        fx.refusal(
            fx.write(json!({"path": "/tmp/x", "content": "x"})).await,
            absolute,
        );
        fx.refusal(fx.list(json!({"path": "/"})).await, absolute);
    }

    #[tokio::test]
    async fn symbolic_links_out_of_the_root_are_refused() {
        let fx = Fixture::new();
        let escape = "leads outside the root directory through a symbolic link";
        symlink(fx.outside.path(), fx.path("out")).unwrap();
        symlink(fx.outside.path().join("secret.txt"), fx.path("secret")).unwrap();
        symlink("/etc/passwd", fx.path("passwd")).unwrap();
        symlink("../../../../../../../../etc", fx.path("relative_out")).unwrap();

        fx.refusal(fx.read(json!({"path": "out/secret.txt"})).await, escape);
        fx.refusal(fx.read(json!({"path": "secret"})).await, escape);
        fx.refusal(fx.read(json!({"path": "passwd"})).await, escape);
        fx.refusal(
            fx.read(json!({"path": "relative_out/passwd"})).await,
            escape,
        );
        fx.refusal(fx.list(json!({"path": "out"})).await, escape);
        fx.refusal(fx.list(json!({"path": "relative_out"})).await, escape);

        // Writing into a linked directory, or through a link to a file, reaches nothing outside.
        fx.refusal(
            fx.write(json!({"path": "out/sub/new.txt", "content": "x"}))
                .await,
            escape,
        );
        fx.refusal(
            fx.write(json!({"path": "out/new.txt", "content": "x"}))
                .await,
            escape,
        );
        fx.refusal(
            fx.write(json!({"path": "secret", "content": "overwritten"}))
                .await,
            "`secret` is a symbolic link, and fs_write does not write through links",
        );
        fx.refusal(
            fx.write(json!({"path": "passwd", "content": "x"})).await,
            "does not write through links",
        );
        assert_eq!(
            std::fs::read_to_string(fx.outside.path().join("secret.txt")).unwrap(),
            "secret\n"
        );
        assert!(!fx.outside.path().join("new.txt").exists());
        assert!(
            std::fs::symlink_metadata(fx.path("secret"))
                .unwrap()
                .is_symlink()
        );
    }

    #[tokio::test]
    async fn malformed_paths_are_refused() {
        let fx = Fixture::new();
        fx.refusal(
            fx.read(json!({"path": "a\u{0}.txt"})).await,
            "`path` contains a NUL byte",
        );
        fx.refusal(
            fx.write(json!({"path": "a\u{0}", "content": ""})).await,
            "`path` contains a NUL byte",
        );
        let long = "d/".repeat(600);
        fx.refusal(
            fx.read(json!({"path": long})).await,
            "`path` is 1200 bytes long, over the limit of 1024",
        );
        let long_name = "n".repeat(300);
        fx.refusal(
            fx.read(json!({"path": long_name})).await,
            "has a name the file system refuses",
        );
        fx.refusal(
            fx.write(json!({"path": long_name, "content": "x"})).await,
            "has a name the file system refuses",
        );
        fx.refusal(fx.read(json!({"path": ""})).await, "`path` is empty");
        for path in [".", "dir/", "dir/.", ""] {
            fx.refusal(
                fx.write(json!({"path": path, "content": "x"})).await,
                "`path` must name a file",
            );
        }
        fx.refusal(
            fx.write(json!({"path": "a.txt/inner.txt", "content": "x"}))
                .await,
            "goes through a file as if it were a directory",
        );
        fx.refusal(
            fx.read(json!({"path": "a.txt/inner.txt"})).await,
            "goes through a file as if it were a directory",
        );
    }

    #[tokio::test]
    async fn kinds_of_file_are_checked() {
        let fx = Fixture::new();
        fx.refusal(
            fx.read(json!({"path": "dir"})).await,
            "`dir` is a directory; list it with fs_list",
        );
        fx.refusal(
            fx.list(json!({"path": "a.txt"})).await,
            "`a.txt` is a file, not a directory",
        );
        fx.refusal(
            fx.write(json!({"path": "dir", "content": "x"})).await,
            "`dir` is a directory; name a file inside it",
        );
        std::fs::write(fx.path("binary"), [0x66, 0x6f, 0xff, 0x00]).unwrap();
        fx.refusal(
            fx.read(json!({"path": "binary"})).await,
            "`binary` is not UTF-8 text (byte 2",
        );
        // A pipe is refused before it is opened: opening it would wait for a writer forever.
        let made = std::process::Command::new("mkfifo")
            .arg(fx.path("pipe"))
            .status();
        if made.is_ok_and(|status| status.success()) {
            fx.refusal(
                fx.read(json!({"path": "pipe"})).await,
                "is not a regular file",
            );
        }
    }

    #[tokio::test]
    async fn missing_files_suggest_close_names() {
        let fx = Fixture::new();
        fx.refusal(
            fx.read(json!({"path": "dir/b.tx"})).await,
            "there is no file or directory at `dir/b.tx`; did you mean `dir/b.txt`?",
        );
        fx.refusal(
            fx.read(json!({"path": "zzz"})).await,
            "there is no file or directory at `zzz`",
        );
        fx.refusal(
            fx.list(json!({"path": "nope/deeper"})).await,
            "there is no file or directory",
        );
    }

    #[tokio::test]
    async fn without_a_root_the_tools_say_what_to_configure() {
        for tool in [
            fs_read::definition(),
            fs_write::definition(),
            fs_list::definition(),
        ] {
            let args = if tool.name() == "fs_write" {
                r#"{"path": "a.txt", "content": "x"}"#
            } else {
                r#"{"path": "a.txt"}"#
            };
            let err = tool.call(args, ToolContext::new("c1")).await.unwrap_err();
            assert_eq!(err.code(), ErrorCode::ToolFailed, "{}", tool.name());
            assert!(!err.is_recoverable());
            let needle = "it needs a root directory (an `FsConfig`, or `--root DIR`";
            assert!(err.message().contains(needle), "{}", err.message());
        }
        let err = FsConfig::new("/definitely/not/here").unwrap_err();
        assert!(err.to_string().contains("as the fs root"), "{err}");
    }

    #[test]
    fn cap_std_still_words_its_escape_error_as_we_read_it() {
        let fx = Fixture::new();
        symlink(fx.outside.path(), fx.path("out")).unwrap();
        let root = Dir::open_ambient_dir(fx.root.path(), ambient_authority()).unwrap();
        let err = root.open("out/secret.txt").unwrap_err();
        assert!(crate::sandbox::is_escape(&err), "{err:?}");
    }

    #[test]
    fn schemas_and_strategies() {
        use pleach::{BatchingStrategy, infer_batching_strategy};
        use pleach_core::SafetyTier;
        let chunked = BatchingStrategy::Chunked { key: "path".into() };
        for tool in [
            fs_read::definition(),
            fs_write::definition(),
            fs_list::definition(),
        ] {
            assert_eq!(infer_batching_strategy(&tool), chunked, "{}", tool.name());
        }
        assert_eq!(
            fs_write::unified().safety_tier(),
            Some(SafetyTier::Standard)
        );
        assert_eq!(fs_write::unified().category(), "filesystem");
        assert_eq!(
            fs_write::definition().input_schema()["required"],
            json!(["path", "content"])
        );
        assert_eq!(
            fs_list::definition().input_schema()["properties"]["path"]["default"],
            "."
        );
    }
}
