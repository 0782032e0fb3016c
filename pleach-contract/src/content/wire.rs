//! Blocks as JSON, in MCP's shapes (`{"type":"image","data":"<base64>","mimeType":…}`), plus
//! `file` (`data`, `mimeType`, `name`): what durable history and saved conversations hold. For
//! `#[serde(with = "pleach_core::content::wire")]` on a `Vec<ContentBlock>`. Not API.
//!
//! The blocks themselves are not `Serialize`: a tool returning a block inside another type
//! (a tuple, a map) would send the model base64 text, so that is a compile error instead.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    Annotations, Block, Bytes, ContentBlock, EmbeddedResource, Media, ResourceContents,
    ResourceLink, Role,
};

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<WireAnnotations<'a>>,
    },
    Image(WireMedia<'a>),
    Audio(WireMedia<'a>),
    File(WireMedia<'a>),
    ResourceLink {
        uri: Cow<'a, str>,
        name: Cow<'a, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<Cow<'a, str>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<Cow<'a, str>>,
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<Cow<'a, str>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<WireAnnotations<'a>>,
    },
    Resource {
        resource: WireResource<'a>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<WireAnnotations<'a>>,
    },
}

#[derive(Serialize, Deserialize)]
struct WireMedia<'a> {
    data: Cow<'a, str>,
    #[serde(rename = "mimeType")]
    mime_type: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<WireAnnotations<'a>>,
}

#[derive(Serialize, Deserialize)]
struct WireResource<'a> {
    uri: Cow<'a, str>,
    #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
    mime_type: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blob: Option<Cow<'a, str>>,
}

#[derive(Serialize, Deserialize)]
struct WireAnnotations<'a> {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    audience: Vec<WireRole>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    priority: Option<f32>,
    #[serde(
        default,
        rename = "lastModified",
        skip_serializing_if = "Option::is_none"
    )]
    last_modified: Option<Cow<'a, str>>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum WireRole {
    User,
    Assistant,
}

fn annotations(a: Option<&Annotations>) -> Option<WireAnnotations<'_>> {
    a.map(|a| WireAnnotations {
        audience: a
            .audience
            .iter()
            .map(|role| match role {
                Role::User => WireRole::User,
                Role::Assistant => WireRole::Assistant,
            })
            .collect(),
        priority: a.priority,
        last_modified: a.last_modified.as_deref().map(Cow::Borrowed),
    })
}

fn media(media: &Media, a: Option<&Annotations>) -> WireMedia<'static> {
    WireMedia {
        data: Cow::Owned(media.base64()),
        mime_type: Cow::Owned(media.mime_type.clone()),
        name: media.name.clone().map(Cow::Owned),
        annotations: annotations(a).map(|w| WireAnnotations {
            audience: w.audience,
            priority: w.priority,
            last_modified: w.last_modified.map(|t| Cow::Owned(t.into_owned())),
        }),
    }
}

fn to_wire(block: &ContentBlock) -> Wire<'_> {
    let a = block.annotations.as_ref();
    match &block.block {
        Block::Text(text) => Wire::Text {
            text: Cow::Borrowed(text),
            annotations: annotations(a),
        },
        Block::Image(m) => Wire::Image(media(m, a)),
        Block::Audio(m) => Wire::Audio(media(m, a)),
        Block::File(m) => Wire::File(media(m, a)),
        Block::ResourceLink(link) => Wire::ResourceLink {
            uri: Cow::Borrowed(&link.uri),
            name: Cow::Borrowed(&link.name),
            title: link.title.as_deref().map(Cow::Borrowed),
            description: link.description.as_deref().map(Cow::Borrowed),
            mime_type: link.mime_type.as_deref().map(Cow::Borrowed),
            size: link.size,
            annotations: annotations(a),
        },
        Block::Resource(resource) => Wire::Resource {
            resource: WireResource {
                uri: Cow::Borrowed(&resource.uri),
                mime_type: resource.mime_type.as_deref().map(Cow::Borrowed),
                text: match &resource.contents {
                    ResourceContents::Text(text) => Some(Cow::Borrowed(text)),
                    ResourceContents::Blob(_) => None,
                },
                blob: match &resource.contents {
                    ResourceContents::Blob(bytes) => Some(Cow::Owned(STANDARD.encode(bytes))),
                    ResourceContents::Text(_) => None,
                },
            },
            annotations: annotations(a),
        },
    }
}

fn from_annotations(a: Option<WireAnnotations<'_>>) -> Option<Annotations> {
    a.map(|a| Annotations {
        audience: a
            .audience
            .into_iter()
            .map(|role| match role {
                WireRole::User => Role::User,
                WireRole::Assistant => Role::Assistant,
            })
            .collect(),
        priority: a.priority,
        last_modified: a.last_modified.map(Cow::into_owned),
    })
}

