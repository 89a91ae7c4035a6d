//! Which addresses the proxy never connects to, whatever the allow list says (loopback,
//! unspecified, link-local, multicast, broadcast, the gateway's own listening ports on this
//! machine's addresses), and which it connects to only when the operator named them (private
//! ranges). IPv4-mapped and IPv4-compatible IPv6 forms are judged as the IPv4 address they hold.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::RwLock;

/// Why an address is refused (the `reason` of the trace, the metric and the web view).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Loopback,
    Unspecified,
    LinkLocal,
    Multicast,
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT), fc00::/7, without
    /// `privateNetworks: true` or an entry naming the address.
    Private,
    /// One of the gateway's own listening ports on an address of this machine.
    GatewayPort,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Loopback => "loopback",
            Refusal::Unspecified => "unspecified",
            Refusal::LinkLocal => "link_local",
            Refusal::Multicast => "multicast",
            Refusal::Private => "private",
            Refusal::GatewayPort => "gateway_port",
        }
    }
}

/// The IPv4 address an IPv6 address carries (`::ffff:a.b.c.d`, `::a.b.c.d`), if any.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    // IPv4-compatible (deprecated, still routed by some stacks); `::` and `::1` are not.
    if s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1) {
        return Some(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    None
}

fn classify_v4(ip: Ipv4Addr) -> Option<Refusal> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some(Refusal::Loopback)
    } else if ip.is_unspecified() || o[0] == 0 {
        // 0.0.0.0/8: "this network"; Linux connects 0.x to the local host.
        Some(Refusal::Unspecified)
    } else if ip.is_link_local() {
        Some(Refusal::LinkLocal)
    } else if ip.is_multicast() || ip.is_broadcast() || o[0] >= 240 {
        Some(Refusal::Multicast)
    } else if ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        Some(Refusal::Private)
    } else {
        None
    }
}

/// Why `ip` is refused by its range alone, if it is (private ranges included: the caller
/// decides whether the operator allowed them).
pub fn classify(ip: IpAddr) -> Option<Refusal> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return classify_v4(v4);
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some(Refusal::Loopback)
            } else if v6.is_unspecified() {
                Some(Refusal::Unspecified)
            } else if first & 0xffc0 == 0xfe80 {
                Some(Refusal::LinkLocal)
            } else if v6.is_multicast() {
                Some(Refusal::Multicast)
            } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
                // Unique local (fc00::/7) and the deprecated site-local (fec0::/10).
                Some(Refusal::Private)
            } else {
                None
            }
        }
    }
}

static GATEWAY_PORTS: RwLock<BTreeSet<u16>> = RwLock::new(BTreeSet::new());

/// Adds the gateway's listening ports (see `egress::refuse_gateway_ports`).
pub fn add_gateway_ports(ports: &[u16]) {
    if let Ok(mut set) = GATEWAY_PORTS.write() {
        set.extend(ports.iter().copied());
    }
}

fn is_gateway_port(port: u16) -> bool {
    GATEWAY_PORTS.read().is_ok_and(|set| set.contains(&port))
}

/// Whether `ip` is an address of one of this machine's interfaces (read when asked: addresses
/// come and go).
fn is_local_address(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    local_addresses().contains(&ip)
}

