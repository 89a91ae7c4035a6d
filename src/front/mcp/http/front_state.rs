//! What the HTTP front's middleware shares: the sessions this process holds (and who opened
//! them), the session caps and their reservations, the body budget, and the plain refusals it
//! answers with. The middleware itself is `guard`; sessions kept in the store, `kept_sessions`.

use super::{HttpOptions, RETRY_AFTER_SECS};
use crate::front::mcp::Gateway;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Semaphore;

/// The client's address, put on every request by the accept loop.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClientAddr(pub(super) IpAddr);

#[derive(Debug)]
pub(super) struct SessionInfo {
    pub(super) client: IpAddr,
    pub(super) created: Instant,
    pub(super) initialized: bool,
    /// The principal (its [`Principal::id`](crate::context::principal::Principal)) and
    /// tenant that opened the session; no other may use it.
    pub(super) principal: String,
    pub(super) tenant: String,
    /// Whether the store keeps it (`kept_sessions`): other gateways may serve it too.
    pub(super) kept: bool,
    /// The last request naming it (renews its row in the store).
    pub(super) used: Instant,
}

/// What the middleware shares.
pub(super) struct Front {
    pub(super) gateway: Arc<Gateway>,
    pub(super) manager: Arc<LocalSessionManager>,
    pub(super) sessions: Mutex<HashMap<String, SessionInfo>>,
    /// Initializations admitted and not answered yet, per [`CapKey`]: counted against the caps
    /// so concurrent requests cannot all pass the check.
    pub(super) reserved: Mutex<HashMap<CapKey, usize>>,
    pub(super) opts: HttpOptions,
    /// Permits for [`super::MAX_BUFFERED_BODY_BYTES`].
    pub(super) bodies: Arc<Semaphore>,
    /// Body bytes each caller holds now (bounded by [`super::MAX_BUFFERED_BODY_BYTES_PER_CALLER`]).
    pub(super) body_shares: Mutex<HashMap<CapKey, usize>>,
    /// `None`: no authentication (loopback only); every caller is `anonymous`.
    pub(super) auth: crate::front::mcp::auth::SharedAuth,
    /// The web view's per-principal read bounds (shared with its routes): the guard refuses a
    /// read past them before checking the credential again.
    pub(super) ui_limits: Arc<crate::front::ui::limit::ReadLimits>,
}

impl Front {
    pub(super) fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionInfo>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Ends session `id`: forgets it (here and in the store), closes it in rmcp and cancels
    /// its executions.
    pub(super) async fn close(&self, id: &str) {
        let kept = self.sessions().remove(id).is_some_and(|s| s.kept);
        let _ = self.manager.close_session(&id.to_string().into()).await;
        self.gateway.sessions.end(id);
        if let (true, Some(store)) = (kept, self.gateway.store.clone()) {
            let id = id.to_string();
            if let Err(e) = store.run(move |s| s.forget_mcp_session(&id)).await {
                tracing::warn!("could not remove a closed session from the store: {e}");
            }
        }
    }
}

pub(super) fn refuse(status: StatusCode, message: &str) -> Response {
    let mut r = (
        status,
        [("content-type", "application/json")],
        serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": message}})
            .to_string(),
    )
        .into_response();
    if matches!(
        status,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
    ) {
        r.headers_mut()
            .insert("retry-after", HeaderValue::from_static(RETRY_AFTER_SECS));
    }
    r
}

/// Whose sessions a cap counts: with authentication, an authenticated principal's (so callers
/// behind one proxy address do not share a cap); without it (loopback, everyone `anonymous`),
/// a client address's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum CapKey {
    Principal(String),
    Address(IpAddr),
}

impl CapKey {
    fn holds(&self, s: &SessionInfo) -> bool {
        match self {
            CapKey::Principal(id) => &s.principal == id,
            CapKey::Address(ip) => &s.client == ip,
        }
    }
}

/// A place reserved for a session being initialized; given back when dropped (by then the
/// session, if made, is recorded).
pub(super) struct Reservation {
    pub(super) front: Arc<Front>,
    pub(super) key: CapKey,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut reserved = self
            .front
            .reserved
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = reserved.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                reserved.remove(&self.key);
            }
        }
    }
}

/// Reserves a place for a new session, or answers 503 when the server holds its maximum of
/// sessions and 429 when this principal (with authentication) or this client address (without)
/// holds its own.
pub(super) fn reserve(
    front: &Arc<Front>,
    client: Option<IpAddr>,
    principal: &crate::context::principal::Principal,
) -> Result<Option<Reservation>, Box<Response>> {
    let sessions = front.sessions();
    let mut reserved = front.reserved.lock().unwrap_or_else(|p| p.into_inner());
    let in_flight: usize = reserved.values().sum();
    if sessions.len() + in_flight >= front.opts.max_sessions {
        return Err(Box::new(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "the server holds its maximum of {} sessions (--max-sessions); retry later",
                front.opts.max_sessions
            ),
        )));
    }
    let (key, cap, refusal) = if front.auth.is_some() {
        (
            CapKey::Principal(principal.id.clone()),
            front.opts.max_sessions_per_principal,
            format!(
                "this principal holds its maximum of {} sessions (--max-sessions-per-principal); end some (DELETE) or retry later",
                front.opts.max_sessions_per_principal
            ),
        )
    } else {
        let Some(client) = client else {
            return Ok(None);
        };
        (
            CapKey::Address(client),
            front.opts.max_sessions_per_client,
            format!(
                "this client address holds its maximum of {} sessions (--max-sessions-per-client); end some (DELETE) or retry later",
                front.opts.max_sessions_per_client
            ),
        )
    };
    let mine = sessions.values().filter(|s| key.holds(s)).count()
        + reserved.get(&key).copied().unwrap_or(0);
    if mine >= cap {
        return Err(Box::new(refuse(StatusCode::TOO_MANY_REQUESTS, &refusal)));
    }
    *reserved.entry(key.clone()).or_default() += 1;
    Ok(Some(Reservation {
        front: front.clone(),
        key,
    }))
}
