//! Sensitive values of one execution (`sandbox.sensitive`, compiled in `context::sensitive`):
//! the session's placeholder map, opened before the execution and kept after it, sealed under
//! the operator's key (the OAuth tokens' `SealKey`) in the state store beside the session's
//! values; what the execution returns redacted with it; placeholders in tool-call arguments
//! replaced by their values.
//!
//! The key is `MCP_SANDBOX_KEY_FILE` / `MCP_SANDBOX_KEY`. Without one, a random key for this
//! process is used: placeholders then last as long as the process (a `serve` session), and a
//! map sealed by another process does not open — it is replaced by an empty one that goes on
//! counting from the stored next number, so an old placeholder never names a new value.

use crate::context::sensitive::placeholders::Placeholders;
use crate::context::sensitive::{first_placeholder, Redactor, Sensitive, SubstituteError};
use crate::context::session::SessionScope;
use crate::error::{ErrorCode, ExecError};
use crate::exec::outcome::{LogLine, Outcome};
use crate::exec::sealing::key;
use crate::exec::state::SessionState;
use crate::store::session_state::SealedMap;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

fn aad(scope: &SessionScope) -> Vec<u8> {
    format!("mcp-sandbox placeholders v1\0{}", scope.key()).into_bytes()
}

/// One session's map while executions use it. Executions of one session running at once share
/// it, so a number is never given twice; saves are taken one at a time, so a later save always
/// holds what an earlier one held.
#[derive(Debug, Default)]
struct Shared {
    map: Mutex<Placeholders>,
    save: tokio::sync::Mutex<()>,
}

/// The maps in use, by session scope key.
static OPEN: OnceLock<Mutex<HashMap<String, Weak<Shared>>>> = OnceLock::new();

fn open_maps() -> std::sync::MutexGuard<'static, HashMap<String, Weak<Shared>>> {
    OPEN.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The placeholders of one execution: the compiled config and the session's map.
#[derive(Debug)]
pub struct ExecPlaceholders {
    sensitive: Arc<Sensitive>,
    shared: Arc<Shared>,
    /// Where the map is kept (`None`: no session, or no state store — the map lives for this
    /// execution only).
    kept: Option<(SessionScope, Arc<SessionState>)>,
}

impl ExecPlaceholders {
    /// Opens `scope`'s map in `state` (an empty one without a session or a store).
    pub async fn open(
        sensitive: Arc<Sensitive>,
        scope: Option<SessionScope>,
        state: Option<Arc<SessionState>>,
    ) -> Result<Arc<ExecPlaceholders>, ExecError> {
        let kept = scope.zip(state);
        let shared = match &kept {
            None => Arc::new(Shared::default()),
            Some((scope, state)) => {
                let id = scope.key();
                if let Some(live) = open_maps().get(&id).and_then(Weak::upgrade) {
                    return Ok(Arc::new(ExecPlaceholders {
                        sensitive,
                        shared: live,
                        kept,
                    }));
                }
                let (s, options) = (scope.clone(), *state.options());
                let row = state
                    .store()
                    .run(move |store| store.load_placeholders(&s, &options, crate::trace::now_ms()))
                    .await
                    .map_err(unavailable)?;
                let loaded = Arc::new(Shared {
                    map: Mutex::new(open_map(scope, &row)),
                    save: Default::default(),
                });
                // Another execution of the session may have opened it meanwhile: share theirs.
                let mut maps = open_maps();
                match maps.get(&id).and_then(Weak::upgrade) {
                    Some(live) => live,
                    None => {
                        if maps.len() >= 1024 {
                            maps.retain(|_, w| w.strong_count() > 0);
                        }
                        maps.insert(id, Arc::downgrade(&loaded));
                        loaded
                    }
                }
            }
        };
        Ok(Arc::new(ExecPlaceholders {
            sensitive,
            shared,
            kept,
        }))
    }

    fn map(&self) -> std::sync::MutexGuard<'_, Placeholders> {
        self.shared.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn sensitive(&self) -> &Arc<Sensitive> {
        &self.sensitive
    }

    /// Replaces the placeholders in a call's arguments, for `server:tool` (after the gate and
    /// the flow rules let the call through). `PERMISSION_DENIED` names the kind and the rule.
    pub fn substitute(&self, qualified: &str, args: &mut Value) -> Result<(), ExecError> {
        let map = self.map();
        self.sensitive
            .substitute(&map, qualified, args)
            .map(|_| ())
            .map_err(denied)
    }

