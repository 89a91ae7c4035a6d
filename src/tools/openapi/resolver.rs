//! A spec's local `$ref`s, resolved by reference (issue 57): each component schema
//! (`#/components/schemas/Name`) is converted once into a shared table and referred to as
//! `#/$defs/Name`; a tool's input schema carries, in its own `$defs`, the schemas it reaches
//! (never a copy per use, so a `$ref` fanning out over levels costs each schema once per tool).
//! Other local `$ref`s (parameters, request bodies, security schemes, a pointer inside a
//! schema) are copied in, their cycles cut to `{}`. A remote `$ref` is refused: nothing is
//! fetched on a spec's say-so. Every value made is counted against the spec's budget.

use super::budget::{self, Meter};
use super::schema3::from_3_0;
use super::OpenApiError;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Deepest nesting of copied `$ref`s followed; deeper (or circular) ones become `{}`.
const MAX_REF_DEPTH: usize = 12;
/// Where a spec's shared schemas are.
const COMPONENT_SCHEMAS: &str = "#/components/schemas/";
/// How a tool's schema refers to one of its `$defs`.
const DEFS_PREFIX: &str = "#/$defs/";

/// One shared schema: its body (a `$ref` to another as `#/$defs/...`),
/// the names it refers to, and about what a copy of it takes in memory.
struct Def {
    body: Value,
    refers_to: Vec<String>,
    bytes: u64,
}

#[derive(Default)]
struct Table {
    /// The `$ref` as written → its name (given before its body is made: cycles end there).
    by_ref: HashMap<String, String>,
    by_name: HashMap<String, Def>,
    names: HashSet<String>,
}

/// Resolves the local `$ref`s of one spec, every value it makes counted against its budget.
pub struct Resolver<'a> {
    pub doc: &'a Value,
    meter: &'a Meter,
    /// OpenAPI 3.0: shared schemas are converted to JSON Schema 2020-12 once, as made.
    old: bool,
    table: RefCell<Table>,
}

