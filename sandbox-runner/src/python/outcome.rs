//! A Python script's outcome as it crosses the socket: its result as JSON text, its exception
//! as a structured error (compile errors, limits, a failed call that was not caught, the
//! script's own exception with its traceback).

use super::values;
use crate::protocol::WireError;
use monty_types::{ExcType, MontyException, MontyObject};

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
        .map_err(|m| WireError::new("RESULT_NOT_SERIALIZABLE", m))?
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

/// An exception that ended the script.
pub fn runtime_error(e: &MontyException, raised: &Raised, cpu_ms: u64) -> WireError {
    let message = e.message().unwrap_or_default();
    match e.exc_type() {
        ExcType::TimeoutError if message.starts_with("time limit exceeded") => {
            return cpu_limit(cpu_ms)
        }
        ExcType::MemoryError if message.starts_with("memory limit exceeded") => {
            return WireError::new(
                "MEMORY_LIMIT",
                "the script ran out of memory (memory limit reached); use less memory or raise --memory-mb",
            )
        }
        ExcType::SyntaxError => return compile_error(e),
        _ => {}
    }
    if let Some(err) = raised.find(e) {
        let mut err = err.clone();
        err.stack = Some(e.to_string());
        return err;
    }
    let mut err = WireError::new("RUNTIME_ERROR", headline(e));
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
