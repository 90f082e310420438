//! Which connections may upgrade: `hadronio.rules`, a `;`-separated list of rules, the first
//! match wins, then the built-in defaults ([`DEFAULTS`]).
//!
//! A rule is `ucx|tcp [connect|accept] [address pattern][:ports]`:
//! - `ucx` lets the connection upgrade when the peer runs hadroNIO (a client offers it, a server
//!   accepts an offer); `tcp` keeps it plain TCP (a client sends no offer at all);
//! - `connect` (this side is the client) or `accept` (this side is the server); both if left out;
//! - the address is the peer's: `*`, an address (`10.1.2.3`, `[fd00::1]`), a prefix
//!   (`10.0.0.0/8`, `[fd00::]/8`), or one of `loopback`, `private` (RFC 1918, shared address space
//!   100.64.0.0/10, unique local IPv6), `link-local`;
//! - the ports are the service's (the server's port: the remote port for `connect`, the local
//!   port for `accept`): `:5432`, `:8000-8999`; any port if left out.
//!
//! Example: `tcp connect *:5432; ucx 10.0.0.0/8` keeps PostgreSQL connections plain and lets
//! everything in 10.0.0.0/8 upgrade; everything else follows the defaults.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Applied after the user's rules: offers go to addresses that can be on this host or in its
/// cluster (loopback, private and link-local ranges), never to public addresses, where a
/// middlebox between the hosts might clear the urgent flag and hand the offer byte to a plain
/// server as data; offers are accepted from anywhere (only hadroNIO clients send one).
pub const DEFAULTS: &str = "ucx connect loopback; ucx connect private; ucx connect link-local; tcp connect *; ucx accept *";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Connect,
    Accept,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Addresses {
    Any,
    Prefix(IpAddr, u8),
    Loopback,
    Private,
    LinkLocal,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    upgrade: bool,
    role: Option<Role>,
    addresses: Addresses,
    ports: (u16, u16),
    text: String,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    rules: Vec<Rule>,
    defaults: usize,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules::parse("").unwrap_or(Rules { rules: Vec::new(), defaults: 0 })
    }
}

/// IPv4-mapped IPv6 addresses count as the IPv4 address they carry.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

fn in_prefix(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (canonical(ip), net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits as u32) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits as u32) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

impl Addresses {
    fn matches(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match self {
            Addresses::Any => true,
            Addresses::Prefix(net, bits) => in_prefix(ip, *net, *bits),
            Addresses::Loopback => ip.is_loopback(),
            Addresses::Private => match ip {
                IpAddr::V4(v4) => v4.is_private() || in_prefix(ip, IpAddr::V4(Ipv4Addr::new(100, 64, 0, 0)), 10),
                IpAddr::V6(_) => in_prefix(ip, IpAddr::V6(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0)), 7),
            },
            Addresses::LinkLocal => match ip {
                IpAddr::V4(v4) => v4.is_link_local(),
                IpAddr::V6(_) => in_prefix(ip, IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0)), 10),
            },
        }
    }
}

fn parse_ports(text: &str) -> Result<(u16, u16), String> {
    if text == "*" {
        return Ok((0, u16::MAX));
    }
    let port = |p: &str| p.trim().parse::<u16>().map_err(|_| format!("'{p}' is not a port (0..65535)"));
    match text.split_once('-') {
        Some((low, high)) => {
            let (low, high) = (port(low)?, port(high)?);
            if low > high {
                return Err(format!("port range {low}-{high} is empty"));
            }
            Ok((low, high))
        }
        None => {
            let p = port(text)?;
            Ok((p, p))
        }
    }
}

fn parse_address(text: &str) -> Result<Addresses, String> {
    match text {
        "*" => return Ok(Addresses::Any),
        "loopback" => return Ok(Addresses::Loopback),
        "private" => return Ok(Addresses::Private),
        "link-local" => return Ok(Addresses::LinkLocal),
        _ => {}
    }
    let (address, bits) = match text.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u8>().map_err(|_| format!("'{b}' is not a prefix length"))?)),
        None => (text, None),
    };
    let address = address.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(address);
    let ip = canonical(address.parse::<IpAddr>().map_err(|_| format!("'{address}' is not an IP address"))?);
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    if bits > max {
        return Err(format!("prefix length {bits} is longer than {max}"));
    }
    Ok(Addresses::Prefix(ip, bits))
}

/// Splits `address[:ports]`, where an IPv6 address is written in brackets.
fn split_pattern(text: &str) -> Result<(&str, &str), String> {
    if text.starts_with('[') {
        let close = text.find(']').ok_or_else(|| format!("'{text}': missing ']'"))?;
        let rest = &text[close + 1..];
        // A prefix length may follow the bracket: [fd00::]/8:80
        let (prefix_end, ports) = match rest.strip_prefix('/') {
            Some(r) => match r.find(':') {
                Some(i) => (close + 2 + i, &r[i + 1..]),
                None => (text.len(), ""),
            },
            None => match rest.strip_prefix(':') {
                Some(p) => (close + 1, p),
                None if rest.is_empty() => (text.len(), ""),
                None => return Err(format!("'{text}': unexpected '{rest}'")),
            },
        };
        return Ok((&text[..prefix_end], ports));
    }
    match text.rsplit_once(':') {
        Some((address, ports)) if !address.contains(':') => Ok((address, ports)),
        Some(_) => Err(format!("'{text}': write IPv6 addresses in brackets, e.g. [fd00::1]:80")),
        None => Ok((text, "")),
    }
}

