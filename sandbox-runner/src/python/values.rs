//! Values crossing between Python and JSON: tool results and context values into the script,
//! tool arguments and the script's result out of it. Python's `json` module is the model: a dict
//! with int, float, bool or None keys gets string keys as `json.dumps` gives them; what JSON has no
//! form for (sets, bytes, dates, objects, NaN and the infinities) is refused with a message saying
//! how to convert it. Objects keep their keys in order both ways.

use monty_types::{DictPairs, MontyObject};
use serde_json::{Map, Number, Value};

/// Deepest value converted either way: the protocol's bound on every value that crosses the
/// socket (results, tool arguments and answers, state), so one depth holds at every boundary.
pub const MAX_DEPTH: usize = crate::protocol::MAX_VALUE_DEPTH;

/// Why a value cannot leave the script as JSON.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// Nested deeper than [`MAX_DEPTH`]: `LIMIT_EXCEEDED`.
    TooDeep(String),
    /// No JSON form (a set, NaN, …): the boundary's own code.
    NoJson(String),
}

impl Refusal {
    /// The code: `LIMIT_EXCEEDED` for depth, else `otherwise`.
    pub fn code(&self, otherwise: &'static str) -> &'static str {
        match self {
            Refusal::TooDeep(_) => "LIMIT_EXCEEDED",
            Refusal::NoJson(_) => otherwise,
        }
    }

    pub fn message(self) -> String {
        match self {
            Refusal::TooDeep(m) | Refusal::NoJson(m) => m,
        }
    }
}

/// A JSON value as a Python object (the value is at most [`MAX_DEPTH`] deep: every value the
/// runner reads was bounded first; deeper parts would become None).
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

/// JSON text the host sent (a tool's answer, a loaded value) as a value: its depth is checked
/// without recursion first, then it is parsed without serde_json's own limit of 128 levels (which
/// made a deeper answer `None`). `Err` names the depth.
pub fn parse_answer(text: &str) -> Result<Value, String> {
    let depth = crate::protocol::json_depth(text.as_bytes());
    if depth > MAX_DEPTH {
        return Err(format!(
            "the answer is nested {depth} levels deep; values may nest at most {MAX_DEPTH} levels"
        ));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).map_err(|e| format!("the answer is not JSON: {e}"))
}

/// A Python object as JSON, or why it has no JSON form (`what` names the value in the message:
/// "the result", "the arguments of fixture:echo").
pub fn to_json(value: &MontyObject, what: &str) -> Result<Value, Refusal> {
    to_json_at(value, what, 1)
}

/// `depth`: the nesting level `value` would have in JSON (1 for the top-level list or dict).
fn to_json_at(value: &MontyObject, what: &str, depth: usize) -> Result<Value, Refusal> {
    let nests = matches!(
        value,
        MontyObject::List(_)
            | MontyObject::Tuple(_)
            | MontyObject::NamedTuple { .. }
            | MontyObject::Dict(_)
    );
    if nests && depth > MAX_DEPTH {
        return Err(Refusal::TooDeep(format!(
            "{what} is nested more than {MAX_DEPTH} levels deep (at level {depth}); values may nest at most {MAX_DEPTH} levels: return flatter data"
        )));
    }
    let no_json = |m: String| Refusal::NoJson(m);
    let too_deep = || {
        Refusal::TooDeep(format!(
            "{what} is nested more than {MAX_DEPTH} levels deep (at level {depth}); values may nest at most {MAX_DEPTH} levels: return flatter data"
        ))
    };
    if deeply_nested(value) {
        return Err(too_deep());
    }
    let seq = |items: &[MontyObject]| -> Result<Value, Refusal> {
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
                return Err(no_json(format!(
                    "{what} holds an int too large for JSON ({} digits); convert it with str()",
                    b.to_string().len()
                )))
            }
        },
        // JSON has no NaN or infinity (json.dumps writes them as text no JSON parser reads).
        MontyObject::Float(f) => match Number::from_f64(*f) {
            Some(n) => Value::Number(n),
            None => return Err(no_json(non_finite(*f, what))),
        },
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) => seq(items)?,
        MontyObject::NamedTuple { values, .. } => seq(values)?,
        MontyObject::Dict(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                if deeply_nested(k) {
                    return Err(too_deep());
                }
                let v = to_json_at(v, what, depth + 1)?;
                map.insert(key_text(k, what).map_err(no_json)?, v);
            }
            Value::Object(map)
        }
        other => return Err(no_json(unconvertible(other, what))),
    })
}

