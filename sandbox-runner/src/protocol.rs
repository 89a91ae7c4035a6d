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

/// Tool names that can never be servers or tools: they collide with JavaScript object machinery.
pub const RESERVED_NAMES: &[&str] = &[
    "__proto__",
    "constructor",
    "prototype",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "then",
];

/// Whether `name` may be used as a server or tool name.
pub fn is_reserved_name(name: &str) -> bool {
    RESERVED_NAMES.contains(&name)
}

/// Whether `name` can name a server: non-empty, no ':' (used in `server:tool`), not reserved.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !is_reserved_name(name)
}

/// Every global the runner's scripts see: the engine's own (QuickJS-ng through rquickjs with
/// `Context::full`), the web globals of `engine/web.js`, plus `mcp` and `console`. A context key may not shadow any of them (nor an
/// `Object.prototype` name, see [`RESERVED_NAMES`]); the host refuses such keys before it
/// spawns a runner and the runner refuses them again. A unit test of the engine checks this
/// list against a live context, so the two cannot drift apart.
pub const SCRIPT_GLOBALS: &[&str] = &[
    "AbortController",
    "AbortSignal",
    "AggregateError",
    "Array",
    "ArrayBuffer",
    "AsyncDisposableStack",
    "Atomics",
    "BigInt",
    "BigInt64Array",
    "BigUint64Array",
    "Boolean",
    "CustomEvent",
    "DOMException",
    "DataView",
    "Date",
    "DisposableStack",
    "Error",
    "EvalError",
    "Event",
    "EventTarget",
    "FinalizationRegistry",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "Function",
    "Infinity",
    "Int16Array",
    "Int32Array",
    "Int8Array",
    "InternalError",
    "Iterator",
    "JSON",
    "Map",
    "Math",
    "NaN",
    "Number",
    "Object",
    "Promise",
    "Proxy",
    "RangeError",
    "ReferenceError",
    "Reflect",
    "RegExp",
    "Set",
    "SharedArrayBuffer",
    "String",
    "SuppressedError",
    "Symbol",
    "SyntaxError",
    "TextDecoder",
    "TextEncoder",
    "TypeError",
    "URIError",
    "URL",
    "URLSearchParams",
    "Uint16Array",
    "Uint32Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "WeakMap",
    "WeakRef",
    "WeakSet",
    "atob",
    "btoa",
    "clearInterval",
    "clearTimeout",
    "console",
    "crypto",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "eval",
    "fetch",
    "globalThis",
    "isFinite",
    "isNaN",
    "mcp",
    "navigator",
    "parseFloat",
    "parseInt",
    "performance",
    "queueMicrotask",
    "reportError",
    "self",
    "setInterval",
    "setTimeout",
    "structuredClone",
    "undefined",
    "unescape",
];

