//! The `Origin` check: a browser page from a site the server does not name cannot call it (MCP's
//! transport security: DNS rebinding and cross-site requests). Requests without `Origin` (every
//! non-browser client) pass. A server on a loopback address also answers pages of the loopback
//! origins (`http://127.0.0.1`, `http://localhost`, `http://[::1]`, any port): only a program on
//! the same machine can be one, and a local browser client needs them.

use axum::http::HeaderValue;

/// One allowed origin: scheme, host, and a port (`None`: any port, written `:*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedOrigin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// The browser origins a server answers, as `--allow-origin` names them.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowedOrigins {
    origins: Vec<AllowedOrigin>,
    /// `null`: the opaque origin of a sandboxed page or a `file:` URL.
    null: bool,
}

impl AllowedOrigins {
    /// Reads an allow list entry: `https://app.example.com`, `http://localhost:3000`,
    /// `http://localhost:*` (any port) or `null`.
    pub(crate) fn add(&mut self, entry: &str) -> Result<(), String> {
        if entry.trim() == "null" {
            self.null = true;
            return Ok(());
        }
        let origin = parse(entry.trim(), true).ok_or_else(|| {
            format!(
                "`{entry}` is not an origin: write `scheme://host` with an optional `:port` \
                 (`:*` for any port), e.g. `https://app.example.com` or `http://localhost:*`"
            )
        })?;
        self.origins.push(origin);
        Ok(())
    }

    /// Allows pages of the loopback origins, any port: what a server listening on loopback
    /// answers without being told.
    pub(crate) fn allow_loopback(&mut self) {
        for host in ["127.0.0.1", "localhost", "[::1]"] {
            let loopback = AllowedOrigin {
                scheme: "http".to_owned(),
                host: host.to_owned(),
                port: None,
            };
            if !self.origins.contains(&loopback) {
                self.origins.push(loopback);
            }
        }
    }

    /// Whether no origin is allowed (no browser page may call).
    pub(crate) fn is_empty(&self) -> bool {
        self.origins.is_empty() && !self.null
    }

    /// Whether a request carrying this `Origin` header may go on.
    pub(crate) fn allows(&self, header: &HeaderValue) -> bool {
        let Ok(value) = header.to_str() else {
            return false;
        };
        let value = value.trim();
        if value == "null" {
            return self.null;
        }
        let Some(origin) = parse(value, false) else {
            return false;
        };
        self.origins.iter().any(|allowed| {
            allowed.scheme == origin.scheme
                && allowed.host == origin.host
                && allowed.port.is_none_or(|port| Some(port) == origin.port)
        })
    }
}

/// `scheme://host[:port]`, lowercased, the scheme's default port filled in. With `wildcard`, a
/// `:*` port reads as any port; a path, query or user info is no origin.
fn parse(text: &str, wildcard: bool) -> Option<AllowedOrigin> {
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']')?;
        (format!("[{host}]"), after.strip_prefix(':'))
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (rest.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return None;
    }
    let port = match port {
        Some("*") if wildcard => None,
        Some(port) => Some(port.parse::<u16>().ok()?),
        None => Some(match scheme.as_str() {
            "https" | "wss" => 443,
            "http" | "ws" => 80,
            _ => return None,
        }),
    };
    Some(AllowedOrigin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(entries: &[&str]) -> AllowedOrigins {
        let mut origins = AllowedOrigins::default();
        for entry in entries {
            origins.add(entry).unwrap();
        }
        origins
    }

    fn header(value: &str) -> HeaderValue {
        HeaderValue::from_str(value).unwrap()
    }

    #[test]
    fn an_origin_matches_by_scheme_host_and_port() {
        let origins = allowed(&["https://app.example.com", "http://localhost:3000"]);
        assert!(origins.allows(&header("https://app.example.com")));
        assert!(origins.allows(&header("https://APP.example.com:443")));
        assert!(origins.allows(&header("http://localhost:3000")));
        assert!(!origins.allows(&header("http://app.example.com")));
        assert!(!origins.allows(&header("https://app.example.com:8443")));
        assert!(!origins.allows(&header("http://localhost:3001")));
        assert!(!origins.allows(&header("https://evil.example")));
        assert!(!origins.allows(&header("null")));
        assert!(!origins.allows(&header("not an origin")));
    }

    #[test]
    fn a_wildcard_port_matches_any_port_and_null_only_when_named() {
        let origins = allowed(&["http://localhost:*", "null", "http://[::1]:8080"]);
        assert!(origins.allows(&header("http://localhost:5173")));
        assert!(origins.allows(&header("http://localhost")));
        assert!(origins.allows(&header("null")));
        assert!(origins.allows(&header("http://[::1]:8080")));
        assert!(!origins.allows(&header("http://[::1]:8081")));
        assert!(!origins.allows(&header("https://localhost:5173")));
    }

    #[test]
    fn loopback_origins_match_any_port_and_nothing_else() {
        let mut origins = AllowedOrigins::default();
        origins.allow_loopback();
        for origin in [
            "http://127.0.0.1:8080",
            "http://localhost:5173",
            "http://LOCALHOST",
            "http://[::1]:3000",
        ] {
            assert!(origins.allows(&header(origin)), "{origin}");
        }
        for origin in [
            "https://localhost:5173",
            "http://localhost.example.com",
            "http://127.0.0.2:8080",
            "http://[::2]:8080",
            "null",
        ] {
            assert!(!origins.allows(&header(origin)), "{origin}");
        }
    }

    #[test]
    fn an_empty_list_refuses_every_browser_origin() {
        let origins = AllowedOrigins::default();
        assert!(!origins.allows(&header("http://localhost:3000")));
    }

    #[test]
    fn entries_that_are_not_origins_are_refused_with_the_form_expected() {
        let mut origins = AllowedOrigins::default();
        for entry in [
            "app.example.com",
            "https://app.example.com/path",
            "https://",
            "https://host:99999",
            "ftp://host",
        ] {
            let error = origins.add(entry).unwrap_err();
            assert!(error.contains("scheme://host"), "{entry}: {error}");
        }
    }
}
