//! A principal's data-flow labels on the web view (MCP 2026-07-28 clients: the labels of a
//! principal's sessionless executions stay with it, `front::mcp::handles`).
//!
//! - `GET /ui/api/labels?principal=P&tenant=T`: the labels, each with the tool and the execution
//!   that read it. Without `principal`: the viewer's own. Another principal's: an operator only
//!   (`403 UI_FORBIDDEN`); another tenant's as for every read of the view.
//! - `POST /ui/api/labels/clear` `{"principal": P, "tenant"?: T}`: forgets them, written to the
//!   audit log as a record of the operator (front `ui`). An operator only; the same same-origin
//!   and JSON-body rules as answering an approval.

use super::viewer::{refuse, viewer, Ui, Viewer};
use crate::context::session::SessionScope;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

const MAX_BODY_BYTES: usize = 4 * 1024;

fn forbidden() -> Response {
    refuse(
        StatusCode::FORBIDDEN,
        "UI_FORBIDDEN",
        "only an operator (a policy with \"operator\": true) sees or clears another principal's labels",
    )
}

/// `(tenant, principal)` the viewer asks about, if it may.
fn target(
    v: &Viewer,
    principal: Option<&str>,
    tenant: Option<&str>,
) -> Result<(String, String), Box<Response>> {
    let tenant = v.tenant(tenant)?;
    let principal = principal.unwrap_or(&v.principal.name).to_string();
    if !v.operator && (principal != v.principal.name || tenant != v.principal.tenant) {
        return Err(Box::new(forbidden()));
    }
    Ok((tenant, principal))
}

fn json_answer(value: serde_json::Value) -> Response {
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn store_failed(e: crate::store::StoreError) -> Response {
    tracing::warn!("web view: labels: {e}");
    refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        "UI_STORE_ERROR",
        "the state store failed; retry",
    )
}

pub(super) async fn show(State(ui): State<Ui>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let q = super::viewer::params(&req);
    let (tenant, principal) = match target(
        &v,
        q.get("principal").map(String::as_str),
        q.get("tenant").map(String::as_str),
    ) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    let scope = SessionScope::labels_of_principal(&tenant, &principal);
    // Within the viewer's read bounds, as every read of the view.
    super::viewer::query(&ui, &v, move |s| {
        let labels = s.session_labels(&scope)?;
        Ok(json!({"principal": principal, "tenant": tenant, "labels": labels}))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClearBody {
    principal: String,
    #[serde(default)]
    tenant: Option<String>,
}

pub(super) async fn clear(State(ui): State<Ui>, req: Request) -> Response {
    if let Err(r) = super::approvals::same_origin(req.headers()) {
        return *r;
    }
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    if !v.operator {
        return forbidden();
    }
    let bad = |why: String| {
        refuse(
            StatusCode::BAD_REQUEST,
            "UI_BAD_REQUEST",
            &format!("{why}; send {{\"principal\": \"token:NAME\", \"tenant\": \"...\"}} as JSON"),
        )
    };
    let bytes = match axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => return bad(format!("the body is over {MAX_BODY_BYTES} bytes")),
    };
    let body: ClearBody = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => return bad(format!("the body is not valid ({e})")),
    };
    let (tenant, principal) = match target(&v, Some(&body.principal), body.tenant.as_deref()) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    let Some(writer) = ui.writer.clone() else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "UI_STORE_ERROR",
            "this view cannot write to the state store",
        );
    };
    let scope = SessionScope::labels_of_principal(&tenant, &principal);
    let by = v.principal.name.clone();
    let what = format!("labels clear --principal {principal} --tenant {tenant} (web view)");
    match writer
        .run(move |s| s.clear_labels_on_record(&scope, &by, "ui", what))
        .await
    {
        Ok(cleared) => {
            json_answer(json!({"principal": principal, "tenant": tenant, "cleared": cleared}))
        }
        Err(e) => store_failed(e),
    }
}