impl<'a> Resolver<'a> {
    pub fn new(doc: &'a Value, meter: &'a Meter) -> Resolver<'a> {
        Resolver {
            doc,
            meter,
            old: super::spec::is_3_0(doc),
            table: RefCell::default(),
        }
    }

    /// `value` with its local `$ref`s resolved, for the spec's part `part` (named when the
    /// budget runs out): a component schema's as `{"$ref": "#/$defs/Name"}` (see
    /// [`Resolver::with_defs`]), any other's copied in (sibling keys of a `$ref` are kept, as
    /// 3.1 allows). A remote `$ref` is an error; a circular copied one ends as `{}`.
    pub fn resolve(&self, value: &Value, part: &str) -> Result<Value, OpenApiError> {
        let mut stack = Vec::new();
        self.resolve_in(value, &mut stack, part)
    }

    /// `schema` (a tool's input schema, made of resolved values) with a `$defs` holding every
    /// shared schema it reaches, directly or through others; unchanged when it reaches none.
    pub fn with_defs(&self, mut schema: Value, part: &str) -> Result<Value, OpenApiError> {
        let mut direct = Vec::new();
        refs_in(&schema, &mut direct);
        if direct.is_empty() {
            return Ok(schema);
        }
        let table = self.table.borrow();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut todo = direct;
        while let Some(name) = todo.pop() {
            if let Some(def) = table.by_name.get(&name) {
                if seen.insert(name) {
                    todo.extend(def.refers_to.iter().cloned());
                }
            }
        }
        let mut defs = Map::new();
        for name in seen {
            if let Some(def) = table.by_name.get(&name) {
                self.meter.resolved(
                    def.bytes + budget::entry_bytes(defs.len(), name.len()),
                    part,
                )?;
                defs.insert(name, def.body.clone());
            }
        }
        if let Value::Object(m) = &mut schema {
            m.insert("$defs".into(), Value::Object(defs));
        }
        Ok(schema)
    }

    fn resolve_in(
        &self,
        value: &Value,
        stack: &mut Vec<String>,
        part: &str,
    ) -> Result<Value, OpenApiError> {
        stacker::maybe_grow(budget::STACK_RED_ZONE, budget::STACK_SEGMENT, || {
            self.resolve_here(value, stack, part)
        })
    }

    fn resolve_here(
        &self,
        value: &Value,
        stack: &mut Vec<String>,
        part: &str,
    ) -> Result<Value, OpenApiError> {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    return self.reference(r, map, stack, part);
                }
                self.meter.resolved(budget::NODE_BYTES, part)?;
                let mut out = Map::with_capacity(map.len());
                for (k, v) in map {
                    self.meter
                        .resolved(budget::entry_bytes(out.len(), k.len()), part)?;
                    out.insert(k.clone(), self.resolve_in(v, stack, part)?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => {
                self.meter.resolved(budget::NODE_BYTES, part)?;
                items
                    .iter()
                    .map(|v| self.resolve_in(v, stack, part))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array)
            }
            other => {
                let len = other.as_str().map_or(0, str::len);
                self.meter
                    .resolved(budget::NODE_BYTES + budget::string_bytes(len), part)?;
                Ok(other.clone())
            }
        }
    }

    /// The object `map` whose `$ref` is `r`, resolved.
    fn reference(
        &self,
        r: &str,
        map: &Map<String, Value>,
        stack: &mut Vec<String>,
        part: &str,
    ) -> Result<Value, OpenApiError> {
        let Some(pointer) = r.strip_prefix('#') else {
            return Err(OpenApiError::Spec(format!(
                "the spec has a remote $ref {}: only local references (\"#/components/...\") are resolved; bundle the spec into one file first",
                crate::term::clip(r, 200)
            )));
        };
        let target = self.doc.pointer(&percent_decode(pointer)).ok_or_else(|| {
            OpenApiError::Spec(format!(
                "the spec's $ref {} points to nothing",
                crate::term::clip(r, 200)
            ))
        })?;
        let shared = r
            .strip_prefix(COMPONENT_SCHEMAS)
            .is_some_and(is_schema_path);
        let mut out = if shared {
            let name = self.shared(r, target, part)?;
            self.meter.resolved(
                budget::NODE_BYTES * 2 + budget::string_bytes(DEFS_PREFIX.len() + name.len()),
                part,
            )?;
            let mut m = Map::new();
            m.insert("$ref".into(), Value::String(format!("{DEFS_PREFIX}{name}")));
            Value::Object(m)
        } else if stack.iter().any(|s| s == r) || stack.len() >= MAX_REF_DEPTH {
            // A recursive copy: the inner level accepts any value.
            self.meter.resolved(budget::NODE_BYTES, part)?;
            return Ok(Value::Object(Map::new()));
        } else {
            stack.push(r.to_string());
            let resolved = self.resolve_in(target, stack, part);
            stack.pop();
            resolved?
        };
        if let Value::Object(o) = &mut out {
            for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "$ref") {
                self.meter
                    .resolved(budget::entry_bytes(o.len(), k.len()), part)?;
                o.insert(k.clone(), self.resolve_in(v, stack, part)?);
            }
        }
        Ok(out)
    }

    /// The `$defs` name of the component schema `r` (at `target`), made once.
    fn shared(&self, r: &str, target: &Value, part: &str) -> Result<String, OpenApiError> {
        if let Some(name) = self.table.borrow().by_ref.get(r) {
            return Ok(name.clone());
        }
        let name = {
            let mut table = self.table.borrow_mut();
            let name = def_name(&r[COMPONENT_SCHEMAS.len()..], &table.names);
            table.names.insert(name.clone());
            table.by_ref.insert(r.to_string(), name.clone());
            name
        };
        // Its own copied `$ref`s start a new chain: a component is made once, whoever asks.
        let mut body = self.resolve_in(target, &mut Vec::new(), part)?;
        if self.old {
            body = from_3_0(body);
        }
        let mut refers_to = Vec::new();
        refs_in(&body, &mut refers_to);
        refers_to.sort();
        refers_to.dedup();
        let bytes = value_bytes(&body);
        self.table.borrow_mut().by_name.insert(
            name.clone(),
            Def {
                body,
                refers_to,
                bytes,
            },
        );
        Ok(name)
    }
}

/// Whether the pointer `path` (after `#/components/schemas/`) ends at a schema: a component, or
/// a schema inside one (`X/properties/y`, `X/allOf/0`, `X/items`…), not a map or list of them
/// (`X/properties`), nor a value (`X/enum`).
fn is_schema_path(path: &str) -> bool {
    #[derive(PartialEq)]
    enum At {
        Schema,
        Map,
        List,
        Other,
    }
    let mut segments = path.split('/');
    if segments.next().is_none_or(str::is_empty) {
        return false;
    }
    let mut at = At::Schema;
    for seg in segments {
        at = match at {
            At::Map => At::Schema,
            At::List if seg.parse::<usize>().is_ok() => At::Schema,
            At::Schema => match seg {
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" => At::Map,
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => At::List,
                "items"
                | "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "additionalItems" => At::Schema,
                _ => At::Other,
            },
            _ => At::Other,
        };
    }
    at == At::Schema
}

/// A `$defs` name for a component named `raw`: letters, digits, `.`, `_` and `-` (others
/// become `_`, so it reads the same in a URI fragment and a JSON pointer), unique.
fn def_name(raw: &str, taken: &HashSet<String>) -> String {
    let raw = percent_decode(raw).replace("~1", "/").replace("~0", "~");
    let mut base: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() {
        base.push('_');
    }
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

/// The `$defs` names `value` refers to (`{"$ref": "#/$defs/Name"}`), in order met.
fn refs_in(value: &Value, out: &mut Vec<String>) {
    let mut todo = vec![value];
    while let Some(v) = todo.pop() {
        match v {
            Value::Object(m) => {
                if let Some(name) = m
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix(DEFS_PREFIX))
                {
                    out.push(name.to_string());
                }
                todo.extend(m.values());
            }
            Value::Array(items) => todo.extend(items),
            _ => {}
        }
    }
}

