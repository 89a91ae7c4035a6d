//! `DELETE /mcp` (a client ending its session) answers `200 OK`. rmcp 3.9 answers `202
//! Accepted`, which the official SDKs do not take for a success (the Python SDK logs "Session
//! termination failed: 202" on every close); the session is closed by then, so the answer says
//! so plainly.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The middleware: a `202` to a `DELETE` becomes a `200` (its body is empty either way).
pub(super) async fn session_delete_answer(request: Request, next: Next) -> Response {
    let delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}
