//! The routes of the web view and who sees what.
//!
//! - `GET /ui` and `/ui/assets/...`: the page (no data in it; public, so a browser can load it
//!   before it holds a credential).
//! - `GET /ui/api/me`, `/ui/api/executions`, `/ui/api/executions/{id}`, `/ui/api/graph`,
//!   `/ui/api/capabilities`: JSON, for the principal the gateway authenticated. A principal
//!   sees its own tenant; an operator (see [`crate::config::gateway::is_operator`]) every
//!   tenant. Another tenant's execution is answered `404 UI_NOT_FOUND`, like a missing one;
//!   asking for another tenant by name is `403 UI_FORBIDDEN`.
//! - `GET`/`POST /ui/api/approvals`: the questions waiting for a person, and answering one
//!   ([`super::approvals`]).
//! - `GET /ui/api/labels`, `POST /ui/api/labels/clear`: a principal's data-flow labels
//!   ([`super::labels`]).
//! - `GET /ui/api/egress`: confined servers' refused connections ([`super::egress`]).
//! - Without authentication (the `ui` subcommand, or `serve --http` without `sandbox.auth`,
//!   both loopback only) every request must name a loopback host in `Host` (`403
//!   UI_HOST_REFUSED` otherwise), so a web page elsewhere cannot read the view through a DNS
//!   name that resolves to this machine.
//!
//! Every answer carries a strict Content-Security-Policy (`default-src 'self'`: the page can
//! load and call nothing outside this origin), `X-Content-Type-Options: nosniff`,
//! `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.

