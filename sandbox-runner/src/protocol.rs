//! The wire protocol between the host and the runner.
//!
//! Transport: a `socketpair` created by the host; the runner's end is inherited as fd
//! [`RUNNER_SOCKET_FD`]. Each frame is a 4-byte big-endian length followed by one UTF-8 JSON object
//! with a `"type"` field. Both sides enforce a maximum frame size ([`DEFAULT_MAX_FRAME`]).
//!
//! The host treats everything the runner sends as hostile: these types are what it *expects*, and
//! anything that does not decode into them ends the execution with `PROTOCOL_ERROR`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Version of this protocol. The runner announces it in `ready`; the host refuses any other.
pub const PROTOCOL_VERSION: u32 = 2;

/// The fd number at which the runner finds its end of the socketpair.
pub const RUNNER_SOCKET_FD: i32 = 3;

/// Default maximum size of one frame's JSON payload, in bytes (16 MiB).
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Size of the length prefix.
pub const LENGTH_PREFIX: usize = 4;

/// Frames sent by the runner to the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum RunnerMessage {
    /// Sent once, after lockdown and before the runner reads any user code.
    Ready {
        protocol: u32,
        pid: u32,
        /// Layer name → `"enforced"` or `"unavailable: <reason>"`.
        isolation: BTreeMap<String, String>,
    },
    /// A tool call made by the script. Many may be outstanding at once.
    RpcCall {
        id: u64,
        server: String,
        tool: String,
        #[serde(default)]
        args: Value,
    },
    /// A `console.*` line, sent as it happens.
    Log { level: LogLevel, message: String },
    /// The script has timers and nothing else to do: send `wake` in `ms` milliseconds unless
    /// another `sleep` replaces the request first. The runner has no clock it can wait on after
    /// the lockdown (no `poll`, no `nanosleep`), so the host drives its timers; a wake that
    /// comes early or late only makes the runner check its own clock again.
    Sleep { ms: u64 },
    /// What the script was given by the clock (`Date.now()`, `new Date()`, Python's
    /// `datetime.now()`/`date.today()`) in an execution that is recorded or replayed
    /// ([`Determinism`]): each value in order, in microseconds since the Unix epoch, at most
    /// [`MAX_CLOCK_VALUES`] (`dropped` counts the rest). Sent once, just before
    /// `execution_complete`.
    Clock {
        values: Vec<i64>,
        #[serde(default)]
        dropped: u64,
    },
    /// The script's outcome. The runner exits after sending it.
    ExecutionComplete {
        success: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<WireError>,
    },
}

/// Frames sent by the host to the runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HostMessage {
    /// The one script this runner will execute.
    Execute {
        code: String,
        /// The tools the script may call; `mcp.<server>.<tool>` proxies are built from this.
        tools: Vec<ToolRef>,
        /// Servers that are configured but cannot be reached, with the reason. Calls to them reject
        /// with `TOOL_ERROR` naming the server instead of `TOOL_NOT_FOUND`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unavailable: Vec<UnavailableServer>,
        /// Variables put in the script's scope, by name.
        #[serde(default)]
        context: Map<String, Value>,
        limits: RunnerLimits,
        /// The language of `code` (absent: JavaScript, as before there was a choice).
        #[serde(default, skip_serializing_if = "Language::is_javascript")]
        language: Language,
        /// Set when the execution is recorded or replayed: the seed of `Math.random`/`crypto`
        /// and, in a replay, the clock values to give the script.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        determinism: Option<Determinism>,
    },
    /// The answer to one `rpc_call`.
    RpcResult {
        id: u64,
        success: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<WireError>,
    },
    /// The answer to the runner's latest `sleep`: its earliest timer is due.
    Wake,
}

/// The language a script is written in: each has its engine in the same runner, behind the same
/// lockdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// QuickJS (`engine`).
    #[default]
    Javascript,
    /// monty, a Python subset interpreter (`python`).
    Python,
}

impl Language {
    pub fn is_javascript(&self) -> bool {
        *self == Language::Javascript
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Language::Javascript => "javascript",
            Language::Python => "python",
        }
    }

    /// `"javascript"`/`"js"` or `"python"`/`"py"`.
    pub fn parse(name: &str) -> Option<Language> {
        match name {
            "javascript" | "js" => Some(Language::Javascript),
            "python" | "py" => Some(Language::Python),
            _ => None,
        }
    }
}

