//! What bytes are, from their first bytes (magic numbers), and an image's size from its header:
//! no decoding.

/// The MIME type of bytes whose magic number says what they are: PNG, JPEG, GIF, WebP, BMP,
/// TIFF, ICO, AVIF/HEIC, PDF, WAV, MP3, OGG, FLAC, ZIP; `None` for anything else (text among
/// it: a caller decides what text is).
///
/// ```
/// use pleach_core::content::sniff_mime;
/// assert_eq!(sniff_mime(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
/// assert_eq!(sniff_mime(b"%PDF-1.7\n"), Some("application/pdf"));
/// assert_eq!(sniff_mime(b"hello"), None);
/// ```
pub fn sniff_mime(bytes: &[u8]) -> Option<&'static str> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let riff = |kind: &[u8]| bytes.len() >= 12 && starts(b"RIFF") && &bytes[8..12] == kind;
    Some(if starts(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if starts(b"\xFF\xD8\xFF") {
        "image/jpeg"
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        "image/gif"
    } else if riff(b"WEBP") {
        "image/webp"
    } else if riff(b"WAVE") {
        "audio/wav"
    } else if starts(b"BM") && bytes.len() >= 14 {
        "image/bmp"
    } else if starts(b"II*\0") || starts(b"MM\0*") {
        "image/tiff"
    } else if starts(b"\0\0\x01\0") {
        "image/x-icon"
    } else if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        match &bytes[8..12] {
            b"avif" | b"avis" => "image/avif",
            b"heic" | b"heix" | b"mif1" => "image/heic",
            _ => return None,
        }
    } else if starts(b"%PDF-") {
        "application/pdf"
    } else if starts(b"ID3") || (bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0) {
        "audio/mpeg"
    } else if starts(b"OggS") {
        "audio/ogg"
    } else if starts(b"fLaC") {
        "audio/flac"
    } else if starts(b"PK\x03\x04") {
        "application/zip"
    } else {
        return None;
    })
}

/// An image's width and height in pixels, read from its header: PNG, JPEG, GIF and WebP
/// (lossy, lossless and extended); `None` for anything else or a header cut short.
///
/// ```
/// use pleach_core::content::image_dimensions;
/// let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
/// png.extend_from_slice(&1280u32.to_be_bytes());
/// png.extend_from_slice(&720u32.to_be_bytes());
/// assert_eq!(image_dimensions(&png), Some((1280, 720)));
/// assert_eq!(image_dimensions(b"GIF89a\x0a\x00\x05\x00"), Some((10, 5)));
/// assert_eq!(image_dimensions(b"not an image"), None);
/// ```
pub fn image_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    match sniff_mime(bytes)? {
        "image/png" => {
            // The IHDR chunk comes first: width and height at 16..24, big-endian.
            (bytes.get(12..16)? == b"IHDR").then_some(())?;
            Some((be32(bytes, 16)?, be32(bytes, 20)?))
        }
        "image/gif" => Some((u32::from(le16(bytes, 6)?), u32::from(le16(bytes, 8)?))),
        "image/webp" => webp(bytes),
        "image/jpeg" => jpeg(bytes),
        _ => None,
    }
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn le16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 3)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

fn webp(bytes: &[u8]) -> Option<(u32, u32)> {
    match bytes.get(12..16)? {
        // Lossy: the frame header after the start code 9D 01 2A, 14-bit sizes.
        b"VP8 " => {
            (bytes.get(23..26)? == b"\x9d\x01\x2a").then_some(())?;
            Some((
                u32::from(le16(bytes, 26)? & 0x3FFF),
                u32::from(le16(bytes, 28)? & 0x3FFF),
            ))
        }
        // Lossless: after the signature 0x2F, 14 bits each, stored minus one.
        b"VP8L" => {
            (*bytes.get(20)? == 0x2F).then_some(())?;
            let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        // Extended: canvas size, 24 bits each, stored minus one.
        b"VP8X" => Some((le24(bytes, 24)? + 1, le24(bytes, 27)? + 1)),
        _ => None,
    }
}

fn jpeg(bytes: &[u8]) -> Option<(u32, u32)> {
    // Walk the segments to the first start-of-frame (SOF0..SOF15 but DHT, JPG and DAC).
    let mut at = 2;
    loop {
        while *bytes.get(at)? != 0xFF {
            at += 1;
        }
        while *bytes.get(at)? == 0xFF {
            at += 1;
        }
        let marker = *bytes.get(at)?;
        at += 1;
        if matches!(marker, 0xD0..=0xD9 | 0x01) {
            continue; // no length
        }
        let length = usize::from(be16(bytes, at)?);
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            return Some((
                u32::from(be16(bytes, at + 5)?),
                u32::from(be16(bytes, at + 3)?),
            ));
        }
        at += length;
    }
}

#[cfg(test)]
mod tests {
    use super::{image_dimensions, sniff_mime};

    #[test]
    fn jpeg_size_comes_from_the_first_frame_header() {
        // SOI, an APP0 segment of 16 bytes, then SOF0: precision 8, height 480, width 640.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
        jpeg.extend_from_slice(&[0; 14]);
        jpeg.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0xE0, 0x02, 0x80]);
        assert_eq!(sniff_mime(&jpeg), Some("image/jpeg"));
        assert_eq!(image_dimensions(&jpeg), Some((640, 480)));
        // Cut before the frame header: no size, no panic.
        assert_eq!(image_dimensions(&jpeg[..24]), None);
    }

    #[test]
    fn webp_sizes_in_each_encoding() {
        let riff = |chunk: &[u8], body: &[u8]| {
            let mut bytes = b"RIFF\0\0\0\0WEBP".to_vec();
            bytes.extend_from_slice(chunk);
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(body);
            bytes
        };
        let lossy = riff(
            b"VP8 ",
            &[0, 0, 0, 0x9d, 0x01, 0x2a, 0x20, 0x03, 0x58, 0x02],
        );
        assert_eq!(image_dimensions(&lossy), Some((800, 600)));
        // 99 + 1 wide, 49 + 1 high.
        let bits: u32 = 0x63 | (0x31 << 14);
        let mut body = vec![0x2F];
        body.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(image_dimensions(&riff(b"VP8L", &body)), Some((100, 50)));
        let extended = riff(b"VP8X", &[0, 0, 0, 0, 0xFF, 0x03, 0, 0x1F, 0x01, 0]);
        assert_eq!(image_dimensions(&extended), Some((1024, 288)));
    }

    #[test]
    fn short_or_unknown_bytes_give_nothing() {
        for bytes in [
            &b""[..],
            b"\x89PNG\r\n\x1a\n",
            b"GIF89a\x01",
            b"RIFF\0\0\0\0WEBPVP8 ",
        ] {
            assert_eq!(image_dimensions(bytes), None, "{bytes:?}");
        }
        assert_eq!(sniff_mime(b"{\"json\":true}"), None);
        assert_eq!(sniff_mime(b"RIFF\0\0\0\0WAVEfmt "), Some("audio/wav"));
    }
}