use super::api;
use crate::config::gateway::PrincipalPolicy;
use crate::context::principal::Principal;
use crate::store::Store;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The page's policy: its own origin only; no frames, no plugins, no forms, no base change.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

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
    fn loopback_only(&self) -> bool {
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
    limits: Arc<super::limit::ReadLimits>,
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

/// The web view's routes, to be merged into a router: the page and its assets (public), and the
/// API, for the caller to put behind the gateway's authentication guard (or nothing, `ui`).
/// The API reads through a handle of its own on `store` ([`Store::reader`]), so a principal
/// reading the view never holds the connection the executions' audit records are written on.
pub fn router(
    store: Store,
    access: UiAccess,
) -> Result<(Router, Router), crate::store::StoreError> {
    let (page, api) = router_with(store.reader()?, Some(store), access);
    Ok((page, api))
}

/// [`router`] reading through `reader` as it is (a handle from [`Store::reader`]).
pub fn router_on(reader: Store, access: UiAccess) -> (Router, Router) {
    router_with(reader, None, access)
}

fn router_with(reader: Store, writer: Option<Store>, access: UiAccess) -> (Router, Router) {
    let limits = match &access {
        UiAccess::Gateway { limits, .. } => limits.clone(),
        UiAccess::Local => Arc::default(),
    };
    let ui = Ui {
        store: reader,
        writer,
        access,
        limits,
    };
    let page = Router::new()
        .route(
            "/ui",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/ui/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/ui/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/ui/assets/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .layer(axum::middleware::from_fn_with_state(ui.clone(), headers));
    let api = Router::new()
        .route("/ui/api/me", get(me))
        .route("/ui/api/executions", get(executions))
        .route("/ui/api/executions/{id}", get(execution))
        .route("/ui/api/graph", get(graph))
        .route("/ui/api/capabilities", get(capabilities))
        .route(
            "/ui/api/approvals",
            get(super::approvals::list).post(super::approvals::answer),
        )
        .route("/ui/api/labels", get(super::labels::show))
        .route("/ui/api/egress", get(super::egress::refused))
        .route(
            "/ui/api/labels/clear",
            axum::routing::post(super::labels::clear),
        )
        .route(
            "/ui/api/{*rest}",
            get(|| async {
                refuse(
                    StatusCode::NOT_FOUND,
                    "UI_NOT_FOUND",
                    "no such endpoint; the API has /ui/api/me, /ui/api/executions[/ID], /ui/api/graph, /ui/api/capabilities, /ui/api/approvals, /ui/api/labels and /ui/api/egress",
                )
            }),
        )
        .layer(axum::middleware::from_fn_with_state(ui.clone(), headers))
        .with_state(ui);
    (page, api)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([("content-type", content_type)], body).into_response()
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

/// Whether `host` (a `Host` header) names this machine's loopback interface.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether `GET path` is a read within each principal's bounds ([`super::limit`]): the API
/// routes that answer through [`query`] (or [`admit`]).
pub fn limited_read(path: &str) -> bool {
    match path.strip_prefix("/ui/api/") {
        Some("me" | "executions" | "graph" | "capabilities" | "labels") => true,
        Some(rest) => rest
            .strip_prefix("executions/")
            .is_some_and(|id| !id.is_empty() && !id.contains('/')),
        None => false,
    }
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
fn secured(mut r: Response) -> Response {
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

/// The host check and the security headers of every answer.
async fn headers(State(ui): State<Ui>, req: Request, next: Next) -> Response {
    if ui.access.loopback_only() {
        let host = req
            .headers()
            .get("host")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !loopback_host(host) {
            return refuse(
                StatusCode::FORBIDDEN,
                "UI_HOST_REFUSED",
                "without authentication the web view answers only to a loopback host (localhost, 127.0.0.1, [::1]); open it at http://127.0.0.1:PORT/ui",
            );
        }
    }
    secured(next.run(req).await)
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
fn admit(ui: &Ui, v: &Viewer) -> Result<super::limit::Admitted, Box<Response>> {
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
fn answer(r: Result<Value, crate::store::StoreError>) -> Response {
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

async fn me(State(ui): State<Ui>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let (name, tenant, operator, approve) = (
        v.principal.name.clone(),
        v.principal.tenant.clone(),
        v.operator,
        v.approve,
    );
    query(&ui, &v, move |s| {
        let tenants = if operator {
            api::tenants(s)?
        } else {
            vec![tenant.clone()]
        };
        Ok(json!({"principal": name, "tenant": tenant, "operator": operator, "approve": approve, "tenants": tenants}))
    })
    .await
}

async fn executions(State(ui): State<Ui>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let p = params(&req);
    let limit = match p.get("limit").map(|l| l.parse::<usize>()) {
        None => api::DEFAULT_LIST,
        Some(Ok(n)) if (1..=api::MAX_LIST).contains(&n) => n,
        Some(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "UI_BAD_REQUEST",
                &format!("limit must be a number from 1 to {}", api::MAX_LIST),
            )
        }
    };
    let before = match p.get("before").map(|b| b.parse::<i64>()) {
        None => None,
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "UI_BAD_REQUEST",
                "before must be a positive number: the `next` of the page before",
            )
        }
    };
    // An operator sees every tenant unless it names one; a principal only its own.
    let tenant = match (v.operator, p.get("tenant")) {
        (true, None) => None,
        (_, asked) => match v.tenant(asked.map(String::as_str)) {
            Ok(t) => Some(t),
            Err(r) => return *r,
        },
    };
    let q = api::ListQuery {
        outcome: p.get("outcome").cloned(),
        tool: p.get("tool").cloned(),
        principal: p.get("principal").cloned(),
        tenant,
        limit,
        before,
    };
    query(&ui, &v, move |s| api::executions(s, &q)).await
}

async fn execution(State(ui): State<Ui>, Path(id): Path<String>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let Ok(id) = id.parse::<i64>() else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "UI_BAD_REQUEST",
            "an execution id is a number (see /ui/api/executions)",
        );
    };
    let tenant = (!v.operator).then(|| v.principal.tenant.clone());
    let slot = match admit(&ui, &v) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let read = ui.store.run(move |s| {
        let _slot = slot;
        api::execution(s, id, tenant.as_deref())
    });
    match read.await {
        Ok(Some(v)) => answer(Ok(v)),
        Ok(None) => refuse(
            StatusCode::NOT_FOUND,
            "UI_NOT_FOUND",
            &format!("no execution #{id} that this principal may see"),
        ),
        Err(e) => answer(Err(e)),
    }
}

async fn graph(State(ui): State<Ui>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    match v.tenant(params(&req).get("tenant").map(String::as_str)) {
        Ok(t) => query(&ui, &v, move |s| api::graph(s, &t)).await,
        Err(r) => *r,
    }
}

async fn capabilities(State(ui): State<Ui>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    match v.tenant(params(&req).get("tenant").map(String::as_str)) {
        Ok(t) => query(&ui, &v, move |s| api::capabilities(s, &t)).await,
        Err(r) => *r,
    }
}

#[cfg(test)]
mod tests {
    use super::loopback_host;

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:80",
            "[::1]",
            "LOCALHOST",
        ] {
            assert!(loopback_host(h), "{h}");
        }
        for h in [
            "",
            "evil.example",
            "evil.example:80",
            "10.0.0.1:80",
            "localhost.evil.example",
        ] {
            assert!(!loopback_host(h), "{h}");
        }
    }
}
