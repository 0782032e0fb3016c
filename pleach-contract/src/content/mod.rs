//! What a tool returns besides (or instead of) JSON: text, images, audio, files, links to
//! resources and embedded resources, one [`ContentBlock`] each, in the shapes of MCP's content
//! blocks (`docs/providers.md`, "Content blocks", has how each provider format carries them).
//!
//! A block's bytes are a [`Bytes`]: held once and shared, so a block cloned into an event, the
//! conversation and a provider request is never copied.
//!
//! ```
//! use pleach_core::content::{Block, ContentBlock};
//!
//! let png = ContentBlock::image(&b"\x89PNG\r\n\x1a\n"[..], "image/png");
//! let Block::Image(media) = &png.block else { unreachable!() };
//! assert_eq!(media.mime_type, "image/png");
//! assert_eq!(media.data.len(), 8);
//! ```

mod output;
mod sniff;
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams"): the JSON form of blocks
pub mod wire;

pub use bytes::Bytes;
pub use output::ToolOutput;
pub use sniff::{image_dimensions, sniff_mime};

/// One piece of a tool's result: a [`Block`] and, as MCP has them, its [`Annotations`].
///
/// ```
/// use pleach_core::content::{Annotations, ContentBlock, Role};
///
/// let note = ContentBlock::text("for the user only")
///     .with_annotations(Annotations::default().audience(Role::User));
/// assert_eq!(note.annotations.unwrap().audience, vec![Role::User]);
/// ```
#[doc(alias = "Content")]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ContentBlock {
    /// What the block holds.
    pub block: Block,
    /// Who it is for and how much it matters, if the tool says.
    pub annotations: Option<Annotations>,
}

/// What a [`ContentBlock`] holds: MCP's content block kinds, and files.
///
/// ```
/// use pleach_core::content::{Block, ContentBlock};
///
/// let block = ContentBlock::text("42");
/// assert!(matches!(block.block, Block::Text(ref text) if text == "42"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Block {
    /// Text for the model.
    Text(String),
    /// An image (`image/png`, `image/jpeg`, `image/gif`, `image/webp`, …).
    Image(Media),
    /// A recording (`audio/wav`, `audio/mpeg`, …).
    Audio(Media),
    /// A document or any other file (`application/pdf`, …). MCP has no file block: it is sent
    /// there as an embedded resource with a `blob`.
    #[doc(alias = "document")]
    File(Media),
    /// A link to a resource the client can read (MCP's `resource_link`).
    #[doc(alias = "resource_link")]
    ResourceLink(ResourceLink),
    /// A resource's contents, embedded (MCP's `resource`).
    #[doc(alias = "EmbeddedResource")]
    Resource(EmbeddedResource),
}

/// Bytes and their MIME type: an image, a recording or a file.
///
/// ```
/// use pleach_core::content::Media;
///
/// let pdf = Media::new(&b"%PDF-1.7"[..], "application/pdf").name("report.pdf");
/// assert_eq!(pdf.name.as_deref(), Some("report.pdf"));
/// assert_eq!(pdf.data.len(), 8);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Media {
    /// The bytes, shared (cloning a `Media` copies no byte).
    pub data: Bytes,
    /// The MIME type, as the tool states it (`image/png`).
    #[doc(alias = "mimeType")]
    pub mime_type: String,
    /// A file name, for the formats that show one (OpenAI's `input_file`, Anthropic's document
    /// title).
    pub name: Option<String>,
}

impl Media {
    /// Bytes of a MIME type, without a name.
    ///
    /// ```
    /// let media = pleach_core::content::Media::new(vec![1, 2, 3], "audio/wav");
    /// assert_eq!(media.mime_type, "audio/wav");
    /// ```
    pub fn new(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Media {
            data: data.into(),
            mime_type: mime_type.into(),
            name: None,
        }
    }

    /// Sets the file name (default: none).
    ///
    /// ```
    /// let media = pleach_core::content::Media::new(vec![], "text/csv").name("rows.csv");
    /// assert_eq!(media.name.as_deref(), Some("rows.csv"));
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The bytes in standard base64 with padding, as MCP's `data` and the providers' inline
    /// media carry them: one encode, into a string of exactly the encoded length.
    ///
    /// ```
    /// let media = pleach_core::content::Media::new(&b"\x89PNG"[..], "image/png");
    /// assert_eq!(media.base64(), "iVBORw==");
    /// ```
    #[must_use]
    pub fn base64(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&self.data)
    }
}

