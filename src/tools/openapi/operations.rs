//! Each operation of a spec as a tool: its name (the `operationId`, or method + path made a
//! valid name), its input schema (path, query and header parameters as top-level properties by
//! their names, the JSON request body as `body`), its description (`summary`, `description`),
//! and what the request builder needs to send it.

use super::spec::{is_3_0, resolve};
use super::OpenApiError;
use serde_json::{json, Map, Value};
use wildmatch::WildMatch;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
/// Longest tool description kept (a spec's descriptions can be pages long).
const MAX_DESCRIPTION_CHARS: usize = 2000;

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
    Header,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub location: Location,
}

/// One operation, ready to be called.
#[derive(Debug, Clone)]
pub struct Operation {
    pub name: String,
    pub method: reqwest::Method,
    /// The path template as the spec writes it (`/repos/{owner}/{repo}`).
    pub path: String,
    pub params: Vec<Param>,
    /// Whether it takes a JSON body (the `body` property).
    pub has_body: bool,
    pub description: Option<String>,
    pub input_schema: Value,
    /// The security requirements in force (the operation's, else the spec's): alternatives,
    /// each a list of scheme names.
    pub security: Vec<Vec<String>>,
}

/// Which operations the entry keeps: `operations` globs over tool names, `tags`.
pub struct Filter<'a> {
    pub operations: &'a [String],
    pub tags: &'a [String],
}

impl Filter<'_> {
    fn keeps(&self, name: &str, tags: &[String]) -> bool {
        let by_name = self.operations.is_empty()
            || self
                .operations
                .iter()
                .any(|g| WildMatch::new(g).matches(name));
        let by_tag = self.tags.is_empty() || tags.iter().any(|t| self.tags.contains(t));
        by_name && by_tag
    }
}

/// The spec's operations that pass `filter`, sorted by name. Names that collide after
/// normalization get `_2`, `_3`…; an operation the host cannot describe is left out with a
/// warning (its reason).
pub fn operations(
    server: &str,
    doc: &Value,
    filter: &Filter,
) -> Result<Vec<Operation>, OpenApiError> {
    let old = is_3_0(doc);
    let global_security = security_of(doc.get("security"));
    let mut out: Vec<Operation> = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Ok(out);
    };
    for (path, item) in paths {
        let shared = match item.get("parameters") {
            Some(p) => resolve(doc, p)?,
            None => Value::Null,
        };
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let name = match op.get("operationId").and_then(Value::as_str) {
                Some(id) => tool_name(id),
                None => tool_name(&format!("{method}{path}")),
            };
            let tags: Vec<String> = op
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if !filter.keeps(&name, &tags) {
                continue;
            }
            // A broken reference fails the whole spec; an operation the host cannot describe
            // is left out.
            match operation(doc, old, path, method, &name, op, &shared)? {
                Ok(mut operation) => {
                    if op.get("security").is_some() {
                        operation.security = security_of(op.get("security"));
                    } else {
                        operation.security = global_security.clone();
                    }
                    out.push(operation);
                }
                Err(why) => tracing::warn!(
                    server = %crate::term::escape(server),
                    "operation {} {} is left out: {why}",
                    method.to_uppercase(),
                    crate::term::escape(&crate::term::clip(path, 200))
                ),
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for op in &mut out {
        let n = seen.entry(op.name.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            op.name = format!("{}_{}", op.name, n);
        }
    }
    Ok(out)
}

fn security_of(v: Option<&Value>) -> Vec<Vec<String>> {
    v.and_then(Value::as_array)
        .map(|alts| {
            alts.iter()
                .filter_map(Value::as_object)
                .map(|req| req.keys().cloned().collect())
                .collect()
        })
        .unwrap_or_default()
}

/// A valid tool name from an operation id or `method/path`: letters, digits and `_`
/// (others become `_`, runs collapsed), not starting with a digit, at most 128 bytes.
pub fn tool_name(raw: &str) -> String {
    let mut out = String::new();
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        out.push(c);
    }
    let mut out = out.trim_end_matches('_').to_string();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "op_");
    }
    out.truncate(crate::tools::catalog::MAX_NAME_BYTES - 8);
    out
}

