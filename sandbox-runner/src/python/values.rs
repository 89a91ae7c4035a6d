//! Values crossing between Python and JSON: tool results and context values into the script,
//! tool arguments and the script's result out of it. Python's `json` module is the model: a dict
//! with int, float, bool or None keys gets string keys as `json.dumps` gives them; what JSON has no
//! form for (sets, bytes, dates, objects) is refused with a message saying how to convert it.

use monty_types::{DictPairs, MontyObject};
use serde_json::{Map, Number, Value};

/// Deepest value converted either way (the host bounds tool results and arguments lower).
pub const MAX_DEPTH: usize = 128;

/// A JSON value as a Python object.
pub fn from_json(value: &Value) -> MontyObject {
    from_json_at(value, 0)
}

fn from_json_at(value: &Value, depth: usize) -> MontyObject {
    if depth > MAX_DEPTH {
        return MontyObject::None;
    }
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => MontyObject::Int(i),
            None => match n.as_u64() {
                Some(u) => MontyObject::BigInt(u.into()),
                None => MontyObject::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
        },
        Value::String(s) => MontyObject::String(s.clone()),
        Value::Array(items) => {
            MontyObject::List(items.iter().map(|v| from_json_at(v, depth + 1)).collect())
        }
        Value::Object(map) => MontyObject::Dict(DictPairs::from(
            map.iter()
                .map(|(k, v)| (MontyObject::String(k.clone()), from_json_at(v, depth + 1)))
                .collect::<Vec<_>>(),
        )),
    }
}

/// A Python object as JSON, or why it has no JSON form (`what` names the value in the message:
/// "the result", "the arguments of fixture:echo").
pub fn to_json(value: &MontyObject, what: &str) -> Result<Value, String> {
    to_json_at(value, what, 0)
}

fn to_json_at(value: &MontyObject, what: &str, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{what} is nested more than {MAX_DEPTH} levels deep; return flatter data"
        ));
    }
    let seq = |items: &[MontyObject]| -> Result<Value, String> {
        items
            .iter()
            .map(|v| to_json_at(v, what, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    };
    Ok(match value {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(*b),
        MontyObject::Int(i) => Value::from(*i),
        MontyObject::BigInt(b) => match (i64::try_from(b), u64::try_from(b)) {
            (Ok(i), _) => Value::from(i),
            (_, Ok(u)) => Value::from(u),
            _ => {
                return Err(format!(
                    "{what} holds an int too large for JSON ({} digits); convert it with str()",
                    b.to_string().len()
                ))
            }
        },
        // JSON has no NaN or infinity: like JavaScript's JSON.stringify, they become null.
        MontyObject::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) => seq(items)?,
        MontyObject::NamedTuple { values, .. } => seq(values)?,
        MontyObject::Dict(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                map.insert(key_text(k, what)?, to_json_at(v, what, depth + 1)?);
            }
            Value::Object(map)
        }
        other => return Err(unconvertible(other, what)),
    })
}

/// A dict key as `json.dumps` writes it.
fn key_text(key: &MontyObject, what: &str) -> Result<String, String> {
    Ok(match key {
        MontyObject::String(s) => s.clone(),
        MontyObject::Int(i) => i.to_string(),
        MontyObject::BigInt(b) => b.to_string(),
        MontyObject::Float(f) => Number::from_f64(*f).map_or("NaN".into(), |n| n.to_string()),
        MontyObject::Bool(true) => "true".into(),
        MontyObject::Bool(false) => "false".into(),
        MontyObject::None => "null".into(),
        other => {
            return Err(format!(
                "{what} has a dict key of type {} that JSON cannot hold; use str keys",
                type_name(other)
            ))
        }
    })
}

