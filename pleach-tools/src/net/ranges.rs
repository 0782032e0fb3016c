//! The blocked ranges: the addresses the network tools never reach unless the policy opens one,
//! each with what it is for and the RFC that reserves it, and [`blocked_range`] to find an
//! address's.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
