//! Session state as scripts see it: `store(key, value)`, `load(key)`, `keys()`, `remove(key)`.
//! The runner sends each as a call to the reserved server `$state` (no configured server can
//! have that name); the session (`exec/session/state_calls.rs`) routes it here instead of to
//! the catalog. Keys and values are checked here, bounded by `sandbox.session`, and kept in the
//! state store under the execution's [`SessionScope`] — never visible to another session,
//! principal or tenant, and gone once the session has been idle for its TTL.
//!
//! At rest a value is sealed (XChaCha20-Poly1305, `exec::sealing`) under the operator's key
//! when one is set, and under this process's key when the execution keeps sensitive values
//! from the model (`sandbox.sensitive`) and there is none; otherwise it is JSON text in the
//! clear, as before. The associated data binds the tenant, principal, session and key, so a
//! row copied to another session or key does not open. A value that does not open fails with
//! `SANDBOX_UNAVAILABLE` saying why and what to do, never as another value.

use crate::context::flow::{LabelSource, SessionTaint};
use crate::context::session::{SessionOptions, SessionScope};
use crate::error::{ErrorCode, ExecError};
use crate::exec::sealing;
use crate::store::session_state::{StateEntry, StateQuotaError, StoredValue};
use crate::store::Store;
use crate::tools::catalog::oauth_store::SealKey;
use crate::trace::now_ms;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

pub use sandbox_runner::protocol::STATE_SERVER;

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// How often, at most, expired sessions are swept from the store.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// One state operation, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum StateOp {
    Store { key: String, value: Value },
    Load { key: String },
    Keys,
    Remove { key: String },
}

impl StateOp {
    /// The operation `tool` of `$state` with the arguments the runner sent.
    pub fn parse(tool: &str, args: &Value) -> Result<StateOp, ExecError> {
        let key = || -> Result<String, ExecError> {
            match args.get("key") {
                Some(Value::String(k)) => check_key(k).map(|()| k.clone()),
                _ => Err(invalid(format!(
                    "{tool}(key{}): the key must be a string",
                    if tool == "store" { ", value" } else { "" }
                ))),
            }
        };
        match tool {
            "store" => {
                let key = key()?;
                match args.get("value") {
                    Some(v) => Ok(StateOp::Store {
                        key,
                        value: v.clone(),
                    }),
                    None => Err(invalid(format!(
                        "store({key:?}, value): the value is missing or undefined; store JSON data (null, a boolean, number, string, array or object), or remove({key:?})"
                    ))),
                }
            }
            "load" => Ok(StateOp::Load { key: key()? }),
            "remove" => Ok(StateOp::Remove { key: key()? }),
            "keys" => Ok(StateOp::Keys),
            other => Err(ExecError::new(
                ErrorCode::ToolNotFound,
                format!("unknown state operation '{other}'; use store, load, keys or remove"),
            )),
        }
    }

    /// `state_store` (store, remove) or `state_load` (load, keys).
    pub fn writes(&self) -> bool {
        matches!(self, StateOp::Store { .. } | StateOp::Remove { .. })
    }

    /// The key it names (`*` for `keys()`), for the trace.
    pub fn key(&self) -> &str {
        match self {
            StateOp::Store { key, .. } | StateOp::Load { key } | StateOp::Remove { key } => key,
            StateOp::Keys => "*",
        }
    }
}

fn invalid(message: String) -> ExecError {
    ExecError::new(ErrorCode::InvalidArguments, message)
}

/// Keys: 1 to [`MAX_KEY_BYTES`] bytes, no control characters (they are shown in traces and by
/// `list_state`).
fn check_key(key: &str) -> Result<(), ExecError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
        return Err(invalid(format!(
            "the key {:?} is not allowed: use 1 to {MAX_KEY_BYTES} bytes without control characters",
            crate::term::clip(key, 64)
        )));
    }
    Ok(())
}

/// What an operation answers the script, and the size the trace records.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub value: Value,
    /// Bytes of JSON stored or loaded (0 for `keys()`, `remove()` and a missing key).
    pub bytes: u64,
    /// The data-flow labels of what was read (a loaded value's; every value's for `keys()`).
    pub labels: Vec<LabelSource>,
}

/// Why an operation was refused, and the data-flow labels of what the refusal was derived
/// from (the session's values, for a quota that counts them; else none).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub error: ExecError,
    pub labels: Vec<LabelSource>,
}

