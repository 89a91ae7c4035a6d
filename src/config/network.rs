//! The `network` key of a stdio server entry: no network (the default), the host's network, or
//! a list of `host:port` entries the egress proxy (`tools::egress`) lets the server connect to.
//!
//! ```json
//! "network": "none"                                  // own network namespace, no egress
//! "network": "host"                                  // the host's network (escape hatch)
//! "network": {"allow": ["api.github.com:443", "*.example.org:443"]}
//! "network": {"allow": ["db.internal:5432"], "privateNetworks": true}
//! ```
//!
//! An entry is `name:port`, `*.suffix:port`, `IPv4:port` or `[IPv6]:port`; the port is
//! required (1–65535). `*.example.org` matches every name under `example.org` at any depth
//! (`api.example.org`, `a.b.example.org`) but not `example.org` itself (as a TLS wildcard does
//! not): list the apex too when it is wanted. Names are compared without case and without a
//! trailing dot. The type lives in `config` (the server entry holds it); the proxy that enforces
//! it is `tools::egress`.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;

/// The `network` key of a stdio server entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NetworkPolicy {
    /// Own network namespace, no egress at all (the default, also `"none"`).
    #[default]
    None,
    /// No network namespace: the server has the host's network (`"host"`).
    Host,
    /// Own network namespace; the egress proxy connects to these hosts only.
    Allow(AllowList),
}

/// The hosts a server may connect to through the egress proxy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowList {
    pub entries: Vec<AllowEntry>,
    /// `privateNetworks: true`: names may resolve to private addresses (10/8, 172.16/12,
    /// 192.168/16, 100.64/10, fc00::/7). Without it only an entry that names an IP literal
    /// reaches a private address. Loopback, link-local and unspecified stay refused either way.
    pub private_networks: bool,
}

/// One `host:port` of an allow list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    pub host: HostPattern,
    pub port: u16,
}

/// The host part of an allow entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One name, lowercased, without a trailing dot.
    Name(String),
    /// `*.suffix`: any name ending in `.suffix` (the suffix stored lowercased, without `*.`).
    Suffix(String),
    /// An IP address literal.
    Ip(IpAddr),
}

/// What a client asked to connect to: a name (to resolve at the proxy) or an address literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Name(String),
    Ip(IpAddr),
}

impl Target {
    /// Parses a host as a client gave it (`example.org`, `192.0.2.1`, `[2001:db8::1]`, `::1`).
    pub fn parse(host: &str) -> Target {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match bare.parse::<IpAddr>() {
            Ok(ip) => Target::Ip(ip),
            Err(_) => Target::Name(normalize_name(host)),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Name(n) => f.write_str(n),
            Target::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Target::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl AllowEntry {
    /// Parses `host:port`, `*.suffix:port` or `[v6]:port`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<AllowEntry, String> {
        let bad = |why: &str| {
            format!("network.allow entry '{text}' {why}: write host:port, *.domain:port, IPv4:port or [IPv6]:port (e.g. \"api.github.com:443\")")
        };
        let (host, port) = text.rsplit_once(':').ok_or_else(|| bad("has no port"))?;
        let port: u16 = match port.parse() {
            Ok(p) if p > 0 => p,
            _ => return Err(bad("has a port that is not a number from 1 to 65535")),
        };
        let host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            match v6.parse::<std::net::Ipv6Addr>() {
                Ok(ip) => HostPattern::Ip(IpAddr::V6(ip)),
                Err(_) => return Err(bad("has a bracketed host that is not an IPv6 address")),
            }
        } else if host.contains(':') {
            return Err(bad("has an IPv6 address without brackets"));
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if let Some(suffix) = host.strip_prefix("*.") {
            let suffix = normalize_name(suffix);
            if !is_name(&suffix) {
                return Err(bad("has a wildcard without a domain after '*.'"));
            }
            HostPattern::Suffix(suffix)
        } else {
            let name = normalize_name(host);
            if host.contains('*') {
                return Err(bad("has '*' other than a leading '*.'"));
            }
            if !is_name(&name) {
                return Err(bad("has a host that is not a DNS name"));
            }
            HostPattern::Name(name)
        };
        Ok(AllowEntry { host, port })
    }

    /// Whether this entry lets a client connect to `target` on `port`.
    pub fn matches(&self, target: &Target, port: u16) -> bool {
        if self.port != port {
            return false;
        }
        match (&self.host, target) {
            (HostPattern::Name(n), Target::Name(t)) => n == t,
            (HostPattern::Suffix(s), Target::Name(t)) => t
                .strip_suffix(s.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Ip(a), Target::Ip(b)) => a == b,
            _ => false,
        }
    }
}

/// A DNS name: dot-separated labels of letters, digits, '-' and '_' (1–63 bytes each, 253 in
/// all), no label starting or ending with '-'.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

impl fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Name(n) => write!(f, "{n}:{}", self.port),
            HostPattern::Suffix(s) => write!(f, "*.{s}:{}", self.port),
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            HostPattern::Ip(ip) => write!(f, "{ip}:{}", self.port),
        }
    }
}

