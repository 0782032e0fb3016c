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

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use pleach_core::content::{self, ContentBlock, ToolOutput};
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{ToolContext, ToolError, tool, unified_tool};

use crate::sandbox::{blocking, invalid, io_error, not_configured, quoted, relative_path};

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

/// The result of `fs_read`.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::fs::{FsConfig, fs_read};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// std::fs::write(root.path().join("greeting.txt"), "héllo").unwrap(); // `é` is bytes 1 and 2
/// let config = FsConfig::new(root.path()).unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
///
/// // Offset 2 falls inside `é`: the part starts after it.
/// let out = fs_read(ctx, "greeting.txt".to_owned(), Some(2), None).await.unwrap().structured.unwrap();
/// assert_eq!(out.content, "llo");
/// assert_eq!((out.offset, out.bytes, out.size), (3, 3, 6));
/// assert_eq!(out.next_offset, None); // read to the end
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `fs_read`."
)]
#[non_exhaustive]
pub struct FsReadOutput {
    /// The path read, as given.
    pub path: String,
    /// The text read.
    pub content: String,
    /// The byte offset `content` starts at: `offset`, moved forward past the rest of a character
    /// it fell inside.
    pub offset: u64,
    /// The length of `content` in bytes.
    pub bytes: u64,
    /// The file's size in bytes.
    pub size: u64,
    /// Where the next part starts, when there is more after `content`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// For an image or a PDF read whole: its MIME type, read from its first bytes (not its
    /// name). The file is then the result's content block, and `content` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// Reads a UTF-8 text file under the root directory; for example `{"path": "notes/today.md"}`
/// gives `{"path": "notes/today.md", "content": "- ship it\n", "offset": 0, "bytes": 10, "size":
/// 10}`.
///
/// An image (PNG, JPEG, GIF, WebP, …) or a PDF read whole comes back as a content block the
/// model sees, its MIME type sniffed from the bytes, not the name (`mime_type` in the result).
///
/// `path` is relative to the root (no `..`, not absolute). Files up to the host's limit (1 MiB
/// by default) are read whole; read a larger one in parts with `offset` (a byte offset) and
/// `length` (bytes, up to the limit), following `next_offset`. A part never splits a character:
/// it starts after one `offset` falls inside, and ends up to 3 bytes past `length` to finish one.
#[tool]
pub async fn fs_read(
    ctx: ToolContext,
    #[arg(description = "The file to read, relative to the root directory, e.g. `notes/today.md`")]
    path: String,
    #[arg(description = "The byte offset to start at; 0 if absent")] offset: Option<u64>,
    #[arg(description = "Bytes to read, at most the host's read limit", min = 1)] length: Option<
        u64,
    >,
) -> Result<ToolOutput<FsReadOutput>, ToolError> {
    let config = config(&ctx, "fs_read")?;
    let (root, max) = (config.root.clone(), config.max_read_bytes);
    relative_path("path", &path)?;
    if path.is_empty() {
        return Err(invalid(
            "`path` is empty; name the file to read, e.g. `notes/today.md`".to_owned(),
        ));
    }
    if let Some(length) = length.filter(|&length| length > max) {
        return Err(invalid(format!(
            "`length` is {length}, over the read limit of {max} bytes; read at most {max} bytes \
             at a time"
        )));
    }
    blocking(move || read(&root, &path, offset, length, max)).await
}

fn read(
    root: &Dir,
    path: &str,
    offset: Option<u64>,
    length: Option<u64>,
    max: u64,
) -> Result<ToolOutput<FsReadOutput>, ToolError> {
    let (mut file, size) = open_regular_file(root, path)?;
    let failed = |err: io::Error| io_error(&err, "read", path, root);
    let start = offset.unwrap_or(0);
    if start > size {
        return Err(invalid(format!(
            "`offset` {start} is past the end of `{}`, which is {size} bytes long",
            quoted(path)
        )));
    }
    if offset.is_none() && length.is_none() && size > max {
        return Err(invalid(format!(
            "`{}` is {size} bytes long, over the read limit of {max}; read it in parts with \
             `offset` and `length` (at most {max} bytes each)",
            quoted(path)
        )));
    }
    let wanted = length.unwrap_or(max).min(size - start);
    file.seek(SeekFrom::Start(start)).map_err(failed)?;
    let mut bytes = Vec::new();
    // Up to 3 bytes more, to finish a character the part would otherwise cut.
    file.take(wanted.saturating_add(3))
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if start == 0
        && bytes.len() as u64 == size
        && let Some(mime) = media_type(&bytes)
    {
        let listed = FsReadOutput {
            path: path.to_owned(),
            content: String::new(),
            offset: 0,
            bytes: size,
            size,
            next_offset: None,
            mime_type: Some(mime.to_owned()),
        };
        return Ok(ToolOutput::new(listed).block(media_block(bytes, mime, path)));
    }
    let (skipped, text) = utf8_part(&bytes, start > 0, wanted, path, start)?;
    let offset = start + skipped;
    let len = text.len() as u64;
    let end = offset + len;
    Ok(ToolOutput::new(FsReadOutput {
        path: path.to_owned(),
        content: text,
        offset,
        bytes: len,
        size,
        next_offset: (end < size).then_some(end),
        mime_type: None,
    }))
}

/// The MIME type of a file the model should see as a content block: an image or a PDF, by its
/// magic number.
fn media_type(bytes: &[u8]) -> Option<&'static str> {
    content::sniff_mime(bytes)
        .filter(|mime| mime.starts_with("image/") || *mime == "application/pdf")
}

