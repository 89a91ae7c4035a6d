//! `/metrics`: the Prometheus metrics (`telemetry::metrics`) in the OpenMetrics text format, on
//! `serve --http`'s own listener (behind its guard: with `sandbox.auth` a scrape needs a
//! credential, like any request) or, for the stdio server, on `--metrics ADDR` (loopback only,
//! since it has no authentication of its own).

use crate::front::cli::UsageError;
use crate::sandbox::Sandbox;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use tokio_util::sync::CancellationToken;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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
    // Scripts and tests read this line to find the port when ADDR ends in :0.
    eprintln!("mcp-sandbox: serving metrics at http://{bound}/metrics");
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || answer(sandbox.clone())),
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