impl AllowList {
    /// The first entry that lets a client connect to `target:port`.
    pub fn find(&self, target: &Target, port: u16) -> Option<&AllowEntry> {
        self.entries.iter().find(|e| e.matches(target, port))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowSpec {
    allow: Vec<String>,
    #[serde(default, rename = "privateNetworks")]
    private_networks: bool,
}

impl<'de> Deserialize<'de> for NetworkPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PolicyVisitor;
        impl<'de> Visitor<'de> for PolicyVisitor {
            type Value = NetworkPolicy;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#""none", "host" or {"allow": ["host:port", ...]}"#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NetworkPolicy, E> {
                match v {
                    "none" => Ok(NetworkPolicy::None),
                    "host" => Ok(NetworkPolicy::Host),
                    other => Err(E::custom(format!(
                        r#"network '{other}' is not "none", "host" or {{"allow": ["host:port", ...]}}"#
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NetworkPolicy, A::Error> {
                let spec = AllowSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let entries = spec
                    .allow
                    .iter()
                    .map(|e| AllowEntry::parse(e))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(de::Error::custom)?;
                Ok(NetworkPolicy::Allow(AllowList {
                    entries,
                    private_networks: spec.private_networks,
                }))
            }
        }
        d.deserialize_any(PolicyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(v: serde_json::Value) -> Result<NetworkPolicy, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    fn allows(list: &[&str], host: &str, port: u16) -> bool {
        let entries = list.iter().map(|e| AllowEntry::parse(e).unwrap()).collect();
        AllowList {
            entries,
            private_networks: false,
        }
        .find(&Target::parse(host), port)
        .is_some()
    }

    #[test]
    fn the_three_forms_are_read() {
        assert_eq!(policy(json!("none")), Ok(NetworkPolicy::None));
        assert_eq!(policy(json!("host")), Ok(NetworkPolicy::Host));
        let Ok(NetworkPolicy::Allow(list)) = policy(json!({
            "allow": ["API.GitHub.com.:443", "*.example.org:443", "192.0.2.1:8080", "[2001:db8::1]:443"],
            "privateNetworks": true
        })) else {
            panic!()
        };
        assert!(list.private_networks);
        let shown: Vec<String> = list.entries.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "api.github.com:443",
                "*.example.org:443",
                "192.0.2.1:8080",
                "[2001:db8::1]:443"
            ]
        );
        assert_eq!(NetworkPolicy::default(), NetworkPolicy::None);
    }

    #[test]
    fn bad_values_name_the_bad_pattern() {
        let e = |v| policy(v).unwrap_err();
        assert!(e(json!("open")).starts_with("network 'open' is not \"none\", \"host\""));
        assert!(e(json!({"allow": ["api.github.com"]}))
            .starts_with("network.allow entry 'api.github.com' has no port"));
        assert!(e(json!({"allow": ["a.org:0"]})).contains("'a.org:0' has a port that is not"));
        assert!(e(json!({"allow": ["a.org:99999"]})).contains("'a.org:99999' has a port"));
        assert!(e(json!({"allow": ["*:443"]})).contains("'*:443' has '*' other than"));
        assert!(e(json!({"allow": ["a.*.org:443"]})).contains("has '*' other than"));
        assert!(e(json!({"allow": ["*.:443"]})).contains("has a wildcard without a domain"));
        assert!(e(json!({"allow": ["::1:443"]})).contains("IPv6 address without brackets"));
        assert!(e(json!({"allow": ["[zz]:443"]})).contains("not an IPv6 address"));
        assert!(e(json!({"allow": ["a b:443"]})).contains("not a DNS name"));
        assert!(e(json!({"allow": [], "extra": 1})).contains("unknown field `extra`"));
        assert!(e(json!(3)).contains(r#"expected "none", "host" or {"allow""#));
    }

    #[test]
    fn names_wildcards_and_addresses_match_exactly() {
        let list = [
            "api.github.com:443",
            "*.example.org:443",
            "192.0.2.1:8080",
            "[2001:db8::1]:443",
        ];
        assert!(allows(&list, "api.github.com", 443));
        assert!(allows(&list, "API.GITHUB.COM.", 443));
        assert!(
            !allows(&list, "api.github.com", 80),
            "the port is part of the entry"
        );
        assert!(!allows(&list, "evil-api.github.com", 443));
        assert!(!allows(&list, "api.github.com.evil.net", 443));
        assert!(allows(&list, "a.example.org", 443));
        assert!(allows(&list, "a.b.example.org", 443), "any depth");
        assert!(!allows(&list, "example.org", 443), "not the apex");
        assert!(!allows(&list, "badexample.org", 443));
        assert!(!allows(&list, ".example.org", 443));
        assert!(allows(&list, "192.0.2.1", 8080));
        assert!(!allows(&list, "192.0.2.1", 443));
        assert!(allows(&list, "[2001:db8::1]", 443));
        assert!(allows(&list, "2001:db8:0::1", 443));
        assert!(!allows(&list, "2001:db8::2", 443));
    }
}
