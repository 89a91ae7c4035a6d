//! What every route of the web view shares: who is asking ([`Viewer`], from the request and the
//! view's [`UiAccess`]), the JSON error, the security headers, and a read run within the
//! viewer's bounds. The router (`routes.rs`) and the API files (`approvals`, `labels`, `egress`)
//! import this file and not each other's.

use crate::config::gateway::PrincipalPolicy;
use crate::context::principal::Principal;
use crate::store::Store;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The page's policy: its own origin only; no frames, no plugins, no forms, no base change.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// How the view learns who is asking.
#[derive(Clone)]
pub enum UiAccess {
    /// Behind `serve --http`'s guard, which put the authenticated `Arc<Principal>` on each
    /// request; `authenticated` is false without `sandbox.auth` (then loopback hosts only).
    Gateway {
        policies: Arc<BTreeMap<String, PrincipalPolicy>>,
        authenticated: bool,
        /// The gateway's questions waiting for an answer (`/ui/api/approvals`).
        pending: Option<Arc<crate::gate::pending::PendingApprovals>>,
        /// Each principal's read bounds, shared with the guard, which refuses a read past them
        /// before checking its credential again ([`super::limit::ReadLimits::refused_before_auth`]).
        limits: Arc<super::limit::ReadLimits>,
    },
    /// `mcp-sandbox ui`: the operator on this machine (loopback hosts only).
    Local,
}

impl UiAccess {
    pub(super) fn loopback_only(&self) -> bool {
        matches!(
            self,
            UiAccess::Local
                | UiAccess::Gateway {
                    authenticated: false,
                    ..
                }
        )
    }
}

#[derive(Clone)]
pub(super) struct Ui {
    /// The reads' own handle ([`Store::reader`]), never the execution path's connection.
    pub(super) store: Store,
    /// The main handle, for the view's few writes (clearing a principal's labels).
    pub(super) writer: Option<Store>,
    pub(super) access: UiAccess,
    /// The bounds of each principal's reads.
    pub(super) limits: Arc<super::limit::ReadLimits>,
}

/// Who is asking and what it may see.
pub(super) struct Viewer {
    pub(super) principal: Arc<Principal>,
    pub(super) operator: bool,
    /// May answer pending approvals (`config::gateway::may_approve`).
    pub(super) approve: bool,
    /// May answer its own executions' questions (`config::gateway::may_approve_own`).
    pub(super) approve_own: bool,
}

impl Viewer {
    /// The tenant a request is about: `asked` when the viewer may see it (an operator any, a
    /// principal its own), else `403 UI_FORBIDDEN`. Without `asked`: the viewer's own.
    pub(super) fn tenant(&self, asked: Option<&str>) -> Result<String, Box<Response>> {
        match asked {
            None => Ok(self.principal.tenant.clone()),
            Some(t) if self.operator || t == self.principal.tenant => Ok(t.to_string()),
            Some(_) => Err(Box::new(refuse(
                StatusCode::FORBIDDEN,
                "UI_FORBIDDEN",
                "this principal sees only its own tenant; leave out `tenant` (an operator's policy has \"operator\": true)",
            ))),
        }
    }
}

/// A JSON error: `{"error": {"code", "message"}}`.
pub(super) fn refuse(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        [("content-type", "application/json")],
        json!({"error": {"code": code, "message": message}}).to_string(),
    )
        .into_response()
}

/// The answer to a read past its principal's bounds: `429 UI_RATE_LIMITED`, `Retry-After` and
/// the view's security headers.
pub fn refused_read(r: &super::limit::Refused) -> Response {
    let mut resp = refuse(StatusCode::TOO_MANY_REQUESTS, "UI_RATE_LIMITED", &r.message);
    resp.headers_mut()
        .insert("retry-after", HeaderValue::from(r.retry_after));
    secured(resp)
}

/// The security headers every answer of the view carries.
pub(super) fn secured(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("cache-control", HeaderValue::from_static("no-store"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    r
}

pub(super) fn viewer(ui: &Ui, req: &Request) -> Result<Viewer, Box<Response>> {
    match &ui.access {
        UiAccess::Local => Ok(Viewer {
            principal: Arc::new(Principal::local()),
            operator: true,
            approve: true,
            approve_own: true,
        }),
        UiAccess::Gateway { policies, .. } => {
            let Some(principal) = req.extensions().get::<Arc<Principal>>().cloned() else {
                return Err(Box::new(refuse(
                    StatusCode::UNAUTHORIZED,
                    "UI_UNAUTHENTICATED",
                    "this request carries no authenticated principal; send Authorization: Bearer TOKEN",
                )));
            };
            let operator = crate::config::gateway::is_operator(&principal, policies);
            Ok(Viewer {
                approve: crate::config::gateway::may_approve(&principal, policies),
                approve_own: crate::config::gateway::may_approve_own(&principal, policies),
                principal,
                operator,
            })
        }
    }
}

/// The query string's parameters (later ones win).
pub(super) fn params(req: &Request) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
        .into_owned()
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// Admits one read of the viewer's ([`super::limit`]), or answers `429 UI_RATE_LIMITED`.
pub(super) fn admit(ui: &Ui, v: &Viewer) -> Result<super::limit::Admitted, Box<Response>> {
    let key = super::limit::principal_key(&v.principal);
    super::limit::admit(&ui.limits, &key).map_err(|r| Box::new(refused_read(&r)))
}

/// Runs a query of the viewer's off the async workers, within its bounds (its slot held until
/// the query ends, even if the request is dropped before).
pub(super) async fn query(
    ui: &Ui,
    v: &Viewer,
    f: impl FnOnce(&Store) -> Result<Value, crate::store::StoreError> + Send + 'static,
) -> Response {
    let slot = match admit(ui, v) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    answer(
        ui.store
            .run(move |s| {
                let _slot = slot;
                f(s)
            })
            .await,
    )
}

/// A query's answer: its JSON, or `503 UI_STORE_ERROR` when the store failed.
pub(super) fn answer(r: Result<Value, crate::store::StoreError>) -> Response {
    match r {
        Ok(v) => (
            StatusCode::OK,
            [("content-type", "application/json")],
            v.to_string(),
        )
            .into_response(),
        Err(e) => {
            tracing::warn!("web view: the state store failed: {e}");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "UI_STORE_ERROR",
                &format!("the state store could not be read ({e}); retry, or check the state store (the file, or the PostgreSQL database)"),
            )
        }
    }
}
