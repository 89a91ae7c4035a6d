//! Turning JavaScript values into what crosses the socket: the result as JSON text, thrown values
//! as structured errors, log arguments as text.

use crate::protocol::WireError;
use rquickjs::{Coerced, Ctx, Exception, FromJs, Function, Object, Value};

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
    "SERVER_CONFINEMENT_UNAVAILABLE",
    "STATE_VALUE_INVALID",
];

/// Names the collections JSON would turn into `{}` without a word (`Map`, `Set` and their weak
/// kinds), with how to convert each; `""` for anything else.
const COLLECTION_KIND: &str = "(v) => v instanceof Map ? 'a Map|convert it first: Object.fromEntries(map) for string keys, or [...map] for its [key, value] pairs' : v instanceof Set ? 'a Set|convert it first: [...set]' : v instanceof WeakMap ? 'a WeakMap|return plain data instead' : v instanceof WeakSet ? 'a WeakSet|return plain data instead' : ''";

/// How to convert NaN and the infinities, which JSON has no form for (the same rule as Python's).
pub const NON_FINITE_HOW: &str = "; convert it first: null where there is no number (Number.isFinite(x) ? x : null), or String(x) to keep it as text";

/// `NaN`, `Infinity` or `-Infinity` for a number JSON cannot hold.
pub fn non_finite(v: &Value<'_>) -> Option<&'static str> {
    let f = v.as_float()?;
    if f.is_nan() {
        Some("NaN")
    } else if f == f64::INFINITY {
        Some("Infinity")
    } else if f == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    }
}

/// A `JSON.stringify` replacer that throws a `TypeError` at NaN and the infinities (which
/// `JSON.stringify` alone would silently make `null`): tool arguments and stored values follow
/// the result's rule.
pub fn finite_replacer<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, key: Value<'js>, v: Value<'js>| -> rquickjs::Result<Value<'js>> {
            match non_finite(&v) {
                None => Ok(v),
                Some(shown) => {
                    let key = value_text(&ctx, key).unwrap_or_default();
                    let at = if key.is_empty() {
                        "the value itself".to_string()
                    } else {
                        format!("key \"{key}\"")
                    };
                    Err(Exception::throw_type(
                        &ctx,
                        &format!(
                            "it contains the number {shown} ({at}), which JSON cannot represent{NON_FINITE_HOW}"
                        ),
                    ))
                }
            }
        },
    )
}

