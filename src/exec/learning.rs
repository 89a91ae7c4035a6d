//! Learning from a finished execution: its calls teach the tool graph, and its code becomes the
//! last execution (`capability save --from-last`). Best effort: a failed write is logged, never
//! fatal.

use crate::exec::outcome::Outcome;
use crate::store::Store;

/// Learns from a finished execution (tool graph; `code` also becomes the last execution).
/// Failures to write are logged, never fatal: learning must not break running code.
pub async fn record(store: &Store, outcome: &Outcome, code: Option<&str>) {
    // Nothing to learn (no call, no code to remember): no hop to a blocking thread.
    if code.is_none() && outcome.traces.is_empty() {
        return;
    }
    let (outcome, code) = (outcome.clone(), code.map(str::to_string));
    if let Err(e) = store
        .run(move |s| s.record_execution(&outcome, code.as_deref()))
        .await
    {
        tracing::warn!("could not record the execution in the state store: {e}");
        eprintln!("mcp-sandbox: warning: could not record the execution in the state store: {e}");
    }
}
