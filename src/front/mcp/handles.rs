//! Session handles (MCP 2026-07-28, SEP-2567). That revision has no `initialize` and no
//! `Mcp-Session-Id`: state that spans calls travels in handles the server mints and the client
//! (the model) passes back as an ordinary tool argument. `execute_code` on a request without a
//! protocol session opens a session and its answer names its handle (`session`);
//! `execute_code`, `wait_execution`, `cancel_execution` and `list_state` take it back as
//! `session` and go on in that session: its values, placeholders and yielded executions.
//!
//! A handle is a bearer capability the model holds, so:
//! - it is 256 random bits (`session_` + 64 hex digits), never derived from anything;
//! - the store keeps only its SHA-256, inside the scope of the tenant and principal that minted
//!   it (`store::session_handles`): a handle only opens a session of the principal presenting
//!   it, so another principal's handle, a made-up one, a malformed one and an expired one all
//!   get the same answer ([`unknown`]), and a handle cannot be probed;
//! - it expires after `sandbox.session.ttl_ms` idle, and works through every gateway on the same
//!   database and after a restart (the session is a row of the state store).
//!
//! Legacy clients keep their `Mcp-Session-Id` scope, and stdio keeps the connection: a request
//! with a protocol session needs no handle; one that passes a handle anyway goes on in the
//! handle's session (the same principal's, so nothing is widened).

use super::Gateway;
use crate::context::flow::FlowScope;
use crate::context::principal::Principal;
use crate::context::session::SessionScope;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};

/// The argument that carries a handle back.
pub const ARG: &str = "session";
/// The code of the one refusal every bad handle gets.
pub const UNKNOWN_CODE: &str = "SESSION_UNKNOWN";
const PREFIX: &str = "session_";
/// Random bytes in a handle.
const RANDOM_BYTES: usize = 32;

/// The `session` argument in the input schemas of the tools that take it.
pub fn schema_property() -> Value {
    json!({
        "type": "string",
        "description": "The session handle an earlier answer of this server named in its `session` field. Only for \
    clients without an MCP session (protocol 2026-07-28), where nothing else ties your calls together: pass it back \
    to continue that session (its stored values, placeholders and running executions); leave it out of \
    execute_code to start a new session, whose answer names a new handle. It expires after the session is idle \
    for a while; a handle that is unknown, expired or another principal's is refused with SESSION_UNKNOWN. Leave \
    it out on a client with an MCP session."
    })
}

/// Adds the `session` argument to the input schema of a tool that takes it.
pub fn add_to_schema(tool: &str, schema: &mut Value) {
    if takes_session(tool) {
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert(ARG.into(), schema_property());
        }
    }
}

/// The same refusal for every handle that does not name a live session of the caller.
pub fn unknown() -> ErrorData {
    ErrorData::invalid_params(
        "`session` is not a session handle of yours that is still open (it may have expired after being idle, \
or been minted for another principal); call execute_code without `session` to start a new session, \
and pass the handle its answer names",
        Some(json!({"code": UNKNOWN_CODE})),
    )
}

/// What a tool call needs when it names no session and has no protocol session.
pub fn needed(tool: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "{tool}: pass `session`, the session handle an execute_code answer gave you: this request has no MCP \
session (protocol 2026-07-28), so nothing else names the session it belongs to"
        ),
        Some(json!({"code": "SESSION_REQUIRED"})),
    )
}

/// The scope of `handle`'s session for `principal` (the store keeps its digest only).
fn scope_of(principal: &Principal, handle: &str) -> SessionScope {
    let digest = crate::store::audit_options::sha256_hex(handle.as_bytes());
    SessionScope::new(
        principal.tenant.clone(),
        principal.id.clone(),
        format!("handle:{digest}"),
    )
}

/// The scope where the data-flow labels of `principal`'s sessionless requests stay.
pub fn principal_labels(principal: &Principal) -> SessionScope {
    SessionScope::labels_of_principal(&principal.tenant, &principal.name)
}

/// Takes `session` out of a tool's arguments: `Ok(None)` when absent or null, the refusal when
/// it is not a well-formed handle (the same refusal as an unknown one).
pub fn take(args: &mut JsonObject) -> Result<Option<String>, ErrorData> {
    match args.remove(ARG) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if well_formed(&s) => Ok(Some(s)),
        Some(_) => Err(unknown()),
    }
}

