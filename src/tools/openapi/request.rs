//! One call's HTTP request, built from the configured `baseUrl` and the operation's path
//! template only. Each path parameter is percent-encoded as ONE segment (everything but
//! letters, digits, `-`, `.`, `_`, `~`), and a value that is empty, `.` or `..` is refused, so
//! `/`, `?`, `#`, `%` or `..` in a value can never change the path. The URL is then parsed and
//! checked to still have the base's scheme, host, port and path prefix, and to be exactly the
//! text built (no dot-segment was folded).

use super::operations::{Location, Operation};
use crate::error::{ErrorCode, ExecError};
use serde_json::Value;

/// What the caller sends.
pub struct Built {
    pub url: reqwest::Url,
    pub headers: Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>,
    /// The body and its content type.
    pub body: Option<(Vec<u8>, &'static str)>,
}

fn invalid(tool: &str, message: String) -> ExecError {
    ExecError::new(ErrorCode::InvalidArguments, message).with_tool(tool)
}

/// A parameter's value as text: strings as they are, numbers and booleans as JSON writes them,
/// anything else as JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `value` as one path segment (see the module docs).
pub fn segment(tool: &str, name: &str, value: &Value) -> Result<String, ExecError> {
    let text = text_of(value);
    if text.is_empty() || text == "." || text == ".." {
        return Err(invalid(
            tool,
            format!(
                "path parameter {name:?} cannot be {text:?}: give the value of one path segment"
            ),
        ));
    }
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// The request of `op` with `args` (already checked against its input schema).
pub fn build(base: &reqwest::Url, op: &Operation, args: &Value) -> Result<Built, ExecError> {
    let tool = op.name.as_str();
    let empty = serde_json::Map::new();
    let args = args.as_object().unwrap_or(&empty);
    let mut path = op.path.clone();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers = Vec::new();
    for p in &op.params {
        let Some(value) = args.get(&p.name).filter(|v| !v.is_null()) else {
            if p.location == Location::Path {
                return Err(invalid(
                    tool,
                    format!("path parameter {:?} is missing", p.name),
                ));
            }
            continue;
        };
        match p.location {
            Location::Path => {
                let seg = segment(tool, &p.name, value)?;
                path = path.replace(&format!("{{{}}}", p.name), &seg);
            }
            Location::Query => match value {
                Value::Object(_) if p.deep => deep_pairs(p.name.clone(), value, &mut query),
                Value::Array(items) => {
                    query.extend(items.iter().map(|i| (p.name.clone(), text_of(i))))
                }
                v => query.push((p.name.clone(), text_of(v))),
            },
            Location::Header => {
                let name =
                    reqwest::header::HeaderName::from_bytes(p.name.as_bytes()).map_err(|_| {
                        invalid(tool, format!("{:?} is not a valid header name", p.name))
                    })?;
                let value =
                    reqwest::header::HeaderValue::from_str(&text_of(value)).map_err(|_| {
                        invalid(
                            tool,
                            format!(
                                "header parameter {:?} holds a character a header cannot carry",
                                p.name
                            ),
                        )
                    })?;
                headers.push((name, value));
            }
        }
    }
    if path.contains('{') {
        return Err(invalid(
            tool,
            format!(
                "the operation's path {:?} has a parameter the spec does not describe",
                op.path
            ),
        ));
    }
    let prefix = base.as_str().trim_end_matches('/');
    let text = format!("{prefix}{path}");
    let mut url = reqwest::Url::parse(&text)
        .map_err(|e| invalid(tool, format!("the request URL cannot be built: {e}")))?;
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query.iter());
    }
    let base_path = base.path().trim_end_matches('/');
    let stays = url.scheme() == base.scheme()
        && url.host_str() == base.host_str()
        && url.port_or_known_default() == base.port_or_known_default()
        && url.path().starts_with(base_path)
        && url[..url::Position::AfterPath] == *text.as_str()
        && url.fragment().is_none();
    if !stays {
        return Err(ExecError::new(
            ErrorCode::PermissionDenied,
            format!("the request would leave the API's baseUrl ({base}); it was not sent"),
        )
        .with_tool(tool));
    }
    let body = match (args.get("body"), &op.form) {
        (Some(b), None) if op.has_body => Some((
            serde_json::to_vec(b).unwrap_or_default(),
            "application/json",
        )),
        (Some(b), Some(deep)) if op.has_body => Some((
            form_body(tool, b, deep)?.into_bytes(),
            "application/x-www-form-urlencoded",
        )),
        _ => None,
    };
    Ok(Built { url, headers, body })
}

