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
use super::viewer::{admit, answer, params, query, refuse, secured, viewer, Ui};
pub use super::viewer::{refused_read, UiAccess, CONTENT_SECURITY_POLICY};
use crate::store::Store;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;
use std::sync::Arc;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

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
/// routes that answer through [`query`](super::viewer::query) (or [`admit`](super::viewer::admit)).
pub fn limited_read(path: &str) -> bool {
    match path.strip_prefix("/ui/api/") {
        Some("me" | "executions" | "graph" | "capabilities" | "labels") => true,
        Some(rest) => rest
            .strip_prefix("executions/")
            .is_some_and(|id| !id.is_empty() && !id.contains('/')),
        None => false,
    }
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