fn unconvertible(value: &MontyObject, what: &str) -> String {
    let hint = match value {
        MontyObject::Set(_) | MontyObject::FrozenSet(_) => "convert it first: sorted(s) or list(s)",
        MontyObject::Bytes(_) => "decode it first: b.decode()",
        MontyObject::Date(_) | MontyObject::DateTime(_) | MontyObject::Time(_) => {
            "format it first: d.isoformat()"
        }
        MontyObject::TimeDelta(_) => "convert it first: td.total_seconds()",
        MontyObject::ClassInstance(_) => {
            "convert it to a dict first (dataclasses.asdict(obj) for a dataclass)"
        }
        _ => "return plain data: dict, list, str, int, float, bool or None",
    };
    format!(
        "{what} holds a value of type {} that JSON cannot hold; {hint}",
        type_name(value)
    )
}

/// The Python type name of a value, for messages.
pub fn type_name(value: &MontyObject) -> String {
    match value {
        MontyObject::Ellipsis => "ellipsis".into(),
        MontyObject::NotImplemented => "NotImplementedType".into(),
        MontyObject::None => "NoneType".into(),
        MontyObject::Bool(_) => "bool".into(),
        MontyObject::Int(_) | MontyObject::BigInt(_) => "int".into(),
        MontyObject::Float(_) => "float".into(),
        MontyObject::String(_) => "str".into(),
        MontyObject::Bytes(_) => "bytes".into(),
        MontyObject::List(_) => "list".into(),
        MontyObject::Tuple(_) => "tuple".into(),
        MontyObject::NamedTuple { type_name, .. } => type_name.clone(),
        MontyObject::Dict(_) => "dict".into(),
        MontyObject::Set(_) => "set".into(),
        MontyObject::FrozenSet(_) => "frozenset".into(),
        MontyObject::Date(_) => "date".into(),
        MontyObject::DateTime(_) => "datetime".into(),
        MontyObject::Time(_) => "time".into(),
        MontyObject::TimeDelta(_) => "timedelta".into(),
        MontyObject::TimeZone(_) => "timezone".into(),
        MontyObject::Exception { exc_type, .. } => exc_type.to_string(),
        MontyObject::Type(_) => "type".into(),
        MontyObject::BuiltinFunction(_) | MontyObject::Function { .. } => "function".into(),
        MontyObject::Path(_) => "Path".into(),
        MontyObject::FileHandle(_) => "file".into(),
        MontyObject::ClassInstance(c) => c.class_type.name.clone(),
        MontyObject::Repr(_) | MontyObject::Cycle(..) => "object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_python_values() {
        let v =
            json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}, "big": 18446744073709551615u64});
        assert_eq!(to_json(&from_json(&v), "the result").unwrap(), v);
    }

    #[test]
    fn dict_keys_are_written_as_json_dumps_writes_them() {
        let d = MontyObject::Dict(DictPairs::from(vec![
            (MontyObject::Int(1), MontyObject::Int(2)),
            (MontyObject::Bool(true), MontyObject::None),
            (MontyObject::None, MontyObject::Float(f64::NAN)),
        ]));
        assert_eq!(
            to_json(&d, "the result").unwrap(),
            json!({"1": 2, "true": null, "null": null})
        );
    }

    #[test]
    fn what_json_cannot_hold_is_refused_saying_how_to_convert_it() {
        let set = MontyObject::Set(vec![MontyObject::Int(1)]);
        assert_eq!(
            to_json(&set, "the result").unwrap_err(),
            "the result holds a value of type set that JSON cannot hold; convert it first: sorted(s) or list(s)"
        );
        let tuple_key = MontyObject::Dict(DictPairs::from(vec![(
            MontyObject::Tuple(vec![]),
            MontyObject::Int(1),
        )]));
        assert!(to_json(&tuple_key, "the result")
            .unwrap_err()
            .contains("dict key of type tuple"));
    }

    #[test]
    fn nesting_is_bounded() {
        let mut v = MontyObject::None;
        for _ in 0..(MAX_DEPTH + 2) {
            v = MontyObject::List(vec![v]);
        }
        assert!(to_json(&v, "the result")
            .unwrap_err()
            .contains("nested more than 128 levels"));
    }
}
