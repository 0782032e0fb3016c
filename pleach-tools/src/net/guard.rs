//! The SSRF guard: which addresses and URLs the network tools may reach, checked before any
//! connection is made. The module docs of [`net`](super) list the rules and their reasons.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use pleach_core::{ErrorCode, ToolError};
use url::{Host, Url};

/// A range of addresses the guard refuses, and the RFC that reserves it.
///
/// ```
/// use pleach_tools::net::blocked_range;
///
/// let range = blocked_range("169.254.169.254".parse().unwrap()).unwrap();
/// assert_eq!(range.cidr(), "169.254.169.254/32");
/// assert_eq!(range.to_string(), "cloud instance metadata (169.254.169.254/32, RFC 3927)");
/// assert!(blocked_range("93.184.215.14".parse().unwrap()).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockedRange {
    network: IpAddr,
    prefix: u8,
    /// The range is everything outside `network/prefix` (the IPv6 catch-all).
    outside: bool,
    purpose: &'static str,
    rfc: &'static str,
}

impl BlockedRange {
    /// The range in CIDR notation, e.g. `127.0.0.0/8`; for the IPv6 catch-all, the range it is
    /// the complement of: `outside 2000::/3`.
    ///
    /// ```
    /// use pleach_tools::net::blocked_range;
    ///
    /// assert_eq!(blocked_range("127.0.0.1".parse().unwrap()).unwrap().cidr(), "127.0.0.0/8");
    /// assert_eq!(blocked_range("fd12::1".parse().unwrap()).unwrap().cidr(), "fc00::/7");
    /// assert_eq!(blocked_range("4000::1".parse().unwrap()).unwrap().cidr(), "outside 2000::/3");
    /// ```
    pub fn cidr(&self) -> String {
        let prefix = if self.outside { "outside " } else { "" };
        format!("{prefix}{}/{}", self.network, self.prefix)
    }

    /// What the range is for, e.g. `loopback`.
    ///
    /// ```
    /// use pleach_tools::net::blocked_range;
    ///
    /// assert_eq!(blocked_range("::1".parse().unwrap()).unwrap().purpose(), "loopback");
    /// let cgnat = blocked_range("100.64.0.1".parse().unwrap()).unwrap();
    /// assert_eq!(cgnat.purpose(), "shared address space (carrier-grade NAT)");
    /// ```
    pub fn purpose(&self) -> &'static str {
        self.purpose
    }

    /// Where the range is reserved, e.g. `RFC 1122`.
    ///
    /// ```
    /// use pleach_tools::net::blocked_range;
    ///
    /// assert_eq!(blocked_range("192.168.1.1".parse().unwrap()).unwrap().rfc(), "RFC 1918");
    /// ```
    pub fn rfc(&self) -> &'static str {
        self.rfc
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let inside = match (self.network, ip) {
            (IpAddr::V4(network), IpAddr::V4(ip)) => same_prefix(
                network.to_bits().into(),
                ip.to_bits().into(),
                32,
                self.prefix,
            ),
            (IpAddr::V6(network), IpAddr::V6(ip)) => {
                same_prefix(network.to_bits(), ip.to_bits(), 128, self.prefix)
            }
            _ => return false,
        };
        inside != self.outside
    }
}

/// Whether `a` and `b`, numbers of `width` bits, agree on their first `prefix` bits.
fn same_prefix(a: u128, b: u128, width: u32, prefix: u8) -> bool {
    let shift = width.saturating_sub(u32::from(prefix));
    a.checked_shr(shift).unwrap_or(0) == b.checked_shr(shift).unwrap_or(0)
}

impl fmt::Display for BlockedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, {})", self.purpose, self.cidr(), self.rfc)
    }
}

const fn v4(octets: [u8; 4], prefix: u8, purpose: &'static str, rfc: &'static str) -> BlockedRange {
    let [a, b, c, d] = octets;
    BlockedRange {
        network: IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
        prefix,
        outside: false,
        purpose,
        rfc,
    }
}

const fn v6(
    segments: [u16; 8],
    prefix: u8,
    purpose: &'static str,
    rfc: &'static str,
) -> BlockedRange {
    let s = segments;
    BlockedRange {
        network: IpAddr::V6(Ipv6Addr::new(
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
        )),
        prefix,
        outside: false,
        purpose,
        rfc,
    }
}