/// Most clock values a runner reports (and a replay gives back): past them the script reads the
/// real clock and the runner counts the values it did not keep.
pub const MAX_CLOCK_VALUES: usize = 10_000;

/// What makes an execution repeatable: the generator's seed (32 bytes, hex) chosen by the host,
/// and, in a replay, the clock values the recorded execution read, given back in order (past
/// the last one the script reads the real clock). With it the runner reports the clock values
/// it gave the script ([`RunnerMessage::Clock`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Determinism {
    pub seed: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<Vec<i64>>,
}

impl Determinism {
    /// The seed's 32 bytes, when it is 64 hex digits.
    pub fn seed_bytes(&self) -> Option<[u8; 32]> {
        let b = self.seed.as_bytes();
        if b.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in b.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).ok()?;
            out[i] = u8::from_str_radix(text, 16).ok()?;
        }
        Some(out)
    }
}

/// One callable tool, as the runner needs to know it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ToolRef {
    pub server: String,
    pub name: String,
}

/// A configured server whose tools cannot be called, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnavailableServer {
    pub server: String,
    pub reason: String,
    /// The code its calls fail with, when not `SERVER_UNAVAILABLE` (one of
    /// [`UNAVAILABLE_CODES`]; anything else is taken as `SERVER_UNAVAILABLE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// The codes a call to an unavailable server may fail with.
pub const UNAVAILABLE_CODES: &[&str] = &["SERVER_UNAVAILABLE", "SERVER_CONFINEMENT_UNAVAILABLE"];

impl UnavailableServer {
    /// The code its calls fail with.
    pub fn code(&self) -> &'static str {
        UNAVAILABLE_CODES
            .iter()
            .copied()
            .find(|c| self.code.as_deref() == Some(*c))
            .unwrap_or("SERVER_UNAVAILABLE")
    }
}

/// The limits the runner enforces itself (the host enforces the wall clock, per-call timeouts and
/// call counts on its side, and does not trust the runner for any of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerLimits {
    /// Time spent running JavaScript, not counting time waiting on tools.
    pub cpu_ms: u64,
    /// QuickJS heap limit.
    pub memory_bytes: u64,
    /// QuickJS stack limit.
    pub stack_bytes: u64,
    /// Maximum size of the serialized result.
    pub result_bytes: u64,
    /// Maximum total size of log messages; past it logs are dropped and one marker is sent.
    pub log_bytes: u64,
    /// Maximum tool calls the script may start.
    pub max_calls: u64,
    /// Maximum size of one frame.
    pub max_frame_bytes: u64,
}

impl Default for RunnerLimits {
    fn default() -> Self {
        RunnerLimits {
            cpu_ms: 10_000,
            memory_bytes: 128 * 1024 * 1024,
            stack_bytes: 1024 * 1024,
            result_bytes: 8 * 1024 * 1024,
            log_bytes: 1024 * 1024,
            max_calls: 1_000,
            max_frame_bytes: DEFAULT_MAX_FRAME as u64,
        }
    }
}

/// A structured error as it crosses the socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WireError {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternatives: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

/// Longest error message the runner sends; longer ones are cut with a marker giving the size.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 64 * 1024;
/// Longest stack trace the runner sends.
pub const MAX_ERROR_STACK_BYTES: usize = 64 * 1024;
/// Longest `tool` name and alternative in an error, and how many alternatives are kept.
pub const MAX_ERROR_NAME_BYTES: usize = 1024;
pub const MAX_ERROR_ALTERNATIVES: usize = 10;