/// A link to a resource (MCP's `resource_link`): its URI, name, and what the client may want to
/// know before reading it.
///
/// ```
/// use pleach_core::content::ResourceLink;
///
/// let link = ResourceLink::new("file:///logs/today.txt", "today.txt").mime_type("text/plain");
/// assert_eq!(link.mime_type.as_deref(), Some("text/plain"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people, if any.
    pub title: Option<String>,
    /// What it is, if said.
    pub description: Option<String>,
    /// Its MIME type, if known.
    #[doc(alias = "mimeType")]
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
}

impl ResourceLink {
    /// A link from its URI and name.
    ///
    /// ```
    /// let link = pleach_core::content::ResourceLink::new("https://example.com/a", "a");
    /// assert_eq!(link.uri, "https://example.com/a");
    /// ```
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// Sets the title (default: none).
    ///
    /// ```
    /// let link = pleach_core::content::ResourceLink::new("u:a", "a").title("A");
    /// assert_eq!(link.title.as_deref(), Some("A"));
    /// ```
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description (default: none).
    ///
    /// ```
    /// let link = pleach_core::content::ResourceLink::new("u:a", "a").description("the first");
    /// assert_eq!(link.description.as_deref(), Some("the first"));
    /// ```
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type (default: none).
    ///
    /// ```
    /// let link = pleach_core::content::ResourceLink::new("u:a", "a").mime_type("image/png");
    /// assert_eq!(link.mime_type.as_deref(), Some("image/png"));
    /// ```
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes (default: none).
    ///
    /// ```
    /// let link = pleach_core::content::ResourceLink::new("u:a", "a").size(1024);
    /// assert_eq!(link.size, Some(1024));
    /// ```
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }
}

/// A resource's contents embedded in the result (MCP's `resource`).
///
/// ```
/// use pleach_core::content::{EmbeddedResource, ResourceContents};
///
/// let readme = EmbeddedResource::text("file:///README.md", "# pleach").mime_type("text/markdown");
/// assert!(matches!(readme.contents, ResourceContents::Text(ref t) if t == "# pleach"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type, if known.
    #[doc(alias = "mimeType")]
    pub mime_type: Option<String>,
    /// Its text or bytes.
    pub contents: ResourceContents,
}

impl EmbeddedResource {
    /// A text resource.
    ///
    /// ```
    /// let r = pleach_core::content::EmbeddedResource::text("memo://1", "hello");
    /// assert_eq!(r.uri, "memo://1");
    /// ```
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        EmbeddedResource {
            uri: uri.into(),
            mime_type: None,
            contents: ResourceContents::Text(text.into()),
        }
    }

    /// A binary resource.
    ///
    /// ```
    /// let r = pleach_core::content::EmbeddedResource::blob("file:///a.bin", vec![0u8, 1]);
    /// assert!(matches!(r.contents, pleach_core::content::ResourceContents::Blob(ref b) if b.len() == 2));
    /// ```
    pub fn blob(uri: impl Into<String>, data: impl Into<Bytes>) -> Self {
        EmbeddedResource {
            uri: uri.into(),
            mime_type: None,
            contents: ResourceContents::Blob(data.into()),
        }
    }

    /// Sets the MIME type (default: none).
    ///
    /// ```
    /// let r = pleach_core::content::EmbeddedResource::text("memo://1", "hi").mime_type("text/plain");
    /// assert_eq!(r.mime_type.as_deref(), Some("text/plain"));
    /// ```
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// What an embedded resource holds.
///
/// ```
/// use pleach_core::content::ResourceContents;
/// let contents = ResourceContents::Text("hi".into());
/// assert!(matches!(contents, ResourceContents::Text(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text (MCP's `text`).
    Text(String),
    /// Bytes (MCP's `blob`, base64 on the wire).
    Blob(Bytes),
}

