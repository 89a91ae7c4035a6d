//! Tool arguments checked against each tool's `inputSchema` (the `jsonschema` crate) before a
//! call reaches any server. Compiled validators are cached per tool and recompiled only when the
//! tool's schema changes (a refreshed tool list).
//!
//! A schema that does not compile (malformed, or a remote `$ref`, which is never fetched) is not
//! held against the script: the call goes through unvalidated, the server decides, and the host
//! logs a warning once per schema.

use jsonschema::Validator;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// At most this many violations are listed in one `INVALID_ARGUMENTS` message.
pub const MAX_VIOLATIONS: usize = 20;
/// A single violation message is cut to this many characters (the offending value can be large).
const MAX_VIOLATION_CHARS: usize = 300;

enum Compiled {
    Ok(Arc<Validator>),
    /// The schema does not compile; calls are forwarded unvalidated.
    Broken,
}

struct Entry {
    schema: Value,
    compiled: Compiled,
}

/// Compiled validators, keyed by `server:tool`.
#[derive(Default)]
pub struct ValidatorCache {
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    #[cfg(test)]
    compiles: std::sync::atomic::AtomicUsize,
}

impl ValidatorCache {
    fn entry(&self, qualified: &str, schema: &Value) -> Arc<Entry> {
        if let Ok(map) = self.entries.lock() {
            if let Some(e) = map.get(qualified) {
                if &e.schema == schema {
                    return e.clone();
                }
            }
        }
        #[cfg(test)]
        self.compiles
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let compiled = match jsonschema::validator_for(schema) {
            Ok(v) => Compiled::Ok(Arc::new(v)),
            Err(e) => {
                tracing::warn!(tool = %qualified, "inputSchema does not compile, arguments are not validated: {e}");
                Compiled::Broken
            }
        };
        let entry = Arc::new(Entry {
            schema: schema.clone(),
            compiled,
        });
        if let Ok(mut map) = self.entries.lock() {
            map.insert(qualified.to_string(), entry.clone());
        }
        entry
    }

    /// Checks `args` against `schema`. `Err` lists each violation as `"/json/path: message"`
    /// (the root is `(root)`), at most [`MAX_VIOLATIONS`].
    pub fn check(&self, qualified: &str, schema: &Value, args: &Value) -> Result<(), Vec<String>> {
        let entry = self.entry(qualified, schema);
        let Compiled::Ok(validator) = &entry.compiled else {
            return Ok(());
        };
        let empty = Value::Object(Default::default());
        let args = if args.is_null() { &empty } else { args };
        let mut out = Vec::new();
        let mut total = 0usize;
        for error in validator.iter_errors(args) {
            total += 1;
            if out.len() < MAX_VIOLATIONS {
                let path = error.instance_path().to_string();
                let path = if path.is_empty() {
                    "(root)".to_string()
                } else {
                    path
                };
                let mut msg = error.to_string();
                if msg.chars().count() > MAX_VIOLATION_CHARS {
                    msg = msg.chars().take(MAX_VIOLATION_CHARS).collect::<String>() + "…";
                }
                out.push(format!("{path}: {msg}"));
            }
        }
        if total > out.len() {
            out.push(format!("… and {} more", total - out.len()));
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }

    #[cfg(test)]
    fn compiles(&self) -> usize {
        self.compiles.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "n": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn lists_every_violation_with_its_path() {
        let c = ValidatorCache::default();
        let errs = c
            .check(
                "fs:x",
                &schema(),
                &json!({"n": -1, "tags": ["a", 2], "extra": 1}),
            )
            .unwrap_err();
        assert!(
            errs.contains(&"/n: -1 is less than the minimum of 0".to_string()),
            "{errs:?}"
        );
        assert!(
            errs.contains(&"/tags/1: 2 is not of type \"string\"".to_string()),
            "{errs:?}"
        );
        assert!(
            errs.contains(&"(root): \"path\" is a required property".to_string()),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.starts_with("(root): Additional properties")),
            "{errs:?}"
        );
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(c.check("fs:x", &schema(), &json!({"path": "a"})).is_ok());
    }

    #[test]
    fn compiles_once_per_schema() {
        let c = ValidatorCache::default();
        for _ in 0..5 {
            let _ = c.check("fs:x", &schema(), &json!({"path": 1}));
        }
        assert_eq!(c.compiles(), 1);
        // A changed schema (refreshed tool list) is recompiled.
        let _ = c.check("fs:x", &json!({"type": "object"}), &json!({}));
        assert_eq!(c.compiles(), 2);
    }

    #[test]
    fn null_args_are_an_empty_object_and_broken_schemas_pass() {
        let c = ValidatorCache::default();
        let errs = c.check("a:b", &schema(), &Value::Null).unwrap_err();
        assert_eq!(errs, ["(root): \"path\" is a required property"]);
        let broken = json!({"type": 12});
        assert!(c.check("a:c", &broken, &json!({"x": 1})).is_ok());
    }
}