/// The addresses of this machine's interfaces (getifaddrs(3)); empty if it fails, and then a
/// gateway port is refused on every address (see [`check`]).
fn local_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we own into `head`; we read it and free it once.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let node = unsafe { &*cur };
        if !node.ifa_addr.is_null() {
            // SAFETY: ifa_addr points to a sockaddr whose family says its real type.
            let family = i32::from(unsafe { (*node.ifa_addr).sa_family });
            if family == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*(node.ifa_addr as *const libc::sockaddr_in) };
                out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                    sin.sin_addr.s_addr,
                ))));
            } else if family == libc::AF_INET6 {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let sin6 = unsafe { &*(node.ifa_addr as *const libc::sockaddr_in6) };
                out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
            }
        }
        cur = node.ifa_next;
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// Whether the proxy may connect to `ip:port`. `named` is true when the allow entry that let
/// the request through names this very address (an IP literal): then a private address is the
/// operator's choice; `private_ok` is the entry list's `privateNetworks`.
pub fn check(ip: IpAddr, port: u16, named: bool, private_ok: bool) -> Result<(), Refusal> {
    match classify(ip) {
        Some(Refusal::Private) if named || private_ok => {}
        Some(r) => return Err(r),
        None => {}
    }
    if is_gateway_port(port) {
        let local = local_addresses();
        if local.is_empty() || is_local_address(ip) {
            return Err(Refusal::GatewayPort);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Option<Refusal> {
        classify(s.parse().unwrap())
    }

    #[test]
    fn ranges_are_classified_in_both_families_and_mapped_forms() {
        assert_eq!(c("127.0.0.1"), Some(Refusal::Loopback));
        assert_eq!(c("127.255.0.9"), Some(Refusal::Loopback));
        assert_eq!(c("::1"), Some(Refusal::Loopback));
        assert_eq!(c("::ffff:127.0.0.1"), Some(Refusal::Loopback));
        assert_eq!(c("::127.0.0.1"), Some(Refusal::Loopback));
        assert_eq!(c("0.0.0.0"), Some(Refusal::Unspecified));
        assert_eq!(c("0.1.2.3"), Some(Refusal::Unspecified));
        assert_eq!(c("::"), Some(Refusal::Unspecified));
        assert_eq!(c("::ffff:0.0.0.0"), Some(Refusal::Unspecified));
        assert_eq!(c("169.254.169.254"), Some(Refusal::LinkLocal));
        assert_eq!(c("::ffff:169.254.169.254"), Some(Refusal::LinkLocal));
        assert_eq!(c("fe80::1"), Some(Refusal::LinkLocal));
        assert_eq!(c("febf::1"), Some(Refusal::LinkLocal));
        assert_eq!(c("224.0.0.1"), Some(Refusal::Multicast));
        assert_eq!(c("255.255.255.255"), Some(Refusal::Multicast));
        assert_eq!(c("ff02::1"), Some(Refusal::Multicast));
        assert_eq!(c("10.1.2.3"), Some(Refusal::Private));
        assert_eq!(c("172.16.0.1"), Some(Refusal::Private));
        assert_eq!(c("172.31.255.255"), Some(Refusal::Private));
        assert_eq!(c("192.168.1.1"), Some(Refusal::Private));
        assert_eq!(c("100.64.0.1"), Some(Refusal::Private));
        assert_eq!(c("::ffff:10.0.0.1"), Some(Refusal::Private));
        assert_eq!(c("fd00::2"), Some(Refusal::Private));
        assert_eq!(c("fc00::1"), Some(Refusal::Private));
        assert_eq!(c("172.32.0.1"), None);
        assert_eq!(c("100.128.0.1"), None);
        assert_eq!(c("192.0.2.2"), None);
        assert_eq!(c("93.184.216.34"), None);
        assert_eq!(c("2606:4700::1111"), None);
        assert_eq!(c("fe00::1"), None);
    }

    #[test]
    fn private_addresses_pass_only_when_named_or_allowed() {
        let ip: IpAddr = "10.0.0.5".parse().unwrap();
        assert_eq!(check(ip, 443, false, false), Err(Refusal::Private));
        assert_eq!(check(ip, 443, true, false), Ok(()));
        assert_eq!(check(ip, 443, false, true), Ok(()));
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(check(lo, 443, true, true), Err(Refusal::Loopback));
    }

    #[test]
    fn a_gateway_port_is_refused_on_this_machines_addresses_only() {
        add_gateway_ports(&[47_811]);
        let local = local_addresses()
            .into_iter()
            .find(|ip| classify(*ip).is_none() || classify(*ip) == Some(Refusal::Private))
            .expect("this machine has a non-loopback address");
        assert_eq!(check(local, 47_811, true, true), Err(Refusal::GatewayPort));
        assert_eq!(check(local, 47_812, true, true), Ok(()));
        let remote: IpAddr = "198.51.100.7".parse().unwrap();
        assert_eq!(check(remote, 47_811, false, false), Ok(()));
    }
}
