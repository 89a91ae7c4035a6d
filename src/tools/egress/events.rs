//! What the proxy saw: every connection as a `tracing` event (target `mcp_sandbox::egress`),
//! counted per server and outcome (read by `telemetry::metrics` as
//! `mcp_sandbox_egress_connections_total`), and the refused ones kept in a bounded ring of this
//! process (the web view's "Refused connections"). The counts and the ring are per gateway
//! process: they start empty when it starts.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::SystemTime;

/// Refused connections kept for the web view.
pub const RING_CAPACITY: usize = 200;
/// Distinct servers counted at most; past it, new ones count as `_other`.
pub const MAX_SERVER_SERIES: usize = 1000;

/// How one connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// Connected and relayed until either side closed.
    Allowed,
    /// Refused by the allow list, an address range or the gateway's ports.
    Refused,
    /// Allowed, but the destination could not be resolved or connected to.
    Failed,
    /// The client spoke neither HTTP nor SOCKS5 properly, too slowly or too much.
    BadRequest,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
            Outcome::BadRequest => "bad_request",
        }
    }
}

/// One connection as the trace, the metrics and the ring see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub server: String,
    pub tenant: Option<String>,
    pub principal: Option<String>,
    /// What the client asked for (a name or an address literal); empty when it never said.
    pub host: String,
    pub port: u16,
    /// The address connected to (or the first refused), when one was resolved.
    pub address: Option<String>,
    pub outcome: Outcome,
    /// Why it was refused or failed (`not_allowed`, `loopback`, `link_local`, `private`,
    /// `gateway_port`, `resolve_failed`, ...); empty when allowed.
    pub reason: String,
    /// Bytes from the server to the destination, and back.
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub at: SystemTime,
}

#[derive(Default)]
struct Book {
    counts: BTreeMap<(String, Outcome), u64>,
    /// Bytes relayed per server: (up, down).
    bytes: BTreeMap<String, (u64, u64)>,
    servers: std::collections::BTreeSet<String>,
    refused: VecDeque<Connection>,
}

static BOOK: Mutex<Book> = Mutex::new(Book {
    counts: BTreeMap::new(),
    bytes: BTreeMap::new(),
    servers: std::collections::BTreeSet::new(),
    refused: VecDeque::new(),
});

/// Traces, counts and (when refused) keeps one finished connection.
pub fn record(c: Connection) {
    let tenant = c.tenant.as_deref().unwrap_or("");
    let principal = c.principal.as_deref().unwrap_or("");
    let address = c.address.as_deref().unwrap_or("");
    match c.outcome {
        Outcome::Allowed => tracing::info!(
            target: "mcp_sandbox::egress",
            server = %c.server, tenant, principal, host = %c.host, port = c.port, address,
            outcome = c.outcome.as_str(), bytes_up = c.bytes_up, bytes_down = c.bytes_down,
            "egress connection"
        ),
        _ => tracing::warn!(
            target: "mcp_sandbox::egress",
            server = %c.server, tenant, principal, host = %c.host, port = c.port, address,
            outcome = c.outcome.as_str(), reason = %c.reason,
            bytes_up = c.bytes_up, bytes_down = c.bytes_down,
            "egress connection refused or failed"
        ),
    }
    let Ok(mut book) = BOOK.lock() else {
        return;
    };
    let server = if book.servers.contains(&c.server) || book.servers.len() < MAX_SERVER_SERIES {
        book.servers.insert(c.server.clone());
        c.server.clone()
    } else {
        "_other".to_string()
    };
    let bytes = book.bytes.entry(server.clone()).or_insert((0, 0));
    bytes.0 += c.bytes_up;
    bytes.1 += c.bytes_down;
    *book.counts.entry((server, c.outcome)).or_insert(0) += 1;
    if c.outcome == Outcome::Refused {
        if book.refused.len() >= RING_CAPACITY {
            book.refused.pop_front();
        }
        book.refused.push_back(c);
    }
}

/// Connections counted so far: `(server, outcome, total)`.
pub fn counts() -> Vec<(String, &'static str, u64)> {
    BOOK.lock()
        .map(|b| {
            b.counts
                .iter()
                .map(|((s, o), n)| (s.clone(), o.as_str(), *n))
                .collect()
        })
        .unwrap_or_default()
}

/// Bytes relayed so far: `(server, up, down)`.
pub fn bytes() -> Vec<(String, u64, u64)> {
    BOOK.lock()
        .map(|b| {
            b.bytes
                .iter()
                .map(|(s, (u, d))| (s.clone(), *u, *d))
                .collect()
        })
        .unwrap_or_default()
}

/// The refused connections kept, newest first.
pub fn recent_refused() -> Vec<Connection> {
    BOOK.lock()
        .map(|b| b.refused.iter().rev().cloned().collect())
        .unwrap_or_default()
}