fn well_formed(handle: &str) -> bool {
    handle.strip_prefix(PREFIX).is_some_and(|rest| {
        rest.len() == 2 * RANDOM_BYTES
            && rest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn state_of(
    gateway: &Gateway,
) -> Result<&std::sync::Arc<crate::exec::state::SessionState>, ErrorData> {
    gateway.sandbox.session_state().ok_or_else(|| {
        ErrorData::internal_error(
            "sessions without an MCP session (protocol 2026-07-28) are kept in the state store, and this \
gateway has none (see the warning it printed at start; pass --state); use a client in legacy mode meanwhile",
            Some(json!({"code": "SANDBOX_UNAVAILABLE"})),
        )
    })
}

fn unavailable(e: crate::store::StoreError) -> ErrorData {
    tracing::warn!("session handle: the state store failed: {e}");
    ErrorData::internal_error(
        format!("the state store could not be reached to open or resume the session ({e}); retry"),
        Some(json!({"code": "SANDBOX_UNAVAILABLE"})),
    )
}

/// The sessions this gateway resumed lately, by scope key, and when it renewed each in the
/// store: a session resumed again within [`Resumed::window`] is live (it was used that recently,
/// and nothing ends a handle's session but its TTL) and is not written again. The store's
/// `used_at` then lags by at most the window, so a session may expire that much early; the
/// window is a tenth of the TTL, at most 30 s.
#[derive(Debug, Default)]
pub struct Resumed {
    renewed: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

/// Sessions remembered at most; past it the oldest half is forgotten.
const MAX_REMEMBERED: usize = 10_000;

impl Resumed {
    fn window(ttl_ms: u64) -> std::time::Duration {
        std::time::Duration::from_millis((ttl_ms / 10).min(30_000))
    }

    fn recent(&self, key: &str, ttl_ms: u64) -> bool {
        let renewed = self.renewed.lock().unwrap_or_else(|p| p.into_inner());
        renewed
            .get(key)
            .is_some_and(|t| t.elapsed() < Self::window(ttl_ms))
    }

    fn note(&self, key: String) {
        let mut renewed = self.renewed.lock().unwrap_or_else(|p| p.into_inner());
        if renewed.len() >= MAX_REMEMBERED {
            let mut ages: Vec<std::time::Instant> = renewed.values().copied().collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            renewed.retain(|_, t| *t > cut);
        }
        renewed.insert(key, std::time::Instant::now());
    }
}

/// The scope of `handle` if it is a live session of `principal` (renewed), else [`unknown`].
pub async fn resume(
    gateway: &Gateway,
    principal: &Principal,
    handle: &str,
) -> Result<SessionScope, ErrorData> {
    let state = state_of(gateway)?;
    let scope = scope_of(principal, handle);
    let key = scope.key();
    if gateway.handles.recent(&key, state.options().ttl_ms) {
        return Ok(scope);
    }
    let (s, options) = (scope.clone(), *state.options());
    let live = state
        .store()
        .run(move |store| store.resume_handle_session(&s, &options, crate::trace::now_ms()))
        .await
        .map_err(unavailable)?;
    if live {
        gateway.handles.note(key);
        Ok(scope)
    } else {
        Err(unknown())
    }
}

/// Mints a handle for `principal` and opens its session; also how many of the principal's
/// least recently used handle sessions were closed to make room (`sandbox.session.max_handles`).
pub async fn open(
    gateway: &Gateway,
    principal: &Principal,
) -> Result<(SessionScope, String, u64), ErrorData> {
    let state = state_of(gateway)?;
    let mut bytes = [0u8; RANDOM_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| {
        ErrorData::internal_error(
            format!("no randomness for a session handle ({e}); retry"),
            Some(json!({"code": "SANDBOX_UNAVAILABLE"})),
        )
    })?;
    let handle = format!("{PREFIX}{}", hex(&bytes));
    let scope = scope_of(principal, &handle);
    let (s, options) = (scope.clone(), *state.options());
    let closed = state
        .store()
        .run(move |store| store.open_handle_session(&s, &options, crate::trace::now_ms()))
        .await
        .map_err(unavailable)?;
    gateway.handles.note(scope.key());
    Ok((scope, handle, closed))
}

/// The session one tool call belongs to.
#[derive(Debug, Clone)]
pub struct NamedSession {
    pub scope: SessionScope,
    /// The handle the answer names (the call has no protocol session).
    pub handle: Option<String>,
    /// Where the execution's data-flow labels stay, when not in `scope`.
    pub labels: Option<SessionScope>,
    /// Older handle sessions of the principal closed to make room for this new one.
    pub closed: u64,
}

impl NamedSession {
    /// A call of a protocol session (HTTP `Mcp-Session-Id`, stdio connection).
    pub fn protocol(scope: SessionScope) -> Self {
        NamedSession {
            scope,
            handle: None,
            labels: None,
            closed: 0,
        }
    }
}

/// The tools that belong to a session and take `session`.
pub fn takes_session(tool: &str) -> bool {
    matches!(
        tool,
        "execute_code" | "wait_execution" | "cancel_execution" | "list_state"
    )
}

/// The session of a call of `tool`: `protocol` when the request has a protocol session (a
/// handle passed beside one is refused: labels could otherwise be shed by moving to a fresh
/// handle), else the handle in `args` (taken out of them), else for `execute_code` a new one.
pub async fn name(
    gateway: &Gateway,
    principal: &Principal,
    tool: &str,
    args: &mut JsonObject,
    protocol: Option<SessionScope>,
    flow_scope: FlowScope,
) -> Result<NamedSession, ErrorData> {
    let passed = take(args)?;
    if let Some(scope) = protocol {
        if passed.is_some() {
            return Err(ErrorData::invalid_params(
                format!(
                    "{tool}: `session` is for clients without an MCP session (protocol 2026-07-28); this request \
belongs to an MCP session (Mcp-Session-Id, or the stdio connection), which already keeps its state: leave `session` out"
                ),
                Some(json!({"code": "SESSION_NOT_NEEDED"})),
            ));
        }
        return Ok(NamedSession::protocol(scope));
    }
    let (scope, handle, closed) = match passed {
        Some(h) => (resume(gateway, principal, &h).await?, h, 0),
        None if tool == "execute_code" => open(gateway, principal).await?,
        None => return Err(needed(tool)),
    };
    // A model carries the handle and may drop it: by default labels stay with the principal.
    let labels = matches!(flow_scope, FlowScope::Principal | FlowScope::Session)
        .then(|| principal_labels(principal));
    Ok(NamedSession {
        scope,
        handle: Some(handle),
        labels,
        closed,
    })
}

/// `response` saying that minting its session closed `closed` older ones (`session_closed` in
/// `structuredContent`, and a line of its text); unchanged when none was.
pub fn closed_in(
    response: rmcp::model::CallToolResponse,
    closed: u64,
    max: u64,
) -> rmcp::model::CallToolResponse {
    let mut result = match response {
        rmcp::model::CallToolResponse::Complete(result) => result,
        other => return other,
    };
    if closed > 0 {
        let line = format!(
            "session_closed: {closed} of your older sessions (the least recently used) expired to make room for this one: a principal keeps at most {max} live sessions through handles (sandbox.session.max_handles); their handles are no longer valid"
        );
        if let Some(Value::Object(map)) = result.structured_content.as_mut() {
            map.insert(
                "session_closed".into(),
                json!({"count": closed, "max_handles": max}),
            );
        }
        result.content.push(ContentBlock::text(line));
    }
    result.into()
}

/// The text line that names the handle in an answer.
pub fn line(handle: &str) -> String {
    format!(
        "session: {handle} (pass it as `session` to the next execute_code, wait_execution, cancel_execution \
or list_state to keep this session's state, placeholders and running executions)"
    )
}

/// `result` naming `handle` (in `structuredContent` and as a line of its text). The handle's
/// field and line come on top of the output budget (under 300 bytes).
pub fn name_in(mut result: CallToolResult, handle: Option<&str>) -> CallToolResult {
    let Some(handle) = handle else {
        return result;
    };
    if let Some(Value::Object(map)) = result.structured_content.as_mut() {
        map.insert(ARG.into(), Value::String(handle.into()));
    }
    result.content.push(ContentBlock::text(line(handle)));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_handles_are_looked_up() {
        let mut ok = JsonObject::new();
        let h = format!("{PREFIX}{}", "a".repeat(64));
        ok.insert(ARG.into(), json!(h));
        assert_eq!(take(&mut ok).unwrap(), Some(h));
        assert!(ok.is_empty(), "taken out of the arguments");
        for bad in [
            json!(""),
            json!(42),
            json!(format!("{PREFIX}{}", "a".repeat(63))),
            json!(format!("{PREFIX}{}", "A".repeat(64))),
            json!(format!("{PREFIX}{}\u{0}", "a".repeat(63))),
            json!(format!("x{}", "a".repeat(69))),
        ] {
            let mut args = JsonObject::new();
            args.insert(ARG.into(), bad.clone());
            let e = take(&mut args).unwrap_err();
            assert_eq!(e, unknown(), "{bad}");
        }
        assert_eq!(take(&mut JsonObject::new()).unwrap(), None);
    }

    #[test]
    fn a_session_resumed_lately_is_not_written_again_within_a_tenth_of_the_ttl() {
        let r = Resumed::default();
        assert!(!r.recent("k", 3_600_000));
        r.note("k".into());
        assert!(r.recent("k", 3_600_000));
        assert!(!r.recent("other", 3_600_000));
        // A 20 ms TTL: a 2 ms window.
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(!r.recent("k", 20));
        assert_eq!(
            Resumed::window(3_600_000),
            std::time::Duration::from_secs(30)
        );
    }

    #[test]
    fn a_handle_names_a_scope_of_the_principal_presenting_it() {
        let a = Principal::local();
        let h = format!("{PREFIX}{}", "b".repeat(64));
        let scope = scope_of(&a, &h);
        assert_eq!(scope.principal, a.id);
        assert!(!scope.session.contains(&h), "only the digest is kept");
        assert_ne!(scope.session, principal_labels(&a).session);
    }
}