impl From<ExecError> for Refusal {
    fn from(error: ExecError) -> Self {
        Refusal {
            error,
            labels: Vec::new(),
        }
    }
}

/// The state store of a host, with the bounds of `sandbox.session`.
#[derive(Debug)]
pub struct SessionState {
    store: Store,
    options: SessionOptions,
    last_sweep: Mutex<Option<Instant>>,
    /// The data-flow labels of the sessions that have executions running in this process, by
    /// scope key, shared live by those executions (`flow_scope: "session"`); a session's entry
    /// goes when its last execution ends (the store keeps its labels for the next ones).
    live_labels: Mutex<HashMap<String, Weak<SessionTaint>>>,
}

impl SessionState {
    pub fn new(store: Store, options: SessionOptions) -> Self {
        SessionState {
            store,
            options,
            last_sweep: Mutex::new(None),
            live_labels: Mutex::default(),
        }
    }

    /// The labels `scope`'s executions share live in this process: the running ones' entry,
    /// or a new one seeded with what the store keeps of the session (fail closed: labels that
    /// cannot be read stop the execution). An execution joins it with
    /// [`crate::context::flow::Taint::share`] and still adds what it read to the store when it
    /// ends ([`SessionState::add_session_labels`]), for executions on other gateways and after
    /// a restart.
    pub async fn live_labels(&self, scope: &SessionScope) -> Result<Arc<SessionTaint>, ExecError> {
        let id = scope.key();
        let live = self.live_entry(&id);
        // Read from the store every time: another gateway sharing it may have added some.
        let kept = self.session_labels(scope).await?;
        for source in &kept {
            live.add(source);
        }
        Ok(live)
    }

    fn live_entry(&self, id: &str) -> Arc<SessionTaint> {
        let mut map = self.live_labels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(live) = map.get(id).and_then(Weak::upgrade) {
            return live;
        }
        if map.len() >= 1024 {
            map.retain(|_, w| w.strong_count() > 0);
        }
        let live = Arc::new(SessionTaint::default());
        map.insert(id.to_string(), Arc::downgrade(&live));
        live
    }

    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// The state store (the placeholder maps of `exec::placeholders` live beside the values).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Carries out `op` in `scope`'s state. `load` answers `{found, value}` (the runner turns a
    /// missing key into `undefined`), `store` `null`, `keys` the keys in order, `remove` whether
    /// the key was there.
    /// A `store` keeps `read` (the labels its execution has read) with the value; `sensitive`:
    /// the execution keeps sensitive values from the model, so its values are sealed even
    /// without the operator's key.
    pub async fn apply(
        &self,
        scope: &SessionScope,
        op: StateOp,
        read: Vec<LabelSource>,
        sensitive: bool,
    ) -> Result<Answer, Refusal> {
        self.maybe_sweep();
        let (scope, options) = (scope.clone(), self.options);
        let answer = self
            .store
            .run(move |store| {
                let now = now_ms();
                Ok(match op {
                    StateOp::Store { key, value } => {
                        let text = serde_json::to_string(&value).unwrap_or_default();
                        let bytes = text.len() as u64;
                        let kept = match sealing::operator_key() {
                            Some(k) => seal(k, &scope, &key, text),
                            None if sensitive => seal(sealing::key(), &scope, &key, text),
                            None => Ok(StoredValue::Json(text)),
                        };
                        let kept = match kept {
                            Ok(kept) => kept,
                            Err(e) => return Ok(Err(e.into())),
                        };
                        match store.store_state(&scope, &key, &kept, &read, &options, now)? {
                            Ok(()) => Ok(Answer {
                                value: Value::Null,
                                bytes,
                                labels: Vec::new(),
                            }),
                            Err(e) => {
                                // The session's bounds count the other values: a refusal
                                // that says how many keys or bytes they hold tells their
                                // sizes, so it carries their labels (a value's own size is
                                // the script's).
                                let labels = match e {
                                    StateQuotaError::Value { .. } => Vec::new(),
                                    _ => store
                                        .list_state(&scope, &options, now)?
                                        .into_iter()
                                        .flat_map(|e| e.sources)
                                        .collect(),
                                };
                                Err(Refusal {
                                    error: ExecError::new(
                                        ErrorCode::LimitExceeded,
                                        format!("store({key:?}) was refused: {e}"),
                                    ),
                                    labels,
                                })
                            }
                        }
                    }
                    StateOp::Load { key } => match store.load_state(&scope, &key, &options, now)? {
                        Some((kept, labels)) => {
                            let bytes = kept.bytes();
                            let text = match open(sealing::key(), &scope, &key, kept) {
                                Ok(text) => text,
                                Err(e) => return Ok(Err(e.into())),
                            };
                            // As deep as the value that was stored (up to the protocol's
                            // depth), not serde_json's default of 128 levels.
                            sandbox_runner::protocol::decode_on_deep_stack::<Value>(text.as_bytes())
                                .map(|value| Answer {
                                    value: json!({"found": true, "value": value}),
                                    bytes,
                                    labels,
                                })
                                .map_err(|e| {
                                    ExecError::new(
                                        ErrorCode::SandboxUnavailable,
                                        format!("the stored value of {key:?} is corrupt ({e}); remove({key:?}) it"),
                                    )
                                    .into()
                                })
                        }
                        None => Ok(Answer {
                            value: json!({"found": false}),
                            bytes: 0,
                            labels: Vec::new(),
                        }),
                    },
                    StateOp::Keys => {
                        // Keys are data too (a script may store under a key it read).
                        let entries = store.list_state(&scope, &options, now)?;
                        let labels = entries.iter().flat_map(|e| e.sources.clone()).collect();
                        Ok(Answer {
                            value: Value::from(
                                entries
                                    .into_iter()
                                    .map(|e| Value::String(e.key))
                                    .collect::<Vec<_>>(),
                            ),
                            bytes: 0,
                            labels,
                        })
                    }
                    StateOp::Remove { key } => Ok(Answer {
                        value: Value::Bool(store.remove_state(&scope, &key, &options, now)?),
                        bytes: 0,
                        labels: Vec::new(),
                    }),
                })
            })
            .await;
        match answer {
            Ok(result) => result,
            Err(e) => Err(unavailable(e).into()),
        }
    }

