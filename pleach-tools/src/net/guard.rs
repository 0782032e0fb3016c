//! The SSRF guard's checks, made before any connection: a URL parsed and checked (scheme,
//! credentials, port, an IP literal's range, `localhost` names), then a name's resolved addresses.
//! The blocked ranges are `ranges.rs` and the host's exceptions `policy.rs`; the module docs of
//! [`net`](super) list the rules and their reasons.

use std::net::{IpAddr, SocketAddr};

use pleach_core::{ErrorCode, ToolError};
use url::{Host, Url};

use super::policy::{NetPolicy, list_ports};
use super::ranges::BlockedRange;

/// A URL the guard accepted, and the addresses it checked: the only ones to connect to.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// The host name to pin to `addrs`, or `None` for an IP literal (nothing to resolve).
    pub(crate) name: Option<String>,
    pub(crate) addrs: Vec<SocketAddr>,
}

/// The longest URL accepted, in bytes.
pub(crate) const MAX_URL_BYTES: usize = 8 * 1024;

pub(crate) fn refused(message: String) -> ToolError {
    ToolError::new(ErrorCode::InputInvalid, message)
}

/// `raw` parsed as an absolute URL by the URL standard's rules, which also normalize every
/// spelling of an IP literal (`2130706433`, `0x7f.1`, `017700000001` and `127.1` all become
/// `127.0.0.1`) before the guard looks at the host.
pub(crate) fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(refused(
            "`url` is empty; pass an absolute URL such as `https://example.com/page`".to_owned(),
        ));
    }
    if raw.len() > MAX_URL_BYTES {
        return Err(refused(format!(
            "`url` is {} bytes long, over the limit of {MAX_URL_BYTES}",
            raw.len()
        )));
    }
    Url::parse(raw).map_err(|err| {
        refused(format!(
            "`{}` is not a valid absolute URL ({err}); pass one such as `https://example.com/page`",
            shorten(raw)
        ))
    })
}

/// The checks that need no network: scheme, credentials, port, and the host if it is an IP
/// literal or a `localhost` name. What is left to resolve is returned as the name.
pub(crate) fn check_offline(policy: &NetPolicy, url: &Url) -> Result<Target, ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refused(format!(
            "the scheme `{}:` is not allowed; only http and https URLs can be fetched",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused(
            "the URL carries a user name or password (`user:password@host`), which is refused; \
             remove it (credentials go in a header, never in a URL)"
                .to_owned(),
        ));
    }
    // Special schemes always have a host and a known default port; this keeps the path total.
    let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
        return Err(refused(format!("`{}` has no host", shorten(url.as_str()))));
    };
    if !policy.port_allowed(port) {
        return Err(refused(format!(
            "port {port} is not allowed here; the allowed ports are {}",
            list_ports(policy)
        )));
    }
    let ip = match host {
        Host::Domain(name) => {
            let name = name.strip_suffix('.').unwrap_or(name);
            if name == "localhost" || name.ends_with(".localhost") {
                return Err(refused(format!(
                    "the host `{name}` names this machine (RFC 6761); only public internet hosts \
                     can be reached"
                )));
            }
            return Ok(Target::Name {
                name: name.to_owned(),
                port,
            });
        }
        Host::Ipv4(ip) => IpAddr::V4(ip),
        Host::Ipv6(ip) => IpAddr::V6(ip),
    };
    let addr = SocketAddr::new(ip, port);
    match policy.address_refusal(addr) {
        Some(range) => Err(refused(format!(
            "the host `{ip}` is {}; only public internet hosts can be reached",
            describe(ip, range)
        ))),
        None => Ok(Target::Address(addr)),
    }
}

/// What the offline checks leave: a checked address, or a name to resolve and check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Address(SocketAddr),
    Name { name: String, port: u16 },
}