/// Who a block is for and how much it matters: MCP's annotations.
///
/// ```
/// use pleach_core::content::{Annotations, Role};
///
/// let a = Annotations::default().audience(Role::Assistant).priority(0.9);
/// assert_eq!(a.audience, vec![Role::Assistant]);
/// assert_eq!(a.priority, Some(0.9));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Annotations {
    /// Who the block is for (empty: not said).
    pub audience: Vec<Role>,
    /// How much it matters, from 0 (least) to 1 (most), if said.
    pub priority: Option<f32>,
    /// When the content last changed (ISO 8601), if said.
    #[doc(alias = "lastModified")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// Adds a reader of the block.
    ///
    /// ```
    /// use pleach_core::content::{Annotations, Role};
    /// let a = Annotations::default().audience(Role::User).audience(Role::Assistant);
    /// assert_eq!(a.audience.len(), 2);
    /// ```
    #[must_use]
    pub fn audience(mut self, role: Role) -> Self {
        self.audience.push(role);
        self
    }

    /// Sets the priority, from 0 to 1 (default: none).
    ///
    /// ```
    /// let a = pleach_core::content::Annotations::default().priority(0.5);
    /// assert_eq!(a.priority, Some(0.5));
    /// ```
    #[must_use]
    pub fn priority(mut self, priority: f32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Sets when the content last changed, ISO 8601 (default: none).
    ///
    /// ```
    /// let a = pleach_core::content::Annotations::default().last_modified("2026-01-01T00:00:00Z");
    /// assert!(a.last_modified.is_some());
    /// ```
    #[must_use]
    pub fn last_modified(mut self, at: impl Into<String>) -> Self {
        self.last_modified = Some(at.into());
        self
    }
}

/// A reader of a block, as MCP names them.
///
/// ```
/// assert_ne!(pleach_core::content::Role::User, pleach_core::content::Role::Assistant);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// The person.
    User,
    /// The model.
    Assistant,
}

