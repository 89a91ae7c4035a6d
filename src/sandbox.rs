//! The library's front door: a catalog, a runner command and an execution queue that bounds how
//! many runners run at once and how many executions may wait (over it: `LIMIT_EXCEEDED` at once,
//! never a growing queue).

use crate::context::limits::Limits;
use crate::error::{ErrorCode, ExecError};
use crate::exec::outcome::Outcome;
use crate::exec::pool::RunnerPool;
use crate::exec::runner::RunnerCommand;
use crate::exec::session::{execute_pooled, ExecRequest};
use crate::tools::catalog::Catalog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Bounds of the execution queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueOptions {
    /// Runners alive at once.
    pub max_running: usize,
    /// Executions waiting for a runner slot.
    pub max_queued: usize,
    /// Runners started ahead of time (0 disables the pool).
    pub pool_size: usize,
}

impl Default for QueueOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        QueueOptions {
            max_running: cores * 4,
            max_queued: 1024,
            pool_size: cores * 2,
        }
    }
}

/// The least time shutdown gives queued learning records to reach the store.
const LEARNING_DRAIN: Duration = Duration::from_secs(1);

/// Runs scripts against a catalog, at most `max_running` at a time.
#[derive(Clone)]
pub struct Sandbox {
    catalog: Arc<Catalog>,
    runner: RunnerCommand,
    slots: Arc<Semaphore>,
    /// Each caller's share of the queue, and the order waiting executions get slots in.
    share: Arc<crate::exec::fair_share::FairShare>,
    admitted: Arc<AtomicUsize>,
    options: QueueOptions,
    pool: Option<Arc<RunnerPool>>,
    /// Cancelled when shutdown's grace period is over: running executions are killed.
    kill: CancellationToken,
    /// Set when shutdown begins: no new work is taken.
    closing: CancellationToken,
    /// Capabilities and learning (docs/learning.md), when a state store is attached.
    learning: Option<crate::exec::capability::Capabilities>,
    /// See [`Sandbox::remember_last_code`].
    remember_last: bool,
    /// The learning writes: direct while the store takes them, else queued and retried.
    learned: crate::exec::learning::LearningQueue,
    /// The audit log (see [`crate::audit`]), when a state store is attached.
    audit: Option<crate::exec::audit::Auditor>,
    /// Session state (`store`/`load`), when a state store is attached.
    state: Option<Arc<crate::exec::state::SessionState>>,
    /// Traces and metrics (`telemetry`), when they are on.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
}

impl Sandbox {
    /// Must be called within a tokio runtime when `options.pool_size` > 0 (the pool starts
    /// filling at once, with the default limits' backstops).
    pub fn new(catalog: Arc<Catalog>, runner: RunnerCommand, options: QueueOptions) -> Self {
        let pool = (options.pool_size > 0).then(|| {
            Arc::new(RunnerPool::new(
                runner.clone(),
                Limits::default(),
                options.pool_size,
            ))
        });
        let slots = Arc::new(Semaphore::new(options.max_running.max(1)));
        Sandbox {
            pool,
            catalog,
            runner,
            share: Arc::new(crate::exec::fair_share::FairShare::new(slots.clone())),
            slots,
            admitted: Arc::new(AtomicUsize::new(0)),
            options,
            kill: CancellationToken::new(),
            closing: CancellationToken::new(),
            learning: None,
            remember_last: false,
            learned: Default::default(),
            audit: None,
            state: None,
            telemetry: None,
        }
    }

    /// Exports each execution's spans and counts it in the metrics (see `telemetry`).
    pub fn with_telemetry(mut self, telemetry: Arc<crate::telemetry::Telemetry>) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    pub fn telemetry(&self) -> Option<&Arc<crate::telemetry::Telemetry>> {
        self.telemetry.as_ref()
    }

