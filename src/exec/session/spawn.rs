//! Step 2: a runner for this execution (pooled or spawned), its isolation verified, and its
//! end: killed if the execution failed, always reaped before the execution returns.

use super::*;

/// Layers a runner must report `enforced` or the host refuses to run code.
pub const REQUIRED_LAYERS: &[&str] = &["rlimits", "no_new_privs", "seccomp"];

/// `SANDBOX_UNAVAILABLE` naming every required layer the runner did not enforce, if any.
pub fn missing_layers(isolation: &BTreeMap<String, String>, extra: &[String]) -> Option<ExecError> {
    let missing: Vec<String> = REQUIRED_LAYERS
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .filter(|layer| {
            !isolation
                .get(layer)
                .is_some_and(|s| s.starts_with("enforced"))
        })
        .map(|layer| {
            let why = isolation
                .get(&layer)
                .cloned()
                .unwrap_or_else(|| "not reported".into());
            format!("{layer} ({why})")
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "refusing to run code: required isolation layers are not enforced: {}. Run `mcp-sandbox check` for details",
            missing.join(", ")
        ),
    ))
}

impl Run {
    pub(super) async fn drive(
        &mut self,
        catalog: &Catalog,
        runner: &RunnerCommand,
        pool: Option<&RunnerPool>,
        req: &ExecRequest,
    ) -> Result<(), ExecError> {
        self.preflight(req)?;
        let hook = req.on_spawn.as_ref().map(|h| &*h.0);
        let mut ready = match pool.and_then(|p| p.take(&self.limits)) {
            Some(r) => {
                // A pooled runner started earlier; the hook sees it when it is handed out.
                if let Some(hook) = hook {
                    hook(r.pid);
                }
                r
            }
            None => runner::start(runner, &self.limits, self.deadline, hook).await?,
        };
        self.isolation = ready.isolation.clone();
        self.runner_pid = Some(ready.pid);
        if self.top {
            if let Some(tree) = self.tree() {
                tree.set_root_pid(ready.pid);
            }
        }
        let result = match missing_layers(&ready.isolation, &req.require_layers) {
            Some(e) => Err(e),
            None => {
                let (shutdown, client) = (req.cancel.clone(), req.client_cancel.clone());
                tokio::select! {
                    r = self.session(catalog, req, &mut ready) => r,
                    () = fired(shutdown) => Err(shutting_down()),
                    () = fired(client) => Err(cancelled()),
                }
            }
        };
        // Before it is reaped: what it spent counts against the tree's CPU budget.
        self.cpu_ms = crate::exec::cpu_time::used_ms(ready.pid);
        if self.top {
            if let Some(tree) = self.tree() {
                tree.set_root_pid(0);
            }
        }
        // Whatever happened, the runner is killed now. After a checked `execution_complete`
        // it is reaped in the background (no teardown on the hot path); after a failure it is
        // reaped before we return, as the failure may be about how it ended.
        match result {
            Ok(()) => runner::retire(ready),
            Err(_) => {
                let _ = ready.child.start_kill();
                let _ = ready.child.wait().await;
            }
        }
        result
    }

    /// The conversation with one ready runner.
    pub(super) async fn session(
        &mut self,
        catalog: &Catalog,
        req: &ExecRequest,
        ready: &mut ReadyRunner,
    ) -> Result<(), ExecError> {
        let max_frame = usize::try_from(self.limits.frame_bytes).unwrap_or(usize::MAX);
        let Some(write_half) = ready.writer.take() else {
            return Err(protocol("the runner's socket was already used".into()));
        };
        let mut outbox = Outbox::new(write_half);
        self.converse(
            catalog,
            req,
            &mut ready.frames,
            &mut outbox,
            &mut ready.child,
            max_frame,
        )
        .await
    }
}