/// A target that passed the offline checks, resolved (when it is a name) and checked again:
/// every address the name resolves to must be allowed.
pub(crate) async fn resolve(policy: &NetPolicy, target: Target) -> Result<Checked, ToolError> {
    match target {
        Target::Address(addr) => Ok(Checked {
            name: None,
            addrs: vec![addr],
        }),
        Target::Name { name, port } => {
            let resolved = tokio::net::lookup_host((name.as_str(), port))
                .await
                .map_err(|err| {
                    ToolError::failed(format!(
                        "the host `{name}` could not be resolved; check the name"
                    ))
                    .with_detail(format!("lookup of {name}:{port}: {err}"))
                })?;
            let addrs = check_resolved(policy, &name, resolved.collect())?;
            Ok(Checked {
                name: Some(name),
                addrs,
            })
        }
    }
}

/// The addresses `name` resolved to, if every one is allowed. One refused address refuses the
/// name: a public name with a private address among its records is misconfigured or a DNS
/// rebinding attempt, and the connection could land on any of them.
pub(crate) fn check_resolved(
    policy: &NetPolicy,
    name: &str,
    addrs: Vec<SocketAddr>,
) -> Result<Vec<SocketAddr>, ToolError> {
    if addrs.is_empty() {
        return Err(ToolError::failed(format!(
            "the host `{name}` could not be resolved; check the name"
        ))
        .with_detail(format!("lookup of {name} gave no address")));
    }
    for addr in &addrs {
        if let Some(range) = policy.address_refusal(*addr) {
            // The model learns the kind of address, not the address: that stays in the detail.
            return Err(refused(format!(
                "the host `{name}` resolves to a {} address; only public internet hosts can be \
                 reached",
                range.purpose()
            ))
            .with_detail(format!(
                "{name} resolves to {addrs:?}; {} is {range}",
                addr.ip()
            )));
        }
    }
    Ok(addrs)
}

/// `ip` and its range for a message, with the IPv4 address an IPv4-mapped one stands for.
fn describe(ip: IpAddr, range: BlockedRange) -> String {
    let mapped = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
        IpAddr::V4(_) => None,
    };
    match mapped {
        Some(v4) => format!("an address in {range}, standing for {v4}"),
        None => format!("an address in {range}"),
    }
}