/// Serializes the script's result. `undefined` becomes `null`; functions, symbols, BigInt, NaN,
/// the infinities and cycles are `RESULT_NOT_SERIALIZABLE`, and so are a `Map` and a `Set` (which `JSON.stringify`
/// would silently turn into `{}`): the message says how to convert them.
pub fn result_json<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Result<String, WireError> {
    if value.is_undefined() {
        return Ok("null".to_string());
    }
    let kind_of: Function<'js> = ctx
        .eval(COLLECTION_KIND)
        .map_err(|e| WireError::new("RUNTIME_ERROR", e.to_string()))?;
    // Plain objects (the bulk of a result) are told apart without calling into JavaScript.
    let plain: Option<Object<'js>> = ctx
        .globals()
        .get::<_, Object>("Object")
        .and_then(|o| o.get("prototype"))
        .ok();
    let replacer = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, key: Value<'js>, v: Value<'js>| -> rquickjs::Result<Value<'js>> {
            let is_plain = v.as_object().is_some_and(|o| match o.get_prototype() {
                None => true,
                Some(p) => plain.as_ref() == Some(&p),
            });
            let collection = if v.is_object() && !is_plain && !v.is_array() && !v.is_function() {
                let kind: String = kind_of.call((v.clone(),))?;
                kind.split_once('|')
                    .map(|(what, how)| (what.to_string(), format!("; {how}")))
            } else {
                None
            };
            let what = if v.is_function() {
                Some(("a function".to_string(), String::new()))
            } else if v.is_symbol() {
                Some(("a symbol".to_string(), String::new()))
            } else if v.is_big_int() {
                Some(("a BigInt".to_string(), String::new()))
            } else if let Some(shown) = non_finite(&v) {
                Some((format!("the number {shown}"), NON_FINITE_HOW.to_string()))
            } else {
                collection
            };
            match what {
                Some((what, how)) => {
                    let key = value_text(&ctx, key).unwrap_or_default();
                    let at = if key.is_empty() {
                        "the result itself".to_string()
                    } else {
                        format!("key \"{key}\"")
                    };
                    Err(Exception::throw_type(
                        &ctx,
                        &format!(
                            "the result contains {what} ({at}), which JSON cannot represent{how}"
                        ),
                    ))
                }
                None => Ok(v),
            }
        },
    )
    .map_err(|e| WireError::new("RUNTIME_ERROR", e.to_string()))?;
    match ctx.json_stringify_replacer(value, replacer) {
        Ok(Some(s)) => {
            let json = crate::protocol::replace_lone_surrogates(
                s.to_string().unwrap_or_else(|_| "null".into()),
            );
            let depth = crate::protocol::json_depth(json.as_bytes());
            if depth > crate::protocol::MAX_VALUE_DEPTH {
                return Err(WireError::new(
                    "LIMIT_EXCEEDED",
                    format!(
                        "the result is nested {depth} levels deep; the limit is {} levels. \
                         Return flatter data",
                        crate::protocol::MAX_VALUE_DEPTH
                    ),
                ));
            }
            Ok(json)
        }
        Ok(None) => Ok("null".into()),
        Err(_) => {
            let thrown = ctx.catch();
            let msg = thrown
                .as_object()
                .and_then(|o| prop_text(ctx, o, "message"))
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

/// Codes the host decides when it answers a call: the host believes them in an outcome only
/// for a call it answered so (see the host's `provenance`), so the runner passes them on only
/// then, and a script's own `throw {code: "TOOL_TIMEOUT"}` stays a plain script error.
const ANSWER_CODES: &[&str] = &[
    "TOOL_TIMEOUT",
    "PERMISSION_DENIED",
    "TOOL_ERROR",
    "CAPABILITY_CYCLE",
    "CAPABILITY_DEPTH",
    "SERVER_UNAVAILABLE",
    "SERVER_CONFINEMENT_UNAVAILABLE",
];

thread_local! {
    /// `(code, tool)` of every call error this runner saw (one script per process).
    static ANSWERED: std::cell::RefCell<std::collections::HashSet<(String, String)>> =
        std::cell::RefCell::new(std::collections::HashSet::new());
}

/// Notes a call error the host sent (or the runner's own refusal of an unavailable server).
pub fn note_call_error(err: &WireError) {
    if let Some(tool) = &err.tool {
        ANSWERED.with(|a| a.borrow_mut().insert((err.code.clone(), tool.clone())));
    }
}

fn was_answered(code: &str, tool: Option<&str>) -> bool {
    ANSWERED.with(|a| {
        let a = a.borrow();
        match tool {
            Some(t) => a.contains(&(code.to_string(), t.to_string())),
            None => a.iter().any(|(c, _)| c == code),
        }
    })
}

/// A thrown or rejected value as a structured error.
pub fn thrown_to_error<'js>(ctx: &Ctx<'js>, thrown: Value<'js>) -> WireError {
    if let Some(obj) = thrown.as_object() {
        let code: Option<String> = obj.get("code").ok().flatten();
        let tool: Option<String> = obj.get("tool").ok().flatten();
        let believable = |c: &String| {
            SCRIPT_VISIBLE_CODES.contains(&c.as_str())
                && (!ANSWER_CODES.contains(&c.as_str()) || was_answered(c, tool.as_deref()))
        };
        if let Some(code) = code.filter(believable) {
            let message = prop_text(ctx, obj, "message").unwrap_or_default();
            let mut err = WireError::new(code, message);
            err.tool = tool;
            err.alternatives = obj.get("alternatives").ok().flatten();
            return err;
        }
    }
    if let Some(exc) = thrown.as_exception() {
        let name = error_name(ctx, exc);
        let message = prop_text(ctx, exc, "message").unwrap_or_default();
        // A SyntaxError thrown while the script runs (`JSON.parse`, `new RegExp`) is the
        // script's runtime error; only compiling the script gives SYNTAX_ERROR (`compile_error`).
        // QuickJS's words are MEMORY_LIMIT only when the runner's allocator refused a request
        // (`heap`): a script throwing `new InternalError('out of memory')` is its own error.
        let mut err = if name == "InternalError"
            && message == "out of memory"
            && super::heap::refused()
        {
            memory_limit()
        } else if message == "Maximum call stack size exceeded" {
            WireError::new(
                "RUNTIME_ERROR",
                format!("{name}: {message} (the JS stack limit; check for unbounded recursion)"),
            )
        } else {
            WireError::new("RUNTIME_ERROR", format!("{name}: {message}"))
        };
        err.stack = prop_text(ctx, exc, "stack").filter(|s| !s.is_empty());
        return err;
    }
    WireError::new(
        "RUNTIME_ERROR",
        format!("Uncaught {}", describe(ctx, thrown)),
    )
}

/// The error of a script that does not compile: `SYNTAX_ERROR` with the line and column for a
/// SyntaxError (anything else thrown while compiling is classified as at run time).
pub fn compile_error<'js>(ctx: &Ctx<'js>, thrown: Value<'js>) -> WireError {
    if let Some(exc) = thrown.as_exception() {
        if error_name(ctx, exc) == "SyntaxError" {
            let message = prop_text(ctx, exc, "message").unwrap_or_default();
            return WireError::new(
                "SYNTAX_ERROR",
                with_location(&message, prop_text(ctx, exc, "stack").as_deref()),
            );
        }
    }
    thrown_to_error(ctx, thrown)
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
fn error_name<'js>(ctx: &Ctx<'js>, exc: &rquickjs::Exception<'js>) -> String {
    prop_text(ctx, exc, "name").unwrap_or_else(|| "Error".into())
}

