//! Names are resolved here, at the proxy, never inside the sandbox: the addresses checked are
//! the addresses connected to (no second lookup between the check and the connection).
//!
//! Test hook: `MCP_SANDBOX_EGRESS_TEST_RESOLVE="name=ip,name=ip"` in the gateway's environment
//! answers those names with those addresses before the system resolver (the test suite's TLS
//! server listens on a non-loopback address of the machine, which no name resolves to on a CI
//! machine). It is read when a name is looked up; it only adds answers, and every answer is
//! checked like any other (a name mapped to 127.0.0.1 is still refused as loopback).

use std::io;
use std::net::IpAddr;
use std::time::Duration;

/// The environment variable of the test hook.
pub const TEST_RESOLVE_ENV: &str = "MCP_SANDBOX_EGRESS_TEST_RESOLVE";
/// Longest a lookup may take.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most addresses of one name considered.
pub const MAX_ADDRESSES: usize = 32;

fn from_test_hook(name: &str) -> Option<Vec<IpAddr>> {
    let spec = std::env::var(TEST_RESOLVE_ENV).ok()?;
    let found: Vec<IpAddr> = spec
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .filter_map(|(_, ip)| ip.trim().parse().ok())
        .collect();
    (!found.is_empty()).then_some(found)
}

/// The addresses of `name` (deduplicated, at most [`MAX_ADDRESSES`]).
pub async fn resolve(name: &str, port: u16) -> io::Result<Vec<IpAddr>> {
    if let Some(found) = from_test_hook(name) {
        return Ok(found);
    }
    let lookup = tokio::net::lookup_host((name, port));
    let addrs = tokio::time::timeout(RESOLVE_TIMEOUT, lookup)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "lookup timed out"))??;
    let mut out: Vec<IpAddr> = Vec::new();
    for a in addrs {
        if !out.contains(&a.ip()) && out.len() < MAX_ADDRESSES {
            out.push(a.ip());
        }
    }
    if out.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no address"));
    }
    Ok(out)
}
