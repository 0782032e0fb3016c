//! [`NetPolicy`]: the exceptions a host opens in the blocked ranges (single addresses) and the
//! ports the network tools may use.

use std::net::{IpAddr, SocketAddr};

use super::ranges::{BlockedRange, blocked_range};

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

    pub(super) fn port_allowed(&self, port: u16) -> bool {
        self.ports
            .as_ref()
            .is_none_or(|ports| ports.contains(&port))
    }

    /// The blocked range that keeps the tools from `addr`, unless an exception opens it.
    /// Exceptions match exactly: opening `127.0.0.1` does not open `::ffff:127.0.0.1`, which is
    /// refused as IPv4-mapped whatever it maps to.
    pub(super) fn address_refusal(&self, addr: SocketAddr) -> Option<BlockedRange> {
        let excepted =
            self.allowed_ips.contains(&addr.ip()) || self.allowed_socket_addrs.contains(&addr);
        if excepted {
            return None;
        }
        blocked_range(addr.ip())
    }
}

/// The ports `policy` allows, for a message.
pub(super) fn list_ports(policy: &NetPolicy) -> String {
    match &policy.ports {
        Some(ports) if !ports.is_empty() => ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".to_owned(),
    }
}
