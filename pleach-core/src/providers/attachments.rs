//! A tool message's attachments (its blocks other than text) as the parts every format maps to
//! its own shapes: an image, a file, a recording, or text saying what could not be sent.

use std::borrow::Cow;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use serde_json::Value;

use crate::content::{Block, Bytes, ContentBlock, ResourceContents};

/// One attachment as a format sees it.
pub(super) enum Part<'a> {
    /// Text: an embedded text resource, a resource link described, or a note.
    Text(Cow<'a, str>),
    /// An image.
    Image { mime: &'a str, data: &'a Bytes },
    /// A recording.
    Audio { mime: &'a str, data: &'a Bytes },
    /// A file (a document, or an embedded binary resource that is not an image).
    File {
        mime: &'a str,
        data: &'a Bytes,
        name: Option<&'a str>,
    },
}

/// The parts of a message's attachments, in order.
pub(super) fn parts(attachments: &[ContentBlock]) -> impl Iterator<Item = Part<'_>> {
    attachments.iter().map(|block| match &block.block {
        Block::Text(text) => Part::Text(Cow::Borrowed(text)),
        Block::Image(media) => Part::Image {
            mime: &media.mime_type,
            data: &media.data,
        },
        Block::Audio(media) => Part::Audio {
            mime: &media.mime_type,
            data: &media.data,
        },
        Block::File(media) => Part::File {
            mime: &media.mime_type,
            data: &media.data,
            name: media.name.as_deref(),
        },
        Block::ResourceLink(link) => {
            let mut text = format!("Resource `{}`: {}", link.name, link.uri);
            if let Some(mime) = &link.mime_type {
                let _ = write!(text, " ({mime})");
            }
            if let Some(description) = &link.description {
                let _ = write!(text, " — {description}");
            }
            Part::Text(Cow::Owned(text))
        }
        Block::Resource(resource) => match &resource.contents {
            ResourceContents::Text(text) => {
                Part::Text(Cow::Owned(format!("Resource {}:\n{text}", resource.uri)))
            }
            ResourceContents::Blob(data) => {
                let mime = resource
                    .mime_type
                    .as_deref()
                    .unwrap_or("application/octet-stream");
                if mime.starts_with("image/") {
                    Part::Image { mime, data }
                } else if mime.starts_with("audio/") {
                    Part::Audio { mime, data }
                } else {
                    Part::File {
                        mime,
                        data,
                        name: resource.uri.rsplit('/').next().filter(|n| !n.is_empty()),
                    }
                }
            }
            _ => Part::Text(Cow::Owned(format!(
                "[a resource this format cannot carry: {}]",
                resource.uri
            ))),
        },
        // `Block` may grow: a kind this version does not know is named, not dropped silently.
        _ => Part::Text(Cow::Owned(format!(
            "[a `{}` block this format cannot carry]",
            block.kind()
        ))),
    })
}

/// The note standing for media a format cannot carry: what it was, and why it is not there.
pub(super) fn not_sent(what: &str, mime: &str, bytes: usize, why: &str) -> String {
    format!("[{what} {mime}, {}: not sent, {why}]", human_size(bytes))
}

pub(super) use crate::content::human_size;

/// `object` with `value` moved in at `key`. `json!` copies every value it is given (it
/// serializes a reference to it): for a medium's base64, and for each value holding one, that is a
/// copy of the encoded bytes per level, so the values holding media are built with this instead.
pub(super) fn with(mut object: Value, key: &str, value: impl Into<Value>) -> Value {
    object[key] = value.into();
    object
}

/// The bytes in base64: the one encode each attachment costs per request.
pub(super) fn base64(data: &[u8]) -> String {
    STANDARD.encode(data)
}

/// A `data:` URL of the bytes (what OpenAI's APIs take for an inline image or file).
pub(super) fn data_url(mime: &str, data: &[u8]) -> String {
    let mut url = String::with_capacity(mime.len() + 13 + data.len().div_ceil(3) * 4);
    url.push_str("data:");
    url.push_str(mime);
    url.push_str(";base64,");
    STANDARD.encode_string(data, &mut url);
    url
}

#[cfg(test)]
mod tests {
    use super::{Part, data_url, human_size, parts};
    use crate::content::{ContentBlock, EmbeddedResource, ResourceLink};

    #[test]
    fn sizes_read_as_people_write_them() {
        // The runtime's notes and the CLI's lines spell sizes alike.
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(84 * 1024 + 100), "84 KB");
        assert_eq!(human_size(1_258_291), "1.2 MB");
    }

    #[test]
    fn resources_become_media_or_text() {
        let blocks = [
            ResourceLink::new("file:///a.txt", "a.txt")
                .mime_type("text/plain")
                .into(),
            EmbeddedResource::blob("file:///shot.png", vec![1u8])
                .mime_type("image/png")
                .into(),
            EmbeddedResource::blob("file:///r.pdf", vec![2u8])
                .mime_type("application/pdf")
                .into(),
            EmbeddedResource::text("memo://1", "hello").into(),
            ContentBlock::audio(vec![3u8], "audio/wav"),
        ];
        let parts: Vec<_> = parts(&blocks).collect();
        assert!(
            matches!(&parts[0], Part::Text(t) if t == "Resource `a.txt`: file:///a.txt (text/plain)")
        );
        assert!(matches!(
            &parts[1],
            Part::Image {
                mime: "image/png",
                ..
            }
        ));
        assert!(matches!(
            &parts[2],
            Part::File {
                mime: "application/pdf",
                name: Some("r.pdf"),
                ..
            }
        ));
        assert!(matches!(&parts[3], Part::Text(t) if t.ends_with("hello")));
        assert!(matches!(&parts[4], Part::Audio { .. }));
        assert_eq!(
            data_url("image/png", &[0, 255, 7]),
            "data:image/png;base64,AP8H"
        );
    }
}
