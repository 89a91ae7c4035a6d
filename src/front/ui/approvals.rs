//! Pending approvals on the web view: `GET /ui/api/approvals` lists the questions the caller may
//! answer; `POST /ui/api/approvals` answers one with `{"id", "decision", "reason"?}` (`decision`:
//! `approve`, `approve_for_execution` or `deny`).
//!
//! Who may answer a question: a principal with `"approve": true` (or an operator) in one of its
//! policies, for questions of its own tenant (an operator: every tenant), never a question of its
//! own execution unless a policy says `"approve_own_calls": true`. Without authentication the
//! person at the page (loopback only) may answer every question.
//!
//! The POST is refused from another origin: a browser's `Origin` (and `Sec-Fetch-Site`) must
//! name this server's own `Host`, and the body must be JSON (`Content-Type: application/json`),
//! which a page elsewhere cannot send here without a CORS preflight this server never grants.
//!
//! With several gateways on one PostgreSQL database, the list holds the questions of every live
//! gateway, and an answer through any gateway reaches the one whose execution asks
//! (`gate::pending::shared`).
//!
//! Errors: `400 UI_BAD_REQUEST` (body), `415 UI_BAD_REQUEST` (content type), `403
//! UI_CROSS_ORIGIN`, `403 PERMISSION_DENIED` (may not answer this one), `404 APPROVAL_NOT_FOUND`
//! (never asked, answered already, timed out, its execution ended, its gateway stopped — or
//! another tenant's, which is answered like a missing one), `503 UI_STORE_ERROR` (the state
//! store, which holds other gateways' questions, failed).

use super::viewer::{refuse, viewer, Ui, UiAccess, Viewer};
use crate::gate::approval::Answer;
use crate::gate::pending::{AnswerError, PendingApprovals, PendingQuestion, WebAnswer};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// An answer's body is refused past this many bytes.
pub const MAX_ANSWER_BYTES: usize = 8 * 1024;
/// The body must arrive within this time.
const BODY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    id: String,
    decision: Decision,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    ApproveForExecution,
    Deny,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::ApproveForExecution => "approve_for_execution",
            Decision::Deny => "deny",
        }
    }
}

fn pending(ui: &Ui) -> Option<&Arc<PendingApprovals>> {
    match &ui.access {
        UiAccess::Gateway { pending, .. } => pending.as_ref(),
        UiAccess::Local => None,
    }
}

/// Whether `v` may answer `q`: `Err` says why not.
fn may_answer(v: &Viewer, q: &PendingQuestion) -> Result<(), AnswerError> {
    if !v.approve {
        return Err(AnswerError::Forbidden(format!(
            "{} may not answer approvals: a token or JWT principal needs a policy with \"approve\": true (or \"operator\": true); ask the operator",
            v.principal.name
        )));
    }
    // Another tenant's question is answered like a missing one (as its executions are).
    if !v.operator && q.tenant != v.principal.tenant {
        return Err(AnswerError::NotFound(q.id.clone()));
    }
    if q.principal == v.principal.name && !v.approve_own {
        return Err(AnswerError::Forbidden(format!(
            "{} may not approve its own execution's calls; another approver must answer (or a policy says \"approve_own_calls\": true)",
            v.principal.name
        )));
    }
    Ok(())
}

pub(super) async fn list(State(ui): State<Ui>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    // With several gateways on one PostgreSQL, every live gateway's questions (see
    // `gate::pending::shared`); an operator's list spans every tenant.
    let tenant = (!v.operator).then(|| v.principal.tenant.clone());
    let questions = match pending(&ui) {
        Some(p) => p.list_anywhere(tenant, |q| may_answer(&v, q).is_ok()).await,
        None => Vec::new(),
    };
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        json!({"approve": v.approve && pending(&ui).is_some(), "approvals": questions}).to_string(),
    )
        .into_response()
}

/// The authority (`host[:port]`) of an `Origin` value, lower-cased.
fn origin_authority(origin: &str) -> Option<String> {
    let rest = origin.split_once("://")?.1;
    (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_ascii_lowercase())
}

