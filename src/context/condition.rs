//! Conditions on a tool call's arguments: CEL expressions (the Common Expression Language of
//! Kubernetes admission policies and Envoy, with the `cel` crate) over the variable `args`, e.g.
//! `args.path.startsWith('/srv/out/')` or `args.amount > 100`.
//!
//! Compiled once, when the config is loaded; a malformed expression is refused there with its
//! line and column. Evaluated by the host before the call, bounded in what it can cost:
//!
//! - the expression is at most [`MAX_SOURCE_BYTES`] and [`MAX_NODES`] nodes, with at most
//!   [`MAX_COMPREHENSIONS`] macros (`all`, `exists`, `exists_one`, `map`, `filter`) and none
//!   nested inside another, so its cost is linear in the size of the arguments;
//! - the arguments it is evaluated on are at most the call's argument limit (`max_arg_bytes`),
//!   checked before any rule is evaluated.
//!
//! An evaluation that fails (a missing field, a wrong type, a result that is not a boolean) is
//! an error: the policy treats it as a refusal (fail closed).

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use serde_json::Value;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// CEL's standard functions, built once (building them per evaluation cost ~10 µs).
static STDLIB: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

/// A call's arguments as conditions read them: turned into one CEL value that borrows the
/// JSON's strings (nothing is copied), in one evaluation context, when the first condition that
/// matches the tool needs them, then shared by every rule of the call.
pub struct CallArgs<'a> {
    json: &'a Value,
    context: OnceCell<cel::Context<'a, 'a>>,
}

impl<'a> CallArgs<'a> {
    pub fn new(json: &'a Value) -> Self {
        CallArgs {
            json,
            context: OnceCell::new(),
        }
    }

    fn context(&self) -> &cel::Context<'a, 'a> {
        self.context.get_or_init(|| {
            let mut context = cel::Context::with_env(STDLIB.clone());
            context.add_variable_as_val("args", cel_value(self.json));
            context
        })
    }
}

/// `json` as a CEL value, borrowing its strings. A JSON integer is CEL's `int` (as a literal
/// `100` is), a non-negative one beyond `int`'s range `uint`, any other number `double`: so
/// `args.amount > 100` compares like kinds and `args.count + 1` is defined (CEL has no
/// `uint + int`). CEL also compares across kinds (`args.half > 1`). Depth is bounded by the
/// JSON parser's recursion limit (128).
fn cel_value<'a>(json: &'a Value) -> Box<dyn Val + 'a> {
    match json {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Box::new(CelInt::from(i)),
            (None, Some(u)) => Box::new(CelUInt::from(u)),
            (None, None) => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => Box::new(CelString::from(s.as_str())),
        Value::Array(items) => Box::new(CelList::from(
            items.iter().map(cel_value).collect::<Vec<_>>(),
        )),
        Value::Object(fields) => Box::new(CelMap::from(
            fields
                .iter()
                .map(|(k, v)| (CelMapKey::String(CelString::from(k.as_str())), cel_value(v)))
                .collect::<HashMap<_, _>>(),
        )),
    }
}

/// Longest condition, in bytes.
pub const MAX_SOURCE_BYTES: usize = 4096;
/// Most nodes of a condition's tree (after macro expansion).
pub const MAX_NODES: usize = 2000;
/// Most macros (comprehensions) in one condition.
pub const MAX_COMPREHENSIONS: usize = 4;

/// A compiled condition, with its source for messages.
#[derive(Clone)]
pub struct Condition {
    source: Arc<str>,
    program: Arc<cel::Program>,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Condition({:?})", self.source)
    }
}