/// The file's bytes as a block (moved, not copied): an image, or a PDF named after the file.
fn media_block(bytes: Vec<u8>, mime: &'static str, path: &str) -> ContentBlock {
    if mime.starts_with("image/") {
        return ContentBlock::image(bytes, mime);
    }
    let mut media = content::Media::new(bytes, mime);
    media.name = Path::new(path)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned());
    content::Block::File(media).into()
}

/// The text of `bytes[..wanted]`, whole characters only: leading bytes that continue a character
/// begun before the part are skipped (when the part starts mid-file), and a character cut at
/// `wanted` is completed from the extra bytes read, or left for the next part. Returns how many
/// bytes were skipped at the start.
fn utf8_part(
    bytes: &[u8],
    mid_file: bool,
    wanted: u64,
    path: &str,
    start: u64,
) -> Result<(u64, String), ToolError> {
    let skipped = if mid_file {
        bytes
            .iter()
            .take(3)
            .take_while(|&&b| b & 0b1100_0000 == 0b1000_0000)
            .count()
    } else {
        0
    };
    let wanted = usize::try_from(wanted).unwrap_or(usize::MAX);
    let body = bytes.get(skipped..).unwrap_or_default();
    let mut end = wanted.saturating_sub(skipped).min(body.len());
    // Extend to the end of a character the cut falls inside.
    while end < body.len() && body[end] & 0b1100_0000 == 0b1000_0000 {
        end += 1;
    }
    match std::str::from_utf8(&body[..end]) {
        Ok(text) => Ok((skipped as u64, text.to_owned())),
        Err(err) => Err(invalid(format!(
            "`{}` is not UTF-8 text (byte {} is not part of a character); fs_read reads text files \
             only",
            quoted(path),
            start + (skipped + err.valid_up_to()) as u64
        ))),
    }
}

/// `path` opened for reading, and its size, if it is a regular file.
///
/// Checked before opening, so that a device is never opened, and again on the file opened (see
/// [`open_checked`]).
fn open_regular_file(root: &Dir, path: &str) -> Result<(cap_std::fs::File, u64), ToolError> {
    let metadata = root
        .metadata(path)
        .map_err(|err| io_error(&err, "read", path, root))?;
    check_regular_file(&metadata, path)?;
    open_checked(root, path)
}

/// `path` opened for reading without waiting, and its size, if what was opened is a regular file:
/// a process writing inside the root may have swapped the path for a pipe since it was checked,
/// and opening a pipe for reading would wait for a writer, forever.
fn open_checked(root: &Dir, path: &str) -> Result<(cap_std::fs::File, u64), ToolError> {
    let failed = |err: io::Error| io_error(&err, "read", path, root);
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed());
    }
    let file = root.open_with(path, &options).map_err(failed)?;
    let metadata = file.metadata().map_err(failed)?;
    check_regular_file(&metadata, path)?;
    Ok((file, metadata.len()))
}