impl WireError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        WireError {
            code: code.into(),
            message: message.into(),
            ..Default::default()
        }
    }

    /// The error with every field cut to its bound (`MAX_ERROR_*`): a script can throw an
    /// `Error` with a message of any size, and the frame must still fit.
    pub fn bounded(mut self) -> Self {
        truncate_marked(&mut self.code, MAX_ERROR_NAME_BYTES);
        truncate_marked(&mut self.message, MAX_ERROR_MESSAGE_BYTES);
        if let Some(stack) = &mut self.stack {
            truncate_marked(stack, MAX_ERROR_STACK_BYTES);
        }
        if let Some(tool) = &mut self.tool {
            truncate_marked(tool, MAX_ERROR_NAME_BYTES);
        }
        if let Some(alts) = &mut self.alternatives {
            alts.truncate(MAX_ERROR_ALTERNATIVES);
            for a in alts.iter_mut() {
                truncate_marked(a, MAX_ERROR_NAME_BYTES);
            }
        }
        self
    }
}

/// Cuts `s` to at most `max` bytes (on a character boundary) and appends
/// `… [truncated: N bytes in all]` when it was longer.
pub fn truncate_marked(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let total = s.len();
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.push_str(&format!("… [truncated: {total} bytes in all]"));
}

/// Level of a `console.*` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Log,
    Info,
    Warn,
    Error,
    Debug,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Log => "log",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
            LogLevel::Debug => "debug",
        }
    }
}

/// The names a script sees: reserved names, the globals, context keys.
mod names;
pub use names::*;

/// Errors from encoding or decoding a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge { len: usize, max: usize },
    #[error("a value nested {depth} levels deep exceeds the maximum nesting of {max} levels")]
    TooDeep { depth: usize, max: usize },
    #[error("frame is not a valid protocol message: {0}")]
    Invalid(#[from] serde_json::Error),
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    #[error("connection closed")]
    Closed,
}

/// Serializes `msg` into one buffer: length prefix followed by the JSON payload, ready for a
/// single `write`. The buffer is cleared first so callers can reuse it.
pub fn encode_frame<T: Serialize>(
    msg: &T,
    max: usize,
    buf: &mut Vec<u8>,
) -> Result<(), FrameError> {
    buf.clear();
    buf.extend_from_slice(&[0u8; LENGTH_PREFIX]);
    serde_json::to_writer(&mut *buf, msg)?;
    finish_frame(buf, max)
}

/// Checks the payload written after the placeholder prefix against `max` and fills in the
/// big-endian length (clearing the buffer when it is too large).
fn finish_frame(buf: &mut Vec<u8>, max: usize) -> Result<(), FrameError> {
    let len = buf.len() - LENGTH_PREFIX;
    if len > max {
        buf.clear();
        return Err(FrameError::TooLarge { len, max });
    }
    let prefix = u32::try_from(len).map_err(|_| FrameError::TooLarge { len, max })?;
    buf[..LENGTH_PREFIX].copy_from_slice(&prefix.to_be_bytes());
    Ok(())
}

/// Deepest nesting of a value that crosses the socket (a result, tool arguments, a tool
/// result). The runner refuses deeper values with `LIMIT_EXCEEDED`; a frame deeper than
/// [`MAX_FRAME_DEPTH`] comes only from a broken runner.
pub const MAX_VALUE_DEPTH: usize = 1000;
/// Deepest nesting of a whole frame: the value plus the frame object around it.
pub const MAX_FRAME_DEPTH: usize = MAX_VALUE_DEPTH + 1;

