//! A bound on answers that clients have not read yet. An `execute_code` call reserves room for
//! its answer (its result limit) before it runs and keeps it until the answer is written to the
//! client's connection, or the connection is gone: clients that do not read cannot make the host
//! hold more than the budget. A call that cannot get room within the write timeout is refused
//! with `LIMIT_EXCEEDED`.

use crate::error::{ErrorCode, ExecError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default budget of unsent answers, in bytes.
pub const DEFAULT_MAX_BUFFERED_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;
/// Room reserved for an answer besides its result (summary, traces, logs, framing).
const OVERHEAD_BYTES: u64 = 64 * 1024;

/// Which answer a reservation is for: the session (`"stdio"` over stdio) and the JSON-RPC id
/// as JSON text.
pub type AnswerKey = (String, String);

#[derive(Debug)]
pub struct ResponseBudget {
    sem: Arc<Semaphore>,
    total: u64,
    wait: Duration,
    held: Mutex<HashMap<AnswerKey, (OwnedSemaphorePermit, Instant)>>,
}

impl ResponseBudget {
    pub fn new(total: u64, wait: Duration) -> Self {
        let permits = usize::try_from(total).unwrap_or(usize::MAX).min(Semaphore::MAX_PERMITS);
        ResponseBudget {
            sem: Arc::new(Semaphore::new(permits)),
            total,
            wait,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Bytes reserved now.
    pub fn reserved(&self) -> u64 {
        self.total
            .saturating_sub(self.sem.available_permits() as u64)
    }

    /// Reserves room for an answer of at most `result_bytes`, waiting up to the write timeout.
    pub async fn reserve(&self, result_bytes: u64) -> Result<OwnedSemaphorePermit, ExecError> {
        let want = (result_bytes + OVERHEAD_BYTES).min(self.total).max(1);
        let n = u32::try_from(want).unwrap_or(u32::MAX);
        match tokio::time::timeout(self.wait, self.sem.clone().acquire_many_owned(n)).await {
            Ok(Ok(p)) => Ok(p),
            _ => Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "answers not yet read by their clients hold {} bytes, the bound (--max-buffered-response-bytes); retry later",
                    self.total
                ),
            )),
        }
    }

    /// Keeps `permit` until the answer `key` is written (see [`ResponseBudget::delivered`]).
    pub fn hold(&self, key: AnswerKey, permit: OwnedSemaphorePermit) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.insert(key, (permit, Instant::now()));
    }

    /// The answer `key` was written, or its connection is gone: its room is free.
    pub fn delivered(&self, key: &AnswerKey) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.remove(key);
    }

    /// Frees reservations older than `age` (answers whose connection went away before the
    /// answer existed).
    pub fn expire(&self, age: Duration) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|_, (_, since)| since.elapsed() < age);
    }
}
