//! Host shutdown on SIGINT/SIGTERM: stop taking work, let running executions finish within a
//! grace period, kill the runners after it, shut the MCP servers down, exit 0.
//!
//! [`crate::Sandbox::shutdown`] does the work; this module only turns signals into a call to it,
//! so `run` and `serve` share the same behaviour.

use crate::exec::outcome::Outcome;
use crate::exec::session::ExecRequest;
use crate::sandbox::Sandbox;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

/// Default grace period for running executions once a shutdown signal arrives.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// After the grace period, how long `run` still waits for a stopped execution's outcome (its
/// audit record being committed) before it exits without it.
pub const AFTER_GRACE: Duration = Duration::from_secs(1);

/// Which shutdown signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownSignal {
    Interrupt,
    Terminate,
}

impl std::fmt::Display for ShutdownSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ShutdownSignal::Interrupt => "SIGINT",
            ShutdownSignal::Terminate => "SIGTERM",
        })
    }
}

/// Listens for SIGINT and SIGTERM. Create it before starting work so no signal is missed.
pub struct SignalListener {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
}

impl SignalListener {
    /// Installs the handlers. A handler that cannot be installed is skipped (logged): the
    /// default disposition then applies to that signal.
    pub fn install() -> Self {
        let open = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!("cannot listen for {name}: {e}");
                None
            }
        };
        SignalListener {
            int: open(SignalKind::interrupt(), "SIGINT"),
            term: open(SignalKind::terminate(), "SIGTERM"),
        }
    }

    /// Waits for the next SIGINT or SIGTERM (forever if neither could be installed).
    pub async fn recv(&mut self) -> ShutdownSignal {
        async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    if s.recv().await.is_none() {
                        std::future::pending::<()>().await
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = next(&mut self.int) => ShutdownSignal::Interrupt,
            _ = next(&mut self.term) => ShutdownSignal::Terminate,
        }
    }
}

/// Runs one execution; if a shutdown signal arrives first, stops the sandbox's executions with
/// `grace` while the execution finishes or is killed. Returns the outcome and the signal, if
/// any, as soon as the outcome is known: the MCP servers are still running, and the caller shuts
/// the sandbox down (`Sandbox::shutdown`) after reporting the outcome.
pub async fn execute_until_signal(
    sandbox: &Sandbox,
    req: ExecRequest,
    signals: &mut SignalListener,
    grace: Duration,
) -> (Outcome, Option<ShutdownSignal>) {
    let exec = sandbox.execute(req);
    tokio::pin!(exec);
    tokio::select! {
        outcome = &mut exec => (outcome, None),
        sig = signals.recv() => {
            tracing::warn!(
                "{sig}: shutting down; the running execution has {} ms to finish",
                grace.as_millis()
            );
            // The grace applies, then the host exits: what is left after it (the audit
            // record's commit) gets at most [`AFTER_GRACE`] more.
            let both = async { tokio::join!(&mut exec, sandbox.stop_executions(grace)).0 };
            let outcome = match tokio::time::timeout(grace + AFTER_GRACE, both).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    tracing::warn!("{sig}: the execution did not end within the grace period; exiting");
                    Outcome::failed(crate::error::ExecError::new(
                        crate::error::ErrorCode::SandboxUnavailable,
                        format!(
                            "{sig}: the host is shutting down and the execution did not end within the grace period ({} ms)",
                            grace.as_millis()
                        ),
                    ))
                }
            };
            (outcome, Some(sig))
        }
    }
}
