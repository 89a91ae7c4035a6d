//! `GET /healthz`: the liveness answer of probes (Kubernetes, systemd, load balancers). It needs
//! no credential and names nothing: the gateway's listener is up and its event loop answers.
//! Whether the runner's isolation holds is `mcp-sandbox check` (the image's healthcheck and the
//! Kubernetes startup probe), not this.

use axum::response::IntoResponse;

/// The body of a healthy answer.
pub const HEALTHY: &str = "ok\n";

/// `200 ok`, as plain text.
pub async fn answer() -> impl IntoResponse {
    ([("content-type", "text/plain; charset=utf-8")], HEALTHY)
}
