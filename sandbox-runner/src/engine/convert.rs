//! Turning JavaScript values into what crosses the socket: the result as JSON text, thrown values
//! as structured errors, log arguments as text.

use crate::protocol::WireError;
use rquickjs::{Coerced, Ctx, Exception, FromJs, Function, Value};

/// Codes a script may carry out of the runner on an error object it did not create itself: the
/// ones the bridge puts on tool-call rejections and runner limits. Anything else is
/// `RUNTIME_ERROR`. (The host applies the same rule again; it does not trust the runner.)
pub const SCRIPT_VISIBLE_CODES: &[&str] = &[
    "TOOL_NOT_FOUND",
    "INVALID_ARGUMENTS",
    "TOOL_ERROR",
    "TOOL_TIMEOUT",
    "PERMISSION_DENIED",
    "LIMIT_EXCEEDED",
    "CAPABILITY_CYCLE",
    "CAPABILITY_DEPTH",
    "SERVER_UNAVAILABLE",
];

/// Serializes the script's result. `undefined` becomes `null`; functions, symbols, BigInt and
/// cycles are `RESULT_NOT_SERIALIZABLE`.
pub fn result_json<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Result<String, WireError> {
    if value.is_undefined() {
        return Ok("null".to_string());
    }
    let replacer = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, key: Coerced<String>, v: Value<'js>| -> rquickjs::Result<Value<'js>> {
            let what = if v.is_function() {
                Some("a function")
            } else if v.is_symbol() {
                Some("a symbol")
            } else if v.is_big_int() {
                Some("a BigInt")
            } else {
                None
            };
            match what {
                Some(what) => {
                    let at = if key.0.is_empty() {
                        "the result itself".to_string()
                    } else {
                        format!("key \"{}\"", key.0)
                    };
                    Err(Exception::throw_type(
                        &ctx,
                        &format!("the result contains {what} ({at}), which JSON cannot represent"),
                    ))
                }
                None => Ok(v),
            }
        },
    )
    .map_err(|e| WireError::new("RUNTIME_ERROR", e.to_string()))?;
    match ctx.json_stringify_replacer(value, replacer) {
        Ok(Some(s)) => Ok(s.to_string().unwrap_or_else(|_| "null".into())),
        Ok(None) => Ok("null".into()),
        Err(_) => {
            let thrown = ctx.catch();
            let msg = thrown
                .as_exception()
                .and_then(|e| e.message())
                .unwrap_or_else(|| "the result cannot be serialized".into());
            Err(WireError::new(
                "RESULT_NOT_SERIALIZABLE",
                format!(
                    "{msg}. Return plain data: objects, arrays, strings, numbers, booleans, null."
                ),
            ))
        }
    }
}

pub fn memory_limit() -> WireError {
    WireError::new(
        "MEMORY_LIMIT",
        "the script ran out of memory (memory limit reached); use less memory or raise --memory-mb",
    )
}

/// A thrown or rejected value as a structured error.
pub fn thrown_to_error<'js>(ctx: &Ctx<'js>, thrown: Value<'js>) -> WireError {
    if let Some(obj) = thrown.as_object() {
        let code: Option<String> = obj.get("code").ok().flatten();
        if let Some(code) = code.filter(|c| SCRIPT_VISIBLE_CODES.contains(&c.as_str())) {
            let message: String = obj
                .get::<_, Option<Coerced<String>>>("message")
                .ok()
                .flatten()
                .map(|c| c.0)
                .unwrap_or_default();
            let mut err = WireError::new(code, message);
            err.tool = obj.get("tool").ok().flatten();
            err.alternatives = obj.get("alternatives").ok().flatten();
            return err;
        }
    }
    if let Some(exc) = thrown.as_exception() {
        let name = error_name(exc);
        let message = exc.message().unwrap_or_default();
        let mut err = if name == "SyntaxError" {
            WireError::new(
                "SYNTAX_ERROR",
                with_location(&message, exc.stack().as_deref()),
            )
        } else if name == "InternalError" && message == "out of memory" {
            memory_limit()
        } else if message == "Maximum call stack size exceeded" {
            WireError::new(
                "RUNTIME_ERROR",
                format!("{name}: {message} (the JS stack limit; check for unbounded recursion)"),
            )
        } else {
            WireError::new("RUNTIME_ERROR", format!("{name}: {message}"))
        };
        err.stack = exc.stack().filter(|s| !s.is_empty());
        return err;
    }
    WireError::new(
        "RUNTIME_ERROR",
        format!("Uncaught {}", describe(ctx, thrown)),
    )
}

/// `message (line L, column C)` from QuickJS's `at script.js:L:C` stack line, when present.
fn with_location(message: &str, stack: Option<&str>) -> String {
    let loc = stack.and_then(|s| {
        s.lines().find_map(|line| {
            let rest = line.trim().strip_prefix("at ")?;
            let rest = rest
                .rsplit_once('(')
                .map(|(_, r)| r.trim_end_matches(')'))
                .unwrap_or(rest);
            let mut parts = rest.rsplitn(3, ':');
            let col: u32 = parts.next()?.parse().ok()?;
            let line: u32 = parts.next()?.parse().ok()?;
            Some((line, col))
        })
    });
    match loc {
        Some((line, col)) => format!("SyntaxError: {message} (line {line}, column {col})"),
        None => format!("SyntaxError: {message}"),
    }
}

/// An error's `name` (`TypeError`, …), `Error` when it has none.
fn error_name(exc: &rquickjs::Exception<'_>) -> String {
    exc.get::<_, Option<Coerced<String>>>("name")
        .ok()
        .flatten()
        .map(|c| c.0)
        .unwrap_or_else(|| "Error".into())
}

/// Text for one `console.*` argument.
pub fn describe<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> String {
    if let Some(s) = v.as_string() {
        return s.to_string().unwrap_or_default();
    }
    if let Some(exc) = v.as_exception() {
        let name = error_name(exc);
        return format!("{name}: {}", exc.message().unwrap_or_default());
    }
    if v.is_function() {
        return "[Function]".into();
    }
    if v.is_object() {
        let json = ctx.json_stringify(v.clone());
        match json {
            Ok(Some(s)) => return s.to_string().unwrap_or_default(),
            Ok(None) => {}
            Err(_) => {
                ctx.catch();
            }
        }
        return "[object]".into();
    }
    Coerced::<String>::from_js(ctx, v)
        .map(|c| c.0)
        .unwrap_or_else(|_| {
            ctx.catch();
            "[value]".into()
        })
}
