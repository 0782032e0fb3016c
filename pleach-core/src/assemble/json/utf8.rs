//! UTF-8 split between pieces: the bytes of a character a piece cut off, kept until the next
//! piece completes it.

use std::borrow::Cow;

/// The bytes of a UTF-8 character that a piece cut off, kept for the next piece.
#[derive(Debug, Clone, Default)]
pub(super) struct Utf8Carry {
    bytes: [u8; 4],
    len: usize,
}

impl Utf8Carry {
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole characters of what was carried followed by `piece`; the bytes of a character
    /// `piece` leaves open are carried to the next call. `Err` holds how many bytes (of the
    /// carried ones and `piece`) came before the first invalid one.
    pub(super) fn decode<'a>(&mut self, piece: &'a [u8]) -> Result<Cow<'a, str>, usize> {
        let mut rest = piece;
        let mut head = None;
        if self.len > 0 {
            let width = utf8_width(self.bytes[0]);
            let take = width.saturating_sub(self.len).min(rest.len());
            let (more, after) = rest.split_at(take);
            self.bytes[self.len..self.len + take].copy_from_slice(more);
            self.len += take;
            rest = after;
            match std::str::from_utf8(&self.bytes[..self.len]) {
                Ok(c) => head = Some(c.to_owned()),
                Err(e) if e.error_len().is_none() => return Ok(Cow::Borrowed("")),
                Err(_) => return Err(0),
            }
            self.len = 0;
        }
        let carried = head.as_ref().map_or(0, String::len);
        let text = match std::str::from_utf8(rest) {
            Ok(text) => text,
            Err(e) if e.error_len().is_none() => {
                let (valid, open) = rest.split_at(e.valid_up_to());
                self.bytes[..open.len()].copy_from_slice(open);
                self.len = open.len();
                std::str::from_utf8(valid).map_err(|_| carried)?
            }
            Err(e) => return Err(carried + e.valid_up_to()),
        };
        Ok(match head {
            Some(mut head) => {
                head.push_str(text);
                Cow::Owned(head)
            }
            None => Cow::Borrowed(text),
        })
    }
}

/// How many bytes the UTF-8 character that starts with `lead` has (1 for a byte that starts none).
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}