#[allow(clippy::too_many_arguments)]
fn operation(
    doc: &Value,
    old: bool,
    path: &str,
    method: &str,
    name: &str,
    op: &Value,
    shared: &Value,
) -> Result<Result<Operation, String>, OpenApiError> {
    // Only what the tool needs is resolved (never the responses: they can be huge).
    let resolved = |key: &str| op.get(key).map(|v| resolve(doc, v)).transpose();
    let own_params = resolved("parameters")?;
    let request_body = resolved("requestBody")?;
    Ok(describe(
        old,
        path,
        method,
        name,
        op,
        own_params,
        shared,
        request_body,
    ))
}

/// The tool of one operation whose parameters and body are resolved.
#[allow(clippy::too_many_arguments)]
fn describe(
    old: bool,
    path: &str,
    method: &str,
    name: &str,
    op: &Value,
    own_params: Option<Value>,
    shared: &Value,
    request_body: Option<Value>,
) -> Result<Operation, String> {
    let mut params: Vec<Param> = Vec::new();
    let mut properties = Map::new();
    let mut required = Vec::new();
    // The operation's parameters override the path item's of the same name and place.
    let mut all: Vec<Value> = Vec::new();
    for list in [own_params.as_ref(), Some(shared)] {
        for p in list.and_then(Value::as_array).into_iter().flatten() {
            let key = (p.get("name").cloned(), p.get("in").cloned());
            if !all
                .iter()
                .any(|q| (q.get("name").cloned(), q.get("in").cloned()) == key)
            {
                all.push(p.clone());
            }
        }
    }
    for p in &all {
        let pname = p.get("name").and_then(Value::as_str).unwrap_or_default();
        let location = match p.get("in").and_then(Value::as_str) {
            Some("path") => Location::Path,
            Some("query") => Location::Query,
            Some("header") => Location::Header,
            Some("cookie") => {
                if p.get("required").and_then(Value::as_bool) == Some(true) {
                    return Err(format!("its cookie parameter {pname:?} is not supported"));
                }
                continue;
            }
            _ => return Err(format!("parameter {pname:?} has no valid \"in\"")),
        };
        if pname.is_empty() {
            return Err("a parameter has no name".into());
        }
        if location == Location::Header && ignored_header(pname) {
            continue;
        }
        if properties.contains_key(pname) || pname == "body" {
            return Err(format!(
                "two of its parameters (or one and the body) are both named {pname:?}"
            ));
        }
        let mut schema = p.get("schema").cloned().unwrap_or(json!({}));
        if old {
            schema = from_3_0(schema);
        }
        if let Some(d) = p.get("description").and_then(Value::as_str) {
            if let Value::Object(m) = &mut schema {
                m.entry("description")
                    .or_insert_with(|| Value::String(crate::term::clip(d, 500)));
            }
        }
        let req =
            location == Location::Path || p.get("required").and_then(Value::as_bool) == Some(true);
        if req {
            required.push(Value::String(pname.to_string()));
        }
        properties.insert(pname.to_string(), schema);
        params.push(Param {
            name: pname.to_string(),
            location,
        });
    }
    for p in params.iter().filter(|p| p.location == Location::Path) {
        if !path.contains(&format!("{{{}}}", p.name)) {
            return Err(format!("path parameter {:?} is not in its path", p.name));
        }
    }
    let mut has_body = false;
    if let Some(body) = &request_body {
        let content = body.get("content").and_then(Value::as_object);
        let json_schema = content.and_then(|c| {
            c.iter()
                .find(|(mime, _)| is_json(mime))
                .map(|(_, m)| m.get("schema").cloned().unwrap_or(json!({})))
        });
        match json_schema {
            Some(mut schema) => {
                if old {
                    schema = from_3_0(schema);
                }
                has_body = true;
                if body.get("required").and_then(Value::as_bool) == Some(true) {
                    required.push(json!("body"));
                }
                properties.insert("body".into(), schema);
            }
            None if body.get("required").and_then(Value::as_bool) == Some(true) => {
                return Err("its request body is not JSON (only JSON bodies are supported)".into())
            }
            None => {}
        }
    }
    let summary = op
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let details = op
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let mut description = match (summary.is_empty(), details.is_empty()) {
        (true, true) => String::new(),
        (false, true) => summary.to_string(),
        (true, false) => details.to_string(),
        (false, false) => format!("{summary}\n\n{details}"),
    };
    let line = format!("{} {}", method.to_uppercase(), path);
    description = if description.is_empty() {
        line
    } else {
        format!(
            "{}\n\n({line})",
            crate::term::clip(&description, MAX_DESCRIPTION_CHARS)
        )
    };
    let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes())
        .map_err(|_| format!("method {method} is not valid"))?;
    Ok(Operation {
        name: name.to_string(),
        method,
        path: path.to_string(),
        params,
        has_body,
        description: Some(description),
        input_schema: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
        security: Vec::new(),
    })
}

