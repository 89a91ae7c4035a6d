//! OpenAPI 3.0 schemas as JSON Schema 2020-12 (what the validator reads).

use serde_json::{json, Map, Value};

/// An OpenAPI 3.0 schema as JSON Schema 2020-12 (what the validator reads): `nullable: true`
/// adds `null` to `type` (and `enum`); a boolean `exclusiveMinimum`/`exclusiveMaximum` becomes
/// the number form; 3.0-only keywords (`discriminator`, `xml`, `example`, `externalDocs`) go.
pub fn from_3_0(schema: Value) -> Value {
    // Resolved schemas nest as deep as their $refs chain: never past the thread's stack.
    stacker::maybe_grow(
        super::budget::STACK_RED_ZONE,
        super::budget::STACK_SEGMENT,
        || convert(schema),
    )
}

fn convert(schema: Value) -> Value {
    match schema {
        Value::Object(mut m) => {
            let nullable = m.remove("nullable").and_then(|v| v.as_bool()) == Some(true);
            for k in ["discriminator", "xml", "example", "externalDocs"] {
                m.remove(k);
            }
            for (flag, bound) in [
                ("exclusiveMinimum", "minimum"),
                ("exclusiveMaximum", "maximum"),
            ] {
                if let Some(Value::Bool(b)) = m.get(flag).cloned() {
                    m.remove(flag);
                    if b {
                        if let Some(n) = m.remove(bound) {
                            m.insert(flag.into(), n);
                        }
                    }
                }
            }
            let mut out: Map<String, Value> = m
                .into_iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        // Values, not schemas.
                        "enum" | "const" | "default" | "examples" | "required" => v,
                        // Maps of names to schemas: the names are not keywords (a property may
                        // be called `nullable` or `example`).
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" => match v {
                            Value::Object(named) => Value::Object(
                                named.into_iter().map(|(n, s)| (n, from_3_0(s))).collect(),
                            ),
                            other => other,
                        },
                        _ => from_3_0(v),
                    };
                    (k, v)
                })
                .collect();
            if nullable && !out.contains_key("type") && out.contains_key("$ref") {
                // A shared schema made nullable where it is used: it, or null.
                let mut one = Map::new();
                if let Some(r) = out.remove("$ref") {
                    one.insert("$ref".into(), r);
                }
                out.insert(
                    "anyOf".into(),
                    json!([Value::Object(one), {"type": "null"}]),
                );
            } else if nullable {
                match out.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = t.clone();
                        out.insert("type".into(), json!([t, "null"]));
                    }
                    Some(Value::Array(ts)) if !ts.contains(&json!("null")) => {
                        ts.push(json!("null"))
                    }
                    _ => {}
                }
                if let Some(Value::Array(e)) = out.get_mut("enum") {
                    if !e.contains(&Value::Null) {
                        e.push(Value::Null);
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(from_3_0).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_named_like_keywords_are_kept() {
        let s = from_3_0(json!({"type": "object", "properties": {
            "nullable": {"type": "boolean"},
            "example": {"type": "string", "example": "x"},
            "xml": {"type": "string"},
            "discriminator": {"type": "string", "nullable": true}
        }, "required": ["example"]}));
        assert_eq!(
            s,
            json!({"type": "object", "properties": {
                "nullable": {"type": "boolean"},
                "example": {"type": "string"},
                "xml": {"type": "string"},
                "discriminator": {"type": ["string", "null"]}
            }, "required": ["example"]})
        );
    }

    #[test]
    fn converts_openapi_3_0_schemas() {
        let s = from_3_0(json!({"type": "object", "properties": {
            "a": {"type": "string", "nullable": true, "example": "x"},
            "b": {"type": "integer", "minimum": 1, "exclusiveMinimum": true},
            "c": {"enum": ["x"], "nullable": true}
        }}));
        assert_eq!(s["properties"]["a"], json!({"type": ["string", "null"]}));
        assert_eq!(
            s["properties"]["b"],
            json!({"type": "integer", "exclusiveMinimum": 1})
        );
        assert_eq!(s["properties"]["c"], json!({"enum": ["x", null]}));
        let r = from_3_0(json!({"$ref": "#/$defs/A", "nullable": true, "description": "d"}));
        assert_eq!(
            r,
            json!({"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}], "description": "d"})
        );
    }
}
