//! Each operation of a spec as a tool: its name (the `operationId`, or method + path made a
//! valid name), its input schema (path, query and header parameters as top-level properties by
//! their names, the JSON request body as `body`), its description (`summary`, `description`),
//! and what the request builder needs to send it.

use super::resolver::Resolver;
use super::schema3::from_3_0;
use super::spec::is_3_0;
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
    /// `style: deepObject`: an object value is sent as `name[key]=value`.
    pub deep: bool,
}

/// One operation, ready to be called.
#[derive(Debug, Clone)]
pub struct Operation {
    pub name: String,
    pub method: reqwest::Method,
    /// The path template as the spec writes it (`/repos/{owner}/{repo}`).
    pub path: String,
    pub params: Vec<Param>,
    /// Whether it takes a body (the `body` property): JSON, or a form when `form` is set.
    pub has_body: bool,
    /// An `application/x-www-form-urlencoded` body: the fields its `encoding` sends as
    /// `deepObject` (nested objects always are: `field[key]=value`).
    pub form: Option<Vec<String>>,
    pub description: Option<String>,
    pub input_schema: Value,
    /// The security requirements in force (the operation's, else the spec's): alternatives,
    /// each a list of scheme names.
    pub security: Vec<Vec<String>>,
}

/// Which operations the entry keeps: `operations` globs over tool names, `tags`; how many it
/// may keep (`maxTools`).
pub struct Filter<'a> {
    pub operations: &'a [String],
    pub tags: &'a [String],
    pub max_tools: usize,
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
/// normalization get `_2`, `_3`… (see [`unique_names`]: given over the whole spec before the
/// filter, so a name means one operation whatever the entry keeps); an operation the host cannot
/// describe is left out with a warning (its reason).
pub fn operations(
    server: &str,
    resolver: &Resolver,
    filter: &Filter,
) -> Result<Vec<Operation>, OpenApiError> {
    let doc = resolver.doc;
    let old = is_3_0(doc);
    let global_security = security_of(doc.get("security"));
    let mut out: Vec<Operation> = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Ok(out);
    };
    let mut found: Vec<(&String, &Value, usize, &Value)> = Vec::new();
    for (path, item) in paths {
        for (m, method) in METHODS.iter().enumerate() {
            if let Some(op) = item.get(*method) {
                found.push((path, item, m, op));
            }
        }
    }
    let names = unique_names(
        &found
            .iter()
            .map(|(path, _, m, op)| {
                let base = match op.get("operationId").and_then(Value::as_str) {
                    Some(id) => tool_name(id),
                    None => tool_name(&format!("{}{path}", METHODS[*m])),
                };
                (base, path.as_str(), *m)
            })
            .collect::<Vec<_>>(),
    );
    // What the entry keeps is counted before anything is resolved: a spec of more operations
    // than maxTools is refused at once, whatever its size.
    let kept = found
        .iter()
        .zip(&names)
        .filter(|((_, _, _, op), name)| filter.keeps(name, &tags_of(op)))
        .count();
    if kept > filter.max_tools {
        return Err(OpenApiError::Spec(format!(
            "the spec has {kept} operations, more than the server's maxTools ({}): keep fewer with \"operations\" or \"tags\", or raise maxTools",
            filter.max_tools
        )));
    }
    let mut shared_of: Option<(&str, Value)> = None;
    let no_params = Value::Null;
    for ((path, item, m, op), name) in found.into_iter().zip(names) {
        let method = METHODS[m];
        if !filter.keeps(&name, &tags_of(op)) {
            continue;
        }
        // The path item's parameters, resolved once for its operations that are kept.
        if shared_of.as_ref().is_none_or(|(p, _)| *p != path.as_str()) {
            let shared = match item.get("parameters") {
                Some(p) => {
                    resolver.resolve(p, &format!("/paths/{} parameters", clip_path(path)))?
                }
                None => Value::Null,
            };
            shared_of = Some((path.as_str(), shared));
        }
        let shared = shared_of.as_ref().map_or(&no_params, |(_, v)| v);
        // A broken reference fails the whole spec; an operation the host cannot describe
        // is left out.
        match operation(resolver, old, path, method, &name, op, shared)? {
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
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// An operation's `tags`.
fn tags_of(op: &Value) -> Vec<String> {
    op.get("tags")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// One unique name per operation, from `(base name, path, method index)` in the spec's order:
/// among operations of the same base name, ordered by path and method, the first keeps it and
/// the others get the first free `_2`, `_3`… (free: no operation's own base name, no name
/// given before). Stable: the same spec gives the same names, whatever the entry's filter.
fn unique_names(ops: &[(String, &str, usize)]) -> Vec<String> {
    use std::collections::HashSet;
    let mut taken: HashSet<String> = ops.iter().map(|(b, _, _)| b.clone()).collect();
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&ops[a], &ops[b]);
        (&x.0, x.1, x.2).cmp(&(&y.0, y.1, y.2))
    });
    let mut names = vec![String::new(); ops.len()];
    let mut next_suffix: std::collections::HashMap<&str, usize> = Default::default();
    let mut prev: Option<&str> = None;
    for i in order {
        let base = ops[i].0.as_str();
        if prev != Some(base) {
            names[i] = base.to_string();
            prev = Some(base);
            continue;
        }
        let n = next_suffix.entry(base).or_insert(2);
        loop {
            let candidate = format!("{base}_{n}");
            *n += 1;
            if taken.insert(candidate.clone()) {
                names[i] = candidate;
                break;
            }
        }
    }
    names
}