    /// `list_state`: the keys of `scope` with their sizes and when they were stored.
    pub async fn list(&self, scope: &SessionScope) -> Result<Vec<StateEntry>, ExecError> {
        self.maybe_sweep();
        let (scope, options) = (scope.clone(), self.options);
        self.store
            .run(move |store| store.list_state(&scope, &options, now_ms()))
            .await
            .map_err(unavailable)
    }

    /// The labels `scope`'s earlier executions read.
    pub async fn session_labels(
        &self,
        scope: &SessionScope,
    ) -> Result<Vec<LabelSource>, ExecError> {
        let scope = scope.clone();
        self.store
            .run(move |store| store.session_labels(&scope))
            .await
            .map_err(unavailable)
    }

    /// Adds what an execution read (or what `list_state` showed) to `scope`'s labels.
    pub async fn add_session_labels(
        &self,
        scope: &SessionScope,
        labels: Vec<LabelSource>,
    ) -> Result<(), ExecError> {
        if labels.is_empty() {
            return Ok(());
        }
        // Executions of the session running now see them at once (`list_state` adds some).
        let live = self
            .live_labels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&scope.key())
            .and_then(Weak::upgrade);
        if let Some(live) = live {
            for source in &labels {
                live.add(source);
            }
        }
        let (scope, options) = (scope.clone(), self.options);
        self.store
            .run(move |store| store.add_session_labels(&scope, &labels, &options, now_ms()))
            .await
            .map_err(unavailable)
    }

    /// Deletes expired sessions, at most once a minute, in the background.
    fn maybe_sweep(&self) {
        {
            let mut last = self.last_sweep.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|t| t.elapsed() < SWEEP_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        let (store, options) = (self.store.clone(), self.options);
        tokio::task::spawn_blocking(move || {
            if let Err(e) = store.sweep_state(&options, now_ms()) {
                tracing::warn!("sweeping expired session state failed: {e}");
            }
        });
    }
}

/// The associated data of a kept value: its session's scope and its key.
fn aad(scope: &SessionScope, key: &str) -> Vec<u8> {
    format!("mcp-sandbox state v1\0{}\0{key}", scope.key()).into_bytes()
}

/// `text` (a value's JSON) sealed with `with` for `key` of `scope`.
fn seal(
    with: &SealKey,
    scope: &SessionScope,
    key: &str,
    text: String,
) -> Result<StoredValue, ExecError> {
    let (nonce, sealed) = with.seal(&aad(scope, key), text.as_bytes()).map_err(|e| {
        ExecError::new(
            ErrorCode::SandboxUnavailable,
            format!("store({key:?}) could not seal the value ({e}); retry"),
        )
    })?;
    Ok(StoredValue::Sealed {
        nonce,
        sealed,
        bytes: text.len() as u64,
    })
}