/// Every IPv4 range the guard refuses. The first range that holds an address names its refusal,
/// so a narrower range stands before the one it is part of.
#[rustfmt::skip]
const BLOCKED_V4: &[BlockedRange] = &[
    v4([0, 0, 0, 0], 8, "\"this network\" (0.0.0.0 reaches the local machine)", "RFC 1122"),
    v4([10, 0, 0, 0], 8, "private network", "RFC 1918"),
    v4([100, 64, 0, 0], 10, "shared address space (carrier-grade NAT)", "RFC 6598"),
    v4([127, 0, 0, 0], 8, "loopback", "RFC 1122"),
    v4([169, 254, 169, 254], 32, "cloud instance metadata", "RFC 3927"),
    v4([169, 254, 0, 0], 16, "link-local", "RFC 3927"),
    v4([172, 16, 0, 0], 12, "private network", "RFC 1918"),
    v4([192, 0, 0, 0], 24, "IETF protocol assignments", "RFC 6890"),
    v4([192, 0, 2, 0], 24, "documentation (TEST-NET-1)", "RFC 5737"),
    v4([192, 88, 99, 0], 24, "6to4 relay anycast (deprecated)", "RFC 7526"),
    v4([192, 168, 0, 0], 16, "private network", "RFC 1918"),
    v4([198, 18, 0, 0], 15, "benchmarking", "RFC 2544"),
    v4([198, 51, 100, 0], 24, "documentation (TEST-NET-2)", "RFC 5737"),
    v4([203, 0, 113, 0], 24, "documentation (TEST-NET-3)", "RFC 5737"),
    v4([224, 0, 0, 0], 4, "multicast", "RFC 5771"),
    v4([255, 255, 255, 255], 32, "limited broadcast", "RFC 919"),
    v4([240, 0, 0, 0], 4, "reserved", "RFC 1112"),
];

/// Every IPv6 range the guard refuses, narrower ranges first; the last is everything outside
/// global unicast (`2000::/3`) that no other range names.
#[rustfmt::skip]
const BLOCKED_V6: &[BlockedRange] = &[
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, "unspecified (reaches the local machine)", "RFC 4291"),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback", "RFC 4291"),
    v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, "IPv4-mapped", "RFC 4291"),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 96, "IPv4-compatible (deprecated)", "RFC 4291"),
    v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, "NAT64", "RFC 6052"),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64", "RFC 8215"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only", "RFC 6666"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "Teredo tunneling", "RFC 4380"),
    v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, "benchmarking", "RFC 5180"),
    v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28, "ORCHID (deprecated)", "RFC 4843"),
    v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, "ORCHID version 2", "RFC 7343"),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation", "RFC 3849"),
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4", "RFC 3056"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "documentation", "RFC 9637"),
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "segment routing over IPv6: segment identifiers", "RFC 9602"),
    v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128, "cloud instance metadata", "RFC 4193"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique local", "RFC 4193"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local", "RFC 4291"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local (deprecated)", "RFC 3879"),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast", "RFC 4291"),
    BlockedRange { outside: true, ..v6([0x2000, 0, 0, 0, 0, 0, 0, 0], 3, "not global unicast", "RFC 4291") },
];

/// The blocked range `ip` is in, or `None` for an address the guard lets through: the public
/// internet. The ranges are listed in the [module docs](crate::net#blocked-addresses).
///
/// ```
/// use pleach_tools::net::blocked_range;
///
/// // Any address carrying IPv4 inside IPv6 is refused, whatever it carries.
/// let mapped = blocked_range("::ffff:93.184.215.14".parse().unwrap()).unwrap();
/// assert_eq!(mapped.to_string(), "IPv4-mapped (::ffff:0.0.0.0/96, RFC 4291)");
/// assert_eq!(blocked_range("2606:2800:21f:cb07:6820:80da:af6b:8b2c".parse().unwrap()), None);
/// ```
pub fn blocked_range(ip: IpAddr) -> Option<BlockedRange> {
    let ranges = match ip {
        IpAddr::V4(_) => BLOCKED_V4,
        IpAddr::V6(_) => BLOCKED_V6,
    };
    ranges.iter().find(|range| range.contains(ip)).copied()
}

/// Which addresses the network tools may reach, beyond the URL rules that always hold (http and
/// https only, no credentials in the URL, no `localhost` names).
///
/// [`NetPolicy::new`] is the strict policy: every [blocked range](crate::net#blocked-addresses)
/// is refused, any port is allowed. The exceptions open single addresses, for a host that means
/// to reach an internal service (or a test server on loopback); each one is a hole in the guard,
/// so open exactly what is needed.
///
/// ```
/// use std::net::SocketAddr;
/// use pleach_tools::net::NetPolicy;
///
/// let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
/// let policy = NetPolicy::new()
///     .dangerously_allow_socket_addr(server)
///     .only_ports([80, 443, 8080]);
/// assert!(policy.permits(server));
/// assert!(!policy.permits("127.0.0.1:8081".parse().unwrap())); // another port: still loopback
/// assert!(!policy.permits("93.184.215.14:22".parse().unwrap())); // public, but not a listed port
/// assert!(policy.permits("93.184.215.14:443".parse().unwrap()));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetPolicy {
    allowed_ips: Vec<IpAddr>,
    allowed_socket_addrs: Vec<SocketAddr>,
    ports: Option<Vec<u16>>,
}