/// About what a copy of `value` takes in memory (as the budget counts it).
fn value_bytes(value: &Value) -> u64 {
    let mut total = 0;
    let mut todo = vec![value];
    while let Some(v) = todo.pop() {
        total += budget::NODE_BYTES;
        match v {
            Value::Object(m) => {
                for (i, (k, v)) in m.iter().enumerate() {
                    total += budget::entry_bytes(i, k.len());
                    todo.push(v);
                }
            }
            Value::Array(items) => todo.extend(items),
            Value::String(s) => total += budget::string_bytes(s.len()),
            _ => {}
        }
    }
    total
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meter() -> Meter {
        Meter::new(Default::default(), Default::default())
    }

    #[test]
    fn component_schemas_are_shared_and_other_refs_copied() {
        let doc = json!({"openapi": "3.1.0", "components": {
            "schemas": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
                "B": {"type": "string"},
                "Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}},
                "a b": {"type": "integer"}
            },
            "parameters": {"P": {"name": "p", "in": "query", "schema": {"$ref": "#/components/schemas/a%20b"}}}
        }});
        let m = meter();
        let r = Resolver::new(&doc, &m);
        let a = r
            .resolve(
                &json!({"$ref": "#/components/schemas/A", "description": "d"}),
                "t",
            )
            .unwrap();
        assert_eq!(a, json!({"$ref": "#/$defs/A", "description": "d"}));
        let p = r
            .resolve(&json!({"$ref": "#/components/parameters/P"}), "t")
            .unwrap();
        assert_eq!(
            p,
            json!({"name": "p", "in": "query", "schema": {"$ref": "#/$defs/a_b"}})
        );
        let node = r
            .resolve(&json!({"$ref": "#/components/schemas/Node"}), "t")
            .unwrap();
        let schema = r
            .with_defs(json!({"properties": {"a": a, "n": node}}), "t")
            .unwrap();
        assert_eq!(
            schema["$defs"],
            json!({
                "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"type": "string"},
                "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}
            })
        );
        assert_eq!(
            r.with_defs(json!({"type": "object"}), "t").unwrap(),
            json!({"type": "object"})
        );
        let err = r
            .resolve(&json!({"$ref": "other.yaml#/X"}), "t")
            .unwrap_err();
        assert!(
            err.to_string().contains("remote $ref other.yaml#/X"),
            "{err}"
        );
        let err = r
            .resolve(&json!({"$ref": "#/components/schemas/Nope"}), "t")
            .unwrap_err();
        assert!(err.to_string().contains("points to nothing"), "{err}");
    }

    #[test]
    fn a_pointer_into_a_component_schema_is_shared_when_it_is_a_schema() {
        assert!(is_schema_path("A"));
        assert!(is_schema_path("A/properties/b/allOf/0/items"));
        assert!(!is_schema_path("A/properties"));
        assert!(!is_schema_path("A/allOf"));
        assert!(!is_schema_path("A/enum/0"));
        assert!(!is_schema_path(""));
        let doc = json!({"openapi": "3.1.0", "components": {"schemas": {
            "A": {"type": "object", "properties": {"b": {"type": "string"}}}
        }}});
        let m = meter();
        let r = Resolver::new(&doc, &m);
        let b = r
            .resolve(&json!({"$ref": "#/components/schemas/A/properties/b"}), "t")
            .unwrap();
        assert_eq!(b, json!({"$ref": "#/$defs/A_properties_b"}));
        let props = r
            .resolve(&json!({"$ref": "#/components/schemas/A/properties"}), "t")
            .unwrap();
        assert_eq!(props, json!({"b": {"type": "string"}}));
    }

    #[test]
    fn a_ref_fan_out_costs_each_schema_once() {
        // S0 refers to S1 six times, S1 to S2 six times… over 11 levels: 6^11 uses, 12 schemas.
        let mut schemas = Map::new();
        for i in 0..12 {
            let props: Map<String, Value> = (0..6)
                .map(|k| {
                    let v = if i < 11 {
                        json!({"$ref": format!("#/components/schemas/S{}", i + 1)})
                    } else {
                        json!({"type": "string", "nullable": true})
                    };
                    (format!("p{k}"), v)
                })
                .collect();
            schemas.insert(
                format!("S{i}"),
                json!({"type": "object", "properties": props}),
            );
        }
        let doc = json!({"openapi": "3.0.3", "components": {"schemas": schemas}});
        let m = meter();
        let r = Resolver::new(&doc, &m);
        let s0 = r
            .resolve(&json!({"$ref": "#/components/schemas/S0"}), "t")
            .unwrap();
        let schema = r
            .with_defs(json!({"properties": {"body": s0}}), "t")
            .unwrap();
        let defs = schema["$defs"].as_object().unwrap();
        assert_eq!(defs.len(), 12);
        assert_eq!(
            defs["S11"]["properties"]["p0"],
            json!({"type": ["string", "null"]})
        );
        assert!(serde_json::to_vec(&schema).unwrap().len() < 4096);
    }
}
