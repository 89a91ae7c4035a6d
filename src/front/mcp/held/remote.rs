//! Yielded executions reachable from any gateway sharing the state store (`store::yielded`).
//!
//! When `execute_code {yield_after_ms}` answers `running`, the execution gets a row in the store
//! ([`record`]); when it ends, its gateway writes the outcome (already cut to the request's
//! output budget; sealed like session values when an operator key is set or the execution
//! keeps sensitive values, `exec::sealing`) into the row and forgets its own copy ([`publish`]).
//! From then on the store holds the one copy, read once by whichever gateway is asked first.
//! When the store cannot take it (unreachable, or the row is gone), the outcome stays with its
//! gateway, as without a store.
//!
//! `wait_execution`/`cancel_execution` for an id this gateway does not hold look it up in the
//! store for the caller's scope ([`wait`], [`cancel`]): finished → its outcome (the row deleted);
//! running on a live gateway → polled every [`POLL`] up to the request's timeout, then
//! `running` (from another gateway: no logs or call counts, its outcome holds them); running on
//! a gateway that stopped → `SANDBOX_UNAVAILABLE` "the gateway running it stopped…", the row
//! removed. A cancel asked through another gateway is a flag on the row: the owning gateway
//! looks for flags every [`POLL`] while it runs recorded executions ([`watch`]) and cancels them.

use super::registry::{Execution, Finished};
use super::reply::{deliver, refused, unknown};
use crate::context::session::SessionScope;
use crate::error::{ErrorCode, ExecError};
use crate::exec::output_budget::Budget;
use crate::exec::sealing;
use crate::front::mcp::responses::AnswerKey;
use crate::front::mcp::search_tools::WithText;
use crate::front::mcp::Gateway;
use crate::store::session_state::StoredValue;
use crate::store::yielded::Look;
use crate::store::StoreError;
use rmcp::model::CallToolResult;
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often a wait looks at a row another gateway will finish, and how often a gateway looks
/// for cancels of its executions asked through another one.
pub const POLL: Duration = Duration::from_millis(100);
/// How often a gateway deletes expired rows.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Since when each other gateway's liveness lock has been seen missing (kept across requests, so
/// short waits still reach the verdict).
#[derive(Debug, Default)]
pub struct Suspects(Mutex<HashMap<String, Instant>>);

impl Suspects {
    /// How long `gateway` has been seen missing (`alive`: it is not, forget it).
    pub fn missing_for(&self, gateway: &str, alive: bool) -> Duration {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if alive {
            m.remove(gateway);
            return Duration::ZERO;
        }
        // Bounded: ids come from the store's rows; old verdicts are dropped.
        m.retain(|_, t| t.elapsed() < Duration::from_secs(600));
        m.entry(gateway.to_string())
            .or_insert_with(Instant::now)
            .elapsed()
    }
}

/// How long another gateway's lock must be missing before it is judged stopped: at once on
/// SQLite (one gateway per file), `liveness::DEAD_AFTER` on PostgreSQL.
pub fn dead_after(gateway: &Gateway) -> Duration {
    match gateway.store.as_ref().and_then(|s| s.pg()) {
        Some(_) => crate::store::pg::liveness::DEAD_AFTER,
        None => Duration::ZERO,
    }
}

fn now_ms() -> f64 {
    crate::trace::now_ms()
}

/// The store could not be reached for a yielded execution.
fn unreachable(e: StoreError) -> CallToolResult {
    refused(ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!("the state store could not be reached to look up this execution ({e}); it may still be running: retry wait_execution in a few seconds"),
    ))
}

/// The answer when the gateway running it stopped.
pub fn stopped() -> CallToolResult {
    refused(ExecError::new(
        ErrorCode::SandboxUnavailable,
        "the gateway running it stopped before it ended (it was killed or lost the state store), so its outcome is lost. Run the script again with execute_code if you need its result; tool calls it made before may already have happened, so check their effects before repeating them",
    ))
}

/// The associated data of an outcome: its owner's scope and its id.
fn aad(owner: &SessionScope, id: &str) -> Vec<u8> {
    format!("mcp-sandbox outcome v1\0{}\0{id}", owner.key()).into_bytes()
}

/// Records `entry`'s row (its request is about to answer `running`); `false` when it has ended
/// already (the caller answers with its outcome). Without a store, or when the store fails, it
/// stays this gateway's alone.
pub async fn record(gateway: &Gateway, owner: &SessionScope, entry: &Execution) -> bool {
    let _turn = entry.publish.lock().await;
    if entry.is_finished() {
        return false;
    }
    let Some(store) = gateway.store.clone() else {
        return true;
    };
    let (owner, id, me) = (owner.clone(), entry.id.clone(), gateway.gateway_id.clone());
    match store
        .run(move |s| s.record_yield(&owner, &id, &me, now_ms()))
        .await
    {
        Ok(()) => entry.set_recorded(),
        Err(e) => tracing::warn!(
            execution = entry.id,
            "a yielded execution is not in the state store ({e}): only this gateway can answer for it"
        ),
    }
    true
}

