//! Refusing executions at admission while the audit store is known to be down
//! (`sandbox.audit.required: true`, the default). Without it every execution would run and then
//! have its outcome withheld, because its record cannot be written: work done for nothing, and
//! tool calls' side effects whose outcome nobody sees.
//!
//! Once an audit record could not be written ([`AuditBreaker::trip`]), new executions are
//! refused with `SANDBOX_UNAVAILABLE` before a runner is taken. The store is probed (its schema
//! version read: one query) at most once every [`PROBE_EVERY`], by whichever admission comes
//! first after that (the first admission after the failure probes at once) — every other
//! admission meanwhile is refused at once, so all executions share one probe. The admission that probes waits for it at most [`PROBE_WAIT`]; when the store
//! answers, admission reopens (that execution and the next ones run). No restart, no reopen.

use crate::error::{ErrorCode, ExecError};
use crate::store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most one probe of a store known to be down per this period.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// How long the admission that probes waits for the answer (the probe goes on after it).
pub const PROBE_WAIT: Duration = Duration::from_secs(1);

/// Whether the audit store is known to be down, and its probe. Shared by every clone of an
/// auditor.
#[derive(Debug)]
pub struct AuditBreaker {
    store: Store,
    down: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Why the last write or probe failed.
    reason: String,
    last_probe: Option<Instant>,
    probing: bool,
}

impl AuditBreaker {
    pub fn new(store: Store) -> Arc<Self> {
        Arc::new(AuditBreaker {
            store,
            down: AtomicBool::new(false),
            inner: Mutex::default(),
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether admission is closed now.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// An audit record could not be written: admission closes until a probe succeeds.
    pub fn trip(&self, e: &impl std::fmt::Display) {
        let mut inner = self.inner();
        inner.reason = e.to_string();
        // A failed write is not a probe: the next admission probes at once (unless one ran
        // less than a period ago), so a store that is back already admits it.
        if !self.down.swap(true, Ordering::AcqRel) {
            tracing::error!(
                "the audit store is unreachable; refusing executions until it answers again (sandbox.audit.required): {e}"
            );
        }
    }

    /// `Ok` when executions may start; `SANDBOX_UNAVAILABLE` while the store is known down.
    pub async fn admit(self: &Arc<Self>) -> Result<(), ExecError> {
        if !self.is_down() {
            return Ok(());
        }
        let probe = {
            let mut inner = self.inner();
            let due = inner.last_probe.is_none_or(|t| t.elapsed() >= PROBE_EVERY);
            if due && !inner.probing {
                inner.probing = true;
                inner.last_probe = Some(Instant::now());
                true
            } else {
                false
            }
        };
        if probe {
            let me = self.clone();
            let task = tokio::spawn(async move { me.probe().await });
            if let Ok(Ok(true)) = tokio::time::timeout(PROBE_WAIT, task).await {
                return Ok(());
            }
        }
        let reason = self.inner().reason.clone();
        Err(ExecError::new(
            ErrorCode::SandboxUnavailable,
            format!(
                "the execution was not started: the audit store is unreachable or failed ({reason}); executions are refused until it answers again (sandbox.audit.required; checked at most once a second). Retry later"
            ),
        ))
    }

    /// One health check of the store; reopens admission when it answers.
    async fn probe(&self) -> bool {
        let answered = self.store.run(|s| s.schema_version()).await;
        let mut inner = self.inner();
        inner.probing = false;
        match answered {
            Ok(_) => {
                if self.down.swap(false, Ordering::AcqRel) {
                    tracing::info!("the audit store answers again; admitting executions");
                }
                true
            }
            Err(e) => {
                inner.reason = e.to_string();
                false
            }
        }
    }
}