/// What monty hands out for a part of a value deeper than its recursion guard lets it convert
/// (the runner sets the guard just past [`MAX_DEPTH`], so this is a value too deep to cross).
fn deeply_nested(value: &MontyObject) -> bool {
    matches!(value, MontyObject::Repr(s) if s == "<deeply nested>")
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

/// NaN or an infinity, refused with how to convert it (one rule in both languages).
pub fn non_finite(f: f64, what: &str) -> String {
    let shown = if f.is_nan() {
        "nan"
    } else if f > 0.0 {
        "inf"
    } else {
        "-inf"
    };
    format!(
        "{what} holds the float {shown}, which JSON cannot hold; convert it first: None where there is no number (None if math.isnan(x) else x), or str(x) to keep it as text"
    )
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
            to_json(&d, "the result").unwrap_err(),
            Refusal::NoJson(non_finite(f64::NAN, "the result"))
        );
        let d = MontyObject::Dict(DictPairs::from(vec![
            (MontyObject::Int(1), MontyObject::Int(2)),
            (MontyObject::Bool(true), MontyObject::None),
            (MontyObject::None, MontyObject::Float(1.5)),
        ]));
        assert_eq!(
            to_json(&d, "the result").unwrap(),
            json!({"1": 2, "true": null, "null": 1.5})
        );
    }

    #[test]
    fn what_json_cannot_hold_is_refused_saying_how_to_convert_it() {
        let set = MontyObject::Set(vec![MontyObject::Int(1)]);
        assert_eq!(
            to_json(&set, "the result").unwrap_err(),
            Refusal::NoJson("the result holds a value of type set that JSON cannot hold; convert it first: sorted(s) or list(s)".into())
        );
        let tuple_key = MontyObject::Dict(DictPairs::from(vec![(
            MontyObject::Tuple(vec![]),
            MontyObject::Int(1),
        )]));
        assert!(to_json(&tuple_key, "the result")
            .unwrap_err()
            .message()
            .contains("dict key of type tuple"));
    }

    /// Runs `f` on a thread with room for 1,000 levels of recursion in a debug build.
    fn on_big_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn nesting_is_bounded_at_the_protocol_s_depth() {
        on_big_stack(nesting_is_bounded);
    }

    fn nesting_is_bounded() {
        let mut v = MontyObject::None;
        for _ in 0..MAX_DEPTH {
            v = MontyObject::List(vec![v]);
        }
        let json = to_json(&v, "the result").unwrap();
        assert_eq!(
            crate::protocol::json_depth(json.to_string().as_bytes()),
            MAX_DEPTH
        );
        assert_eq!(to_json(&from_json(&json), "the result").unwrap(), json);
        let deeper = MontyObject::List(vec![v]);
        let err = to_json(&deeper, "the result").unwrap_err();
        assert_eq!(err.code("RESULT_NOT_SERIALIZABLE"), "LIMIT_EXCEEDED");
        assert!(err
            .message()
            .contains("nested more than 1000 levels deep (at level 1001)"));
    }

    #[test]
    fn answers_deeper_than_serde_s_default_are_read() {
        on_big_stack(deep_answers);
    }

    fn deep_answers() {
        let text = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        let v = parse_answer(&text).unwrap();
        assert_eq!(crate::protocol::json_depth(v.to_string().as_bytes()), 500);
        let text = format!("{}1{}", "[".repeat(1001), "]".repeat(1001));
        assert!(parse_answer(&text)
            .unwrap_err()
            .contains("nested 1001 levels deep"));
    }
}
