//! Who may call: bearer tokens (static, compared in constant time, or JWT access tokens) and the
//! `401` that tells a client where to get one (RFC 6750, RFC 9728).

use axum::http::{HeaderMap, StatusCode, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::jwt::{JwtRejection, JwtVerifier};

/// The configured ways in: a request passes if any of them accepts its bearer token.
#[derive(Debug, Default)]
pub(crate) struct Authenticator {
    /// SHA-256 of each static token: compared digest to digest, so neither a token's bytes nor
    /// its length shows in the time a comparison takes.
    tokens: Vec<[u8; 32]>,
    jwt: Option<JwtVerifier>,
}

/// Why a request was turned away.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A token that is not accepted, and why.
    Invalid(String),
    /// The token cannot be checked now (the authorization server's keys are out of reach).
    Unavailable(String),
}

impl Refusal {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Refusal::Missing | Refusal::Invalid(_) => StatusCode::UNAUTHORIZED,
            Refusal::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The `WWW-Authenticate` challenge (RFC 6750 §3), pointing at the protected-resource
    /// metadata (RFC 9728 §5.1).
    pub(crate) fn challenge(&self, resource_metadata: &str) -> String {
        let metadata = quote(resource_metadata);
        match self {
            Refusal::Missing | Refusal::Unavailable(_) => {
                format!("Bearer resource_metadata=\"{metadata}\"")
            }
            Refusal::Invalid(reason) => format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", \
                 resource_metadata=\"{metadata}\"",
                quote(reason)
            ),
        }
    }

    pub(crate) fn message(&self) -> String {
        match self {
            Refusal::Missing => "this server needs `Authorization: Bearer <token>`".to_owned(),
            Refusal::Invalid(reason) => format!("the bearer token is not accepted: {reason}"),
            Refusal::Unavailable(reason) => format!("tokens cannot be checked now: {reason}"),
        }
    }
}

/// A header parameter value: no quotes, backslashes or control characters.
fn quote(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .map(|c| if matches!(c, '"' | '\\') { '\'' } else { c })
        .collect()
}

impl Authenticator {
    pub(crate) fn new(tokens: &[String], jwt: Option<JwtVerifier>) -> Authenticator {
        Authenticator {
            tokens: tokens.iter().map(|token| digest(token)).collect(),
            jwt,
        }
    }

    /// Whether any way in is configured (else every request passes).
    pub(crate) fn is_enabled(&self) -> bool {
        !self.tokens.is_empty() || self.jwt.is_some()
    }

    /// Checks a request's `Authorization` header.
    pub(crate) async fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if !self.is_enabled() {
            return Ok(());
        }
        let token = bearer(headers)?;
        let offered = digest(token);
        // Every token is compared, whichever matches: the time does not say which one did.
        let matched = self
            .tokens
            .iter()
            .fold(subtle::Choice::from(0), |found, known| {
                found | known.ct_eq(&offered)
            });
        if bool::from(matched) {
            return Ok(());
        }
        match &self.jwt {
            // Boxed: a key fetch is a large future, and every request's check would hold its room.
            Some(jwt) => match Box::pin(jwt.verify(token)).await {
                Ok(_claims) => Ok(()),
                Err(JwtRejection::Invalid(reason)) => Err(Refusal::Invalid(reason)),
                Err(JwtRejection::KeysUnavailable(reason)) => Err(Refusal::Unavailable(reason)),
            },
            None => Err(Refusal::Invalid("unknown token".to_owned())),
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The token of an `Authorization: Bearer <token>` header (the scheme case-insensitive).
fn bearer(headers: &HeaderMap) -> Result<&str, Refusal> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(Refusal::Missing);
    };
    if values.next().is_some() {
        return Err(Refusal::Invalid(
            "more than one `Authorization` header".to_owned(),
        ));
    }
    let value = value
        .to_str()
        .map_err(|_| Refusal::Invalid("the `Authorization` header is not text".to_owned()))?;
    let value = value.trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Refusal::Invalid(format!(
            "the `Authorization` scheme is `{scheme}`; this server takes `Bearer`"
        )));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(Refusal::Invalid("the bearer token is empty".to_owned()));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(authorization: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in authorization {
            headers.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[tokio::test]
    async fn a_listed_token_passes_and_anything_else_is_refused_with_the_reason() {
        let auth = Authenticator::new(&["s3cret".to_owned(), "other".to_owned()], None);
        assert_eq!(auth.check(&headers(&["Bearer s3cret"])).await, Ok(()));
        assert_eq!(auth.check(&headers(&["bearer   other "])).await, Ok(()));
        assert_eq!(auth.check(&headers(&[])).await, Err(Refusal::Missing));
        for (value, reason) in [
            (vec!["Bearer wrong"], "unknown token"),
            (vec!["Bearer s3cre"], "unknown token"),
            (vec!["Basic czNjcmV0"], "scheme is `Basic`"),
            (vec!["Bearer "], "empty"),
            (vec!["Bearer s3cret", "Bearer s3cret"], "more than one"),
        ] {
            match auth.check(&headers(&value)).await {
                Err(Refusal::Invalid(found)) => {
                    assert!(found.contains(reason), "{value:?}: {found}");
                }
                other => panic!("{value:?}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn without_a_way_in_every_request_passes() {
        let auth = Authenticator::new(&[], None);
        assert!(!auth.is_enabled());
        assert_eq!(auth.check(&headers(&[])).await, Ok(()));
    }

    #[test]
    fn the_challenge_points_at_the_metadata_and_cannot_be_broken_by_a_reason() {
        let url = "https://tools.example.com/.well-known/oauth-protected-resource/mcp";
        assert_eq!(
            Refusal::Missing.challenge(url),
            format!("Bearer resource_metadata=\"{url}\"")
        );
        let invalid = Refusal::Invalid("bad \"quote\"\r\n".to_owned()).challenge(url);
        assert_eq!(
            invalid,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"bad 'quote'\", \
                 resource_metadata=\"{url}\""
            )
        );
    }
}