    /// Remembers the fields of `server:tool`'s answer that the config marks sensitive.
    /// `LIMIT_EXCEEDED` when one finds no room in the map (full, or the value over 16 KiB):
    /// the answer is then withheld, since the value could not be masked.
    pub fn remember_fields(&self, qualified: &str, answer: &Value) -> Result<(), ExecError> {
        let mut map = self.map();
        self.sensitive
            .remember_fields(qualified, answer, &mut map)
            .map_err(|e| {
                ExecError::new(ErrorCode::LimitExceeded, e.to_string()).with_tool(qualified)
            })
    }

    /// `value` redacted (the map grows by what is new in it).
    pub fn redact_value(&self, value: &mut Value) {
        let mut map = self.map();
        let r = self.sensitive.redactor(&map);
        r.redact_value(value, &mut map);
    }

    /// `text` redacted.
    pub fn redact_text(&self, text: &str) -> String {
        let mut map = self.map();
        let r = self.sensitive.redactor(&map);
        r.redact_str(text, &mut map)
            .unwrap_or_else(|| text.to_string())
    }

    /// Redacts everything of `outcome` a client sees: every string of it — the result (its
    /// keys too), the logs, every field of the error and of each trace event (tool names,
    /// messages, keys), the metrics — walked as JSON, not by a list of fields, so a field added
    /// later is redacted too. Only the codes and event types (names from a fixed set the host
    /// picks) are left as they are. Says once when the map was full. An outcome that does not
    /// read back after redaction is withheld (`SANDBOX_UNAVAILABLE`), never returned unredacted.
    pub fn redact_outcome(&self, outcome: &mut Outcome) {
        let mut map = self.map();
        let r = self.sensitive.redactor(&map);
        r.redact_value(&mut outcome.result, &mut map);
        let result = std::mem::take(&mut outcome.result);
        let runner_pid = outcome.metrics.runner_pid;
        let redacted = serde_json::to_value(&*outcome).and_then(|mut v| {
            redact_fixed_shape(&r, &mut v, &mut map);
            serde_json::from_value::<Outcome>(v)
        });
        match redacted {
            Ok(o) => {
                *outcome = o;
                outcome.result = result;
                outcome.metrics.runner_pid = runner_pid;
            }
            Err(e) => {
                *outcome = Outcome::failed(ExecError::new(
                    ErrorCode::SandboxUnavailable,
                    format!("the outcome could not be redacted ({e}), so it is withheld; retry, and report this if it happens again"),
                ));
            }
        }
        if std::mem::take(&mut map.overflowed) {
            outcome.logs.push(LogLine {
                level: "warn".into(),
                message: format!(
                    "{}: this session's placeholder map is full ({} values, {} KiB at most), so some sensitive values were masked as ⟪kind⟫ without a number and cannot be passed back to a tool; start a new session to pass them",
                    ErrorCode::LimitExceeded.as_str(),
                    crate::context::sensitive::placeholders::MAX_VALUES,
                    crate::context::sensitive::placeholders::MAX_BYTES >> 10
                ),
            });
        }
    }

    /// Keeps the map with the session, when it changed. Fails closed: the caller withholds
    /// the outcome when the map cannot be kept (its placeholders could not come back).
    pub async fn save(&self) -> Result<(), ExecError> {
        let Some((scope, state)) = &self.kept else {
            return Ok(());
        };
        let _one_at_a_time = self.shared.save.lock().await;
        let (plain, next) = {
            let mut map = self.map();
            if !std::mem::take(&mut map.changed) {
                return Ok(());
            }
            let plain = serde_json::to_vec(&*map).map_err(|e| unavailable_text(e.to_string()))?;
            (plain, map.next())
        };
        let sealed = key()
            .seal(&aad(scope), &plain)
            .map_err(|e| unavailable_text(e.to_string()))?;
        let row = SealedMap {
            next,
            sealed: Some(sealed),
        };
        let (s, options) = (scope.clone(), *state.options());
        state
            .store()
            .run(move |store| store.save_placeholders(&s, &row, &options, crate::trace::now_ms()))
            .await
            .map_err(unavailable)
    }
}