/// The JSON text of `kept` (`key` of `scope`), opened with `with` when it is sealed.
fn open(
    with: &SealKey,
    scope: &SessionScope,
    key: &str,
    kept: StoredValue,
) -> Result<String, ExecError> {
    match kept {
        StoredValue::Json(text) => Ok(text),
        StoredValue::Sealed { nonce, sealed, .. } => with
            .open(&aad(scope, key), &nonce, &sealed)
            .and_then(|plain| String::from_utf8(plain).ok())
            .ok_or_else(|| {
                ExecError::new(
                    ErrorCode::SandboxUnavailable,
                    format!(
                        "the stored value of {key:?} does not open with this host's key: it was sealed under another key (MCP_SANDBOX_KEY_FILE / MCP_SANDBOX_KEY changed), or by an earlier process that had no key (its values do not outlive it); remove({key:?}) and store it again, and set the same key on every host and restart so values last"
                    ),
                )
            }),
    }
}

fn unavailable(e: crate::store::StoreError) -> ExecError {
    ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!("the session state could not be used ({e}); retry, or check the state store (the file, or the PostgreSQL database)"),
    )
}

/// Why a script without a session cannot use state.
pub fn no_session() -> ExecError {
    ExecError::new(
        ErrorCode::PermissionDenied,
        "this execution has no session, so store()/load() have nowhere to keep values: `run` keeps state only with --session NAME, and a capability's code never sees its caller's state",
    )
}

/// Why a host without a state store cannot keep state.
pub fn no_store() -> ExecError {
    ExecError::new(
        ErrorCode::SandboxUnavailable,
        "this host has no usable state store, so store()/load() cannot keep values; see the warning it printed at start (--state PATH)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_checked() {
        assert_eq!(
            StateOp::parse("store", &json!({"key": "a", "value": [1]})).unwrap(),
            StateOp::Store {
                key: "a".into(),
                value: json!([1])
            }
        );
        let e = StateOp::parse("store", &json!({"key": "a"})).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        assert!(
            e.message.contains("value is missing or undefined"),
            "{}",
            e.message
        );
        for bad in [
            json!({"key": ""}),
            json!({"key": "a\nb"}),
            json!({"key": 3}),
            json!({"key": "x".repeat(257)}),
        ] {
            assert_eq!(
                StateOp::parse("load", &bad).unwrap_err().code,
                ErrorCode::InvalidArguments,
                "{bad}"
            );
        }
        assert_eq!(StateOp::parse("keys", &json!({})).unwrap(), StateOp::Keys);
        assert_eq!(
            StateOp::parse("drop", &json!({})).unwrap_err().code,
            ErrorCode::ToolNotFound
        );
    }

    #[test]
    fn a_sealed_value_opens_only_with_its_key_session_and_name() {
        let (mine, other) = (SealKey::ephemeral(), SealKey::ephemeral());
        let a = SessionScope::new("t", "p", "s");
        let text = r#"{"email":"ada@example.com"}"#.to_string();
        let kept = seal(&mine, &a, "k", text.clone()).unwrap();
        let StoredValue::Sealed { sealed, bytes, .. } = &kept else {
            panic!("not sealed: {kept:?}")
        };
        assert_eq!(*bytes, text.len() as u64, "the quotas count the JSON text");
        assert!(!sealed.windows(7).any(|w| w == b"example"));
        assert_eq!(open(&mine, &a, "k", kept.clone()).unwrap(), text);
        let refused = [
            open(&other, &a, "k", kept.clone()),
            open(&mine, &SessionScope::new("t2", "p", "s"), "k", kept.clone()),
            open(&mine, &SessionScope::new("t", "p2", "s"), "k", kept.clone()),
            open(&mine, &SessionScope::new("t", "p", "s2"), "k", kept.clone()),
            open(&mine, &a, "k2", kept),
        ];
        for e in refused {
            let e = e.unwrap_err();
            assert_eq!(e.code, ErrorCode::SandboxUnavailable);
            assert!(
                e.message.starts_with("the stored value of \"k")
                    && e.message.contains("does not open with this host's key")
                    && e.message.contains("and store it again"),
                "{}",
                e.message
            );
        }
        // A row written before values were sealed is JSON text, and loads as it is.
        assert_eq!(
            open(&other, &a, "k", StoredValue::Json("[1]".into())).unwrap(),
            "[1]"
        );
    }
}
