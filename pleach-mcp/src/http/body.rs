//! A request body read whole, up to a limit.
//!
//! What `axum::body::to_bytes` does, less its cost for the usual request: a body that comes in
//! one piece (a client's JSON-RPC message nearly always does) is that piece, not a copy of it
//! gathered through a queue of pieces made for the occasion.

use std::pin::Pin;

use axum::body::{Body, Bytes};
use http_body::Body as _;

/// `body` whole, or `None` when it is over `limit` bytes or was cut off.
pub(super) async fn read_whole(mut body: Body, limit: usize) -> Option<Bytes> {
    // The first piece as it came; the pieces copied together once a second one comes.
    let mut first: Option<Bytes> = None;
    let mut joined = Vec::new();
    let mut length = 0_usize;
    while let Some(frame) =
        std::future::poll_fn(|context| Pin::new(&mut body).poll_frame(context)).await
    {
        // Trailers are not the body.
        let Ok(data) = frame.ok()?.into_data() else {
            continue;
        };
        length = length.checked_add(data.len())?;
        if length > limit {
            return None;
        }
        if first.is_none() && joined.is_empty() {
            first = Some(data);
            continue;
        }
        if let Some(first) = first.take() {
            joined.reserve(length);
            joined.extend_from_slice(&first);
        }
        joined.extend_from_slice(&data);
    }
    Some(first.unwrap_or_else(|| Bytes::from(joined)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    fn pieces(pieces: &[&'static str]) -> Body {
        let pieces = pieces.iter().map(|piece| Ok::<_, std::io::Error>(*piece));
        Body::from_stream(stream::iter(pieces.collect::<Vec<_>>()))
    }

    #[tokio::test]
    async fn a_body_is_read_whole_in_one_piece_or_many() {
        assert_eq!(read_whole(Body::from("abc"), 3).await.unwrap(), "abc");
        assert_eq!(read_whole(Body::empty(), 0).await.unwrap(), "");
        assert_eq!(
            read_whole(pieces(&["ab", "", "cd", "e"]), 5).await.unwrap(),
            "abcde"
        );
    }

    #[tokio::test]
    async fn a_body_over_the_limit_or_cut_off_is_none() {
        assert!(read_whole(Body::from("abcd"), 3).await.is_none());
        assert!(read_whole(pieces(&["ab", "cd"]), 3).await.is_none());
        let cut = stream::iter([Ok("ab"), Err(std::io::Error::other("connection reset"))]);
        assert!(read_whole(Body::from_stream(cut), 10).await.is_none());
    }
}