/// Text for one `console.*` argument: a string as it is, anything else through `inspect` (the
/// Node-style formatter of `inspect.js`), or [`describe`] if that throws.
pub fn describe_with<'js>(
    ctx: &Ctx<'js>,
    v: Value<'js>,
    inspect: Option<&Function<'js>>,
) -> String {
    if let (Some(f), false) = (inspect, v.is_string()) {
        match f.call::<_, Value>((v.clone(),)) {
            Ok(text) => {
                if let Some(s) = text.as_string() {
                    return js_text(s);
                }
            }
            Err(_) => {
                ctx.catch();
            }
        }
    }
    describe(ctx, v)
}

/// Text for one `console.*` argument without the formatter (JSON for objects).
pub fn describe<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> String {
    if let Some(s) = v.as_string() {
        return js_text(s);
    }
    if let Some(exc) = v.as_exception() {
        let name = error_name(ctx, exc);
        return format!(
            "{name}: {}",
            prop_text(ctx, exc, "message").unwrap_or_default()
        );
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
    value_text(ctx, v).unwrap_or_else(|| "[value]".into())
}

/// A JavaScript string as Rust text. JavaScript strings may hold lone UTF-16 surrogates, which
/// are not Unicode text: each becomes U+FFFD (the replacement character).
pub fn js_text(s: &rquickjs::String<'_>) -> String {
    if let Ok(text) = s.to_string() {
        return text;
    }
    let Ok(c) = s.clone().to_cstring() else {
        return String::new();
    };
    // SAFETY: `c` owns a NUL-terminated buffer of `c.len()` bytes that lives until `c` drops;
    // the bytes are read (not as `str`: they may hold encoded surrogates) before that.
    let bytes = unsafe { std::slice::from_raw_parts(c.as_ptr().cast::<u8>(), c.len()) };
    replace_encoded_surrogates(bytes)
}

/// QuickJS encodes a lone surrogate as the 3-byte sequence `ED A0..BF 80..BF` (WTF-8); each such
/// sequence becomes U+FFFD, anything else invalid is replaced as `from_utf8_lossy` does.
fn replace_encoded_surrogates(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == 0xED
            && bytes.get(i + 1).is_some_and(|b| (0xA0..=0xBF).contains(b))
            && bytes.get(i + 2).is_some_and(|b| (0x80..=0xBF).contains(b))
        {
            out.extend_from_slice("\u{fffd}".as_bytes());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A value as text (`String(v)`), with lone surrogates replaced; `None` when the conversion
/// throws (the exception is cleared).
pub fn value_text<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> Option<String> {
    match Coerced::<rquickjs::String>::from_js(ctx, v) {
        Ok(s) => Some(js_text(&s.0)),
        Err(_) => {
            ctx.catch();
            None
        }
    }
}

/// A property of an object as text; `None` when it is missing, undefined or cannot be read.
pub fn prop_text<'js>(ctx: &Ctx<'js>, obj: &Object<'js>, key: &str) -> Option<String> {
    let v: Value = match obj.get(key) {
        Ok(v) => v,
        Err(_) => {
            ctx.catch();
            return None;
        }
    };
    if v.is_undefined() || v.is_null() {
        return None;
    }
    value_text(ctx, v)
}

#[cfg(test)]
mod text_tests {
    #[test]
    fn encoded_surrogates_become_replacement_characters() {
        let s = super::replace_encoded_surrogates(b"a\xed\xa0\x80b\xed\xbf\xbf\xf0\x9f\x98\x80");
        assert_eq!(s, "a\u{fffd}b\u{fffd}\u{1f600}");
    }
}
