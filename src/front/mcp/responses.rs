//! A bound on answers that clients have not read yet. When an `execute_code` call has its
//! outcome, it reserves room for the answer (what the host holds for it: its text and its
//! decoded value, [`held_bytes`]) and keeps it until the answer
//! is written to the client's connection, or the connection is gone: clients that do not read
//! cannot make the host hold more than the budget. An answer that finds no room is replaced by
//! `LIMIT_EXCEEDED` (the execution itself ran and was recorded).

use crate::error::{ErrorCode, ExecError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default budget of unsent answers, in bytes.
pub const DEFAULT_MAX_BUFFERED_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;
/// Room reserved for an answer besides its outcome (summary, framing).
const OVERHEAD_BYTES: u64 = 8 * 1024;

/// Which answer a reservation is for: the session (`"stdio"` over stdio) and the JSON-RPC id
/// as JSON text.
pub type AnswerKey = (String, String);

#[derive(Debug)]
pub struct ResponseBudget {
    sem: Arc<Semaphore>,
    total: u64,
    held: Mutex<HashMap<AnswerKey, (OwnedSemaphorePermit, Instant)>>,
}

impl ResponseBudget {
    pub fn new(total: u64) -> Self {
        let permits = usize::try_from(total)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS);
        ResponseBudget {
            sem: Arc::new(Semaphore::new(permits)),
            total,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Bytes reserved now.
    pub fn reserved(&self) -> u64 {
        self.total
            .saturating_sub(self.sem.available_permits() as u64)
    }

    /// Reserves room for an answer of `bytes` (plus framing), at once or not at all: an answer
    /// that finds no room is refused rather than held, and small answers are never starved by
    /// large unread ones waiting ahead of them.
    pub fn reserve(&self, bytes: u64) -> Result<OwnedSemaphorePermit, ExecError> {
        let want = (bytes + OVERHEAD_BYTES).min(self.total).max(1);
        let n = u32::try_from(want).unwrap_or(u32::MAX);
        self.sem.clone().try_acquire_many_owned(n).map_err(|_| {
            ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the answer holds {bytes} bytes until it is read (its text and its decoded value) and answers not yet read by their clients hold {} of the {} bytes allowed (--max-buffered-response-bytes); the execution ran and was recorded, but its answer is dropped. Retry later, or return less",
                    self.reserved(),
                    self.total
                ),
            )
        })
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

/// What an answer keeps in memory until its client reads it: its encoded form (`encoded`
/// bytes, the JSON text written to the client) plus its decoded `value` (every node, string
/// and map entry). The budget counts both, not just the text: an answer of many small items
/// holds several times its text.
pub fn held_bytes(encoded: u64, value: &serde_json::Value) -> u64 {
    encoded.saturating_add(decoded_bytes(value))
}

/// Heap and inline bytes of a decoded `serde_json::Value` tree (without recursion: values
/// nest to any depth).
pub fn decoded_bytes(value: &serde_json::Value) -> u64 {
    use serde_json::Value;
    const NODE: u64 = std::mem::size_of::<Value>() as u64;
    // A BTreeMap entry: its key (a String) and value, plus the tree's share per entry.
    const ENTRY: u64 = std::mem::size_of::<String>() as u64 + NODE + 16;
    let mut total = NODE;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => total += s.capacity() as u64,
            Value::Array(items) => {
                total += items.capacity() as u64 * NODE;
                stack.extend(items.iter());
            }
            Value::Object(map) => {
                for (k, item) in map {
                    total += ENTRY + k.capacity() as u64;
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_holds_its_text_and_its_decoded_value() {
        let big = json!("x".repeat(1_000_000));
        let held = held_bytes(1_000_002, &big);
        assert!((2_000_000..2_000_200).contains(&held), "{held}");
        // Many small items weigh far more decoded than as text.
        let many = json!((0..100_000).map(|i| json!({ "i": i })).collect::<Vec<_>>());
        let text = serde_json::to_string(&many).unwrap().len() as u64;
        assert!(
            decoded_bytes(&many) > 5 * text,
            "{} vs {text}",
            decoded_bytes(&many)
        );
    }

    #[test]
    fn deep_values_are_measured_without_recursion() {
        let mut v = json!(1);
        for _ in 0..200_000 {
            v = serde_json::Value::Array(vec![v]);
        }
        assert!(decoded_bytes(&v) > 200_000 * 32);
        // Dropping it recursively would overflow the stack: take it apart by hand.
        let mut cur = v;
        while let serde_json::Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(serde_json::Value::Null);
        }
    }
}