    /// The host's state for the metrics: executions running and queued, the pool and zygote.
    pub fn host_state(&self) -> crate::telemetry::metrics::HostState {
        let admitted = self.in_flight();
        let running = self
            .options
            .max_running
            .max(1)
            .saturating_sub(self.slots.available_permits())
            .min(admitted);
        let zygotes = &self.runner.zygotes;
        crate::telemetry::metrics::HostState {
            running,
            queued: admitted.saturating_sub(running),
            pool_idle: self.pool.as_ref().map_or(0, |p| p.idle()),
            zygote_up: zygotes.pid().is_some(),
            zygotes_started: zygotes.started(),
            calls_in_flight: crate::exec::session::calls_in_flight(),
            audit_records_lost: crate::exec::audit::records_lost(),
            audit_records_reduced: crate::store::audit_content::records_reduced(),
            audit_records_queued: self.audit.as_ref().map_or(0, |a| a.queued()),
            learning_writes_lost: crate::exec::learning::writes_lost(),
        }
    }

    /// The metrics in the Prometheus text format, `None` when metrics are off.
    pub fn render_metrics(&self) -> Option<String> {
        let t = self.telemetry.as_ref()?;
        let m = t.metrics()?;
        Some(m.render(
            self.host_state(),
            &crate::tools::catalog::server_restarts(),
            t.export_stats(),
        ))
    }

    /// Keeps session state (`store`/`load` in scripts) in this store, for requests that carry
    /// a session (`serve`, `run --session`).
    pub fn with_session_state(mut self, state: crate::exec::state::SessionState) -> Self {
        self.state = Some(Arc::new(state));
        self
    }

    /// The session state of this sandbox, when it has a state store.
    pub fn session_state(&self) -> Option<&Arc<crate::exec::state::SessionState>> {
        self.state.as_ref()
    }

    /// Resolves `mcp.X.Y` capabilities before each execution and learns from each outcome.
    pub fn with_learning(
        mut self,
        mut capabilities: crate::exec::capability::Capabilities,
    ) -> Self {
        // Capabilities' nested executions take their runners through this sandbox's slots.
        capabilities.admission = Some(crate::exec::capability::NestedAdmission {
            slots: self.slots.clone(),
            pool: self.pool.clone(),
        });
        self.learning = Some(capabilities);
        self
    }

    /// Record each execution's code as "the last execution" in the store (what
    /// `capability save --from-last` saves). For the CLI, not for a shared `serve`.
    pub fn remember_last_code(mut self) -> Self {
        self.remember_last = true;
        self
    }

    /// Records every execution in the audit log before its outcome is returned.
    pub fn with_audit(mut self, auditor: crate::exec::audit::Auditor) -> Self {
        self.audit = Some(auditor);
        self
    }

    pub fn auditor(&self) -> Option<&crate::exec::audit::Auditor> {
        self.audit.as_ref()
    }

    /// Records an execution refused before it reached the sandbox (bad input, a rate limit) in
    /// the audit log, by the code's size and hash only, and returns its outcome
    /// (`SANDBOX_UNAVAILABLE` if it cannot be recorded).
    pub async fn audit_refusal(
        &self,
        caller: Option<crate::context::principal::Caller>,
        code: &str,
        outcome: Outcome,
    ) -> Outcome {
        match &self.audit {
            None => outcome,
            Some(_) => {
                let hash = crate::exec::audit::sha256_hex(code.as_bytes());
                self.audit_refusal_by_hash(caller, code.len() as u64, hash, outcome)
                    .await
            }
        }
    }

    /// Like [`Sandbox::audit_refusal`] when only the code's size and SHA-256 are at hand.
    pub async fn audit_refusal_by_hash(
        &self,
        caller: Option<crate::context::principal::Caller>,
        code_bytes: u64,
        code_sha256: String,
        outcome: Outcome,
    ) -> Outcome {
        match &self.audit {
            None => outcome,
            Some(a) => {
                let ts = crate::trace::now_ms() - outcome.metrics.duration_ms;
                a.commit_refusal(
                    &caller.unwrap_or_default(),
                    code_bytes,
                    code_sha256,
                    ts,
                    outcome,
                )
                .await
            }
        }
    }

