//! The names a script sees and the rules for them: names that can never be servers or tools,
//! every global of the runner, and which context keys may be used.

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

/// The server name the runner sends session-state operations to (`store`, `load`, `keys`,
/// `remove`): `$` is not allowed in a configured server's name, so no server can take it.
pub const STATE_SERVER: &str = "$state";

/// The operations of [`STATE_SERVER`].
pub const STATE_OPERATIONS: &[&str] = &["store", "load", "keys", "remove"];

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
    "Intl",
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
    "keys",
    "load",
    "mcp",
    "navigator",
    "parseFloat",
    "parseInt",
    "performance",
    "queueMicrotask",
    "remove",
    "reportError",
    "self",
    "setInterval",
    "setTimeout",
    "store",
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

/// Python keywords and the script's own names: none can be a context variable.
const PYTHON_NOT_VARIABLES: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "mcp", "store", "load", "keys", "remove", "print",
];

/// Why `name` cannot be a context variable of a Python script, if it cannot.
pub fn python_context_key_problem(name: &str) -> Option<String> {
    if !is_identifier(name) || name.contains('$') {
        return Some(format!(
            "context key '{}' cannot be a Python variable name: use an ASCII identifier \
             (letters, digits and _, not starting with a digit)",
            name.chars().take(128).collect::<String>().escape_debug()
        ));
    }
    if PYTHON_NOT_VARIABLES.contains(&name) {
        return Some(format!(
            "context key '{name}' is a Python keyword or a name the script needs (mcp, print, \
             store, load, keys, remove); choose another name"
        ));
    }
    None
}
