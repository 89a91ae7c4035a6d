//! The middleware in front of rmcp's service: authentication, each message checked
//! ([`super::super::jsonrpc`]), sessions capped (in total and per client address) and tied to the
//! principal that opened them, rate limits, handshakes that never complete expired, and a deleted
//! session's executions cancelled.

use super::super::jsonrpc;
use super::super::Gateway;
use super::front_state::*;
use super::kept_sessions::{adopt, keep, FOREIGN_SESSION};
use super::*;
use crate::front::mcp::sessions::SESSION_HEADER;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

impl Front {
    /// Ends sessions whose handshake is overdue; forgets sessions rmcp has closed.
    pub(super) async fn reap(&self) {
        let alive: std::collections::HashSet<String> = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .map(|k| k.to_string())
            .collect();
        let (overdue, by_token) = {
            let mut sessions = self.sessions();
            sessions.retain(|id, _| alive.contains(id));
            let overdue: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| {
                    !s.initialized && s.created.elapsed() > self.opts.handshake_timeout
                })
                .map(|(id, _)| id.clone())
                .collect();
            let by_token = sessions.values().any(|s| {
                s.principal
                    .starts_with(crate::front::mcp::auth::TOKEN_ID_PREFIX)
            });
            (overdue, by_token)
        };
        for id in overdue {
            tracing::info!(session = %id, "the handshake did not complete in time; closing the session");
            self.close(&id).await;
        }
        // A session belongs to its token: once the token is revoked (or expired), its sessions
        // end and what they run is cancelled.
        if let (true, Some(auth)) = (by_token, &self.auth) {
            if let Some(usable) = auth.usable_token_ids().await {
                let gone: Vec<String> = self
                    .sessions()
                    .iter()
                    .filter(|(_, s)| {
                        s.principal
                            .starts_with(crate::front::mcp::auth::TOKEN_ID_PREFIX)
                            && !usable.contains(&s.principal)
                    })
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in gone {
                    tracing::info!(session = %id, "the session's API token was revoked or expired; closing the session");
                    self.close(&id).await;
                }
            }
        }
        self.gateway.sessions.retain(|id| alive.contains(id));
        self.gateway.responses.expire(self.opts.write_timeout * 2);
    }
}

pub(super) fn rpc_refusal(r: &jsonrpc::Refusal) -> Response {
    // A well-formed request with bad params is answered like any request; malformed messages
    // are a client error.
    let status = if r.code == jsonrpc::INVALID_PARAMS && !r.id.is_null() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    (
        status,
        [("content-type", "application/json")],
        r.to_json().to_string(),
    )
        .into_response()
}