/// Hands `entry`'s outcome over: into its row when it has one (this gateway forgets it), else to
/// its local waiters.
pub async fn publish(
    gateway: &Gateway,
    owner: &SessionScope,
    entry: &Execution,
    f: Finished,
    sensitive: bool,
) {
    let _turn = entry.publish.lock().await;
    let Some(store) = gateway.store.clone().filter(|_| entry.is_recorded()) else {
        return entry.finish(f);
    };
    let text = json!({
        "value": f.value,
        "max_output_bytes": f.budget.max_output_bytes,
        "requested": f.budget.requested,
        "capped": f.budget.capped,
    })
    .to_string();
    let key = match sealing::operator_key() {
        Some(k) => Some(k),
        None if sensitive => Some(sealing::key()),
        None => None,
    };
    let kept = match key {
        None => StoredValue::Json(text),
        Some(k) => match k.seal(&aad(owner, &entry.id), text.as_bytes()) {
            Ok((nonce, sealed)) => StoredValue::Sealed {
                bytes: text.len() as u64,
                nonce,
                sealed,
            },
            Err(e) => {
                tracing::warn!(execution = entry.id, "sealing an outcome failed: {e}");
                return entry.finish(f);
            }
        },
    };
    let (id, me) = (entry.id.clone(), gateway.gateway_id.clone());
    match store
        .run(move |s| s.finish_yield(&id, &me, &kept, now_ms()))
        .await
    {
        Ok(true) => {
            // The row holds it now: this gateway's copy and its room go.
            drop(f);
            gateway.executions.remove(&entry.id);
            entry.finish_stored();
        }
        Ok(false) => entry.finish(f),
        Err(e) => {
            tracing::warn!(
                execution = entry.id,
                "the outcome of a yielded execution stays with this gateway only: {e}"
            );
            entry.finish(f);
        }
    }
}

/// The outcome held in a row, opened.
fn open(owner: &SessionScope, id: &str, kept: StoredValue) -> Result<(Value, Budget), ExecError> {
    let bad = |why: &str| {
        ExecError::new(
            ErrorCode::SandboxUnavailable,
            format!("the outcome of this execution {why}; run the script again if you need it"),
        )
    };
    let text = match kept {
        StoredValue::Json(text) => text,
        StoredValue::Sealed { nonce, sealed, .. } => sealing::key()
            .open(&aad(owner, id), &nonce, &sealed)
            .and_then(|p| String::from_utf8(p).ok())
            .ok_or_else(|| bad("does not open with this gateway's key: every gateway needs the same MCP_SANDBOX_KEY_FILE (or MCP_SANDBOX_KEY)"))?,
    };
    let mut v: Value = serde_json::from_str(&text).map_err(|_| bad("is unreadable"))?;
    let budget = Budget {
        max_output_bytes: v["max_output_bytes"]
            .as_u64()
            .ok_or_else(|| bad("is unreadable"))?,
        requested: v["requested"].as_u64(),
        capped: v["capped"].as_bool().unwrap_or(false),
    };
    Ok((v["value"].take(), budget))
}

/// `{status: "running"}` for an execution another gateway runs: no logs or call counts (they
/// are in its outcome).
fn running_elsewhere(id: &str, started_at: f64) -> CallToolResult {
    let elapsed = (now_ms() - started_at).max(0.0) as u64;
    let text = format!(
        "Still running after {elapsed} ms (execution_id {id}) on another gateway: its logs and tool calls show in its outcome. Call wait_execution with this execution_id for the outcome, or cancel_execution to stop it."
    );
    CallToolResult::structured(json!({
        "status": "running",
        "execution_id": id,
        "elapsed_ms": elapsed,
        "calls_done": 0,
        "calls_in_flight": 0,
        "logs_so_far": [],
        "elsewhere": true,
    }))
    .with_text(text)
}

