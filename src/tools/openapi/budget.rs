//! The budget of a spec's loading (issue 57): how large the parsed document may grow (what
//! YAML aliases expand to), how deep it may nest, and how large the resolved schemas of its
//! tools may become (local `$ref`s copied into each); the work also stops when the server's
//! start is abandoned (its `startupTimeoutMs` passed). Sizes are counted as about what the
//! values take in memory: [`NODE_BYTES`] per value, a map's storage per 11 entries, the bytes
//! of every string and key.
//!
//! [`parse_json`] and [`parse_yaml`] build the document through a counting visitor, so an
//! alias bomb or a deep nesting is refused while it is being built, not after.

use super::OpenApiError;
use crate::config::openapi_entry::SpecBudget;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What one value costs besides its strings and entries (a `serde_json::Value`).
pub const NODE_BYTES: u64 = 32;
/// What a map's storage costs per 11 entries (a `BTreeMap` leaf: 11 keys and values).
const MAP_NODE_BYTES: u64 = 640;

/// What a string of `len` bytes costs on the heap besides its value.
pub fn string_bytes(len: usize) -> u64 {
    if len == 0 {
        0
    } else {
        len as u64 + 16
    }
}

/// What the `index`-th entry of a map, of key `key_len` bytes, costs besides its value.
pub fn entry_bytes(index: usize, key_len: usize) -> u64 {
    let node = if index.is_multiple_of(11) {
        MAP_NODE_BYTES
    } else {
        0
    };
    node + 24 + string_bytes(key_len)
}
/// Path segments kept to name where a budget ran out.
const PATH_SHOWN: usize = 6;

/// The limits in force and what was spent; `cancelled` is set when the start is abandoned.
pub struct Meter {
    pub limits: SpecBudget,
    cancelled: Arc<AtomicBool>,
    parsed: Cell<u64>,
    resolved: Cell<u64>,
    ticks: Cell<u32>,
    /// Why the work stopped (the message), once it has.
    stopped: RefCell<Option<String>>,
}

impl Meter {
    pub fn new(limits: SpecBudget, cancelled: Arc<AtomicBool>) -> Meter {
        Meter {
            limits,
            cancelled,
            parsed: Cell::new(0),
            resolved: Cell::new(0),
            ticks: Cell::new(0),
            stopped: RefCell::new(None),
        }
    }

    fn stop(&self, why: String) -> OpenApiError {
        self.stopped.borrow_mut().get_or_insert(why.clone());
        OpenApiError::Spec(why)
    }

    fn check_cancelled(&self) -> Result<(), OpenApiError> {
        let t = self.ticks.get().wrapping_add(1);
        self.ticks.set(t);
        if t.is_multiple_of(1024) && self.cancelled.load(Ordering::Relaxed) {
            return Err(self.stop(
                "loading the spec was abandoned: it did not finish within the server's startupTimeoutMs".into(),
            ));
        }
        Ok(())
    }

    /// Counts `bytes` of the parsed document.
    fn parsed(&self, bytes: u64, path: &[String]) -> Result<(), OpenApiError> {
        self.check_cancelled()?;
        let n = self.parsed.get() + bytes;
        self.parsed.set(n);
        if n > self.limits.parsed_bytes {
            return Err(self.stop(format!(
                "the spec's document grows past its budget specBudget.parsedBytes ({} bytes) at {} (YAML aliases expand to copies): raise specBudget.parsedBytes in the entry if the spec is right",
                self.limits.parsed_bytes,
                shown(path)
            )));
        }
        Ok(())
    }

    /// Counts `bytes` of resolved schemas, for the spec's part `part`.
    pub fn resolved(&self, bytes: u64, part: &str) -> Result<(), OpenApiError> {
        self.check_cancelled()?;
        let n = self.resolved.get() + bytes;
        self.resolved.set(n);
        if n > self.limits.resolved_bytes {
            return Err(self.stop(format!(
                "the spec's schemas with their $refs resolved grow past the budget specBudget.resolvedBytes ({} bytes) at {}: keep fewer operations with \"operations\" or \"tags\", or raise specBudget.resolvedBytes in the entry",
                self.limits.resolved_bytes,
                crate::term::clip(part, 200)
            )));
        }
        Ok(())
    }