impl NetPolicy {
    /// The strict policy: no blocked address is reachable, every port is.
    ///
    /// ```
    /// use pleach_tools::net::NetPolicy;
    ///
    /// let policy = NetPolicy::new();
    /// assert!(!policy.permits("10.0.0.7:443".parse().unwrap()));
    /// assert!(policy.permits("93.184.215.14:8080".parse().unwrap()));
    /// assert_eq!(policy, NetPolicy::default());
    /// ```
    pub fn new() -> Self {
        NetPolicy::default()
    }

    /// Lets the tools reach `ip` on any (allowed) port, even though it is in a blocked range.
    ///
    /// Dangerous: a model, or a page it was told to fetch, can then reach whatever listens
    /// there. Meant for a known internal service; for one port prefer
    /// [`dangerously_allow_socket_addr`](Self::dangerously_allow_socket_addr).
    ///
    /// ```
    /// let policy = pleach_tools::net::NetPolicy::new().dangerously_allow_ip("10.0.0.7".parse().unwrap());
    /// assert!(policy.permits("10.0.0.7:443".parse().unwrap()));
    /// assert!(!policy.permits("10.0.0.8:443".parse().unwrap()));
    /// ```
    #[must_use]
    pub fn dangerously_allow_ip(mut self, ip: IpAddr) -> Self {
        self.allowed_ips.push(ip);
        self
    }

    /// Lets the tools reach exactly `addr` (address and port), even though it is in a blocked
    /// range: how tests reach a server on loopback.
    ///
    /// Dangerous, as [`dangerously_allow_ip`](Self::dangerously_allow_ip) is, for one port.
    ///
    /// ```
    /// let server = "127.0.0.1:4000".parse().unwrap();
    /// let policy = pleach_tools::net::NetPolicy::new().dangerously_allow_socket_addr(server);
    /// assert!(policy.permits(server));
    /// assert!(!pleach_tools::net::NetPolicy::new().permits(server));
    /// ```
    #[must_use]
    pub fn dangerously_allow_socket_addr(mut self, addr: SocketAddr) -> Self {
        self.allowed_socket_addrs.push(addr);
        self
    }

    /// Allows only these ports (by default every port is allowed). Applies to every address,
    /// the exceptions included. Calling it again replaces the list.
    ///
    /// ```
    /// let policy = pleach_tools::net::NetPolicy::new().only_ports([443]);
    /// assert!(policy.permits("93.184.215.14:443".parse().unwrap()));
    /// assert!(!policy.permits("93.184.215.14:80".parse().unwrap()));
    /// ```
    #[must_use]
    pub fn only_ports(mut self, ports: impl IntoIterator<Item = u16>) -> Self {
        let mut ports: Vec<u16> = ports.into_iter().collect();
        ports.sort_unstable();
        ports.dedup();
        self.ports = Some(ports);
        self
    }

    /// Whether the tools may connect to `addr` under this policy.
    ///
    /// ```
    /// use pleach_tools::net::NetPolicy;
    ///
    /// let internal = "10.0.0.7".parse().unwrap();
    /// let policy = NetPolicy::new().dangerously_allow_ip(internal).only_ports([443]);
    /// assert!(policy.permits("10.0.0.7:443".parse().unwrap()));
    /// // The port list holds for exceptions too, and exceptions match exactly.
    /// assert!(!policy.permits("10.0.0.7:80".parse().unwrap()));
    /// assert!(!policy.permits("[::ffff:10.0.0.7]:443".parse().unwrap()));
    /// ```
    pub fn permits(&self, addr: SocketAddr) -> bool {
        self.port_allowed(addr.port()) && self.address_refusal(addr).is_none()
    }

    fn port_allowed(&self, port: u16) -> bool {
        self.ports
            .as_ref()
            .is_none_or(|ports| ports.contains(&port))
    }

    /// The blocked range that keeps the tools from `addr`, unless an exception opens it.
    /// Exceptions match exactly: opening `127.0.0.1` does not open `::ffff:127.0.0.1`, which is
    /// refused as IPv4-mapped whatever it maps to.
    fn address_refusal(&self, addr: SocketAddr) -> Option<BlockedRange> {
        let excepted =
            self.allowed_ips.contains(&addr.ip()) || self.allowed_socket_addrs.contains(&addr);
        if excepted {
            return None;
        }
        blocked_range(addr.ip())
    }
}

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