/// Waits up to `timeout` for `owner`'s execution `id` through the store (it is not this
/// gateway's, or its outcome went into its row).
pub async fn wait(
    gateway: &Gateway,
    (owner, idle): (&SessionScope, Option<Duration>),
    id: &str,
    timeout: Duration,
    cancel: &CancellationToken,
    answer: AnswerKey,
) -> Result<CallToolResult, ErrorData> {
    let Some(store) = gateway.store.clone() else {
        return Err(unknown());
    };
    let deadline = Instant::now() + timeout;
    loop {
        let (o, i) = (owner.clone(), id.to_string());
        let look = match store.run(move |s| s.take_yield(&o, &i, now_ms())).await {
            Ok(l) => l,
            Err(e) => return Ok(unreachable(e)),
        };
        let (runner, started_at) = match look {
            Look::Unknown => return Err(unknown()),
            Look::Finished { outcome, at } => {
                // Kept for the TTL from the later of its end and the session's last request
                // (as this gateway saw it) before this one.
                let since_end = Duration::from_millis((now_ms() - at).max(0.0) as u64);
                if idle.map_or(since_end, |i| i.min(since_end)) >= gateway.session.ttl() {
                    return Err(unknown());
                }
                return Ok(match open(owner, id, outcome) {
                    Ok((value, budget)) => {
                        let f = Finished::new(value, budget, None);
                        deliver(gateway, f, answer)
                    }
                    Err(e) => refused(e),
                });
            }
            Look::Running {
                gateway: runner,
                started_at,
            } => (runner, started_at),
        };
        let (r, me) = (runner.clone(), gateway.gateway_id.clone());
        let alive = match store.run(move |s| s.gateway_alive(&r, &me)).await {
            Ok(a) => a,
            Err(e) => return Ok(unreachable(e)),
        };
        if gateway.suspects.missing_for(&runner, alive) >= dead_after(gateway) && !alive {
            let (o, i) = (owner.clone(), id.to_string());
            match store.run(move |s| s.forget_yield(&o, &i, &runner)).await {
                Ok(true) => {
                    tracing::warn!(
                        execution = id,
                        "a yielded execution's gateway stopped; its client was told"
                    );
                    return Ok(stopped());
                }
                // It finished just before: take it.
                Ok(false) => continue,
                Err(e) => return Ok(unreachable(e)),
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(running_elsewhere(id, started_at));
        }
        tokio::select! {
            () = tokio::time::sleep(POLL.min(left)) => {}
            () = cancel.cancelled() => return Ok(running_elsewhere(id, started_at)),
        }
    }
}

/// `cancel_execution` for an id this gateway does not hold: the cancel is asked through the
/// row, then waited for like the local path (up to `within`).
pub async fn cancel(
    gateway: &Gateway,
    (owner, idle): (&SessionScope, Option<Duration>),
    id: &str,
    within: Duration,
    answer: AnswerKey,
) -> Result<CallToolResult, ErrorData> {
    let Some(store) = gateway.store.clone() else {
        return Err(unknown());
    };
    let (o, i) = (owner.clone(), id.to_string());
    match store.run(move |s| s.request_cancel(&o, &i, now_ms())).await {
        Ok(Look::Unknown) => Err(unknown()),
        Ok(_) => {
            let never = CancellationToken::new();
            wait(gateway, (owner, idle), id, within, &never, answer).await
        }
        Err(e) => Ok(unreachable(e)),
    }
}

/// Until `stop`: cancels this gateway's recorded executions whose cancel was asked through
/// another gateway (looked for every [`POLL`] while it runs any), and deletes expired rows.
pub fn watch(gateway: Arc<Gateway>, stop: CancellationToken) {
    let Some(store) = gateway.store.clone() else {
        return;
    };
    tokio::spawn(async move {
        let mut swept = Instant::now();
        let mut warned: Option<Instant> = None;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(POLL) => {}
            }
            if gateway.executions.any_recorded_running() {
                let me = gateway.gateway_id.clone();
                match store.run(move |s| s.cancel_requests(&me)).await {
                    Ok(ids) if !ids.is_empty() => {
                        let n = gateway.executions.cancel_ids(&ids);
                        tracing::info!("{n} executions cancelled through another gateway");
                    }
                    Ok(_) => {}
                    Err(e) => {
                        if warned.is_none_or(|w| w.elapsed() > SWEEP_EVERY) {
                            warned = Some(Instant::now());
                            tracing::warn!(
                                "cannot look for cancels asked through other gateways: {e}"
                            );
                        }
                    }
                }
            }
            if swept.elapsed() >= SWEEP_EVERY {
                swept = Instant::now();
                // Reads apply the TTL exactly (see `wait`); the sweeper only bounds what the
                // store holds, with a margin for sessions still in use.
                let ttl = gateway.session.ttl_ms.saturating_mul(2);
                if let Err(e) = store.run(move |s| s.sweep_yields(ttl, now_ms())).await {
                    tracing::warn!("sweeping expired yielded executions failed: {e}");
                }
            }
        }
    });
}