/// `Err` when the request comes from a page of another origin.
pub(super) fn same_origin(headers: &HeaderMap) -> Result<(), Box<Response>> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let cross = |why: String| {
        Box::new(refuse(
            StatusCode::FORBIDDEN,
            "UI_CROSS_ORIGIN",
            &format!("{why}; answer approvals from this server's own page (/ui)"),
        ))
    };
    if let Some(site) = text("sec-fetch-site") {
        if site != "same-origin" && site != "none" {
            return Err(cross(format!("the request came from a {site} page")));
        }
    }
    if let Some(origin) = text("origin") {
        let host = text("host").unwrap_or("").to_ascii_lowercase();
        if origin_authority(origin).as_deref() != Some(host.as_str()) {
            return Err(cross(format!(
                "the request's Origin ({origin}) is not this server"
            )));
        }
    }
    Ok(())
}

pub(super) async fn answer(State(ui): State<Ui>, req: Request) -> Response {
    if let Err(r) = same_origin(req.headers()) {
        return *r;
    }
    let json_body = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json_body {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UI_BAD_REQUEST",
            "send the answer as JSON (Content-Type: application/json)",
        );
    }
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let bad = |why: String| {
        refuse(
            StatusCode::BAD_REQUEST,
            "UI_BAD_REQUEST",
            &format!("{why}; send {{\"id\": \"...\", \"decision\": \"approve\" | \"approve_for_execution\" | \"deny\", \"reason\": \"...\"}}"),
        )
    };
    let read = axum::body::to_bytes(req.into_body(), MAX_ANSWER_BYTES);
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return bad(format!("the body is over {MAX_ANSWER_BYTES} bytes")),
        Err(_) => return bad("the body did not arrive in time".into()),
    };
    let body: AnswerBody = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => return bad(format!("the body is not a valid answer ({e})")),
    };
    let Some(pending) = pending(&ui) else {
        return refuse(
            StatusCode::NOT_FOUND,
            "APPROVAL_NOT_FOUND",
            "this server asks no approvals on the web view (`mcp-sandbox ui` shows a store only; questions wait on serve --http)",
        );
    };
    let decision = body.decision;
    let web = WebAnswer {
        answer: match decision {
            Decision::Approve => Answer::Once,
            Decision::ApproveForExecution => Answer::ToolForExecution,
            Decision::Deny => Answer::Deny(body.reason),
        },
        principal: v.principal.name.clone(),
        by: crate::gate::approval::By::Web,
    };
    match pending
        .answer_anywhere(&body.id, |q| may_answer(&v, q), web)
        .await
    {
        Ok(q) => {
            tracing::info!(
                "approval {} of {} answered on the web view by {}: {}",
                q.id,
                q.tool,
                v.principal.name,
                decision.as_str()
            );
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                json!({"id": q.id, "tool": q.tool, "execution_id": q.execution_id, "decision": decision.as_str(), "by": v.principal.name}).to_string(),
            )
                .into_response()
        }
        Err(e @ AnswerError::NotFound(_)) => refuse(
            StatusCode::NOT_FOUND,
            "APPROVAL_NOT_FOUND",
            &format!("{e}; reload the list (GET /ui/api/approvals)"),
        ),
        Err(AnswerError::Forbidden(why)) => {
            refuse(StatusCode::FORBIDDEN, "PERMISSION_DENIED", &why)
        }
        Err(e @ AnswerError::Store(_)) => {
            tracing::warn!("web view: {e}");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "UI_STORE_ERROR",
                &format!("{e}; the question may belong to another gateway: retry, or answer it on the gateway that asks it"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::origin_authority;

    #[test]
    fn origin_authorities() {
        assert_eq!(
            origin_authority("http://127.0.0.1:8080").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(origin_authority("null"), None);
        assert_eq!(origin_authority("http://evil.example/x"), None);
    }
}