/// Header parameters a script never sets: those OpenAPI says are ignored (`Accept`,
/// `Content-Type`, `Authorization`), and those that would change where or how the request goes
/// (`Host`, framing, connection, proxy and cookie headers).
fn ignored_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "accept"
            | "content-type"
            | "authorization"
            | "host"
            | "content-length"
            | "transfer-encoding"
            | "connection"
            | "upgrade"
            | "te"
            | "trailer"
            | "keep-alive"
            | "cookie"
            | "forwarded"
    ) || lower.starts_with("proxy-")
        || lower.starts_with("x-forwarded-")
}

fn is_json(mime: &str) -> bool {
    let m = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    m == "application/json" || m.ends_with("+json") || m == "*/*"
}

/// An OpenAPI 3.0 schema as JSON Schema 2020-12 (what the validator reads): `nullable: true`
/// adds `null` to `type` (and `enum`); a boolean `exclusiveMinimum`/`exclusiveMaximum` becomes
/// the number form; 3.0-only keywords (`discriminator`, `xml`, `example`, `externalDocs`) go.
pub fn from_3_0(schema: Value) -> Value {
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
                        _ => from_3_0(v),
                    };
                    (k, v)
                })
                .collect();
            if nullable {
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
    fn a_script_cannot_set_headers_that_redirect_a_request() {
        let doc = json!({"openapi": "3.1.0", "paths": {"/a": {"get": {
            "operationId": "a",
            "parameters": [
                {"name": "Host", "in": "header", "schema": {"type": "string"}},
                {"name": "X-Forwarded-Host", "in": "header", "schema": {"type": "string"}},
                {"name": "Proxy-Authorization", "in": "header", "schema": {"type": "string"}},
                {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}}
            ]
        }}}});
        let ops = operations(
            "s",
            &doc,
            &Filter {
                operations: &[],
                tags: &[],
            },
        )
        .unwrap();
        let props = ops[0].input_schema["properties"].as_object().unwrap();
        assert_eq!(props.keys().collect::<Vec<_>>(), ["X-Request-Id"]);
        assert_eq!(ops[0].params.len(), 1);
    }

    #[test]
    fn names_are_valid_tool_names() {
        assert_eq!(tool_name("listIssues"), "listIssues");
        assert_eq!(
            tool_name("get/repos/{owner}/{repo}"),
            "get_repos_owner_repo"
        );
        assert_eq!(tool_name("9lives"), "op_9lives");
        assert_eq!(tool_name("issues/list-for-repo"), "issues_list_for_repo");
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
    }
}
