//! One server process's proxy: accepts on its Unix socket, tells SOCKS5 (first byte 0x05) from
//! HTTP, decides (allow list, then every resolved address), connects to a checked address and
//! relays. Bounded: the handshake (head, lookup and connect) in [`HANDSHAKE_TIMEOUT`], the
//! head in `http_connect::MAX_HEAD_BYTES`, [`MAX_CONNECTIONS`] at once.

use super::classify;
use super::events::{self, Connection, Outcome};
use super::{http_connect, resolve, socks5};
use crate::config::network::{AllowList, Target};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Longest time from accepting a connection to relaying it (request, lookup, connect).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest time for connecting to one resolved address.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections of one server process relayed or being set up at once; more are refused.
pub const MAX_CONNECTIONS: usize = 64;

/// Who the proxy serves and what it lets through.
pub struct Context {
    pub server: String,
    pub tenant: Option<String>,
    pub principal: Option<String>,
    pub allow: AllowList,
    /// The server connection's passthrough routes, once attached (`EgressGuard::report_to`):
    /// a refusal is also a log line of the execution with a call open to the server.
    pub report: std::sync::OnceLock<Arc<crate::tools::passthrough::Routes>>,
}

impl Context {
    /// Tells the execution that has a call open to this server (if exactly one caller has)
    /// that a connection was refused, as a `warn` log line of the server.
    fn report(&self, c: &Connection) {
        let Some(routes) = self.report.get() else {
            return;
        };
        #[allow(deprecated)]
        let param = rmcp::model::LoggingMessageNotificationParam::new(
            rmcp::model::LoggingLevel::Warning,
            serde_json::Value::String(format!(
                "connection to {}:{} refused ({})",
                c.host, c.port, c.reason
            )),
        )
        .with_logger(REPORT_LOGGER);
        routes.on_log(&self.server, param, None);
    }
}

/// The `logger` of the log line a refusal adds to the execution in flight.
pub const REPORT_LOGGER: &str = "mcp-sandbox egress";

/// Accepts until `stop` is cancelled; each connection runs until it ends or `stop`.
pub async fn serve(listener: UnixListener, ctx: Arc<Context>, stop: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(target: "mcp_sandbox::egress", server = %ctx.server, error = %e, "egress accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let ctx = ctx.clone();
        let stop = stop.clone();
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            let mut c = connection(&ctx, "", 0);
            c.outcome = Outcome::Refused;
            c.reason = format!("too_many_connections (>{MAX_CONNECTIONS})");
            events::record(c);
            drop(stream);
            continue;
        };
        tokio::spawn(async move {
            let _permit = permit;
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = handle(stream, &ctx) => {}
            }
        });
    }
}

fn connection(ctx: &Context, host: &str, port: u16) -> Connection {
    Connection {
        server: ctx.server.clone(),
        tenant: ctx.tenant.clone(),
        principal: ctx.principal.clone(),
        host: host.to_string(),
        port,
        address: None,
        outcome: Outcome::Allowed,
        reason: String::new(),
        bytes_up: 0,
        bytes_down: 0,
        at: SystemTime::now(),
    }
}

/// The protocol a client spoke, for its answer.
enum Proto {
    Socks,
    Http { connect: bool },
}