fn parse_rule(text: &str) -> Result<Rule, String> {
    let mut words = text.split_whitespace();
    let upgrade = match words.next() {
        Some("ucx") => true,
        Some("tcp") => false,
        Some(other) => return Err(format!("'{other}' is not 'ucx' or 'tcp'")),
        None => return Err(String::from("empty rule")),
    };
    let mut role = None;
    let mut pattern = None;
    for word in words {
        match word {
            "connect" if role.is_none() && pattern.is_none() => role = Some(Role::Connect),
            "accept" if role.is_none() && pattern.is_none() => role = Some(Role::Accept),
            _ if pattern.is_none() => pattern = Some(word),
            _ => return Err(format!("unexpected '{word}'")),
        }
    }
    let (addresses, ports) = match pattern {
        None => (Addresses::Any, (0, u16::MAX)),
        Some(pattern) => {
            let (address, ports) = split_pattern(pattern)?;
            let ports = if ports.is_empty() { (0, u16::MAX) } else { parse_ports(ports)? };
            (parse_address(address)?, ports)
        }
    };
    Ok(Rule { upgrade, role, addresses, ports, text: text.split_whitespace().collect::<Vec<_>>().join(" ") })
}

impl Rules {
    /// The user's rules (`hadronio.rules`), then the defaults. The error names the bad rule.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let mut rules = Vec::new();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            rules.push(parse_rule(part).map_err(|e| format!("rule '{part}': {e}"))?);
        }
        let defaults = rules.len();
        for part in DEFAULTS.split(';').map(str::trim) {
            rules.push(parse_rule(part).map_err(|e| format!("default rule '{part}': {e}"))?);
        }
        Ok(Rules { rules, defaults })
    }

    /// Whether a connection may upgrade, and the rule that decided it.
    pub fn decide(&self, role: Role, peer: IpAddr, service_port: u16) -> (bool, &Rule) {
        let found = self.rules.iter().find(|rule| {
            rule.role.is_none_or(|r| r == role)
                && rule.addresses.matches(peer)
                && (rule.ports.0..=rule.ports.1).contains(&service_port)
        });
        match found {
            Some(rule) => (rule.upgrade, rule),
            // The defaults end with catch-alls for both roles.
            None => (false, &self.rules[self.rules.len() - 1]),
        }
    }

    /// Whether the deciding rule is one of the user's.
    pub fn is_users(&self, rule: &Rule) -> bool {
        self.rules[..self.defaults].iter().any(|r| std::ptr::eq(r, rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn defaults_offer_only_where_a_peer_can_be_near() {
        let rules = Rules::default();
        for near in ["127.0.0.1", "10.1.2.3", "172.20.0.5", "192.168.1.1", "100.64.3.4", "169.254.0.9", "::1", "fd00::5", "fe80::1", "::ffff:10.0.0.1"] {
            assert!(rules.decide(Role::Connect, ip(near), 80).0, "{near}");
        }
        for far in ["8.8.8.8", "2001:db8::1", "172.32.0.1", "::ffff:1.2.3.4"] {
            assert!(!rules.decide(Role::Connect, ip(far), 80).0, "{far}");
        }
        assert!(rules.decide(Role::Accept, ip("8.8.8.8"), 80).0, "offers are accepted from anywhere");
    }

    #[test]
    fn first_match_wins_with_roles_prefixes_and_ports() {
        let rules = Rules::parse("tcp connect *:5432; ucx 8.8.0.0/16:8000-8999; tcp accept [fd00::]/8:22 ;ucx [2001:db8::1]").unwrap();
        assert!(!rules.decide(Role::Connect, ip("10.0.0.1"), 5432).0);
        assert!(rules.decide(Role::Accept, ip("10.0.0.1"), 5432).0, "the first rule is for connect only");
        assert!(rules.decide(Role::Connect, ip("8.8.4.4"), 8080).0);
        assert!(!rules.decide(Role::Connect, ip("8.8.4.4"), 9000).0, "falls through to the defaults");
        assert!(!rules.decide(Role::Accept, ip("fd12::3"), 22).0);
        assert!(rules.decide(Role::Accept, ip("fd12::3"), 23).0);
        assert!(rules.decide(Role::Connect, ip("2001:db8::1"), 1).0);
        let (_, rule) = rules.decide(Role::Connect, ip("10.0.0.1"), 5432);
        assert_eq!(rule.to_string(), "tcp connect *:5432");
        assert!(rules.is_users(rule));
        let (_, rule) = rules.decide(Role::Connect, ip("1.1.1.1"), 80);
        assert!(!rules.is_users(rule));
        assert_eq!(rule.to_string(), "tcp connect *");
    }

    #[test]
    fn bad_rules_are_named() {
        for (text, expected) in [
            ("udp *", "'udp' is not 'ucx' or 'tcp'"),
            ("ucx 10.0.0.0/33", "prefix length 33"),
            ("ucx 10.0.0.x", "not an IP address"),
            ("ucx *:70000", "not a port"),
            ("ucx *:90-80", "is empty"),
            ("ucx fd00::1:80", "brackets"),
            ("ucx connect accept", "'accept' is not an IP address"),
            ("ucx * extra", "unexpected 'extra'"),
        ] {
            let error = Rules::parse(text).unwrap_err();
            assert!(error.contains(expected) && error.contains(text), "{text}: {error}");
        }
        assert!(Rules::parse(" ; ").is_ok());
    }
}
