//! One accepted connection (plain or TLS): HTTP/1.1 until it ends or the server stops, a
//! write that stalls ends it; connections over the cap get a polite 503.

use super::*;
use axum::body::Body;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Serves HTTP/1.1 on one accepted connection (plain or TLS) until it ends or `stop` fires.
pub(super) async fn serve_connection<S>(
    stream: S,
    peer: SocketAddr,
    router: axum::Router,
    opts: HttpOptions,
    stop: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ClientAddr(peer.ip()));
        router.clone().oneshot(req.map(Body::new))
    });
    let io = TokioIo::new(StallGuard::new(stream, opts.write_timeout));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(io, svc);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!("connection from {peer} ended: {e}");
            }
        }
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(TRANSPORT_CLOSE, conn).await;
        }
    }
}

/// A connection whose writes may not wait for the client longer than a timeout: a client that
/// does not read its answers loses the connection (and what was buffered for it).
pub(super) struct StallGuard<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StallGuard<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        StallGuard {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Called when a write is pending: errors once the stall has lasted the timeout.
    fn check_stall(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        let timeout = self.timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client did not read for {timeout:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Pending => self.check_stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.check_stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// How many over-the-cap connections get their 503 at once; past it they are closed at once.
pub(super) const REFUSALS_AT_ONCE: usize = 256;

/// Answers 503 to a connection over the cap and closes it without a reset: the request the
/// client already sent is read and dropped (for at most a second and 64 KiB) after our FIN, since
/// closing a socket with unread data sends an RST that can destroy the 503 before the client
/// reads it.
pub(super) async fn refuse_busy(
    mut stream: tokio::net::TcpStream,
    _refusal: tokio::sync::OwnedSemaphorePermit,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 5\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    let polite = async {
        stream.write_all(BUSY).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut left = 64 * 1024usize;
        while left > 0 {
            let n = stream.read(&mut sink).await?;
            if n == 0 {
                break;
            }
            left = left.saturating_sub(n);
        }
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), polite).await;
}