    /// Refuses nesting deeper than the budget's depth.
    fn depth(&self, depth: usize, path: &[String]) -> Result<(), OpenApiError> {
        if depth > self.limits.depth {
            return Err(self.stop(format!(
                "the spec nests deeper than its budget specBudget.depth ({} levels) at {}: raise specBudget.depth in the entry if the spec is right",
                self.limits.depth,
                shown(path)
            )));
        }
        Ok(())
    }

    /// The message of the budget that stopped the work, if one did.
    fn stopped(&self) -> Option<String> {
        self.stopped.borrow().clone()
    }
}

/// A JSON pointer of the first segments of `path`.
fn shown(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path.iter().take(PATH_SHOWN) {
        out.push('/');
        out.push_str(&crate::term::clip(
            &seg.replace('~', "~0").replace('/', "~1"),
            80,
        ));
    }
    if path.len() >= PATH_SHOWN {
        out.push_str("/…");
    }
    if out.is_empty() {
        out.push_str("the document's top");
    }
    out
}

/// A JSON text as a document, within the budget.
pub fn parse_json(text: &str, meter: &Meter) -> Result<Value, OpenApiError> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let path = RefCell::new(Vec::new());
    let v = Node {
        meter,
        depth: 0,
        path: &path,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|_| v));
    v.map_err(|e| {
        meter
            .stopped()
            .map(OpenApiError::Spec)
            .unwrap_or_else(|| OpenApiError::Spec(format!("the spec is not valid JSON: {e}")))
    })
}

/// A YAML text as a document, within the budget (aliases count at each use). Its nesting is
/// checked first, in one pass over the text: the YAML parser's own work grows with the square
/// of the nesting, before any value is built.
pub fn parse_yaml(text: &str, meter: &Meter) -> Result<Value, OpenApiError> {
    let (depth, line) = yaml_nesting(text);
    if depth > meter.limits.depth {
        return Err(meter.stop(format!(
            "the spec nests deeper than its budget specBudget.depth ({} levels) at line {line} (flow collections and compact sequences): raise specBudget.depth in the entry if the spec is right",
            meter.limits.depth
        )));
    }
    let path = RefCell::new(Vec::new());
    let v = Node {
        meter,
        depth: 0,
        path: &path,
    }
    .deserialize(serde_norway::Deserializer::from_str(text));
    v.map_err(|e| {
        meter
            .stopped()
            .map(OpenApiError::Spec)
            .unwrap_or_else(|| OpenApiError::Spec(format!("the spec is not valid YAML: {e}")))
    })
}

/// The deepest nesting of a YAML text that costs no indentation (flow collections `[[[`,
/// compact sequences `- - -`), and its line (1-based). Indentation-nested levels are not
/// counted: each costs a column more on every line below it, so a text of bounded size
/// cannot nest deeply that way. Quoted scalars, comments and block scalars are skipped.
fn yaml_nesting(text: &str) -> (usize, usize) {
    let mut flow = 0usize;
    let mut quote: Option<u8> = None;
    let mut block_scalar: Option<usize> = None;
    let (mut deepest, mut at) = (0usize, 0usize);
    for (n, line) in text.lines().enumerate() {
        let b = line.as_bytes();
        let indent = b.iter().take_while(|&&c| c == b' ').count();
        if let Some(min) = block_scalar {
            if indent > min || b[indent..].is_empty() {
                continue;
            }
            block_scalar = None;
        }
        let mut i = indent;
        let mut markers = 0usize;
        if flow == 0 && quote.is_none() {
            // `- ` and `? ` prefixes: one level each.
            while i + 1 < b.len() && matches!(b[i], b'-' | b'?') && matches!(b[i + 1], b' ' | b'\t')
            {
                markers += 1;
                i += 2;
                while i < b.len() && b[i] == b' ' {
                    i += 1;
                }
            }
        }
        let start = i;
        while i < b.len() {
            let c = b[i];
            if let Some(q) = quote {
                if q == b'"' && c == b'\\' {
                    i += 2;
                    continue;
                }
                if c == q {
                    if q == b'\'' && b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    quote = None;
                }
                i += 1;
                continue;
            }
            if c == b'#' && (i == 0 || matches!(b[i - 1], b' ' | b'\t')) {
                break;
            }
            if flow > 0 {
                match c {
                    b'"' | b'\'' => quote = Some(c),
                    b'[' | b'{' => flow += 1,
                    b']' | b'}' => flow -= 1,
                    _ => {}
                }
            } else {
                // Block context: a flow collection, a quoted or a block scalar starts a value.
                match c {
                    b'[' | b'{' if at_value(b, i, start) => flow = 1,
                    b'"' | b'\'' if at_value(b, i, start) => quote = Some(c),
                    b'|' | b'>' if at_value(b, i, start) => {
                        block_scalar = Some(indent);
                        break;
                    }
                    _ => {}
                }
            }
            if markers + flow > deepest {
                deepest = markers + flow;
                at = n + 1;
            }
            i += 1;
        }
        if markers > deepest {
            deepest = markers;
            at = n + 1;
        }
        if flow == 0 {
            // A quote left open in block context ends with its line here (a multi-line
            // quoted scalar's next lines are read as plain text).
            quote = None;
        }
    }
    (deepest, at)
}

