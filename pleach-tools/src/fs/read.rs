//! `fs_read`: a text file, whole or in parts, or an image or a PDF as a content block.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use cap_std::fs::{Dir, OpenOptions};
use pleach_core::content::{self, ContentBlock, ToolOutput};
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{ToolContext, ToolError, tool};

use super::config;
use crate::sandbox::{blocking, invalid, io_error, quoted, relative_path};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::fixture::Fixture;
    use cap_std::ambient_authority;
    use pleach_core::ErrorCode;
    use pleach_core::extensions::SessionState;
    use serde_json::json;

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
    async fn sizes_over_the_read_limit_are_refused() {
        let fx = Fixture::with(|c| c.max_read_bytes(8));
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
    }
}