fn check_regular_file(metadata: &cap_std::fs::Metadata, path: &str) -> Result<(), ToolError> {
    if metadata.is_dir() {
        return Err(invalid(format!(
            "`{}` is a directory; list it with fs_list, or read a file in it",
            quoted(path)
        )));
    }
    if !metadata.is_file() {
        return Err(invalid(format!(
            "`{}` is not a regular file (a device, socket or pipe); fs_read reads files only",
            quoted(path)
        )));
    }
    Ok(())
}

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
    use super::*;
    use pleach_core::extensions::{Extensions, SessionState};
    use pleach_core::{ErrorCode, ToolDefinition};
    use serde_json::{Value, json};
    use std::os::unix::fs::{PermissionsExt, symlink};

    /// A root with `a.txt`, `dir/b.txt`, and beside it a directory outside the root holding
    /// `secret.txt`.
    struct Fixture {
        root: tempfile::TempDir,
        outside: tempfile::TempDir,
        extensions: Extensions,
    }

    impl Fixture {
        fn new() -> Fixture {
            Fixture::with(|config| config)
        }

        fn with(limits: impl FnOnce(FsConfig) -> FsConfig) -> Fixture {
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

        fn path(&self, relative: &str) -> std::path::PathBuf {
            self.root.path().join(relative)
        }

        async fn call(&self, tool: &ToolDefinition, args: Value) -> Result<Value, ToolError> {
            let ctx =
                ToolContext::new("call_1").with_scope(self.extensions.clone(), SessionState::new());
            tool.call(&args.to_string(), ctx)
                .await
                .map(|out| out.value().clone())
        }

        async fn read(&self, args: Value) -> Result<Value, ToolError> {
            self.call(&fs_read::definition(), args).await
        }

        async fn write(&self, args: Value) -> Result<Value, ToolError> {
            self.call(&fs_write::definition(), args).await
        }

        async fn list(&self, args: Value) -> Result<Value, ToolError> {
            self.call(&fs_list::definition(), args).await
        }

        /// The message of the refusal `outcome` must be (1001, lowercase first), which must not
        /// name the host's paths.
        #[track_caller]
        fn refusal(&self, outcome: Result<Value, ToolError>, needle: &str) {
            let message = crate::test_support::refusal(outcome, &needle);
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
            for host in [self.root.path(), self.outside.path()] {
                let host = host.to_string_lossy();
                assert!(!message.contains(host.as_ref()), "{message:?} names {host}");
            }
        }
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".pleach-tmp"))
            .collect()
    }

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
    async fn an_image_or_a_pdf_comes_back_as_a_block_by_its_bytes_not_its_name() {
        let fx = Fixture::new();
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x02\0\0\0\x01".to_vec();
        // Named as text: the bytes say PNG.
        std::fs::write(fx.path("shot.txt"), &png).unwrap();
        std::fs::write(fx.path("report.bin"), b"%PDF-1.7\n%\xe2\xe3").unwrap();
        let ctx = ToolContext::new("c1").with_scope(fx.extensions.clone(), SessionState::new());
        let out = fs_read(ctx.clone(), "shot.txt".to_owned(), None, None)
            .await
            .unwrap();
        let listed = out.structured.as_ref().unwrap();
        assert_eq!(listed.mime_type.as_deref(), Some("image/png"));
        assert_eq!(
            (listed.content.as_str(), listed.size),
            ("", png.len() as u64)
        );
        let media = out.content[0].media().unwrap();
        assert_eq!(
            (media.mime_type.as_str(), &media.data[..]),
            ("image/png", &png[..])
        );
        assert_eq!(out.content[0].kind(), "image");

        let pdf = fs_read(ctx.clone(), "report.bin".to_owned(), None, None)
            .await
            .unwrap();
        assert_eq!(pdf.content[0].kind(), "file");
        assert_eq!(
            pdf.content[0].media().unwrap().name.as_deref(),
            Some("report.bin")
        );

        // A part of an image is not an image: read by offset, its bytes are not text.
        let part = fs_read(ctx, "shot.txt".to_owned(), Some(0), Some(4)).await;
        assert!(part.unwrap_err().message().contains("not UTF-8 text"));
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

    #[test]
    fn a_pipe_swapped_in_after_the_check_is_refused_without_waiting() {
        // What a process writing inside the root can do between `read`'s check of the path and
        // its opening: put a pipe there. Opening a pipe for reading waits for a writer, so the
        // open itself must not wait, and what it opened is checked again.
        let fx = Fixture::new();
        let made = std::process::Command::new("mkfifo")
            .arg(fx.path("pipe"))
            .status();
        if !made.is_ok_and(|status| status.success()) {
            eprintln!("skipped: no `mkfifo` on this machine");
            return;
        }
        let root = Dir::open_ambient_dir(fx.root.path(), ambient_authority()).unwrap();
        let (done, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(open_checked(&root, "pipe").map(|(_, size)| size));
        });
        let outcome = outcome
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("opening the pipe waited for a writer");
        let message = crate::test_support::refusal(outcome, &"pipe");
        assert!(message.contains("is not a regular file"), "{message}");
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
    async fn a_read_limit_of_0_still_reads_a_file_in_parts() {
        // A limit of 0 made every part empty, naming its own offset as `next_offset`: a reader
        // paging through the file never got further. The limit is at least 1, like `length`.
        let fx = Fixture::with(|c| c.max_read_bytes(0));
        let first = fx
            .read(json!({"path": "a.txt", "offset": 0}))
            .await
            .unwrap();
        assert_eq!(
            (first["content"].as_str(), first["next_offset"].as_u64()),
            (Some("a"), Some(1))
        );
    }

    #[tokio::test]
    async fn sizes_over_the_limits_are_refused() {
        let fx = Fixture::with(|c| c.max_read_bytes(8).max_write_bytes(8).max_list_entries(3));
        std::fs::write(fx.path("big.txt"), "0123456789abcdef").unwrap();
        fx.refusal(
            fx.read(json!({"path": "big.txt"})).await,
            "`big.txt` is 16 bytes long, over the read limit of 8; read it in parts",
        );
        fx.refusal(
            fx.read(json!({"path": "big.txt", "length": 9})).await,
            "`length` is 9, over the read limit of 8 bytes",
        );
        fx.refusal(
            fx.read(json!({"path": "big.txt", "offset": 17})).await,
            "`offset` 17 is past the end of `big.txt`, which is 16 bytes long",
        );
        // A part of 0 bytes would name its own offset as the next: a reader paging through the
        // file by `next_offset` would never get further.
        let err = fx
            .read(json!({"path": "big.txt", "offset": 0, "length": 0}))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code(), err.path()),
            (ErrorCode::InputInvalid, Some("/length"))
        );
        let first = fx
            .read(json!({"path": "big.txt", "offset": 0}))
            .await
            .unwrap();
        assert_eq!(
            (first["content"].as_str(), first["next_offset"].as_u64()),
            (Some("01234567"), Some(8))
        );
        let rest = fx
            .read(json!({"path": "big.txt", "offset": 8}))
            .await
            .unwrap();
        assert_eq!(rest["content"], "89abcdef");
        assert!(rest.get("next_offset").is_none());

        fx.refusal(
            fx.write(json!({"path": "a.txt", "content": "123456789"}))
                .await,
            "`content` is 9 bytes long, over the write limit of 8",
        );
        assert_eq!(
            std::fs::read_to_string(fx.path("a.txt")).unwrap(),
            "alpha\n"
        );

        for i in 0..5 {
            std::fs::write(fx.path(&format!("dir/f{i}")), "").unwrap();
        }
        let listing = fx.list(json!({"path": "dir"})).await.unwrap();
        assert_eq!(listing["entries"].as_array().unwrap().len(), 3);
        assert_eq!(listing["truncated"], true);
    }

    #[tokio::test]
    async fn parts_never_split_a_character() {
        let fx = Fixture::new();
        // `é` is 2 bytes (1-2), `😀` 4 (3-6).
        std::fs::write(fx.path("u.txt"), "aé😀b").unwrap();
        let part = fx
            .read(json!({"path": "u.txt", "offset": 0, "length": 2}))
            .await
            .unwrap();
        assert_eq!(
            (part["content"].as_str(), part["next_offset"].as_u64()),
            (Some("aé"), Some(3))
        );
        let part = fx
            .read(json!({"path": "u.txt", "offset": 2, "length": 2}))
            .await
            .unwrap();
        assert_eq!(part["offset"], 3, "the rest of `é` is skipped");
        assert_eq!(part["content"], "😀");
        assert_eq!(part["next_offset"], 7);
        let part = fx
            .read(json!({"path": "u.txt", "offset": 7}))
            .await
            .unwrap();
        assert_eq!(part["content"], "b");
    }

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