/// Whether `b[i]` begins a value: first on its line (after the `- ` markers that end at
/// `start`), or after `: `.
fn at_value(b: &[u8], i: usize, start: usize) -> bool {
    let before = &b[start..i];
    before.is_empty() || before.ends_with(b": ") || before.ends_with(b":\t")
}

/// Builds one value, counting it.
struct Node<'m> {
    meter: &'m Meter,
    depth: usize,
    path: &'m RefCell<Vec<String>>,
}

impl Node<'_> {
    /// Counts one value of `bytes` besides its own.
    fn count<E: serde::de::Error>(&self, bytes: u64) -> Result<(), E> {
        self.meter
            .parsed(bytes + NODE_BYTES, &self.path.borrow())
            .map_err(|e| E::custom(e.to_string()))
    }

    fn child(&self) -> Node<'_> {
        Node {
            meter: self.meter,
            depth: self.depth + 1,
            path: self.path,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.meter
            .depth(self.depth, &self.path.borrow())
            .map_err(|e| D::Error::custom(e.to_string()))?;
        // A deep document (up to a raised specBudget.depth) cannot overflow the thread's stack.
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || d.deserialize_any(self))
    }
}

/// Stack left below which a new segment is taken, and its size.
pub const STACK_RED_ZONE: usize = 128 * 1024;
pub const STACK_SEGMENT: usize = 2 * 1024 * 1024;

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.count(0)?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.count(0)?;
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.count(0)?;
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.count(0)?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.count(string_bytes(v.len()))?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.count(string_bytes(v.len()))?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.count(0)?;
        Ok(Value::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.count(0)?;
        let mut items = Vec::new();
        loop {
            let named = self.depth < PATH_SHOWN;
            if named {
                self.path.borrow_mut().push(items.len().to_string());
            }
            let next = seq.next_element_seed(self.child());
            if named {
                self.path.borrow_mut().pop();
            }
            match next? {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.count(0)?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<Key>()? {
            self.meter
                .parsed(entry_bytes(out.len(), key.0.len()), &self.path.borrow())
                .map_err(|e| A::Error::custom(e.to_string()))?;
            // Only the first levels are named in a message: no copy of every key.
            let named = self.depth < PATH_SHOWN;
            if named {
                self.path.borrow_mut().push(key.0.clone());
            }
            let value = map.next_value_seed(self.child());
            if named {
                self.path.borrow_mut().pop();
            }
            out.insert(key.0, value?);
        }
        Ok(Value::Object(out))
    }
}

/// An object key: a string, or a YAML scalar key (a number, a boolean) as its text.
struct Key(String);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key, E> {
                Ok(Key(v))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Key, E> {
                Ok(Key("null".into()))
            }
        }
        d.deserialize_str(V)
    }
}