pub(super) async fn guard(
    State(front): State<Arc<Front>>,
    mut req: Request,
    next: Next,
) -> Response {
    // A web-view read past its principal's bounds is refused before its credential is checked
    // again: a principal polling the view from many threads then costs a hash, not a token
    // lookup in the state store (or a signature check) per refused request.
    let ui_credential = match (&front.auth, req.method()) {
        (Some(_), &Method::GET) if crate::front::ui::routes::limited_read(req.uri().path()) => {
            crate::front::mcp::auth::credential_hash(req.headers())
        }
        _ => None,
    };
    if let Some(c) = &ui_credential {
        if let Some(refused) = front.ui_limits.refused_before_auth(c) {
            return crate::front::ui::routes::refused_read(&refused);
        }
    }
    // Who is calling, before anything else is looked at.
    let principal = match &front.auth {
        None => crate::context::principal::Principal::anonymous(),
        Some(auth) => match auth.authenticate(req.headers()).await {
            Ok(p) => p,
            Err(failure) => {
                if let Some(c) = &ui_credential {
                    front.ui_limits.forget(c);
                }
                return auth.refusal(&failure);
            }
        },
    };
    if let Some(c) = ui_credential {
        front
            .ui_limits
            .remember(c, &crate::front::ui::limit::principal_key(&principal));
    }
    let principal = Arc::new(principal);
    req.extensions_mut().insert(principal.clone());
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let client = req.extensions().get::<ClientAddr>().map(|c| c.0);
    if let Some(id) = &session {
        // `Some(foreign)` when this process holds the session.
        let held = front.sessions().get_mut(id).map(|s| {
            s.used = Instant::now();
            s.principal != principal.id || s.tenant != principal.tenant
        });
        match held {
            Some(true) => return refuse(StatusCode::FORBIDDEN, FOREIGN_SESSION),
            Some(false) => {}
            // Opened through another gateway (or before a restart): restored when the store
            // keeps it for this principal.
            None => {
                if let Err(response) = adopt(&front, id, &principal, client).await {
                    return response;
                }
            }
        }
    }
    match *req.method() {
        Method::DELETE => {
            let response = next.run(req).await;
            if let (Some(id), true) = (session, response.status().is_success()) {
                front.sessions().remove(&id);
                front.gateway.sessions.end(&id);
            }
            response
        }
        // The web view's answers (`/ui/api/approvals`) are small JSON bodies that its own
        // route bounds and reads; only `/mcp` bodies are JSON-RPC.
        Method::POST if req.uri().path().starts_with("/ui/api/") => next.run(req).await,
        Method::POST => {
            let (parts, body) = req.into_parts();
            let expected = parts
                .headers
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(MAX_BODY_BYTES)
                .min(MAX_BODY_BYTES);
            let permits = u32::try_from(expected.max(1)).unwrap_or(u32::MAX);
            let key = match (&front.auth, client) {
                (None, Some(ip)) => Some(CapKey::Address(ip)),
                (None, None) => None,
                (Some(_), _) => Some(CapKey::Principal(principal.id.clone())),
            };
            let share = match key {
                None => None,
                Some(key) => match BodyShare::take(&front, key, expected.max(1)) {
                    Some(share) => Some(share),
                    None => {
                        return refuse(
                            StatusCode::TOO_MANY_REQUESTS,
                            &format!(
                                "this caller is sending more request bodies at once than its share ({MAX_BUFFERED_BODY_BYTES_PER_CALLER} bytes); finish or close them and retry"
                            ),
                        )
                    }
                },
            };
            let budget = front.bodies.clone().acquire_many_owned(permits);
            let _budget = match tokio::time::timeout(front.opts.header_timeout, budget).await {
                Ok(Ok(p)) => p,
                _ => {
                    return refuse(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the server is reading too many large requests; retry later",
                    )
                }
            };
            let read = axum::body::to_bytes(body, MAX_BODY_BYTES);
            let bytes = match tokio::time::timeout(front.opts.body_timeout, read).await {
                Ok(Ok(b)) => b,
                Ok(Err(_)) => {
                    return refuse(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
                    )
                }
                Err(_) => {
                    return refuse(
                        StatusCode::REQUEST_TIMEOUT,
                        &format!(
                            "the request body did not arrive within {} ms (--body-timeout-ms); send it at once",
                            front.opts.body_timeout.as_millis()
                        ),
                    )
                }
            };
            // Read: the caller's share is free for its next body.
            drop(share);
            let message = match jsonrpc::check(&bytes) {
                Ok(m) => m,
                Err(r) => return rpc_refusal(&r),
            };
            // Code over the operator's source limit is refused here, before rmcp parses it
            // again (and before it could wait for a runner).
            if let (Some(len), Some(id)) = (message.code_bytes, message.id.clone()) {
                let limit = front.gateway.limits.source_bytes;
                if let Err(e) = crate::front::mcp::admission::Admission::check_code(len, limit) {
                    // Audited like any refused execution: by the code's size and hash only.
                    let outcome = refused_code_audited(&front, &principal, &bytes, len, e).await;
                    let e = outcome.error.unwrap_or_else(|| {
                        crate::error::ExecError::new(
                            crate::error::ErrorCode::LimitExceeded,
                            "the script is over the source limit (source_bytes)",
                        )
                    });
                    let result = crate::front::mcp::execute_code::refused(e);
                    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
                    return (
                        StatusCode::OK,
                        [("content-type", "application/json")],
                        body.to_string(),
                    )
                        .into_response();
                }
            }
            // Rate limits apply to executions, counted from arrival until the answer is sent:
            // every call that asks for one, whether its arguments are valid or not.
            let mut rate_permit = None;
            if message.starts_execution {
                let rate = front.gateway.rate_of(&principal);
                let shared = front.gateway.store.as_ref();
                match crate::front::mcp::rate::admit(
                    &front.gateway.rate,
                    shared,
                    &principal.name,
                    rate,
                )
                .await
                {
                    Ok(p) => {
                        rate_permit =
                            p.map(|p| crate::front::mcp::rate::ExecutionPermit(Arc::new(p)))
                    }
                    Err(refusal) => return rate_refused(message.id.clone(), &refusal),
                }
            }
            let method = message.method.as_deref();
            let mut reservation = None;
            if method == Some("initialize") && session.is_none() {
                match reserve(&front, client, &principal) {
                    Ok(r) => reservation = r,
                    Err(response) => return *response,
                }
            }
            if method == Some("notifications/initialized") {
                if let Some(id) = &session {
                    if let Some(s) = front.sessions().get_mut(id) {
                        s.initialized = true;
                    }
                }
            }
            let mut parts = parts;
            if let Some(permit) = &rate_permit {
                // The execution holds the permit through its request's parts (see
                // `ExecutionPermit`); the answer stream below holds it too.
                parts.extensions.insert(permit.clone());
            }
            let req = Request::from_parts(parts, Body::from(bytes.clone()));
            let response = next.run(req).await;
            if method == Some("initialize") {
                let made = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok());
                if let (Some(id), Some(client)) = (made, client) {
                    // Kept before the answer leaves, so the client's next request finds it
                    // whichever gateway it reaches.
                    let kept = keep(&front, id, &principal, &bytes).await;
                    let now = Instant::now();
                    front.sessions().insert(
                        id.to_string(),
                        SessionInfo {
                            client,
                            created: now,
                            initialized: false,
                            principal: principal.id.clone(),
                            tenant: principal.tenant.clone(),
                            kept,
                            used: now,
                        },
                    );
                }
            }
            drop(reservation);
            match (method, message.id) {
                (Some("tools/call"), Some(id)) => {
                    // The answer's room in the response budget is free once the body is sent
                    // (or dropped with its connection).
                    let key = (
                        session.unwrap_or_else(|| "http".to_string()),
                        id.to_string(),
                    );
                    let guard = Delivered {
                        gateway: front.gateway.clone(),
                        key,
                    };
                    let (parts, body) = response.into_parts();
                    let stream = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
                        let _ = (&guard, &rate_permit);
                        chunk
                    });
                    Response::from_parts(parts, Body::from_stream(stream))
                }
                _ => response,
            }
        }
        _ => next.run(req).await,
    }
}

