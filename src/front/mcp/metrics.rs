//! `/metrics`: the Prometheus metrics (`telemetry::metrics`) in the OpenMetrics text format, on
//! `serve --http`'s own listener (behind its guard: with `sandbox.auth` a scrape needs a
//! credential, like any request) or, for the stdio server, on `--metrics ADDR` (loopback only,
//! since it has no authentication of its own). Both answer only to a `Host` naming the listener
//! (loopback names, or the address a remote bind uses), as `/mcp` does.

use crate::front::cli::UsageError;
use crate::sandbox::Sandbox;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use tokio_util::sync::CancellationToken;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `Host` names a loopback listener answers to (as rmcp's default for `/mcp`).
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Whether the `Host` header `host` names one of `allowed` (a name, or a name and port): the
/// check `/mcp` makes against DNS rebinding, so a web page whose name resolves to this machine
/// cannot read the metrics.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Ok(authority) = axum::http::uri::Authority::try_from(host.trim()) else {
        return false;
    };
    let norm = |h: &str| h.trim_matches(['[', ']']).to_ascii_lowercase();
    let (name, port) = (norm(authority.host()), authority.port_u16());
    allowed.iter().any(|a| {
        let (a_name, a_port) = match axum::http::uri::Authority::try_from(a.trim()) {
            Ok(x) => (norm(x.host()), x.port_u16()),
            Err(_) => (norm(a), None),
        };
        a_name == name && a_port.is_none_or(|p| Some(p) == port)
    })
}

/// The answer to `GET /metrics` with `headers`: the metrics when `Host` is one of `allowed`.
pub async fn answer_to(
    sandbox: Sandbox,
    headers: &axum::http::HeaderMap,
    allowed: &[String],
) -> Response {
    let host = headers
        .get("host")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !host_allowed(host, allowed) {
        return (
            StatusCode::FORBIDDEN,
            "METRICS_HOST_REFUSED: /metrics answers only to a Host naming this listener (localhost, 127.0.0.1, [::1], or the address it is bound to); scrape it by that address\n",
        )
            .into_response();
    }
    answer(sandbox).await
}

/// The answer to `GET /metrics`.
pub async fn answer(sandbox: Sandbox) -> Response {
    match sandbox.render_metrics() {
        Some(text) => ([("content-type", CONTENT_TYPE)], text).into_response(),
        None => (StatusCode::NOT_FOUND, "metrics are off\n").into_response(),
    }
}

/// Serves `GET /metrics` at `addr` (a loopback address) until `stop`.
pub async fn serve(
    addr: SocketAddr,
    sandbox: Sandbox,
    stop: CancellationToken,
) -> Result<(), UsageError> {
    if !addr.ip().is_loopback() {
        return Err(UsageError(format!(
            "--metrics {addr}: the stdio server's metrics listener has no authentication, so it binds loopback addresses only (e.g. 127.0.0.1:9464); scrape through a local agent, or use serve --http with sandbox.auth"
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| UsageError(format!("--metrics: cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().unwrap_or(addr);
    // Confined servers' egress proxies refuse the gateway's own ports (issue 59).
    crate::tools::egress::refuse_gateway_ports(&[bound.port()]);
    // Scripts and tests read this line to find the port when ADDR ends in :0.
    eprintln!("mcp-sandbox: serving metrics at http://{bound}/metrics");
    let allowed: std::sync::Arc<[String]> = LOOPBACK_HOSTS.map(String::from).into();
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let (sandbox, allowed) = (sandbox.clone(), allowed.clone());
            async move { answer_to(sandbox, &headers, &allowed).await }
        }),
    );
    tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!("the metrics listener stopped: {e}");
        }
    });
    Ok(())
}
