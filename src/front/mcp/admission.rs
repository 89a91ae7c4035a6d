//! Admission of `execute_code` requests on arrival, before they wait for a runner: every size
//! is checked at once (code, context), and the bytes held by admitted requests that have not
//! finished are bounded, so a queue of large requests cannot grow the host.

use crate::error::{ErrorCode, ExecError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Default bound of the serialized `context` of one request.
pub const DEFAULT_MAX_CONTEXT_BYTES: u64 = 1024 * 1024;
/// Default bound of the bytes (code + context) held by admitted, unfinished executions.
pub const DEFAULT_MAX_QUEUED_BYTES: u64 = 64 * 1024 * 1024;

/// The bytes held by admitted executions, and their bound.
#[derive(Debug)]
pub struct Admission {
    held: Arc<AtomicU64>,
    max_bytes: u64,
    max_context_bytes: u64,
}

/// Gives its bytes back when the execution ends, however it ends.
#[derive(Debug)]
pub struct Held {
    held: Arc<AtomicU64>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

impl Admission {
    pub fn new(max_bytes: u64, max_context_bytes: u64) -> Self {
        Admission {
            held: Arc::default(),
            max_bytes,
            max_context_bytes,
        }
    }

    /// Bytes held now by admitted executions.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::SeqCst)
    }

    /// The refusal of code over the source limit, if it is.
    pub fn check_code(code_bytes: u64, source_limit: u64) -> Result<(), ExecError> {
        if code_bytes > source_limit {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the script is {code_bytes} bytes; the source limit is {source_limit} bytes (source_bytes). Send smaller code"
                ),
            ));
        }
        Ok(())
    }

    /// Admits a request of `code_bytes` + `context_bytes`, or says which bound it breaks
    /// (`LIMIT_EXCEEDED`).
    pub fn admit(
        &self,
        code_bytes: u64,
        source_limit: u64,
        context_bytes: u64,
    ) -> Result<Held, ExecError> {
        Self::check_code(code_bytes, source_limit)?;
        if context_bytes > self.max_context_bytes {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the context is {context_bytes} bytes as JSON; the limit is {} bytes (--max-context-bytes). Pass less data, or let the script fetch it with tool calls",
                    self.max_context_bytes
                ),
            ));
        }
        let bytes = code_bytes + context_bytes;
        let before = self.held.fetch_add(bytes, Ordering::SeqCst);
        let held = Held {
            held: self.held.clone(),
            bytes,
        };
        if before + bytes > self.max_bytes {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the sandbox is busy: admitted executions hold {before} bytes of code and context and this one has {bytes}; the bound is {} bytes (--max-queued-bytes). Retry later",
                    self.max_bytes
                ),
            ));
        }
        Ok(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_bounded_and_given_back() {
        let a = Admission::new(100, 50);
        assert_eq!(
            a.admit(11, 10, 0).unwrap_err().code,
            ErrorCode::LimitExceeded
        );
        assert!(a
            .admit(0, 10, 51)
            .unwrap_err()
            .message
            .contains("--max-context-bytes"));
        let one = a.admit(10, 10, 50).unwrap();
        assert!(a
            .admit(10, 10, 40)
            .unwrap_err()
            .message
            .contains("--max-queued-bytes"));
        assert_eq!(a.held(), 60);
        drop(one);
        assert_eq!(a.held(), 0);
        assert!(a.admit(10, 10, 50).is_ok());
    }
}