/// A path of the spec as a message shows it.
fn clip_path(path: &str) -> String {
    crate::term::clip(path, 150)
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
    resolver: &Resolver,
    old: bool,
    path: &str,
    method: &str,
    name: &str,
    op: &Value,
    shared: &Value,
) -> Result<Result<Operation, String>, OpenApiError> {
    // Only what the tool needs is resolved (never the responses: they can be huge).
    let part = format!("{} {}", method.to_uppercase(), clip_path(path));
    let resolved = |key: &str| {
        op.get(key)
            .map(|v| resolver.resolve(v, &format!("{part} {key}")))
            .transpose()
    };
    let own_params = resolved("parameters")?;
    let request_body = resolved("requestBody")?;
    match describe(
        old,
        path,
        method,
        name,
        op,
        own_params,
        shared,
        request_body,
    ) {
        Ok(mut described) => {
            // The shared schemas it reaches, once each, in its own `$defs`.
            let schema = std::mem::take(&mut described.input_schema);
            described.input_schema = resolver.with_defs(schema, &format!("{part} schemas"))?;
            Ok(Ok(described))
        }
        Err(why) => Ok(Err(why)),
    }
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
            deep: p.get("style").and_then(Value::as_str) == Some("deepObject"),
        });
    }
    for p in params.iter().filter(|p| p.location == Location::Path) {
        if !path.contains(&format!("{{{}}}", p.name)) {
            return Err(format!("path parameter {:?} is not in its path", p.name));
        }
    }
    let mut has_body = false;
    let mut form = None;
    if let Some(body) = &request_body {
        let content = body.get("content").and_then(Value::as_object);
        let json_schema = content.and_then(|c| {
            c.iter()
                .find(|(mime, _)| is_json(mime))
                .map(|(_, m)| m.get("schema").cloned().unwrap_or(json!({})))
        });
        // A form body when there is no JSON one (Stripe's): its fields, nested as deepObject.
        let form_schema = content
            .and_then(|c| c.get("application/x-www-form-urlencoded"))
            .filter(|_| json_schema.is_none())
            .map(|m| {
                let deep: Vec<String> = m
                    .get("encoding")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter(|(_, e)| e.get("style").and_then(Value::as_str) == Some("deepObject"))
                    .map(|(k, _)| k.clone())
                    .collect();
                form = Some(deep);
                m.get("schema")
                    .cloned()
                    .unwrap_or(json!({"type": "object"}))
            });
        match json_schema.or(form_schema) {
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
            None if body.get("required").and_then(Value::as_bool) == Some(true) => return Err(
                "its request body is neither JSON nor a form (application/x-www-form-urlencoded)"
                    .into(),
            ),
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
        form,
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
        let meter = super::super::budget::Meter::new(Default::default(), Default::default());
        let ops = operations(
            "s",
            &Resolver::new(&doc, &meter),
            &Filter {
                operations: &[],
                tags: &[],
                max_tools: 10,
            },
        )
        .unwrap();
        let props = ops[0].input_schema["properties"].as_object().unwrap();
        assert_eq!(props.keys().collect::<Vec<_>>(), ["X-Request-Id"]);
        assert_eq!(ops[0].params.len(), 1);
    }

    #[test]
    fn duplicate_operation_ids_get_unique_stable_names() {
        // Two `x` and an `x_2` of its own (issue 57 item 5): the second `x` is `x_3`, the
        // filter ["x"] keeps only the first, and each name is one operation.
        let doc = json!({"openapi": "3.1.0", "paths": {
            "/b": {"post": {"operationId": "x"}},
            "/a": {"get": {"operationId": "x"}},
            "/c": {"get": {"operationId": "x_2"}}
        }});
        let meter = super::super::budget::Meter::new(Default::default(), Default::default());
        let resolver = Resolver::new(&doc, &meter);
        let listed = |ops: &[String]| -> Vec<(String, String, String)> {
            operations(
                "s",
                &resolver,
                &Filter {
                    operations: ops,
                    tags: &[],
                    max_tools: 10,
                },
            )
            .unwrap()
            .into_iter()
            .map(|o| (o.name, o.method.to_string(), o.path))
            .collect()
        };
        let t = |n: &str, m: &str, p: &str| (n.to_string(), m.to_string(), p.to_string());
        assert_eq!(
            listed(&[]),
            [
                t("x", "GET", "/a"),
                t("x_2", "GET", "/c"),
                t("x_3", "POST", "/b")
            ]
        );
        assert_eq!(listed(&["x".to_string()]), [t("x", "GET", "/a")]);
        assert_eq!(listed(&["x_3".to_string()]), [t("x_3", "POST", "/b")]);
    }

    #[test]
    fn max_tools_is_checked_before_anything_is_resolved() {
        let body = json!({"content": {"application/json": {"schema": {"$ref": "#/nope"}}}});
        let doc = json!({"openapi": "3.1.0", "paths": {
            "/a": {"post": {"operationId": "a", "requestBody": body}},
            "/b": {"post": {"operationId": "b", "requestBody": body}},
            "/c": {"post": {"operationId": "c", "requestBody": body}}
        }});
        let meter = super::super::budget::Meter::new(Default::default(), Default::default());
        let run = |max_tools| {
            let f = Filter {
                operations: &[],
                tags: &[],
                max_tools,
            };
            operations("s", &Resolver::new(&doc, &meter), &f)
                .unwrap_err()
                .to_string()
        };
        assert!(run(2).contains("the spec has 3 operations, more than the server's maxTools (2)"));
        assert!(run(3).contains("the spec's $ref #/nope points to nothing"));
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
}