fn decode(data: &str) -> Result<Bytes, String> {
    STANDARD
        .decode(data)
        .map(Bytes::from)
        .map_err(|e| format!("a block's data is not base64: {e}"))
}

fn from_wire(wire: Wire<'_>) -> Result<ContentBlock, String> {
    let with_media = |m: WireMedia<'_>, kind: fn(Media) -> Block| -> Result<ContentBlock, String> {
        let data = decode(&m.data)?;
        let mut media = Media::new(data, m.mime_type.into_owned());
        media.name = m.name.map(Cow::into_owned);
        Ok(ContentBlock {
            block: kind(media),
            annotations: from_annotations(m.annotations),
        })
    };
    Ok(match wire {
        Wire::Text { text, annotations } => ContentBlock {
            block: Block::Text(text.into_owned()),
            annotations: from_annotations(annotations),
        },
        Wire::Image(m) => with_media(m, Block::Image)?,
        Wire::Audio(m) => with_media(m, Block::Audio)?,
        Wire::File(m) => with_media(m, Block::File)?,
        Wire::ResourceLink {
            uri,
            name,
            title,
            description,
            mime_type,
            size,
            annotations,
        } => ContentBlock {
            block: Block::ResourceLink(ResourceLink {
                uri: uri.into_owned(),
                name: name.into_owned(),
                title: title.map(Cow::into_owned),
                description: description.map(Cow::into_owned),
                mime_type: mime_type.map(Cow::into_owned),
                size,
            }),
            annotations: from_annotations(annotations),
        },
        Wire::Resource {
            resource,
            annotations,
        } => {
            let contents = match (resource.text, resource.blob) {
                (Some(text), None) => ResourceContents::Text(text.into_owned()),
                (None, Some(blob)) => ResourceContents::Blob(decode(&blob)?),
                _ => return Err("a resource holds either `text` or `blob`".to_owned()),
            };
            ContentBlock {
                block: Block::Resource(EmbeddedResource {
                    uri: resource.uri.into_owned(),
                    mime_type: resource.mime_type.map(Cow::into_owned),
                    contents,
                }),
                annotations: from_annotations(annotations),
            }
        }
    })
}

/// Writes blocks as a JSON array.
pub fn serialize<S: Serializer>(blocks: &[ContentBlock], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(blocks.iter().map(to_wire))
}

/// Reads blocks from a JSON array.
pub fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ContentBlock>, D::Error> {
    Vec::<Wire<'de>>::deserialize(deserializer)?
        .into_iter()
        .map(|wire| from_wire(wire).map_err(serde::de::Error::custom))
        .collect()
}

/// One block as JSON.
pub fn to_value(block: &ContentBlock) -> serde_json::Value {
    serde_json::to_value(to_wire(block)).unwrap_or_default()
}

/// One block from JSON.
pub fn from_value(value: &serde_json::Value) -> Result<ContentBlock, String> {
    let wire = Wire::deserialize(value).map_err(|e| e.to_string())?;
    from_wire(wire)
}

#[cfg(test)]
mod tests {
    use super::{from_value, to_value};
    use crate::content::{Annotations, ContentBlock, EmbeddedResource, ResourceLink, Role};

    #[test]
    fn every_kind_reads_back_as_written() {
        let blocks = [
            ContentBlock::text("hi").with_annotations(Annotations::default().audience(Role::User)),
            ContentBlock::image(vec![0u8, 255, 7], "image/png"),
            ContentBlock::audio(vec![1u8], "audio/wav"),
            ContentBlock::file(vec![2u8], "application/pdf"),
            ResourceLink::new("file:///a", "a").size(3).into(),
            EmbeddedResource::blob("file:///b", vec![9u8])
                .mime_type("x/y")
                .into(),
            EmbeddedResource::text("file:///c", "c").into(),
        ];
        for block in blocks {
            let json = to_value(&block);
            assert_eq!(from_value(&json).unwrap(), block, "{json}");
        }
        let image = to_value(&ContentBlock::image(vec![0u8, 255, 7], "image/png"));
        assert_eq!(
            image,
            serde_json::json!({ "type": "image", "data": "AP8H", "mimeType": "image/png" })
        );
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        let bad = serde_json::json!({ "type": "image", "data": "***", "mimeType": "image/png" });
        assert!(from_value(&bad).unwrap_err().contains("base64"));
        let both = serde_json::json!({ "type": "resource", "resource": { "uri": "u", "text": "a", "blob": "AA==" } });
        assert!(from_value(&both).is_err());
    }
}