/// The decision for one request: the connected upstream, or why not.
enum Decision {
    Connected(TcpStream, SocketAddr),
    /// Refused, with the address concerned when it was an address that was refused.
    Refused {
        reason: &'static str,
        address: Option<IpAddr>,
    },
    Failed(&'static str),
}

async fn handle(mut client: UnixStream, ctx: &Context) {
    let mut record = connection(ctx, "", 0);
    let setup = tokio::time::timeout(HANDSHAKE_TIMEOUT, setup(&mut client, ctx, &mut record)).await;
    let (upstream, pending) = match setup {
        Ok(Some(v)) => v,
        Ok(None) => return events::record(record),
        Err(_) => {
            record.outcome = Outcome::BadRequest;
            record.reason = "handshake_timeout".into();
            return events::record(record);
        }
    };
    let up = Arc::new(AtomicU64::new(0));
    let down = Arc::new(AtomicU64::new(0));
    let mut upstream = Counted::new(upstream, up.clone(), down.clone());
    let mut result = Ok(());
    if !pending.is_empty() {
        result = upstream.write_all(&pending).await;
    }
    if result.is_ok() {
        result = tokio::io::copy_bidirectional(&mut client, &mut upstream)
            .await
            .map(|_| ());
    }
    record.bytes_up = up.load(Ordering::Relaxed);
    record.bytes_down = down.load(Ordering::Relaxed);
    if let Err(e) = result {
        // The relay ended on an error (a reset); what went through is counted.
        record.reason = format!("relay ended: {}", e.kind());
    }
    events::record(record);
}

/// Reads the request, decides, answers the client; returns the upstream and the bytes to send
/// it first, or `None` when the connection ends here (the record says why).
async fn setup(
    client: &mut UnixStream,
    ctx: &Context,
    record: &mut Connection,
) -> Option<(TcpStream, Vec<u8>)> {
    let first = match client.read_u8().await {
        Ok(b) => b,
        Err(_) => {
            record.outcome = Outcome::BadRequest;
            record.reason = "closed_before_request".into();
            return None;
        }
    };
    let (proto, host, port, pending) = if first == 0x05 {
        match socks5::handshake(client).await {
            Ok(r) => (Proto::Socks, r.host, r.port, Vec::new()),
            Err(e) => {
                record.outcome = Outcome::BadRequest;
                record.reason = format!("socks5: {e}");
                return None;
            }
        }
    } else {
        match http_connect::read_request(client, first).await {
            Ok(r) => {
                let mut pending = r.forward_head;
                pending.extend_from_slice(&r.rest);
                (
                    Proto::Http {
                        connect: r.is_connect,
                    },
                    r.host,
                    r.port,
                    pending,
                )
            }
            Err(e) => {
                record.outcome = Outcome::BadRequest;
                record.reason = format!("http: {e}");
                let _ = http_connect::refuse(client, "400 Bad Request", &e.to_string()).await;
                return None;
            }
        }
    };
    record.host = host.clone();
    record.port = port;
    let decision = decide(ctx, &host, port).await;
    if let Decision::Refused { reason, .. } = &decision {
        record.outcome = Outcome::Refused;
        record.reason = (*reason).into();
        // Before the answer: the server learns of the refusal (and may end its call) only
        // after the execution calling it has the log line.
        ctx.report(record);
    }
    let answer = match (&proto, &decision) {
        (Proto::Socks, Decision::Connected(..)) => socks5::reply(client, socks5::REPLY_OK).await,
        (Proto::Socks, Decision::Refused { .. }) => {
            socks5::reply(client, socks5::REPLY_NOT_ALLOWED).await
        }
        (Proto::Socks, Decision::Failed(_)) => {
            socks5::reply(client, socks5::REPLY_HOST_UNREACHABLE).await
        }
        (Proto::Http { connect: true }, Decision::Connected(..)) => {
            http_connect::established(client).await
        }
        (Proto::Http { .. }, Decision::Connected(..)) => Ok(()),
        (Proto::Http { .. }, Decision::Refused { reason, .. }) => {
            let why = format!(
                "{host}:{port} is refused ({reason}); the server's network.allow list decides"
            );
            http_connect::refuse(client, "403 Forbidden", &why).await
        }
        (Proto::Http { .. }, Decision::Failed(why)) => {
            http_connect::refuse(client, "502 Bad Gateway", &format!("{host}:{port}: {why}")).await
        }
    };
    match decision {
        Decision::Connected(stream, addr) => {
            record.address = Some(addr.ip().to_string());
            if answer.is_err() {
                record.outcome = Outcome::BadRequest;
                record.reason = "client_gone".into();
                return None;
            }
            Some((stream, pending))
        }
        Decision::Refused { reason, address } => {
            record.outcome = Outcome::Refused;
            record.reason = reason.into();
            record.address = address.map(|a| a.to_string());
            None
        }
        Decision::Failed(why) => {
            record.outcome = Outcome::Failed;
            record.reason = why.into();
            None
        }
    }
}

/// The allow list first, then every address the name resolves to; connects to a checked one.
async fn decide(ctx: &Context, host: &str, port: u16) -> Decision {
    let target = Target::parse(host);
    if ctx.allow.find(&target, port).is_none() {
        return Decision::Refused {
            reason: "not_allowed",
            address: None,
        };
    }
    let (addresses, named) = match &target {
        Target::Ip(ip) => (vec![*ip], true),
        Target::Name(name) => match resolve::resolve(name, port).await {
            Ok(a) => (a, false),
            Err(_) => return Decision::Failed("resolve_failed"),
        },
    };
    for ip in &addresses {
        if let Err(r) = classify::check(*ip, port, named, ctx.allow.private_networks) {
            return Decision::Refused {
                reason: r.as_str(),
                address: Some(*ip),
            };
        }
    }
    for ip in addresses {
        let addr = SocketAddr::new(ip, port);
        if let Ok(Ok(s)) = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            return Decision::Connected(s, addr);
        }
    }
    Decision::Failed("connect_failed")
}

/// The upstream stream, counting bytes written (up) and read (down) as they pass.
struct Counted {
    inner: TcpStream,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
}

impl Counted {
    fn new(inner: TcpStream, up: Arc<AtomicU64>, down: Arc<AtomicU64>) -> Self {
        Counted { inner, up, down }
    }
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.down.fetch_add(n as u64, Ordering::Relaxed);
        r
    }
}

impl tokio::io::AsyncWrite for Counted {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &r {
            self.up.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
