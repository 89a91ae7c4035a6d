//! The refused connections of confined servers on the web view (issue 59):
//! `GET /ui/api/egress?tenant=T` lists the ones this gateway process kept
//! (`tools::egress::events`: a bounded ring, newest first, empty after a restart). An operator
//! sees every tenant's unless it names one; a principal its own tenant's only (`403
//! UI_FORBIDDEN` for another). A shared server's connections have no tenant: an operator sees
//! them.

use super::viewer::{viewer, Ui};
use crate::tools::egress::events;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

pub(super) async fn refused(State(ui): State<Ui>, req: Request) -> Response {
    let v = match viewer(&ui, &req) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let asked = super::viewer::params(&req).get("tenant").cloned();
    let tenant = match (v.operator, asked.as_deref()) {
        (true, None | Some("*")) => None,
        (_, asked) => match v.tenant(asked) {
            Ok(t) => Some(t),
            Err(r) => return *r,
        },
    };
    let list: Vec<_> = events::recent_refused()
        .into_iter()
        .filter(|c| tenant.is_none() || c.tenant == tenant)
        .map(|c| {
            let at = humantime::format_rfc3339_seconds(c.at).to_string();
            json!({
                "at": at, "server": c.server, "tenant": c.tenant, "principal": c.principal,
                "host": c.host, "port": c.port, "address": c.address, "reason": c.reason,
            })
        })
        .collect();
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        json!({"tenant": tenant, "capacity": events::RING_CAPACITY, "refused": list}).to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use crate::front::ui::{router_on, UiAccess};
    use crate::tools::egress::events::{self, Connection, Outcome};
    use tower::ServiceExt;

    #[tokio::test]
    async fn the_view_lists_refused_connections_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("s.db")).unwrap();
        for (host, tenant) in [("169.254.169.254", "acme"), ("db.internal", "other")] {
            events::record(Connection {
                server: "fetcher".into(),
                tenant: Some(tenant.into()),
                principal: None,
                host: host.into(),
                port: 80,
                address: None,
                outcome: Outcome::Refused,
                reason: "not_allowed".into(),
                bytes_up: 0,
                bytes_down: 0,
                at: std::time::SystemTime::now(),
            });
        }
        let (_, api) = router_on(store, UiAccess::Local);
        let ask = |uri: &str| {
            axum::http::Request::get(uri)
                .header("host", "127.0.0.1")
                .body(axum::body::Body::empty())
                .unwrap()
        };
        let body = |r: axum::response::Response| async move {
            let b = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
            serde_json::from_slice::<serde_json::Value>(&b).unwrap()
        };
        let all = body(api.clone().oneshot(ask("/ui/api/egress")).await.unwrap()).await;
        let hosts: Vec<_> = all["refused"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["host"].clone())
            .collect();
        assert_eq!(
            hosts[..2],
            [
                serde_json::json!("db.internal"),
                serde_json::json!("169.254.169.254")
            ]
        );
        let acme = body(
            api.oneshot(ask("/ui/api/egress?tenant=acme"))
                .await
                .unwrap(),
        )
        .await;
        let list = acme["refused"].as_array().unwrap();
        assert!(list.iter().all(|c| c["tenant"] == "acme"), "{acme}");
        assert_eq!(list[0]["host"], "169.254.169.254");
        assert_eq!(list[0]["reason"], "not_allowed");
        assert_eq!(list[0]["server"], "fetcher");
    }
}
