//! A Python script's outcome as it crosses the socket: its result as JSON text, its exception
//! as a structured error (compile errors, limits, a failed call that was not caught, the
//! script's own exception with its traceback).

use super::values;
use crate::protocol::WireError;
use monty_types::{ExcType, MontyException, MontyObject};
use std::time::Duration;

pub use crate::engine::{cpu_limit, nul_in_source};

/// The exceptions of failed calls raised in the script: one that ends the script keeps its code
/// (the host checks it again against the calls it answered). A script's own
/// `raise PermissionError("PERMISSION_DENIED: …")` is not in here and stays `RUNTIME_ERROR`.
#[derive(Default)]
pub struct Raised {
    errors: Vec<(ExcType, String, WireError)>,
}

/// At most this many failed calls are remembered (later ones still raise, as the same text).
const MAX_REMEMBERED: usize = 4096;

impl Raised {
    /// The exception a failed call raises: `"<CODE>: <message>"`.
    pub fn note(&mut self, err: WireError) -> MontyException {
        let kind = super::host::exception_type(&err.code);
        let text = format!("{}: {}", err.code, err.message);
        if self.errors.len() < MAX_REMEMBERED {
            self.errors.push((kind, text.clone(), err));
        }
        MontyException::new(kind, Some(text))
    }

    fn find(&self, e: &MontyException) -> Option<&WireError> {
        let message = e.message()?;
        self.errors
            .iter()
            .find(|(kind, text, _)| *kind == e.exc_type() && text == message)
            .map(|(_, _, err)| err)
    }
}

/// The script's result as JSON text, within the result limit.
pub fn result_json(value: &MontyObject, result_bytes: u64) -> Result<String, WireError> {
    let json = values::to_json(value, "the result")
        .map_err(|r| WireError::new(r.code("RESULT_NOT_SERIALIZABLE"), r.message()))?
        .to_string();
    if json.len() as u64 > result_bytes {
        return Err(WireError::new(
            "LIMIT_EXCEEDED",
            format!(
                "the result is {} bytes; the limit is {result_bytes} bytes. Return less data (or summarize it in the script)",
                json.len()
            ),
        ));
    }
    Ok(json)
}

/// A script monty cannot compile: Python's syntax errors, and the Python monty does not have
/// (`class A(B)`, `match`, …), named with the line.
pub fn compile_error(e: &MontyException) -> WireError {
    let mut err = WireError::new("SYNTAX_ERROR", headline(e));
    if e.exc_type() == ExcType::NotImplementedError {
        err.message.push_str(
            ". Python scripts run on monty, which implements a subset of Python \
             (docs/python.md lists it); write this part another way",
        );
    }
    err.stack = Some(e.to_string());
    err
}

/// The time and memory limits handed to monty, each a little below the execution's by a random
/// amount drawn per execution. monty reports its own limits as a `TimeoutError`/`MemoryError`
/// whose text ends with the limit (`… > 9.999123456s`, `… > 134151424 bytes`); a script can raise
/// the same types with the same words (`raise TimeoutError('time limit exceeded')`), but not with
/// a limit it cannot know. Only an exception naming these exact limits is `CPU_LIMIT` or
/// `MEMORY_LIMIT`: the code comes from the runner's own numbers, never from the script's text.
pub struct Limits {
    pub duration: Duration,
    pub memory: Option<usize>,
}

impl Limits {
    pub fn new(cpu_ms: u64, memory_bytes: u64) -> Self {
        let r = nonce();
        let duration =
            Duration::from_millis(cpu_ms).saturating_sub(Duration::from_nanos(r % 1_000_000 + 1));
        let memory = usize::try_from(memory_bytes)
            .ok()
            .map(|m| m.saturating_sub(usize::from((r >> 32) as u16) + 1));
        Limits { duration, memory }
    }

    fn is_time(&self, e: &MontyException) -> bool {
        let message = e.message().unwrap_or_default();
        e.exc_type() == ExcType::TimeoutError
            && message.starts_with("time limit exceeded: ")
            && message.ends_with(&format!(" > {:?}", self.duration))
    }

    fn is_memory(&self, e: &MontyException) -> bool {
        let message = e.message().unwrap_or_default();
        e.exc_type() == ExcType::MemoryError
            && self.memory.is_some_and(|m| {
                message.starts_with("memory limit exceeded: ")
                    && message.ends_with(&format!(" bytes > {m} bytes"))
            })
    }
}

/// Eight bytes from the kernel (`getrandom`, allowed after the lockdown); zero if it fails,
/// which leaves the limits exact (and the check as strict as the script's ignorance of them).
fn nonce() -> u64 {
    let mut buf = [0u8; 8];
    // SAFETY: `buf` is a valid, writable buffer of `buf.len()` bytes; getrandom writes at most
    // that many and has no other memory effects.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n == 8 {
        u64::from_ne_bytes(buf)
    } else {
        0
    }
}

/// `MEMORY_LIMIT`, decided by the runner (monty's tracker, the runner's own count of live bytes,
/// or an allocation the address-space limit refused).
pub fn memory_limit() -> WireError {
    WireError::new(
        "MEMORY_LIMIT",
        "the script ran out of memory (memory limit reached); use less memory or raise --memory-mb",
    )
}

/// An exception that ended the script. A limit code only when monty's tracker raised it (see
/// [`Limits`]); a `SyntaxError` raised while running is the script's own (compile errors never
/// get here).
pub fn runtime_error(
    e: &MontyException,
    raised: &Raised,
    limits: &Limits,
    cpu_ms: u64,
) -> WireError {
    if limits.is_time(e) {
        return cpu_limit(cpu_ms);
    }
    if limits.is_memory(e) {
        return memory_limit();
    }
    if let Some(err) = raised.find(e) {
        let mut err = err.clone();
        err.stack = Some(e.to_string());
        return err;
    }
    let mut err = WireError::new("RUNTIME_ERROR", headline(e));
    let message = e.message().unwrap_or_default();
    if e.exc_type() == ExcType::TypeError
        && message.starts_with("unsupported operand type(s) for %: 'str' and ")
    {
        // `'%s=%d' % (k, v)`: the construct monty lacks, not the script's mistake.
        err.message.push_str(
            ". monty has no %-formatting: use an f-string (f\"{k}={v:.2f}\") or str.format",
        );
    }
    if e.exc_type() == ExcType::ModuleNotFoundError {
        err.message.push_str(
            ". Python scripts run on monty, which has a subset of the standard library \
             (docs/python.md lists it); files, processes and the network are reached through MCP tools",
        );
    }
    err.stack = Some(e.to_string());
    err
}

/// `Type: message (line N)`, the line of the innermost frame when there is one.
fn headline(e: &MontyException) -> String {
    let mut text = match e.message() {
        Some(m) if !m.is_empty() => format!("{}: {m}", e.exc_type()),
        _ => e.exc_type().to_string(),
    };
    if let Some(frame) = e.traceback().last() {
        text.push_str(&format!(" (line {})", frame.start.line));
    }
    text
}
