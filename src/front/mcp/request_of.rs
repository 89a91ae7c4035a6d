//! What a request says about itself: its HTTP session header, protocol era, answer key, client
//! identity and capabilities, and its principal.

use super::{handles, responses, sessions};
use crate::context::principal::{Caller, Principal};
use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use std::sync::Arc;

/// The `Mcp-Session-Id` of an HTTP request (`None` over stdio).
pub(super) fn session_header(context: &RequestContext<RoleServer>) -> Option<&str> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get(sessions::SESSION_HEADER))
        .and_then(|v| v.to_str().ok())
}

/// Whether a request speaks MCP 2026-07-28 or later (its `_meta` names the version): there is
/// no session, and the server cannot send the client requests (elicitation, sampling).
pub(super) fn speaks_2026(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The key of a request's answer in the response budget: released once it is written.
pub(super) fn answer_key(context: &RequestContext<RoleServer>) -> responses::AnswerKey {
    let over_http = context
        .extensions
        .get::<axum::http::request::Parts>()
        .is_some();
    (
        session_header(context)
            .unwrap_or(if over_http { "http" } else { "stdio" })
            .to_string(),
        serde_json::to_string(&context.id).unwrap_or_default(),
    )
}

/// The client's name and version as it gave them: in each request's `_meta` (MCP 2026-07-28,
/// `io.modelcontextprotocol/clientInfo`), or in `initialize` (legacy).
pub(super) fn client_identity(context: &RequestContext<RoleServer>) -> (String, String) {
    // The request's own `_meta` first: on the 2026-07-28 path rmcp gives the handler a
    // stand-in peer (it has no `initialize` to read).
    let info = context
        .meta
        .client_info()
        .or_else(|| context.peer.peer_info().map(|i| i.client_info.clone()));
    info.map(|i| (i.name, i.version)).unwrap_or_default()
}

/// Who sends a request: the principal, its tenant, the client's name and the front.
pub(super) fn caller_of(
    context: &RequestContext<RoleServer>,
    over_http: bool,
    principal: &Principal,
) -> Caller {
    let (name, _) = client_identity(context);
    Caller::of(
        principal,
        (!name.is_empty()).then_some(name),
        if over_http { "http" } else { "stdio" },
    )
}

/// Whether the client declared the `elicitation` capability: in the request's `_meta` (MCP
/// 2026-07-28, where each request carries them), else in `initialize`.
pub(super) fn declares_elicitation(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some())
}

/// `response`, whose complete result names the session handle (if any).
pub(super) fn named_in(response: CallToolResponse, handle: Option<&str>) -> CallToolResponse {
    match response {
        CallToolResponse::Complete(r) => handles::name_in(r, handle).into(),
        other => other,
    }
}

/// The principal of a request: the HTTP front put the authenticated one on it; stdio is local.
pub(super) fn principal_of(context: &RequestContext<RoleServer>) -> Arc<Principal> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<Arc<Principal>>())
        .cloned()
        .unwrap_or_else(|| Arc::new(Principal::local()))
}
