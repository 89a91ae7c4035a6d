//! The host's memory budget for one execution: what a runner (hostile from here) can make the
//! host hold, bounded while its frames are read. Each bound is checked before the bytes are
//! copied anywhere else (traces, suggestions, errors, the outbox).
//!
//! Worst case held by the host for one execution, with the default limits (see
//! docs/security-model.md for the sum): one frame being read (`frame_bytes`), the arguments of
//! the open calls ([`ARGS_IN_FLIGHT_BYTES`]), results waiting for the runner to read them
//! ([`OUTBOX_BYTES`] plus one result), the logs (`log_bytes`), the result (`result_bytes`) and the
//! traces (`max_calls` × a few hundred bytes, names ≤ [`MAX_NAME_BYTES`], messages ≤
//! [`TRACE_MESSAGE_BYTES`]).

use std::io::Write;

pub use crate::term::clip;
pub use crate::tools::catalog::MAX_NAME_BYTES;

/// Arguments of open calls (running or waiting for a slot), summed. Past it the host stops
/// reading the runner's frames until calls finish (back-pressure), so the runner waits.
pub const ARGS_IN_FLIGHT_BYTES: u64 = 32 * 1024 * 1024;

/// Results written to the runner's socket that it has not read yet. Past it the runner is
/// killed and the execution ends with `LIMIT_EXCEEDED` (a runner reads while its script waits,
/// so only a script that starts many large calls and then computes for long, or a runner that
/// never reads, gets there).
pub const OUTBOX_BYTES: u64 = 32 * 1024 * 1024;

/// Longest error message kept in a trace event (longer ones are cut, with the full size noted).
pub const TRACE_MESSAGE_BYTES: usize = 1024;

/// Longest message or stack of a script error kept from the runner's `execution_complete`.
/// The runner already cuts its messages and stacks to 64 KiB plus its own "… [truncated: N bytes
/// in all]" marker, so such a message passes whole; only a longer one (a broken runner) is cut.
pub const ERROR_MESSAGE_BYTES: usize = sandbox_runner::protocol::MAX_ERROR_MESSAGE_BYTES + 64;

/// Why a name from the runner was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error("a {what} name of {len} bytes (the limit is {MAX_NAME_BYTES})")]
    TooLong { what: &'static str, len: usize },
    #[error("a {what} name holding a control character")]
    Control { what: &'static str },
    #[error("an empty {what} name")]
    Empty { what: &'static str },
}

/// Checks a server or tool name from the runner without copying it.
pub fn check_name(what: &'static str, name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { what });
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong {
            what,
            len: name.len(),
        });
    }
    if name.chars().any(char::is_control) {
        return Err(NameError::Control { what });
    }
    Ok(())
}

/// The length of `value` as compact JSON, without building the string.
pub fn json_len(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Writing a Value to a counter cannot fail.
    let _ = serde_json::to_writer(&mut c, value);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded_and_clean() {
        assert_eq!(check_name("tool", "read_file"), Ok(()));
        assert!(matches!(
            check_name("tool", &"x".repeat(129)),
            Err(NameError::TooLong { len: 129, .. })
        ));
        assert!(check_name("server", "a\nb").is_err());
        assert!(check_name("server", "").is_err());
    }

    #[test]
    fn json_len_matches_serialization() {
        let v = serde_json::json!({"a": [1, "x\n"], "b": null});
        assert_eq!(json_len(&v), serde_json::to_vec(&v).unwrap().len() as u64);
        assert_eq!(clip("héllo", 2), "h… [cut: 6 bytes in all]");
    }
}