fn list_ports(policy: &NetPolicy) -> String {
    match &policy.ports {
        Some(ports) if !ports.is_empty() => ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".to_owned(),
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

    fn addr(text: &str) -> IpAddr {
        match text.parse() {
            Ok(ip) => ip,
            Err(err) => panic!("{text}: {err}"),
        }
    }

    #[track_caller]
    fn assert_blocked(ip: &str, cidr: &str) {
        match blocked_range(addr(ip)) {
            Some(range) => assert_eq!(range.cidr(), cidr, "{ip}"),
            None => panic!("{ip} is not blocked"),
        }
    }

    /// The first and last address of `range`.
    fn ends(range: &BlockedRange) -> [IpAddr; 2] {
        match range.network {
            IpAddr::V4(network) => {
                let last =
                    network.to_bits() | u32::MAX.checked_shr(range.prefix.into()).unwrap_or(0);
                [IpAddr::V4(network), IpAddr::V4(Ipv4Addr::from_bits(last))]
            }
            IpAddr::V6(network) => {
                let last =
                    network.to_bits() | u128::MAX.checked_shr(range.prefix.into()).unwrap_or(0);
                [IpAddr::V6(network), IpAddr::V6(Ipv6Addr::from_bits(last))]
            }
        }
    }

    #[test]
    fn every_blocked_range_is_refused_at_both_ends() {
        for range in BLOCKED_V4
            .iter()
            .chain(BLOCKED_V6)
            .filter(|range| !range.outside)
        {
            for ip in ends(range) {
                assert!(blocked_range(ip).is_some(), "{ip} ({range})");
            }
        }
    }

    #[test]
    fn ipv4_ranges_name_the_refusal() {
        assert_blocked("127.0.0.1", "127.0.0.0/8");
        assert_blocked("127.255.255.254", "127.0.0.0/8");
        assert_blocked("0.0.0.0", "0.0.0.0/8");
        assert_blocked("10.1.2.3", "10.0.0.0/8");
        assert_blocked("100.64.0.1", "100.64.0.0/10");
        assert_blocked("100.127.255.255", "100.64.0.0/10");
        assert_blocked("169.254.169.254", "169.254.169.254/32");
        assert_blocked("169.254.0.1", "169.254.0.0/16");
        assert_blocked("172.16.0.1", "172.16.0.0/12");
        assert_blocked("172.31.255.255", "172.16.0.0/12");
        assert_blocked("192.0.0.170", "192.0.0.0/24");
        assert_blocked("192.0.2.1", "192.0.2.0/24");
        assert_blocked("192.168.1.1", "192.168.0.0/16");
        assert_blocked("198.19.0.1", "198.18.0.0/15");
        assert_blocked("198.51.100.7", "198.51.100.0/24");
        assert_blocked("203.0.113.9", "203.0.113.0/24");
        assert_blocked("224.0.0.1", "224.0.0.0/4");
        assert_blocked("239.255.255.250", "224.0.0.0/4");
        assert_blocked("240.0.0.1", "240.0.0.0/4");
        assert_blocked("255.255.255.255", "255.255.255.255/32");
    }

    #[test]
    fn ipv6_ranges_name_the_refusal() {
        assert_blocked("::", "::/128");
        assert_blocked("::1", "::1/128");
        assert_blocked("::ffff:127.0.0.1", "::ffff:0.0.0.0/96");
        assert_blocked("::ffff:8.8.8.8", "::ffff:0.0.0.0/96");
        assert_blocked("::127.0.0.1", "::/96");
        assert_blocked("64:ff9b::7f00:1", "64:ff9b::/96");
        assert_blocked("64:ff9b:1::1", "64:ff9b:1::/48");
        assert_blocked("2001::1", "2001::/32");
        assert_blocked("2001:db8::1", "2001:db8::/32");
        assert_blocked("2002:7f00:1::", "2002::/16");
        assert_blocked("fd00:ec2::254", "fd00:ec2::254/128");
        assert_blocked("fd12:3456::1", "fc00::/7");
        assert_blocked("fe80::1", "fe80::/10");
        assert_blocked("ff02::1", "ff00::/8");
        assert_blocked("4000::1", "outside 2000::/3");
        assert_blocked("1::1", "outside 2000::/3");
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.215.14",
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(blocked_range(addr(ip)), None, "{ip}");
        }
    }

    #[test]
    fn the_module_docs_list_every_range() {
        let docs = include_str!("mod.rs");
        for range in BLOCKED_V4.iter().chain(BLOCKED_V6) {
            assert!(docs.contains(&format!("`{}`", range.cidr())), "{range}");
            assert!(docs.contains(range.rfc), "{range}");
        }
    }

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

        let ip_policy = NetPolicy::new().dangerously_allow_ip(addr("10.0.0.7"));
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