/// An ASCII JavaScript identifier (what a context key must be to become a variable).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Why `name` cannot be a context key (it becomes a global variable of the script), if it
/// cannot. The message names the key and says what to do.
pub fn context_key_problem(name: &str) -> Option<String> {
    const MAX: usize = 128;
    let shown: String = name
        .chars()
        .take(MAX)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if name.len() > MAX {
        return Some(format!(
            "context key '{shown}…' is {} bytes; keys are limited to {MAX} bytes",
            name.len()
        ));
    }
    if !is_identifier(name) {
        return Some(format!(
            "context key '{shown}' cannot be a variable name in the script: use an ASCII \
             identifier (letters, digits, _ and $, not starting with a digit)"
        ));
    }
    if SCRIPT_GLOBALS.contains(&name) || RESERVED_NAMES.contains(&name) {
        return Some(format!(
            "context key '{name}' would shadow the built-in global '{name}' of the script; \
             choose another name (built-ins, mcp and console cannot be replaced)"
        ));
    }
    None
}

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
    if json_depth(payload) <= INLINE_PARSE_DEPTH {
        return Ok(serde_json::from_slice(payload)?);
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("deep-frame".into())
            .stack_size(DEEP_PARSE_STACK)
            .spawn_scoped(scope, || decode_payload::<RunnerMessage>(payload))
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
pub mod raw {
    use super::{
        finish_frame as finish, json_depth, FrameError, WireError, LENGTH_PREFIX, MAX_VALUE_DEPTH,
    };
    use serde::Deserialize;
    use serde_json::value::RawValue;

    /// `rpc_call` with `args_json` (already valid JSON) spliced in.
    pub fn encode_rpc_call(
        id: u64,
        server: &str,
        tool: &str,
        args_json: &str,
        max: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), FrameError> {
        buf.clear();
        buf.extend_from_slice(&[0u8; LENGTH_PREFIX]);
        buf.extend_from_slice(br#"{"type":"rpc_call","id":"#);
        buf.extend_from_slice(id.to_string().as_bytes());
        buf.extend_from_slice(br#","server":"#);
        serde_json::to_writer(&mut *buf, server)?;
        buf.extend_from_slice(br#","tool":"#);
        serde_json::to_writer(&mut *buf, tool)?;
        check_depth(args_json.as_bytes())?;
        buf.extend_from_slice(br#","args":"#);
        buf.extend_from_slice(args_json.as_bytes());
        buf.push(b'}');
        finish(buf, max)
    }

    /// A successful `execution_complete` with `result_json` (already valid JSON) spliced in.
    pub fn encode_complete_ok(
        result_json: &str,
        max: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), FrameError> {
        check_depth(result_json.as_bytes())?;
        buf.clear();
        buf.extend_from_slice(&[0u8; LENGTH_PREFIX]);
        buf.extend_from_slice(br#"{"type":"execution_complete","success":true,"result":"#);
        buf.extend_from_slice(result_json.as_bytes());
        buf.push(b'}');
        finish(buf, max)
    }

    /// A successful `rpc_result`, serializing `result` in place (no copy of the value).
    pub fn encode_rpc_result_ok(
        id: u64,
        result: &serde_json::Value,
        max: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), FrameError> {
        buf.clear();
        buf.extend_from_slice(&[0u8; LENGTH_PREFIX]);
        buf.extend_from_slice(br#"{"type":"rpc_result","id":"#);
        buf.extend_from_slice(id.to_string().as_bytes());
        buf.extend_from_slice(br#","success":true,"result":"#);
        let start = buf.len();
        serde_json::to_writer(&mut *buf, result)?;
        if let Err(e) = check_depth(&buf[start..]) {
            buf.clear();
            return Err(e);
        }
        buf.push(b'}');
        finish(buf, max)
    }

    /// `TooDeep` when a value nests deeper than [`MAX_VALUE_DEPTH`].
    pub fn check_depth(json: &[u8]) -> Result<(), FrameError> {
        let depth = json_depth(json);
        if depth > MAX_VALUE_DEPTH {
            return Err(FrameError::TooDeep {
                depth,
                max: MAX_VALUE_DEPTH,
            });
        }
        Ok(())
    }

    /// An `rpc_result` as the runner reads it: the result stays raw JSON text for QuickJS to parse.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct RpcResultRef<'a> {
        #[serde(rename = "type")]
        pub kind: &'a str,
        pub id: u64,
        pub success: bool,
        #[serde(default, borrow)]
        pub result: Option<&'a RawValue>,
        #[serde(default)]
        pub error: Option<WireError>,
    }

    /// The `wake` frame, as the host's serializer writes it.
    pub const WAKE: &[u8] = br#"{"type":"wake"}"#;

    /// Decodes an `rpc_result` payload; any other frame type is an error.
    pub fn decode_rpc_result(payload: &[u8]) -> Result<RpcResultRef<'_>, FrameError> {
        let r: RpcResultRef<'_> = serde_json::from_slice(payload)?;
        if r.kind != "rpc_result" {
            return Err(FrameError::Invalid(serde::de::Error::custom(format!(
                "expected rpc_result, got {}",
                r.kind
            ))));
        }
        Ok(r)
    }
}

/// Blocking frame I/O over any `Read + Write`, used by the runner (which has no async executor).
pub mod blocking {
    use super::{FrameError, LENGTH_PREFIX};
    use std::io::{ErrorKind, Read, Write};

    /// Reads one frame's payload into `buf` (cleared first). `Err(Closed)` on a clean EOF before
    /// the length prefix.
    pub fn read_frame<R: Read>(r: &mut R, max: usize, buf: &mut Vec<u8>) -> Result<(), FrameError> {
        let mut prefix = [0u8; LENGTH_PREFIX];
        match r.read_exact(&mut prefix) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
            Err(e) => return Err(e.into()),
        }
        let len = u32::from_be_bytes(prefix) as usize;
        if len > max {
            return Err(FrameError::TooLarge { len, max });
        }
        buf.clear();
        buf.resize(len, 0);
        r.read_exact(buf)?;
        Ok(())
    }

    /// Writes an already encoded frame (see [`super::encode_frame`]) in one call where possible.
    pub fn write_frame<W: Write>(w: &mut W, frame: &[u8]) -> Result<(), FrameError> {
        w.write_all(frame)?;
        Ok(())
    }

    /// How much a [`FrameReader`] asks the socket for at once (more when a frame needs it).
    pub const READ_AHEAD: usize = 64 * 1024;

    /// Frames from a blocking reader with read-ahead: frames the peer wrote together (results
    /// that were ready at the same time) are read with one `read` call instead of two per
    /// frame. Holds at most one frame (bounded by `max`) plus [`READ_AHEAD`] bytes.
    #[derive(Debug, Default)]
    pub struct FrameReader {
        /// Read buffer; `buf[start..end]` holds bytes read but not yet handed out.
        buf: Vec<u8>,
        start: usize,
        end: usize,
    }

    impl FrameReader {
        /// The next frame's payload. `Err(Closed)` on a clean EOF between frames; an EOF inside
        /// a frame is an I/O error; a length prefix over `max` is `TooLarge` before any of the
        /// payload is read.
        pub fn next<R: Read>(&mut self, r: &mut R, max: usize) -> Result<&[u8], FrameError> {
            loop {
                let avail = &self.buf[self.start..self.end];
                let mut needed = LENGTH_PREFIX;
                if let Some(prefix) = avail.get(..LENGTH_PREFIX) {
                    let mut bytes = [0u8; LENGTH_PREFIX];
                    bytes.copy_from_slice(prefix);
                    let len = u32::from_be_bytes(bytes) as usize;
                    if len > max {
                        return Err(FrameError::TooLarge { len, max });
                    }
                    needed = LENGTH_PREFIX + len;
                    if avail.len() >= needed {
                        let from = self.start + LENGTH_PREFIX;
                        self.start = from + len;
                        return Ok(&self.buf[from..from + len]);
                    }
                }
                // Not enough: move the unread bytes to the front, make room for at least what
                // is missing (zeroing only new capacity), and read.
                let have = self.end - self.start;
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.start = 0;
                    self.end = have;
                }
                let room = have + (needed - have).max(READ_AHEAD);
                if self.buf.len() < room {
                    self.buf.resize(room, 0);
                }
                let n = loop {
                    match r.read(&mut self.buf[self.end..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e.into()),
                    }
                };
                if n == 0 {
                    if have == 0 {
                        return Err(FrameError::Closed);
                    }
                    return Err(std::io::Error::from(ErrorKind::UnexpectedEof).into());
                }
                self.end += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_with_big_endian_prefix() {
        let msg = RunnerMessage::RpcCall {
            id: 7,
            server: "fs".into(),
            tool: "read".into(),
            args: serde_json::json!({"path": "/x"}),
        };
        let mut buf = Vec::new();
        encode_frame(&msg, DEFAULT_MAX_FRAME, &mut buf).unwrap();
        let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
        assert_eq!(len, buf.len() - 4);
        let back: RunnerMessage = decode_payload(&buf[4..]).unwrap();
        assert_eq!(back, msg);
        let text = std::str::from_utf8(&buf[4..]).unwrap();
        assert!(text.starts_with(r#"{"type":"rpc_call""#), "{text}");
    }

    #[test]
    fn oversized_frames_are_refused_on_both_sides() {
        let msg = RunnerMessage::Log {
            level: LogLevel::Info,
            message: "x".repeat(100),
        };
        let mut buf = Vec::new();
        assert!(matches!(
            encode_frame(&msg, 10, &mut buf),
            Err(FrameError::TooLarge { max: 10, .. })
        ));
        let mut wire: &[u8] = &[0xff, 0xff, 0xff, 0xff, b'{'];
        assert!(matches!(
            blocking::read_frame(&mut wire, 1024, &mut buf),
            Err(FrameError::TooLarge {
                len: 0xffff_ffff,
                ..
            })
        ));
    }

    #[test]
    fn unknown_types_and_fields_are_rejected() {
        assert!(decode_payload::<RunnerMessage>(br#"{"type":"shell","cmd":"id"}"#).is_err());
        assert!(decode_payload::<RunnerMessage>(
            br#"{"type":"log","level":"info","message":"m","extra":1}"#
        )
        .is_err());
        let deep = "[".repeat(100_000);
        assert!(decode_payload::<RunnerMessage>(deep.as_bytes()).is_err());
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let fix = |s: &str| replace_lone_surrogates(s.to_string());
        assert_eq!(fix(r#"["a\ud800b"]"#), r#"["a\ufffdb"]"#);
        assert_eq!(fix(r#"{"\udc00":"\uD83D"}"#), r#"{"\ufffd":"\ufffd"}"#);
        // Pairs stay, an escaped backslash before "ud800" is not an escape.
        assert_eq!(fix(r#"["\ud83d\ude00"]"#), r#"["\ud83d\ude00"]"#);
        assert_eq!(fix(r#"["\\ud800"]"#), r#"["\\ud800"]"#);
        assert_eq!(
            fix(r#"["\ud800\ud800\udc00"]"#),
            r#"["\ufffd\ud800\udc00"]"#
        );
        assert_eq!(fix(r#"["x\ud800"]"#), r#"["x\ufffd"]"#);
        let v: Value = serde_json::from_str(&fix(r#"["\ud800", "é\udfff"]"#)).unwrap();
        assert_eq!(v, serde_json::json!(["\u{fffd}", "é\u{fffd}"]));
    }

    #[test]
    fn frames_up_to_the_maximum_depth_decode_on_a_small_stack() {
        let deep = |n: usize| {
            let value = format!("{}1{}", "[".repeat(n), "]".repeat(n));
            format!(r#"{{"type":"execution_complete","success":true,"result":{value}}}"#)
        };
        assert_eq!(json_depth(br#"{"a":"[[[{","b":[1,[2]]}"#), 3);
        assert_eq!(json_depth(br#""\"[""#), 0);
        let ok = deep(MAX_VALUE_DEPTH);
        // Measured in a debug build: decoding a frame of the maximum depth needs 1-2 MiB of stack
        // (more than a tokio worker can spare), re-encoding and dropping it 256-512 KiB.
        let m = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || {
                let m: RunnerMessage = decode_payload(ok.as_bytes()).unwrap();
                let mut buf = Vec::new();
                encode_frame(&m, DEFAULT_MAX_FRAME, &mut buf).unwrap();
                drop(m);
                buf.len()
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(m > 2 * MAX_VALUE_DEPTH);
        // The host's path: deep frames on their own thread, from a small stack.
        let frame = deep(MAX_VALUE_DEPTH);
        // What the host then does with the value on its own (worker) stack: re-encode it for
        // the other side and drop it. 512 KiB is a quarter of a tokio worker's stack.
        let small = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(move || {
                let m = decode_from_runner(frame.as_bytes()).unwrap();
                let mut buf = Vec::new();
                encode_frame(&m, DEFAULT_MAX_FRAME, &mut buf).unwrap();
                drop(m);
                buf.len() > 2 * MAX_VALUE_DEPTH
            })
            .unwrap();
        assert!(small.join().unwrap());
        let err = decode_from_runner(deep(MAX_VALUE_DEPTH + 1).as_bytes());
        assert!(
            matches!(err, Err(FrameError::TooDeep { depth, max }) if depth == MAX_FRAME_DEPTH + 1 && max == MAX_FRAME_DEPTH),
            "{err:?}"
        );
        let mut buf = Vec::new();
        let args = format!(
            "{{\"a\":{}1{}}}",
            "[".repeat(MAX_VALUE_DEPTH),
            "]".repeat(MAX_VALUE_DEPTH)
        );
        assert!(matches!(
            raw::encode_rpc_call(1, "s", "t", &args, DEFAULT_MAX_FRAME, &mut buf),
            Err(FrameError::TooDeep {
                depth: 1001,
                max: MAX_VALUE_DEPTH
            })
        ));
    }

    #[test]
    fn errors_are_bounded_with_a_marker() {
        let mut e = WireError::new("RUNTIME_ERROR", format!("Error: {}", "é".repeat(40_000)));
        e.stack = Some("at f\n".repeat(100_000));
        e.tool = Some("t".repeat(5000));
        e.alternatives = Some(vec!["x".into(); 50]);
        let b = e.clone().bounded();
        assert!(
            b.message.len() <= MAX_ERROR_MESSAGE_BYTES + 64,
            "{}",
            b.message.len()
        );
        assert!(b
            .message
            .ends_with(&format!("… [truncated: {} bytes in all]", e.message.len())));
        assert!(b.message.starts_with("Error: éé"));
        assert!(b.stack.as_ref().unwrap().len() <= MAX_ERROR_STACK_BYTES + 64);
        assert!(b.tool.as_ref().unwrap().len() <= MAX_ERROR_NAME_BYTES + 64);
        assert_eq!(
            b.alternatives.as_ref().unwrap().len(),
            MAX_ERROR_ALTERNATIVES
        );
        let small = WireError::new("X", "short");
        assert_eq!(small.clone().bounded(), small);
    }

    #[test]
    fn raw_encoders_match_the_typed_messages() {
        let mut buf = Vec::new();
        raw::encode_rpc_call(9, "my \"srv\"", "t-1", r#"{"a":[1,2]}"#, 1 << 20, &mut buf).unwrap();
        let m: RunnerMessage = decode_payload(&buf[4..]).unwrap();
        assert_eq!(
            m,
            RunnerMessage::RpcCall {
                id: 9,
                server: "my \"srv\"".into(),
                tool: "t-1".into(),
                args: serde_json::json!({"a": [1, 2]})
            }
        );
        raw::encode_complete_ok("[1,null]", 1 << 20, &mut buf).unwrap();
        let m: RunnerMessage = decode_payload(&buf[4..]).unwrap();
        assert_eq!(
            m,
            RunnerMessage::ExecutionComplete {
                success: true,
                result: Some(serde_json::json!([1, null])),
                error: None
            }
        );
        assert!(raw::encode_complete_ok(&"1".repeat(100), 10, &mut buf).is_err());
        let host = HostMessage::RpcResult {
            id: 4,
            success: false,
            result: None,
            error: Some(WireError::new("TOOL_ERROR", "boom")),
        };
        encode_frame(&host, 1 << 20, &mut buf).unwrap();
        let r = raw::decode_rpc_result(&buf[4..]).unwrap();
        assert_eq!((r.id, r.success), (4, false));
        assert_eq!(r.error.unwrap().code, "TOOL_ERROR");
        assert!(raw::decode_rpc_result(br#"{"type":"execute","id":1,"success":true}"#).is_err());
        let v = serde_json::json!({"k": "v", "n": [1.5]});
        raw::encode_rpc_result_ok(12, &v, 1 << 20, &mut buf).unwrap();
        let m: HostMessage = decode_payload(&buf[4..]).unwrap();
        assert_eq!(
            m,
            HostMessage::RpcResult {
                id: 12,
                success: true,
                result: Some(v),
                error: None
            }
        );
    }

    #[test]
    fn wake_and_sleep_frames() {
        let mut buf = Vec::new();
        encode_frame(&HostMessage::Wake, 1 << 10, &mut buf).unwrap();
        assert_eq!(&buf[4..], raw::WAKE);
        let m: RunnerMessage = decode_payload(br#"{"type":"sleep","ms":200}"#).unwrap();
        assert_eq!(m, RunnerMessage::Sleep { ms: 200 });
        assert!(decode_payload::<RunnerMessage>(br#"{"type":"sleep","ms":-1}"#).is_err());
    }

    /// A reader that hands out at most `chunk` bytes per `read`, counting the calls.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
        reads: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            self.reads += 1;
            let n = self.data.len().min(self.chunk).min(out.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn frames(payloads: &[&[u8]]) -> Vec<u8> {
        let mut all = Vec::new();
        for p in payloads {
            all.extend_from_slice(&(p.len() as u32).to_be_bytes());
            all.extend_from_slice(p);
        }
        all
    }

    #[test]
    fn frames_written_together_are_read_with_one_read() {
        let data = frames(&[b"one", b"two", b"three"]);
        let mut r = Trickle {
            data: &data,
            chunk: usize::MAX,
            reads: 0,
        };
        let mut fr = blocking::FrameReader::default();
        assert_eq!(fr.next(&mut r, 100).unwrap(), b"one");
        assert_eq!(fr.next(&mut r, 100).unwrap(), b"two");
        assert_eq!(fr.next(&mut r, 100).unwrap(), b"three");
        assert_eq!(r.reads, 1);
        assert!(matches!(fr.next(&mut r, 100), Err(FrameError::Closed)));
    }

    #[test]
    fn frames_split_across_reads_and_bounds_hold() {
        let big = vec![7u8; 200_000];
        let data = frames(&[b"a", &big, b"z"]);
        let mut r = Trickle {
            data: &data,
            chunk: 3,
            reads: 0,
        };
        let mut fr = blocking::FrameReader::default();
        assert_eq!(fr.next(&mut r, 300_000).unwrap(), b"a");
        assert_eq!(fr.next(&mut r, 300_000).unwrap(), &big[..]);
        assert_eq!(fr.next(&mut r, 300_000).unwrap(), b"z");
        // Over the limit: refused from the prefix alone.
        let data = frames(&[&big]);
        let mut r = Trickle {
            data: &data,
            chunk: usize::MAX,
            reads: 0,
        };
        assert!(matches!(
            blocking::FrameReader::default().next(&mut r, 1000),
            Err(FrameError::TooLarge {
                len: 200_000,
                max: 1000
            })
        ));
        // EOF inside a frame is an error, not a clean close.
        let data = frames(&[b"hello"]);
        let mut r = Trickle {
            data: &data[..6],
            chunk: usize::MAX,
            reads: 0,
        };
        assert!(matches!(
            blocking::FrameReader::default().next(&mut r, 100),
            Err(FrameError::Io(_))
        ));
    }
}