impl ContentBlock {
    /// A text block.
    ///
    /// ```
    /// let block = pleach_core::content::ContentBlock::text("done");
    /// assert_eq!(block.as_text(), Some("done"));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text(text.into()).into()
    }

    /// An image block.
    ///
    /// ```
    /// let block = pleach_core::content::ContentBlock::image(vec![0u8; 4], "image/png");
    /// assert_eq!(block.media().unwrap().data.len(), 4);
    /// ```
    pub fn image(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Block::Image(Media::new(data, mime_type)).into()
    }

    /// An audio block.
    ///
    /// ```
    /// let block = pleach_core::content::ContentBlock::audio(vec![0u8; 4], "audio/wav");
    /// assert_eq!(block.media().unwrap().mime_type, "audio/wav");
    /// ```
    pub fn audio(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Block::Audio(Media::new(data, mime_type)).into()
    }

    /// A file block (a PDF, a spreadsheet, …).
    ///
    /// ```
    /// let block = pleach_core::content::ContentBlock::file(&b"%PDF-"[..], "application/pdf");
    /// assert_eq!(block.kind(), "file");
    /// ```
    #[doc(alias = "document")]
    pub fn file(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Block::File(Media::new(data, mime_type)).into()
    }

    /// A block with its annotations set.
    ///
    /// ```
    /// use pleach_core::content::{Annotations, ContentBlock};
    /// let block = ContentBlock::text("x").with_annotations(Annotations::default().priority(1.0));
    /// assert_eq!(block.annotations.unwrap().priority, Some(1.0));
    /// ```
    #[must_use]
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// The block's kind as the events and MCP spell it: `text`, `image`, `audio`, `file`,
    /// `resource_link`, `resource`.
    ///
    /// ```
    /// assert_eq!(pleach_core::content::ContentBlock::image(vec![], "image/png").kind(), "image");
    /// ```
    #[doc(alias = "type")]
    pub fn kind(&self) -> &'static str {
        match &self.block {
            Block::Text(_) => "text",
            Block::Image(_) => "image",
            Block::Audio(_) => "audio",
            Block::File(_) => "file",
            Block::ResourceLink(_) => "resource_link",
            Block::Resource(_) => "resource",
        }
    }

    /// The text of a text block.
    ///
    /// ```
    /// use pleach_core::content::ContentBlock;
    /// assert_eq!(ContentBlock::text("hi").as_text(), Some("hi"));
    /// assert_eq!(ContentBlock::image(vec![], "image/png").as_text(), None);
    /// ```
    pub fn as_text(&self) -> Option<&str> {
        match &self.block {
            Block::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The bytes of an image, audio or file block.
    ///
    /// ```
    /// use pleach_core::content::ContentBlock;
    /// assert!(ContentBlock::audio(vec![1], "audio/wav").media().is_some());
    /// assert!(ContentBlock::text("hi").media().is_none());
    /// ```
    pub fn media(&self) -> Option<&Media> {
        match &self.block {
            Block::Image(media) | Block::Audio(media) | Block::File(media) => Some(media),
            _ => None,
        }
    }

    /// The MIME type the block states (text blocks: `text/plain`; a link or resource: its own,
    /// if it has one).
    ///
    /// ```
    /// use pleach_core::content::ContentBlock;
    /// assert_eq!(ContentBlock::image(vec![], "image/gif").mime_type(), Some("image/gif"));
    /// assert_eq!(ContentBlock::text("x").mime_type(), Some("text/plain"));
    /// ```
    pub fn mime_type(&self) -> Option<&str> {
        match &self.block {
            Block::Text(_) => Some("text/plain"),
            Block::Image(media) | Block::Audio(media) | Block::File(media) => {
                Some(&media.mime_type)
            }
            Block::ResourceLink(link) => link.mime_type.as_deref(),
            Block::Resource(resource) => resource.mime_type.as_deref(),
        }
    }

    /// How many bytes the block carries: a text's UTF-8 length, a medium's or an embedded
    /// resource's bytes, 0 for a link (what the result size cap counts).
    ///
    /// ```
    /// use pleach_core::content::ContentBlock;
    /// assert_eq!(ContentBlock::image(vec![0u8; 10], "image/png").len(), 10);
    /// assert_eq!(ContentBlock::text("héllo").len(), 6);
    /// ```
    #[allow(clippy::len_without_is_empty)] // a block is never "empty" in a useful sense
    pub fn len(&self) -> usize {
        match &self.block {
            Block::Text(text) => text.len(),
            Block::Image(media) | Block::Audio(media) | Block::File(media) => media.data.len(),
            Block::ResourceLink(_) => 0,
            Block::Resource(resource) => match &resource.contents {
                ResourceContents::Text(text) => text.len(),
                ResourceContents::Blob(bytes) => bytes.len(),
            },
        }
    }
}

impl ContentBlock {
    /// One line saying what the block is, for a person: its MIME type, an image's size in
    /// pixels (read from its header), and its bytes (`image/png 1280×720 84 KB`); a link's URI.
    ///
    /// ```
    /// use pleach_core::content::{ContentBlock, ResourceLink};
    ///
    /// let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    /// png.extend_from_slice(&1280u32.to_be_bytes());
    /// png.extend_from_slice(&720u32.to_be_bytes());
    /// png.resize(84 * 1024, 0);
    /// assert_eq!(ContentBlock::image(png, "image/png").summary(), "image/png 1280×720 84 KB");
    /// assert_eq!(ContentBlock::text("hello").summary(), "text 5 B");
    /// assert_eq!(ContentBlock::from(ResourceLink::new("file:///a.txt", "a.txt")).summary(), "resource_link file:///a.txt");
    /// ```
    pub fn summary(&self) -> String {
        let size = human_size(self.len());
        match &self.block {
            Block::Text(_) => format!("text {size}"),
            Block::Image(media) => match image_dimensions(&media.data) {
                Some((width, height)) => format!("{} {width}×{height} {size}", media.mime_type),
                None => format!("{} {size}", media.mime_type),
            },
            Block::Audio(media) | Block::File(media) => match &media.name {
                Some(name) => format!("{} {name} {size}", media.mime_type),
                None => format!("{} {size}", media.mime_type),
            },
            Block::ResourceLink(link) => format!("resource_link {}", link.uri),
            Block::Resource(resource) => match &resource.mime_type {
                Some(mime) => format!("resource {} {mime} {size}", resource.uri),
                None => format!("resource {} {size}", resource.uri),
            },
        }
    }
}

/// Bytes as a person reads them: `512 B`, `84 KB`, `1.2 MB` (powers of 1024). Not API: the
/// runtime's notes and the CLI share it.
#[doc(hidden)]
pub fn human_size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)] // a size shown to a person
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.0} KB", b / 1024.0)
    } else {
        format!("{:.1} MB", b / (1024.0 * 1024.0))
    }
}

impl From<Block> for ContentBlock {
    fn from(block: Block) -> Self {
        ContentBlock {
            block,
            annotations: None,
        }
    }
}

impl From<ResourceLink> for ContentBlock {
    fn from(link: ResourceLink) -> Self {
        Block::ResourceLink(link).into()
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(resource: EmbeddedResource) -> Self {
        Block::Resource(resource).into()
    }
}