/// `value` as `deepObject` pairs under `prefix`: `prefix[key]=v`, nested (`a[b][c]`), array
/// items by index (`a[0][b]`), `null` as the empty value.
fn deep_pairs(prefix: String, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                deep_pairs(format!("{prefix}[{k}]"), v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                deep_pairs(format!("{prefix}[{i}]"), v, out);
            }
        }
        Value::Null => out.push((prefix, String::new())),
        v => out.push((prefix, text_of(v))),
    }
}

/// An `application/x-www-form-urlencoded` body: each field of the object `body`; an array of
/// plain values as the field repeated (unless `deep` names it), objects and the fields in
/// `deep` as `deepObject` (`field[key]=value`).
fn form_body(tool: &str, body: &Value, deep: &[String]) -> Result<String, ExecError> {
    let Value::Object(fields) = body else {
        return Err(invalid(
            tool,
            "the body of this operation is a form: give an object of its fields".into(),
        ));
    };
    let mut pairs = Vec::new();
    for (k, v) in fields {
        let flat = v.as_array().filter(|items| {
            !deep.contains(k) && items.iter().all(|i| !i.is_object() && !i.is_array())
        });
        match (flat, v) {
            (Some(items), _) => pairs.extend(items.iter().map(|i| (k.clone(), text_of(i)))),
            (None, Value::Object(_) | Value::Array(_) | Value::Null) => {
                deep_pairs(k.clone(), v, &mut pairs)
            }
            (None, v) => pairs.push((k.clone(), text_of(v))),
        }
    }
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.extend_pairs(pairs.iter());
    Ok(form.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::openapi::operations::Param;
    use serde_json::json;

    fn op(path: &str) -> Operation {
        Operation {
            name: "t".into(),
            method: reqwest::Method::GET,
            path: path.into(),
            params: vec![Param {
                name: "id".into(),
                location: Location::Path,
                deep: false,
            }],
            has_body: false,
            form: None,
            description: None,
            input_schema: json!({}),
            security: vec![],
        }
    }

    #[test]
    fn form_bodies_and_deep_objects_follow_the_wire_format() {
        // Stripe's PostCustomers shape (issue 57 item 5): a form body with nested objects,
        // a deepObject `expand`, a plain array; a deepObject query parameter.
        let base = reqwest::Url::parse("http://127.0.0.1:8080/v1").unwrap();
        let mut o = op("/customers");
        o.params = vec![Param {
            name: "created".into(),
            location: Location::Query,
            deep: true,
        }];
        o.has_body = true;
        o.form = Some(vec!["expand".into()]);
        let b = build(
            &base,
            &o,
            &json!({"created": {"gte": 5}, "body": {
                "email": "a+b@x.example",
                "metadata": {"k": "v w"},
                "address": {"line1": "1 Main"},
                "expand": ["x"],
                "preferred_locales": ["en", "fr"],
                "items": [{"price": "p_1"}],
                "coupon": null
            }}),
        )
        .unwrap();
        assert_eq!(b.url.query(), Some("created%5Bgte%5D=5"));
        let (bytes, ct) = b.body.unwrap();
        assert_eq!(ct, "application/x-www-form-urlencoded");
        // The fields in the order the script wrote them (objects keep their key order).
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "email=a%2Bb%40x.example&metadata%5Bk%5D=v+w&address%5Bline1%5D=1+Main&expand%5B0%5D=x&preferred_locales=en&preferred_locales=fr&items%5B0%5D%5Bprice%5D=p_1&coupon="
        );
    }

    #[test]
    fn path_parameters_cannot_leave_their_segment() {
        let base = reqwest::Url::parse("http://127.0.0.1:8080/api/v1").unwrap();
        let o = op("/items/{id}");
        let url = |id: &str| build(&base, &o, &json!({"id": id})).map(|b| b.url.to_string());
        assert_eq!(url("42").unwrap(), "http://127.0.0.1:8080/api/v1/items/42");
        assert_eq!(
            url("../admin").unwrap(),
            "http://127.0.0.1:8080/api/v1/items/..%2Fadmin"
        );
        assert_eq!(
            url("//evil.example:99/x").unwrap(),
            "http://127.0.0.1:8080/api/v1/items/%2F%2Fevil.example%3A99%2Fx"
        );
        assert_eq!(
            url("%2F..").unwrap(),
            "http://127.0.0.1:8080/api/v1/items/%252F.."
        );
        assert_eq!(
            url("https://evil.example/").unwrap(),
            "http://127.0.0.1:8080/api/v1/items/https%3A%2F%2Fevil.example%2F"
        );
        assert_eq!(
            url("a?b#c").unwrap(),
            "http://127.0.0.1:8080/api/v1/items/a%3Fb%23c"
        );
        for bad in ["..", ".", ""] {
            assert_eq!(
                url(bad).unwrap_err().code,
                ErrorCode::InvalidArguments,
                "{bad:?}"
            );
        }
    }
}
