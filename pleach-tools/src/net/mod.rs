//! The SSRF guard of the network tools ([`url_fetch`](crate#tools) and
//! [`http_request`](crate#tools)): what a model can make this machine connect to, checked before
//! every connection, redirect hops included.
//!
//! A model that fetches URLs can be told, by a user or by a page it has read, to fetch
//! `http://169.254.169.254/latest/meta-data/` (a cloud machine's metadata service, which hands
//! out its credentials) or an admin page on `localhost`. The guard lets through public internet
//! hosts only, unless the host application opens an exception in its [`NetPolicy`].
//!
//! ```
//! use pleach_tools::net::{NetPolicy, blocked_range};
//!
//! assert_eq!(blocked_range("10.1.2.3".parse().unwrap()).unwrap().cidr(), "10.0.0.0/8");
//! assert!(!NetPolicy::new().permits("[::ffff:127.0.0.1]:80".parse().unwrap()));
//! assert!(NetPolicy::new().permits("93.184.215.14:443".parse().unwrap()));
//! ```
//!
//! # The checks, in order, on every hop
//!
//! 1. The URL is parsed by the URL standard's rules (the `url` crate), which normalize every
//!    spelling of an IP literal: `2130706433`, `0x7f.1`, `0177.0.0.1`, `017700000001`, `127.1`
//!    and `%31%32%37.0.0.1` are all `127.0.0.1`. The guard checks the normalized URL, and the HTTP
//!    client is given that same URL, so the two cannot read the host differently.
//! 2. The scheme is `http` or `https`; `file:`, `ftp:`, `gopher:`, `data:` and the rest are refused.
//! 3. The URL has no user name or password. They would end up in logs and in the model's
//!    context, and `https://trusted.example@evil.example/` reads as the wrong host. Credentials
//!    belong in a header (`http_request` sends headers).
//! 4. The port is one the policy allows ([`NetPolicy::only_ports`]; any port by default).
//! 5. A host written as an IP address must be outside the blocked ranges below; the names
//!    `localhost` and `*.localhost` (RFC 6761) are refused as they are.
//! 6. `http_request` only: the host is on the runtime's allowlist, so a host off it is never
//!    even resolved.
//! 7. A host name is resolved by the guard, and every address it resolves to must be outside the
//!    blocked ranges: one blocked address refuses the name (a public name with a private record
//!    is misconfigured or a DNS rebinding attempt, and the connection could land on any record).
//! 8. The connection goes to the checked addresses and nowhere else. Each hop gets its own
//!    client whose resolver knows only the checked name and its checked addresses (any other
//!    name fails), and an IP literal is connected to as written: HTTP clients never resolve
//!    literals, which is why step 5 checks them. No proxy is used, whatever the environment
//!    says (`HTTP_PROXY`, `ALL_PROXY`, …): a proxy would do its own resolving.
//! 9. Redirects are not followed by the client. A 301, 302, 303, 307 or 308 with a `location`
//!    starts a new hop at step 1, up to the limit in [`FetchLimits`] (5 by default; 0 returns
//!    the redirect itself). As browsers do, 303 (and 301 or 302 after a POST) continues as a GET
//!    without a body; `authorization` and `cookie` headers are dropped when a redirect leaves the
//!    origin.
//!
//! # Blocked addresses
//!
//! IPv4:
//!
//! | range | what | reserved by |
//! | --- | --- | --- |
//! | `0.0.0.0/8` | "this network"; `0.0.0.0` reaches the local machine | RFC 1122 |
//! | `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16` | private networks | RFC 1918 |
//! | `100.64.0.0/10` | shared address space (carrier-grade NAT) | RFC 6598 |
//! | `127.0.0.0/8` | loopback | RFC 1122 |
//! | `169.254.0.0/16`, incl. `169.254.169.254/32` | link-local, incl. the cloud instance metadata service | RFC 3927 |
//! | `192.0.0.0/24` | IETF protocol assignments | RFC 6890 |
//! | `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24` | documentation (TEST-NET-1, -2, -3) | RFC 5737 |
//! | `192.88.99.0/24` | 6to4 relay anycast (deprecated) | RFC 7526 |
//! | `198.18.0.0/15` | benchmarking | RFC 2544 |
//! | `224.0.0.0/4` | multicast | RFC 5771 |
//! | `240.0.0.0/4`, incl. `255.255.255.255/32` | reserved, incl. limited broadcast | RFC 1112, RFC 919 |
//!
//! IPv6:
//!
//! | range | what | reserved by |
//! | --- | --- | --- |
//! | `::/128`, `::1/128` | unspecified, loopback | RFC 4291 |
//! | `::ffff:0.0.0.0/96` | IPv4-mapped | RFC 4291 |
//! | `::/96` | IPv4-compatible (deprecated) | RFC 4291 |
//! | `64:ff9b::/96`, `64:ff9b:1::/48` | NAT64, local-use NAT64 | RFC 6052, RFC 8215 |
//! | `100::/64` | discard-only | RFC 6666 |
//! | `2001::/32` | Teredo tunneling | RFC 4380 |
//! | `2001:2::/48` | benchmarking | RFC 5180 |
//! | `2001:10::/28`, `2001:20::/28` | ORCHID (deprecated), ORCHID version 2 | RFC 4843, RFC 7343 |
//! | `2001:db8::/32`, `3fff::/20` | documentation | RFC 3849, RFC 9637 |
//! | `2002::/16` | 6to4 | RFC 3056 |
//! | `5f00::/16` | segment routing over IPv6: segment identifiers | RFC 9602 |
//! | `fc00::/7`, incl. `fd00:ec2::254/128` | unique local, incl. the AWS metadata service | RFC 4193 |
//! | `fe80::/10` | link-local | RFC 4291 |
//! | `fec0::/10` | site-local (deprecated) | RFC 3879 |
//! | `ff00::/8` | multicast | RFC 4291 |
//! | everything else `outside 2000::/3` | not global unicast | RFC 4291 |
//!
//! IPv4 addresses carried in IPv6 (mapped, compatible, NAT64, 6to4, Teredo) are refused whatever
//! address they carry: a public host is always reachable at its plain address, while each of
//! these forms can reach an internal IPv4 address through the local stack or a translator.
//!
//! # Limits and results
//!
//! [`FetchLimits`] caps each call: the body (256 KiB by default), the whole call (30 s: name
//! resolution, every hop and the body), each connection's setup (10 s) and the redirects (5).
//! A body longer than its cap is cut there and the result says `truncated: true`: the beginning
//! of a page is still useful, where an error would waste the call. Reading stops at the cap.
//! The body comes back as text when it is UTF-8, otherwise in base64 ([`BodyEncoding`]); nothing
//! asks for compression and no charset is converted. A status such as 404 is a result, not an
//! error. The HTTP client speaks HTTP/1.1, over rustls (with ring and the operating system's
//! trust store) for https.
//!
//! # Errors
//!
//! | code | when |
//! | --- | --- |
//! | 1001 | the URL is malformed, of another scheme, carries credentials, uses a port that is not allowed, or points at a blocked address or name, on the first hop or a redirect; (`http_request`) the host is not on the allowlist, or a header or the body is refused |
//! | 1008 | the name does not resolve, the connection or the TLS handshake fails, the connection breaks, a redirect location is invalid, too many redirects; (`http_request`) no host is configured |
//! | 1010 | the call or a connection took longer than its limit |
//! | 1011 | the call was cancelled (`ToolContext::signal`) |
//!
//! Messages say what was refused and why, in terms the model can act on; the addresses a name
//! resolved to stay in the operator detail ([`ToolError::detail`](pleach_core::ToolError::detail)).

mod fetch;
mod guard;
mod policy;
mod ranges;
#[cfg(test)]
pub(crate) mod test_server;

pub use fetch::{BodyEncoding, FetchLimits, HttpResponse};
pub use policy::NetPolicy;
pub use ranges::{BlockedRange, blocked_range};

pub(crate) use fetch::{Outgoing, into_output, send};
pub(crate) use guard::parse_url;
#[cfg(feature = "http-request")]
pub(crate) use guard::{refused, shorten};
