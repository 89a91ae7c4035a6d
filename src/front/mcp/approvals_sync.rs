//! Keeps this gateway's pending approvals in the state store (PostgreSQL), so the web view of
//! every gateway sharing it lists and answers them (`gate::pending::shared`): while questions
//! wait, every [`POLL`] (and at once when one is asked or leaves) the rows are brought in line
//! with the registry and answers written through other gateways wake their calls; every
//! [`SWEEP_EVERY`] the rows of gateways judged stopped (their liveness lock missing for
//! `liveness::DEAD_AFTER`) are deleted.

use super::held::remote::POLL;
use super::Gateway;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often the rows of stopped gateways are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Until `stop` (nothing to do when the questions are not shared).
pub fn watch(gateway: Arc<Gateway>, stop: CancellationToken) {
    if !gateway.pending.is_shared() {
        return;
    }
    tokio::spawn(async move {
        let pending = gateway.pending.clone();
        let mut swept = Instant::now();
        let mut warned: Option<Instant> = None;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(POLL) => {}
                () = pending.changed().notified() => {}
            }
            if pending.needs_sync() {
                match pending.sync().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!("{n} approvals answered through another gateway"),
                    Err(e) => {
                        if warned.is_none_or(|w| w.elapsed() > SWEEP_EVERY) {
                            warned = Some(Instant::now());
                            tracing::warn!(
                                "pending approvals could not be shared through the state store ({e}); they are answered on this gateway only until it answers"
                            );
                        }
                    }
                }
            }
            if swept.elapsed() >= SWEEP_EVERY {
                swept = Instant::now();
                let dead_after = super::held::remote::dead_after(&gateway);
                let stopped = |g: &str, alive: bool| {
                    gateway.suspects.missing_for(g, alive) >= dead_after && !alive
                };
                match pending.sweep(stopped).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!("{n} pending approvals of stopped gateways deleted"),
                    Err(e) => tracing::warn!("sweeping stopped gateways' approvals failed: {e}"),
                }
            }
        }
    });
}