/// `text` cut to 200 characters for a message.
pub(crate) fn shorten(text: &str) -> String {
    const MAX_CHARS: usize = 200;
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::refusal;

    fn offline(url: &str) -> Result<Target, ToolError> {
        parse_url(url).and_then(|url| check_offline(&NetPolicy::new(), &url))
    }

    #[track_caller]
    fn assert_refused(url: &str, needle: &str) {
        let message = refusal(offline(url), &url);
        assert!(
            message.contains(needle),
            "{url}: {message:?} lacks {needle:?}"
        );
    }

    #[test]
    fn loopback_in_every_spelling_is_refused() {
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://127.1/",
            "http://127.0.1/",
            "http://%31%32%37.0.0.1/",
            "http://127.0.0.1.:8080/",
            "HTTP://127.000.000.001/",
            "https://127.0.0.1:443/",
        ] {
            assert_refused(
                url,
                "the host `127.0.0.1` is an address in loopback (127.0.0.0/8, RFC 1122)",
            );
        }
        assert_refused(
            "http://[::1]/",
            "the host `::1` is an address in loopback (::1/128",
        );
        assert_refused("http://[0:0:0:0:0:0:0:1]/", "loopback (::1/128");
        assert_refused("http://0/", "\"this network\"");
        assert_refused("http://0.0.0.0:80/", "\"this network\"");
        assert_refused("http://[::]/", "unspecified");
    }

    #[test]
    fn ipv4_in_ipv6_forms_are_refused() {
        for url in [
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:ffff:127.0.0.1]/",
            "http://[::FFFF:127.0.0.1]/",
        ] {
            assert_refused(
                url,
                "IPv4-mapped (::ffff:0.0.0.0/96, RFC 4291), standing for 127.0.0.1",
            );
        }
        // A mapped public address is refused too: a public host never needs the mapped form.
        assert_refused("http://[::ffff:8.8.8.8]/", "standing for 8.8.8.8");
        assert_refused(
            "http://[64:ff9b::7f00:1]/",
            "NAT64 (64:ff9b::/96, RFC 6052)",
        );
        assert_refused("http://[64:ff9b::8.8.8.8]/", "NAT64");
        assert_refused("http://[::127.0.0.1]/", "IPv4-compatible");
        assert_refused("http://[2002:7f00:1::]/", "6to4");
        assert_refused("http://[2001::1]/", "Teredo");
    }

    #[test]
    fn metadata_private_and_link_local_addresses_are_refused() {
        assert_refused(
            "http://169.254.169.254/latest/meta-data/",
            "the host `169.254.169.254` is an address in cloud instance metadata",
        );
        assert_refused("http://[fd00:ec2::254]/", "cloud instance metadata");
        assert_refused("http://10.0.0.1/", "private network (10.0.0.0/8, RFC 1918)");
        assert_refused("http://172.20.1.1/", "private network (172.16.0.0/12");
        assert_refused(
            "http://192.168.0.1:8443/admin",
            "private network (192.168.0.0/16",
        );
        assert_refused("http://100.100.100.200/", "carrier-grade NAT");
        assert_refused("http://169.254.1.1/", "link-local (169.254.0.0/16");
        assert_refused("http://[fe80::1]/", "link-local (fe80::/10");
        assert_refused("http://[fc00::1]/", "unique local");
        assert_refused("http://224.0.0.251/", "multicast");
        assert_refused("http://255.255.255.255/", "limited broadcast");
    }

    #[test]
    fn localhost_names_are_refused() {
        for url in [
            "http://localhost/",
            "http://LOCALHOST:8080/",
            "http://localhost./",
            "http://api.localhost/",
            "https://a.b.localhost./x",
        ] {
            assert_refused(url, "names this machine (RFC 6761)");
        }
        // Only the name itself and its subdomains.
        assert_eq!(
            offline("http://localhost.example.com/"),
            Ok(Target::Name {
                name: "localhost.example.com".to_owned(),
                port: 80
            })
        );
        assert_eq!(
            offline("http://notlocalhost/"),
            Ok(Target::Name {
                name: "notlocalhost".to_owned(),
                port: 80
            })
        );
    }

    #[test]
    fn only_http_and_https_are_allowed() {
        for (url, scheme) in [
            ("file:///etc/passwd", "file:"),
            ("ftp://example.com/x", "ftp:"),
            ("gopher://example.com/", "gopher:"),
            ("ws://example.com/", "ws:"),
            ("data:text/plain,hi", "data:"),
            ("javascript:alert(1)", "javascript:"),
            ("dict://127.0.0.1:11211/", "dict:"),
        ] {
            assert_refused(url, &format!("the scheme `{scheme}` is not allowed"));
        }
    }

    #[test]
    fn malformed_urls_are_refused() {
        assert_refused("", "`url` is empty");
        assert_refused("   ", "`url` is empty");
        assert_refused(
            "/relative/path",
            "is not a valid absolute URL (relative URL without a base)",
        );
        assert_refused("example.com", "is not a valid absolute URL");
        assert_refused("http://", "is not a valid absolute URL");
        assert_refused("http://exa mple.com/", "is not a valid absolute URL");
        assert_refused("http://[::1/", "is not a valid absolute URL");
        assert_refused("http://256.0.0.1/", "is not a valid absolute URL");
        assert_refused("http://127.0.0.1.5/", "is not a valid absolute URL");
        assert_refused("http://[fe80::1%25eth0]/", "is not a valid absolute URL");
        assert_refused("http://example.com:99999/", "is not a valid absolute URL");
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert_refused(&long, "bytes long, over the limit of 8192");
    }

    #[test]
    fn credentials_in_urls_are_refused() {
        assert_refused(
            "http://user:secret@example.com/",
            "carries a user name or password",
        );
        assert_refused(
            "http://user@example.com/",
            "carries a user name or password",
        );
        assert_refused(
            "http://:secret@example.com/",
            "carries a user name or password",
        );
        // The classic confusion: the host is `127.0.0.1`, not `example.com`; refused either way.
        assert_refused(
            "http://example.com@127.0.0.1/",
            "carries a user name or password",
        );
    }

    #[test]
    fn ports_follow_the_policy() {
        let policy = NetPolicy::new().only_ports([443, 80]);
        let check = |url: &str| parse_url(url).and_then(|url| check_offline(&policy, &url));
        assert!(check("https://example.com/").is_ok());
        assert!(check("http://example.com:80/").is_ok());
        let message = refusal(check("http://example.com:8080/"), &"8080");
        assert_eq!(
            message,
            "port 8080 is not allowed here; the allowed ports are 80, 443"
        );
        let none = NetPolicy::new().only_ports([]);
        let message = refusal(
            parse_url("https://example.com/").and_then(|url| check_offline(&none, &url)),
            &"none",
        );
        assert!(message.ends_with("the allowed ports are none"), "{message}");
    }

    #[test]
    fn exceptions_open_exactly_what_they_name() {
        let server: SocketAddr = "127.0.0.1:4000"
            .parse()
            .unwrap_or_else(|err| panic!("{err}"));
        let policy = NetPolicy::new().dangerously_allow_socket_addr(server);
        let check = |url: &str| parse_url(url).and_then(|url| check_offline(&policy, &url));
        assert_eq!(
            check("http://127.0.0.1:4000/x"),
            Ok(Target::Address(server))
        );
        assert_eq!(
            check("http://2130706433:4000/"),
            Ok(Target::Address(server))
        );
        refusal(check("http://127.0.0.1:4001/"), &"other port");
        refusal(check("http://127.0.0.2:4000/"), &"other address");
        refusal(check("http://localhost:4000/"), &"a name, not the address");
        // The mapped form is refused even when the address it stands for is allowed.
        refusal(check("http://[::ffff:127.0.0.1]:4000/"), &"mapped");

        let ip_policy = NetPolicy::new()
            .dangerously_allow_ip("10.0.0.7".parse().unwrap_or_else(|err| panic!("{err}")));
        assert!(ip_policy.permits("10.0.0.7:1".parse().unwrap_or_else(|err| panic!("{err}"))));
        assert!(!ip_policy.permits("10.0.0.8:1".parse().unwrap_or_else(|err| panic!("{err}"))));
    }

    #[test]
    fn a_name_is_refused_when_any_address_it_resolves_to_is_blocked() {
        let sock =
            |text: &str| -> SocketAddr { text.parse().unwrap_or_else(|err| panic!("{err}")) };
        let policy = NetPolicy::new();
        let public = vec![
            sock("93.184.215.14:80"),
            sock("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:80"),
        ];
        assert_eq!(
            check_resolved(&policy, "example.com", public.clone()),
            Ok(public)
        );

        let err = check_resolved(
            &policy,
            "rebind.example",
            vec![sock("93.184.215.14:80"), sock("127.0.0.1:80")],
        );
        let message = refusal(err.clone(), &"rebind");
        assert_eq!(
            message,
            "the host `rebind.example` resolves to a loopback address; only public internet hosts \
             can be reached"
        );
        let detail = err.err().and_then(|err| err.detail().map(str::to_owned));
        assert!(detail.is_some_and(|detail| detail.contains("127.0.0.1")));

        let message = refusal(
            check_resolved(
                &policy,
                "metadata.google.internal",
                vec![sock("169.254.169.254:80")],
            ),
            &"metadata",
        );
        assert!(
            message.contains("resolves to a cloud instance metadata address"),
            "{message}"
        );

        let none = check_resolved(&policy, "nothing.example", Vec::new());
        assert!(none.is_err_and(|err| err.code() == ErrorCode::ToolFailed));
    }
}