/// The map in `row`, or an empty one counting on from its next number when it does not open.
fn open_map(scope: &SessionScope, row: &SealedMap) -> Placeholders {
    let Some((nonce, sealed)) = &row.sealed else {
        return Placeholders::starting_at(row.next);
    };
    match key()
        .open(&aad(scope), nonce, sealed)
        .and_then(|plain: Vec<u8>| serde_json::from_slice::<Placeholders>(&plain).ok())
    {
        Some(map) => map.reindexed(),
        None => {
            tracing::warn!("a session's placeholder map does not open with this key (another key or process sealed it); its placeholders cannot be resolved");
            Placeholders::starting_at(row.next)
        }
    }
}

/// For an execution without a map (a capability's nested one): any placeholder in `args` is
/// refused, since none can be resolved there.
pub fn refuse_any(sensitive: &Sensitive, qualified: &str, args: &Value) -> Result<(), ExecError> {
    let _ = (sensitive, qualified);
    match first_placeholder(args) {
        Some(placeholder) => Err(denied(SubstituteError::NoMap { placeholder })),
        None => Ok(()),
    }
}

/// Redacts every string of the outcome's JSON (without its result) but the values of `type`
/// and `code`: the trace events' kinds and the error codes, names of a fixed set the host
/// picks, which must read back as such.
fn redact_fixed_shape(r: &Redactor<'_>, v: &mut Value, map: &mut Placeholders) {
    match v {
        Value::Object(fields) => {
            for (k, v) in fields.iter_mut() {
                if (k == "type" || k == "code") && v.is_string() {
                    continue;
                }
                redact_fixed_shape(r, v, map);
            }
        }
        Value::Array(items) => {
            for v in items {
                redact_fixed_shape(r, v, map);
            }
        }
        Value::String(s) => {
            if let Some(new) = r.redact_str(s, map) {
                *s = new;
            }
        }
        // The host's numbers (times, sizes, counts): never data of a tool.
        _ => {}
    }
}

fn denied(e: SubstituteError) -> ExecError {
    ExecError::new(ErrorCode::PermissionDenied, e.to_string())
}

fn unavailable(e: crate::store::StoreError) -> ExecError {
    unavailable_text(e.to_string())
}

fn unavailable_text(e: String) -> ExecError {
    ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!("the session's placeholder map could not be used ({e}), so the outcome is withheld; retry, or check the state store (the file, or the PostgreSQL database)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::sensitive::SensitiveConfig;

    fn said_ends(s: &str) -> bool {
        s.starts_with("⟪email:") && s.ends_with(":1⟫")
    }

    #[tokio::test]
    async fn a_session_map_is_sealed_kept_and_per_scope() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let store = crate::store::Store::open(&path).unwrap();
        let state = Arc::new(SessionState::new(store, Default::default()));
        let config: SensitiveConfig = serde_json::from_value(
            serde_json::json!({"detect": ["email"], "reveal_to": {"email": ["mail:*"]}}),
        )
        .unwrap();
        let sensitive = Sensitive::compile(&config).unwrap();
        let mine = SessionScope::new("t1", "p", "s1");
        let open = |scope: &SessionScope| {
            ExecPlaceholders::open(sensitive.clone(), Some(scope.clone()), Some(state.clone()))
        };
        let first = {
            let p = open(&mine).await.unwrap();
            let said = p.redact_text("ada@example.com");
            assert!(said_ends(&said), "{said}");
            p.save().await.unwrap();
            said
        };
        // Reopened from the store (the first map is dropped): the same placeholder (the same
        // tag and number), the value back.
        let p = open(&mine).await.unwrap();
        let placeholder = p.redact_text("ada@example.com");
        assert_eq!(placeholder, first);
        let mut args = serde_json::json!({"to": placeholder});
        p.substitute("mail:send", &mut args).unwrap();
        assert_eq!(args["to"], "ada@example.com");
        // Another tenant's session with the same name has no such placeholder.
        let other = open(&SessionScope::new("t2", "p", "s1")).await.unwrap();
        let mut args = serde_json::json!({"to": placeholder});
        let e = other.substitute("mail:send", &mut args).unwrap_err();
        assert_eq!(e.code, ErrorCode::PermissionDenied);
        assert!(
            e.message
                .contains("is not one of this session's placeholders"),
            "{}",
            e.message
        );
        // Nothing of the value in the file or its WAL.
        drop((p, other));
        for f in ["state.db", "state.db-wal"] {
            let bytes = std::fs::read(dir.path().join(f)).unwrap_or_default();
            assert!(!bytes.windows(15).any(|w| w == b"ada@example.com"), "{f}");
        }
    }
}