impl Condition {
    /// Compiles `source`; the error says where and what is wrong.
    pub fn compile(source: &str) -> Result<Condition, String> {
        if source.trim().is_empty() {
            return Err("the condition is empty".into());
        }
        if source.len() > MAX_SOURCE_BYTES {
            return Err(format!(
                "the condition is {} bytes; at most {MAX_SOURCE_BYTES}",
                source.len()
            ));
        }
        let program = cel::Program::compile(source).map_err(|e| {
            // "ERROR: <input>:LINE:COLUMN: message", then the line and a caret.
            e.to_string().replace("ERROR: <input>:", "at line:column ")
        })?;
        let mut shape = Shape::default();
        shape.walk(program.expression(), 0);
        if shape.nodes > MAX_NODES {
            return Err(format!(
                "the condition has {} nodes; at most {MAX_NODES}",
                shape.nodes
            ));
        }
        if shape.comprehensions > MAX_COMPREHENSIONS {
            return Err(format!(
                "the condition uses {} macros (all, exists, exists_one, map, filter); at most {MAX_COMPREHENSIONS}",
                shape.comprehensions
            ));
        }
        if shape.nested {
            return Err(
                "a macro (all, exists, exists_one, map, filter) is nested inside another; conditions may not nest them (their cost would grow with the square of the arguments)".into(),
            );
        }
        let references = program.references();
        let unknown: Vec<&str> = references
            .variables()
            .into_iter()
            .filter(|v| *v != "args")
            .collect();
        // Macro variables (`x` in `all(x, …)`) are references too; only flag names that are
        // neither `args` nor bound by a macro of this condition.
        let unknown: Vec<&str> = unknown
            .into_iter()
            .filter(|v| !shape.bound.iter().any(|b| b == v))
            .collect();
        if let Some(v) = unknown.first() {
            return Err(format!(
                "the condition names `{v}`; the only variable is `args` (the call's arguments)"
            ));
        }
        Ok(Condition {
            source: Arc::from(source),
            program: Arc::new(program),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the condition holds for `args`; an error when it cannot be evaluated.
    pub fn eval(&self, args: &CallArgs<'_>) -> Result<bool, String> {
        match self.program.execute(args.context()) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("it gave {other:?}, not true or false")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// What a condition's tree holds: its size, its macros, whether one nests in another, and the
/// variables its macros bind.
#[derive(Default)]
struct Shape {
    nodes: usize,
    comprehensions: usize,
    nested: bool,
    bound: Vec<String>,
}

impl Shape {
    /// `depth`: how many comprehensions' loops enclose `e`.
    fn walk(&mut self, e: &IdedExpr, depth: usize) {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return;
        }
        match &e.expr {
            Expr::Call(c) => {
                if let Some(t) = &c.target {
                    self.walk(t, depth);
                }
                for a in &c.args {
                    self.walk(a, depth);
                }
            }
            Expr::Comprehension(c) => {
                self.comprehensions += 1;
                if depth > 0 {
                    self.nested = true;
                }
                self.bound.push(c.iter_var.clone());
                self.bound.extend(c.iter_var2.clone());
                self.bound.push(c.accu_var.clone());
                self.walk(&c.iter_range, depth);
                self.walk(&c.accu_init, depth);
                self.walk(&c.loop_cond, depth + 1);
                self.walk(&c.loop_step, depth + 1);
                self.walk(&c.result, depth);
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.walk(x, depth);
                }
            }
            Expr::Map(m) => {
                for x in &m.entries {
                    self.entry(&x.expr, depth);
                }
            }
            Expr::Struct(s) => {
                for x in &s.entries {
                    self.entry(&x.expr, depth);
                }
            }
            Expr::Select(s) => self.walk(&s.operand, depth),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }

    fn entry(&mut self, e: &EntryExpr, depth: usize) {
        match e {
            EntryExpr::StructField(f) => self.walk(&f.value, depth),
            EntryExpr::MapEntry(m) => {
                self.walk(&m.key, depth);
                self.walk(&m.value, depth);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(cond: &str, args: Value) -> Result<bool, String> {
        Condition::compile(cond)
            .unwrap()
            .eval(&CallArgs::new(&args))
    }

    #[test]
    fn conditions_read_nested_fields_lists_and_numbers() {
        assert_eq!(
            holds(
                "args.path.startsWith('/srv/out/')",
                json!({"path": "/srv/out/a"})
            ),
            Ok(true)
        );
        assert_eq!(
            holds(
                "args.path.startsWith('/srv/out/')",
                json!({"path": "/etc/passwd"})
            ),
            Ok(false)
        );
        assert_eq!(holds("args.amount > 100", json!({"amount": 150})), Ok(true));
        assert_eq!(holds("args.amount > 100", json!({"amount": 99})), Ok(false));
        assert_eq!(
            holds(
                "args.repo.owner == 'acme'",
                json!({"repo": {"owner": "acme"}})
            ),
            Ok(true)
        );
        assert_eq!(
            holds(
                "args.to.all(a, a.endsWith('@acme.com'))",
                json!({"to": ["x@acme.com", "y@evil.com"]})
            ),
            Ok(false)
        );
        assert_eq!(
            holds(
                "'admin' in args.labels",
                json!({"labels": ["bug", "admin"]})
            ),
            Ok(true)
        );
        assert_eq!(
            holds("size(args.items) <= 3", json!({"items": [1, 2]})),
            Ok(true)
        );
    }

    #[test]
    fn every_json_kind_reads_as_its_cel_kind() {
        let args = json!({
            "neg": -3, "pos": 7, "big": u64::MAX, "half": 1.5, "flag": true, "none": null,
            "map": {"k": "v", "deep": {"n": [1, 2, 3]}}, "list": ["a", 2, false]
        });
        for cond in [
            "args.neg == -3 && args.neg < 0",
            "args.pos == 7 && args.pos > -1 && args.pos + 1 == 8 && args.pos - 10 == -3",
            "args.big == 18446744073709551615u",
            "args.half == 1.5 && args.half > 1",
            "args.flag && args.none == null",
            "args.map.k == 'v' && 'k' in args.map && has(args.map.deep)",
            "args.map.deep.n[2] == 3 && size(args.map.deep.n) == 3",
            "args.list[0] == 'a' && args.list[1] == 2 && !args.list[2]",
            "!has(args.missing) && size(args) == 8",
        ] {
            assert_eq!(holds(cond, args.clone()), Ok(true), "{cond}");
        }
        assert_eq!(holds("args.pos == 8", args.clone()), Ok(false));
    }

    #[test]
    fn failures_at_call_time_are_errors() {
        assert!(holds("args.path.startsWith('/srv')", json!({})).is_err());
        assert!(holds("args.amount > 100", json!({"amount": "many"})).is_err());
        assert!(holds("args.amount", json!({"amount": 3})).is_err());
    }

    #[test]
    fn malformed_and_costly_conditions_are_refused_at_load() {
        let e = Condition::compile("args.path.startsWith(").unwrap_err();
        assert!(e.starts_with("at line:column 1:"), "{e}");
        let e = Condition::compile("args.a.all(x, args.b.all(y, x == y))").unwrap_err();
        assert!(e.contains("nested inside another"), "{e}");
        let e = Condition::compile("user.name == 'x'").unwrap_err();
        assert!(e.contains("the only variable is `args`"), "{e}");
        let long = format!("args.a == '{}'", "x".repeat(MAX_SOURCE_BYTES));
        assert!(Condition::compile(&long)
            .unwrap_err()
            .contains("bytes; at most"));
        assert!(Condition::compile(" ").is_err());
    }
}