    /// Counts one execution of `caller` in its fair share (`caps`) before it reaches
    /// [`Sandbox::execute`] (set it as `ExecRequest::admitted`), so a front can refuse it before
    /// anything is kept for it; `LIMIT_EXCEEDED` past the share.
    pub fn admit(
        &self,
        caller: &crate::context::principal::Caller,
        caps: crate::context::limits::ShareCaps,
    ) -> Result<Arc<crate::exec::fair_share::Admitted>, ExecError> {
        self.share
            .admit(&caller.tenant, &caller.principal, caps)
            .map(Arc::new)
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    pub fn runner(&self) -> &RunnerCommand {
        &self.runner
    }

    /// Runs one script, waiting for a free runner slot if needed. With an audit log, the
    /// execution's record is committed before the outcome is returned.
    pub async fn execute(&self, mut req: ExecRequest) -> Outcome {
        let Some(telemetry) = &self.telemetry else {
            return self.execute_traced(req).await;
        };
        let started = telemetry.begin(&mut req.request);
        let outcome = self.execute_traced(req).await;
        if let Some(started) = started {
            telemetry.finish(started, &outcome);
        }
        outcome
    }

    async fn execute_traced(&self, mut req: ExecRequest) -> Outcome {
        // The audit store known down (`sandbox.audit.required`): refused before anything runs;
        // no record of the refusal can be written either.
        if let Some(Err(e)) = match &self.audit {
            Some(a) => Some(a.admit().await),
            None => None,
        } {
            return Outcome::failed(e);
        }
        // With `sandbox.sensitive`, the session's placeholder map is opened first; what the
        // execution returns is redacted with it before the audit record and the caller see it.
        let placeholders = match self.placeholders_for(&req).await {
            Ok(p) => p,
            Err(e) => {
                return self
                    .audit_refusal(
                        Some(req.request.caller.clone()),
                        &req.code,
                        Outcome::failed(e),
                    )
                    .await
            }
        };
        req.placeholders = placeholders.clone();
        let reveal = req.reveal;
        let Some(auditor) = self.audit.clone() else {
            let real = self.execute_unaudited(req).await;
            return match placeholders {
                None => real,
                Some(p) => redacted(&p, real, reveal).await.1,
            };
        };
        let ts = crate::trace::now_ms();
        // Write-ahead: the record (who, when, the code or its hash) is committed before the
        // first tool call leaves the host (see `ArgsSink::before_call`), and completed here.
        let mut header = auditor.header(&req.request.caller, &req.code, ts);
        header.execution_id = Some(req.request.execution_id.clone());
        if req.code.len() as u64 > req.request.limits.source_bytes {
            // It will be refused: kept by size and hash only, never larger than its limit.
            header.code = None;
        }
        let sink = auditor.start(header.clone());
        req.audit_args = Some(sink.clone());
        // `--audit-record full`: what a replay needs, kept in the record's detail.
        let recording = crate::exec::recording_audit::ToRecord::for_request(&auditor, &mut req);
        let outcome = self.execute_unaudited(req).await;
        let Some(p) = placeholders else {
            recording.keep(&mut header, &outcome);
            return auditor.commit(header, outcome, &sink).await;
        };
        let (audited, shown) = redacted(&p, outcome, reveal).await;
        recording.keep(&mut header, &audited);
        let error = audited.error.clone();
        let committed = auditor.commit(header, audited, &sink).await;
        // A record that could not be written withholds the outcome (its error is the answer).
        if committed.error != error {
            return committed;
        }
        shown
    }

    /// The placeholder map of a request when detection is on (`sandbox.sensitive`).
    async fn placeholders_for(
        &self,
        req: &ExecRequest,
    ) -> Result<Option<Arc<crate::exec::placeholders::ExecPlaceholders>>, ExecError> {
        if let Some(p) = &req.placeholders {
            return Ok(Some(p.clone()));
        }
        let Some(sensitive) = req.request.policy.sensitive() else {
            return Ok(None);
        };
        let state = req.request.session.as_ref().and(self.state.clone());
        crate::exec::placeholders::ExecPlaceholders::open(
            sensitive.clone(),
            req.request.session.clone(),
            state,
        )
        .await
        .map(Some)
    }

    async fn execute_unaudited(&self, mut req: ExecRequest) -> Outcome {
        if req.state.is_none() && req.request.session.is_some() {
            req.state = self.state.clone();
        }
        if self.closing.is_cancelled() {
            return Outcome::failed(shutting_down());
        }
        let cap = self.options.max_running.max(1) + self.options.max_queued;
        let before = self.admitted.fetch_add(1, Ordering::SeqCst);
        let _admission = Admission(&self.admitted);
        if before >= cap {
            return Outcome::failed(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the sandbox is busy: {} executions running and {} queued; retry later",
                    self.options.max_running, self.options.max_queued
                ),
            ));
        }
        let share = match req.admitted.take() {
            Some(a) => a,
            None => match self.admit(&req.request.caller, req.request.share) {
                Ok(a) => a,
                Err(e) => return Outcome::failed(e),
            },
        };
        // Slots go to the principals in turn; a client that withdraws a queued request leaves
        // the queue at once.
        let client = req.client_cancel.clone().unwrap_or_default();
        let _slot = match self.share.slot(&share, &client).await {
            Ok(slot) => slot,
            Err(crate::exec::fair_share::NoSlot::Closed) => return Outcome::failed(shutting_down()),
            Err(crate::exec::fair_share::NoSlot::Cancelled) => {
                return Outcome::failed(crate::exec::session::cancelled())
            }
        };
        // The execution is killed when either the caller's token or the shutdown fires.
        let token = self.kill.child_token();
        let _forward = req
            .cancel
            .take()
            .map(|user| {
                let token = token.clone();
                tokio::spawn(async move {
                    user.cancelled().await;
                    token.cancel();
                })
            })
            .map(AbortOnDrop);
        req.cancel = Some(token);
        let Some(caps) = &self.learning else {
            return self.run_on_worker(self.catalog.clone(), req).await;
        };
        // Capabilities are resolved in the caller's tenant only.
        let tenant = Some(req.request.caller.tenant.as_str());
        let scoped;
        let caps = match tenant {
            Some(t) if t != caps.store.tenant() => {
                scoped = caps.for_tenant(t);
                &scoped
            }
            _ => caps,
        };
        // The last execution's code is kept for `capability save --from-last`, unless it is
        // over the source limit (refused) or the audit keeps hashes only (no copy of any code
        // anywhere in the store).
        let hash_only = self
            .audit
            .as_ref()
            .is_some_and(|a| a.options().code == crate::exec::audit::AuditCode::Hash);
        let code = (self.remember_last
            && !hash_only
            && req.code.len() as u64 <= req.request.limits.source_bytes)
            .then(|| req.code.clone());
        let language = req.language;
        let outcome = match caps
            .prepare(&self.catalog, &req.code, language, &req.request.limits)
            .await
        {
            Ok(full) => self.run_on_worker(Arc::new(full), req).await,
            Err(e) => Outcome::failed(e),
        };
        self.learned
            .record(
                &caps.store,
                &outcome,
                code.as_deref().map(|c| (c, language)),
            )
            .await;
        outcome
    }

    pub fn pool(&self) -> Option<&RunnerPool> {
        self.pool.as_deref()
    }

    /// Runs the session as its own task: on a runtime worker, where the I/O driver also runs, a
    /// frame from the runner wakes the session without a hop to another thread (measured: one
    /// tool call ~55 µs from `block_on`'s thread, ~41 µs on a worker). Dropping the returned
    /// future aborts the task, which kills the runner as before.
    async fn run_on_worker(&self, catalog: Arc<Catalog>, req: ExecRequest) -> Outcome {
        let runner = self.runner.clone();
        let pool = self.pool.clone();
        let task =
            tokio::spawn(
                async move { execute_pooled(&catalog, &runner, pool.as_deref(), req).await },
            );
        let mut guard = AbortOnDrop(task);
        let outcome = (&mut guard.0).await;
        match outcome {
            Ok(o) => o,
            Err(e) => Outcome::failed(ExecError::new(
                ErrorCode::RunnerCrashed,
                format!("the execution task failed: {e}"),
            )),
        }
    }

    /// Stops the sandbox: new and queued executions get `SANDBOX_UNAVAILABLE` at once, running
    /// ones may finish within `grace`, then their runners are killed (their outcomes say so);
    /// finally every MCP server is shut down. Returns when nothing runs any more. Idempotent.
    pub async fn shutdown(&self, grace: Duration) {
        self.stop_executions(grace).await;
        self.catalog.shutdown().await;
    }

    /// The first half of [`Sandbox::shutdown`]: takes no new work, lets running executions
    /// finish within `grace` and then kills their runners; the MCP servers keep running (so a
    /// caller can report outcomes before the servers' own shutdown).
    pub async fn stop_executions(&self, grace: Duration) {
        self.closing.cancel();
        self.slots.close();
        if let Some(pool) = &self.pool {
            pool.drain().await;
        }
        if !self.wait_idle(grace).await {
            tracing::warn!(
                running = self.in_flight(),
                "shutdown grace period over; killing the remaining runners"
            );
            self.kill.cancel();
            // Killing and reaping a runner takes milliseconds; the bound only guards a bug.
            let _ = self.wait_idle(Duration::from_secs(10)).await;
        }
        // Learning records and audit records (`sandbox.audit.required: false`) still queued
        // (the store down) get the grace period too; what is left then is counted as lost.
        let within = grace.max(LEARNING_DRAIN);
        let audit = async {
            if let Some(a) = &self.audit {
                a.drain(within).await;
            }
        };
        tokio::join!(self.learned.drain(within), audit);
    }

    /// Whether shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.closing.is_cancelled()
    }

    async fn wait_idle(&self, within: Duration) -> bool {
        let end = tokio::time::Instant::now() + within;
        loop {
            if self.in_flight() == 0 {
                return true;
            }
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Executions admitted and not finished (running or queued).
    pub fn in_flight(&self) -> usize {
        self.admitted.load(Ordering::SeqCst)
    }
}

/// `real` redacted: (what the audit log keeps, what the caller gets). The audit keeps real
/// values only when the operator opted in; the caller gets them only with `reveal`. When the
/// map cannot be kept, both get the error (its placeholders could not come back).
async fn redacted(
    p: &crate::exec::placeholders::ExecPlaceholders,
    real: Outcome,
    reveal: bool,
) -> (Outcome, Outcome) {
    let mut shown = real.clone();
    p.redact_outcome(&mut shown);
    if let Err(e) = p.save().await {
        let failed = Outcome::failed(e);
        return (failed.clone(), failed);
    }
    let audited = if p.sensitive().audit_real_values() {
        real.clone()
    } else {
        shown.clone()
    };
    (audited, if reveal { real } else { shown })
}

fn shutting_down() -> ExecError {
    ExecError::new(
        ErrorCode::SandboxUnavailable,
        "the sandbox is shutting down and takes no new executions; retry on a running host",
    )
}

/// Aborts a helper task when the execution that owns it ends.
struct AbortOnDrop<T = ()>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Releases one admission when the execution ends, however it ends.
struct Admission<'a>(&'a AtomicUsize);

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