/// The nesting depth of JSON text (`1` for `[]`, `0` for a scalar), found without recursion;
/// brackets inside strings do not count. Text that is not JSON gets some number: the parser
/// rejects it afterwards.
pub fn json_depth(text: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Frames nested deeper than this are parsed on a thread of their own (see
/// [`decode_from_runner`]); up to it serde_json's own limit (128) applies.
pub const INLINE_PARSE_DEPTH: usize = 120;
/// Stack of the thread that parses deep frames. Measured in a debug build: decoding a frame of
/// [`MAX_FRAME_DEPTH`] needs 1-2 MiB (a tokio worker has 2 MiB); re-encoding and dropping the
/// value, which the host does on its own stack, 256-512 KiB.
pub const DEEP_PARSE_STACK: usize = 8 * 1024 * 1024;

/// How the host decodes a runner's frame: like [`decode_payload`], but a frame nested deeper
/// than [`INLINE_PARSE_DEPTH`] is parsed on a short-lived thread with a [`DEEP_PARSE_STACK`]
/// stack, so no input can overflow the small stack of a tokio worker that every client shares.
pub fn decode_from_runner(payload: &[u8]) -> Result<RunnerMessage, FrameError> {
    decode_on_deep_stack(payload)
}

/// [`decode_payload`] of any type, on a thread with a [`DEEP_PARSE_STACK`] stack when the text
/// nests deeper than [`INLINE_PARSE_DEPTH`] (a value the host kept and reads back, such as a
/// stored session-state value).
pub fn decode_on_deep_stack<T: for<'de> Deserialize<'de> + Send>(
    payload: &[u8],
) -> Result<T, FrameError> {
    if json_depth(payload) <= INLINE_PARSE_DEPTH {
        return Ok(serde_json::from_slice(payload)?);
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("deep-frame".into())
            .stack_size(DEEP_PARSE_STACK)
            .spawn_scoped(scope, || decode_payload::<T>(payload))
            .map_err(FrameError::Io)?
            .join()
            .unwrap_or_else(|_| {
                Err(FrameError::Io(std::io::Error::other(
                    "the thread parsing a deep frame panicked",
                )))
            })
    })
}

/// Decodes one payload (without its length prefix).
///
/// The nesting depth is checked first, without recursion ([`MAX_FRAME_DEPTH`]); only then is the
/// payload parsed without serde_json's fixed limit of 128 levels. At the maximum depth this
/// needs up to 2 MiB of stack (measured in a debug build): the runner's main thread has 8 MiB;
/// the host uses [`decode_from_runner`].
pub fn decode_payload<T: for<'de> Deserialize<'de>>(payload: &[u8]) -> Result<T, FrameError> {
    let depth = json_depth(payload);
    if depth > MAX_FRAME_DEPTH {
        return Err(FrameError::TooDeep {
            depth,
            max: MAX_FRAME_DEPTH,
        });
    }
    let mut de = serde_json::Deserializer::from_slice(payload);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Replaces every `\uXXXX` escape of a lone UTF-16 surrogate in JSON text by `\ufffd` (U+FFFD,
/// the replacement character). JavaScript strings may hold lone surrogates and QuickJS's
/// `JSON.stringify` escapes them (as the standard says), but they are not Unicode text and
/// strict JSON parsers (serde_json) refuse them. Surrogate pairs are kept.
pub fn replace_lone_surrogates(json: String) -> String {
    if !json.contains("\\ud") && !json.contains("\\uD") {
        return json;
    }
    let b = json.as_bytes();
    let hex_at = |i: usize| -> Option<u16> {
        let h = b.get(i..i + 4)?;
        u16::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    // An escape `\uXXXX` at `i` (the backslash) and its code unit, when `i` starts one.
    let unit_at = |i: usize| -> Option<u16> {
        if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
            hex_at(i + 2)
        } else {
            None
        }
    };
    let mut out = String::with_capacity(json.len());
    let (mut i, mut copied, mut in_string) = (0usize, 0usize, false);
    while i < b.len() {
        let c = b[i];
        if !in_string {
            if c == b'"' {
                in_string = true;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_string = false;
                i += 1;
            }
            b'\\' => match unit_at(i) {
                Some(u) if (0xD800..0xDC00).contains(&u) => {
                    if unit_at(i + 6).is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
                        i += 12; // a valid pair
                    } else {
                        out.push_str(&json[copied..i]);
                        out.push_str("\\ufffd");
                        i += 6;
                        copied = i;
                    }
                }
                Some(u) if (0xDC00..0xE000).contains(&u) => {
                    out.push_str(&json[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
                Some(_) => i += 6,
                None => i += 2, // any other escape is two bytes
            },
            _ => i += 1,
        }
    }
    out.push_str(&json[copied..]);
    out
}

/// Fast paths for the runner's hot frames. They write and read exactly the JSON that
/// [`RunnerMessage`] / [`HostMessage`] define (tests below check it), but splice already-serialized
/// JSON (tool arguments and results produced by QuickJS's own `JSON.stringify`) instead of
/// re-parsing it into a `serde_json::Value` and serializing it again.
pub mod raw;

/// Blocking frame I/O over any `Read + Write`, used by the runner (which has no async executor).
pub mod blocking;

#[cfg(test)]
mod tests;