/// Records code refused at the door (over the source limit) in the audit log by its size
/// and SHA-256 (the body is parsed again for it: a rare path), and returns the outcome to send
/// (`SANDBOX_UNAVAILABLE` when the record cannot be written).
async fn refused_code_audited(
    front: &Front,
    principal: &crate::context::principal::Principal,
    body: &[u8],
    code_bytes: u64,
    error: crate::error::ExecError,
) -> crate::exec::outcome::Outcome {
    let outcome = crate::exec::outcome::Outcome::failed(error);
    if front.gateway.sandbox.auditor().is_none() {
        return outcome;
    }
    let code = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/params/arguments/code")
                .and_then(serde_json::Value::as_str)
                .map(|c| crate::exec::audit::sha256_hex(c.as_bytes()))
        })
        .unwrap_or_default();
    let caller = crate::context::principal::Caller::of(principal, None, "http");
    front
        .gateway
        .sandbox
        .audit_refusal_by_hash(Some(caller), code_bytes, code, outcome)
        .await
}

/// 429 with `Retry-After` and a JSON-RPC error whose data has `LIMIT_EXCEEDED`.
pub(super) fn rate_refused(
    id: Option<serde_json::Value>,
    refusal: &crate::front::mcp::rate::RateRefusal,
) -> Response {
    let secs = refusal.retry_after.as_secs().max(1);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!("LIMIT_EXCEEDED: {}", refusal.message),
        "data": {"code": "LIMIT_EXCEEDED", "retry_after_s": secs}}});
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert("retry-after", v);
    }
    r
}

/// Frees an answer's room in the response budget when dropped.
pub(super) struct Delivered {
    pub(super) gateway: Arc<Gateway>,
    pub(super) key: crate::front::mcp::responses::AnswerKey,
}

impl Drop for Delivered {
    fn drop(&mut self) {
        self.gateway.responses.delivered(&self.key);
    }
}

/// One request's share of its caller's body budget; given back when dropped.
pub(super) struct BodyShare<'a> {
    front: &'a Front,
    key: CapKey,
    bytes: usize,
}

impl<'a> BodyShare<'a> {
    /// Takes `bytes` of `key`'s share, or `None` when that would pass
    /// [`MAX_BUFFERED_BODY_BYTES_PER_CALLER`].
    fn take(front: &'a Front, key: CapKey, bytes: usize) -> Option<Self> {
        let mut shares = front.body_shares.lock().unwrap_or_else(|p| p.into_inner());
        let held = shares.entry(key.clone()).or_default();
        if *held + bytes > MAX_BUFFERED_BODY_BYTES_PER_CALLER {
            if *held == 0 {
                shares.remove(&key);
            }
            return None;
        }
        *held += bytes;
        Some(BodyShare { front, key, bytes })
    }
}

impl Drop for BodyShare<'_> {
    fn drop(&mut self) {
        let mut shares = self
            .front
            .body_shares
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = shares.get_mut(&self.key) {
            *n = n.saturating_sub(self.bytes);
            if *n == 0 {
                shares.remove(&self.key);
            }
        }
    }
}
