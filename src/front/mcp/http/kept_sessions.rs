//! MCP sessions kept in the state store (`store::mcp_sessions`), so that a session goes on
//! through any gateway sharing the database, and through this one after a restart. The choice
//! (issue 31): sessions kept in the store, restored by rmcp (`session_store`: a request whose
//! `Mcp-Session-Id` this process does not hold replays the stored `initialize` on a new local
//! worker under the same id), rather than rmcp's stateless mode, which has no session at all and
//! so no per-session state, yielded executions or cancellation.
//!
//! What this file adds around rmcp:
//! - the row is written by the guard, when the `initialize` answer leaves, with the principal
//!   and tenant that opened it (rmcp's `SessionStore::store` does not know them and writes
//!   nothing);
//! - a request naming a session this process does not hold is let through only for the
//!   principal and tenant that opened it ([`adopt`]); another principal gets the same 403 as on
//!   the gateway that holds it; an unknown or expired id reaches rmcp, which answers 404;
//! - every [`RENEW_EVERY`] at most, each gateway renews the rows of the sessions it served,
//!   sweeps rows idle past `--session-idle-ms`, and ends its local copy of a session whose row is
//!   gone (deleted through another gateway, or expired): such a copy lives at most that long.

use super::front_state::{refuse, reserve, Front, SessionInfo};
use crate::context::principal::Principal;
use crate::store::mcp_sessions::{KeepError, StoredSession};
use axum::http::StatusCode;
use axum::response::Response;
use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest time between two renewals of the rows of this gateway's sessions (shorter when
/// the session idle time is short: a quarter of it).
pub const RENEW_EVERY: Duration = Duration::from_secs(30);

/// The message for a session opened by another principal (here or on another gateway).
pub const FOREIGN_SESSION: &str =
    "this session was opened by another principal; open your own session (initialize)";

/// rmcp's view of the kept sessions: it loads a session's `initialize` parameters to restore it
/// and deletes the row when a client ends the session (`DELETE`).
pub struct StoredSessions {
    pub store: crate::store::Store,
    pub idle: Duration,
}

#[async_trait::async_trait]
impl SessionStore for StoredSessions {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let (id, idle) = (id.to_string(), self.idle);
        let Some(row) = self.store.run(move |s| s.mcp_session(&id, idle)).await? else {
            return Ok(None);
        };
        let params: InitializeRequestParams = serde_json::from_str(&row.init)?;
        Ok(Some(SessionState::new(params)))
    }

    /// The guard writes the row, with its owner ([`keep`]).
    async fn store(&self, _id: &str, _state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        let id = id.to_string();
        self.store.run(move |s| s.forget_mcp_session(&id)).await?;
        Ok(())
    }
}

/// Keeps the session `id` that `principal` just opened with the `initialize` request `body`.
/// Answers whether it is kept; a session that cannot be kept (the store is down, the parameters
/// are too large) still works on this gateway, and the reason is logged.
pub async fn keep(front: &Front, id: &str, principal: &Principal, body: &[u8]) -> bool {
    let Some(store) = front.gateway.store.clone() else {
        return false;
    };
    let init = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("params").map(|p| p.to_string()));
    let Some(init) = init else {
        return false;
    };
    let row = StoredSession {
        tenant: principal.tenant.clone(),
        principal: principal.id.clone(),
        init,
    };
    let key = id.to_string();
    let kept = tokio::task::spawn_blocking(move || store.keep_mcp_session(&key, &row)).await;
    match kept {
        Ok(Ok(())) => true,
        Ok(Err(KeepError::TooLarge(n))) => {
            tracing::info!(session = %id, "session not kept in the store (only this gateway can serve it): its initialize parameters are {n} bytes");
            false
        }
        Ok(Err(KeepError::Store(e))) => {
            tracing::warn!(session = %id, "session not kept in the store (only this gateway can serve it): {e}");
            false
        }
        Err(e) => {
            tracing::warn!(session = %id, "session not kept in the store: {e}");
            false
        }
    }
}

/// A request names session `id`, which this process does not hold: when the store keeps it
/// for this principal and tenant, it is recorded here (rmcp then restores it) within the session
/// caps; another principal's is refused (403); an unknown one goes on to rmcp's 404.
pub async fn adopt(
    front: &Arc<Front>,
    id: &str,
    principal: &Principal,
    client: Option<IpAddr>,
) -> Result<(), Response> {
    let Some(store) = front.gateway.store.clone() else {
        return Ok(());
    };
    let (key, idle) = (id.to_string(), front.opts.session_idle);
    let row = match store.run(move |s| s.mcp_session(&key, idle)).await {
        Ok(Some(row)) => row,
        Ok(None) => return Ok(()),
        Err(e) => {
            tracing::warn!(session = %id, "could not look up a session in the store: {e}");
            return Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "this gateway cannot read the session store now; retry later",
            ));
        }
    };
    if row.principal != principal.id || row.tenant != principal.tenant {
        return Err(refuse(StatusCode::FORBIDDEN, FOREIGN_SESSION));
    }
    let reservation = reserve(front, client, principal).map_err(|r| *r)?;
    let now = Instant::now();
    front
        .sessions()
        .entry(id.to_string())
        .or_insert_with(|| SessionInfo {
            client: client.unwrap_or(IpAddr::from([127, 0, 0, 1])),
            created: now,
            initialized: true,
            principal: principal.id.clone(),
            tenant: principal.tenant.clone(),
            kept: true,
            used: now,
        });
    drop(reservation);
    tracing::debug!(session = %id, "session restored from the store");
    Ok(())
}

/// Renews the rows of the sessions this gateway served since the last renewal, sweeps expired
/// rows, and ends local copies whose row is gone. Called by the reaper; does the work at most
/// every [`RENEW_EVERY`] (or a quarter of the idle time).
pub async fn renew(front: &Front, last: &mut Instant) {
    let Some(store) = front.gateway.store.clone() else {
        return;
    };
    let every = RENEW_EVERY.min(front.opts.session_idle / 4);
    if last.elapsed() < every {
        return;
    }
    let since = *last;
    *last = Instant::now();
    let (used, held): (Vec<String>, Vec<String>) = {
        let sessions = front.sessions();
        let used = sessions
            .iter()
            .filter(|(_, s)| s.kept && s.used >= since)
            .map(|(id, _)| id.clone())
            .collect();
        let held = sessions
            .iter()
            .filter(|(_, s)| s.kept)
            .map(|(id, _)| id.clone())
            .collect();
        (used, held)
    };
    let idle = front.opts.session_idle;
    let asked = held.clone();
    let kept = match store
        .run(move |s| s.renew_mcp_sessions(&used, &asked, idle))
        .await
    {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!("could not renew the sessions kept in the store: {e}");
            return;
        }
    };
    let kept: std::collections::HashSet<String> = kept.into_iter().collect();
    for id in held.into_iter().filter(|id| !kept.contains(id)) {
        tracing::info!(session = %id, "the session was ended through another gateway or expired; closing it here");
        front.close(&id).await;
    }
}
