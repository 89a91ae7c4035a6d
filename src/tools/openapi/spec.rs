//! Reading an OpenAPI description: from a file (relative to the config file's directory) or
//! fetched once over https (bounded in size and time), JSON or YAML, OpenAPI 3.0 or 3.1; then
//! its local `$ref`s (`#/components/...`) resolved in place. A remote `$ref` (another file, a
//! URL) is refused: nothing is fetched on a spec's say-so.

use super::budget::{self, Meter};
use super::OpenApiError;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Largest spec read (file or download).
pub const MAX_SPEC_BYTES: u64 = 64 * 1024 * 1024;
/// How long downloading a spec may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(20);
/// Deepest nesting of `$ref`s followed; deeper (or circular) ones become `{}` (any value).
const MAX_REF_DEPTH: usize = 12;

/// The spec's text: read from `location` (a path or an http(s) URL).
pub async fn read(
    location: &str,
    base_dir: &Path,
    client: &reqwest::Client,
) -> Result<String, OpenApiError> {
    if location.contains("://") {
        return fetch(location, client).await;
    }
    let path = if Path::new(location).is_absolute() {
        Path::new(location).to_path_buf()
    } else {
        base_dir.join(location)
    };
    let shown = path.display().to_string();
    let meta = std::fs::metadata(&path)
        .map_err(|e| OpenApiError::Spec(format!("cannot read the spec {shown}: {e}")))?;
    if meta.len() > MAX_SPEC_BYTES {
        return Err(OpenApiError::Spec(format!(
            "the spec {shown} is larger than {MAX_SPEC_BYTES} bytes"
        )));
    }
    std::fs::read_to_string(&path)
        .map_err(|e| OpenApiError::Spec(format!("cannot read the spec {shown}: {e}")))
}

async fn fetch(url: &str, client: &reqwest::Client) -> Result<String, OpenApiError> {
    let fail = |m: String| OpenApiError::Spec(format!("cannot fetch the spec {url}: {m}"));
    let work = async {
        let mut resp = client
            .get(url)
            .send()
            .await
            .map_err(|e| fail(crate::tools::catalog::error_chain(&e)))?;
        if !resp.status().is_success() {
            return Err(fail(format!("HTTP {}", resp.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| fail(crate::tools::catalog::error_chain(&e)))?
        {
            if (body.len() + chunk.len()) as u64 > MAX_SPEC_BYTES {
                return Err(fail(format!("it is larger than {MAX_SPEC_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map_err(|_| fail("it is not UTF-8 text".into()))
    };
    tokio::time::timeout(FETCH_TIMEOUT, work)
        .await
        .map_err(|_| fail(format!("no answer within {} s", FETCH_TIMEOUT.as_secs())))?
}

/// The spec's document: JSON when it starts with `{`, else YAML; an OpenAPI 3.x one. Built
/// within `meter`'s budget (size, YAML alias expansion, nesting).
pub fn parse(text: &str, meter: &Meter) -> Result<Value, OpenApiError> {
    let doc: Value = if text.trim_start().starts_with('{') {
        budget::parse_json(text, meter)?
    } else {
        budget::parse_yaml(text, meter)?
    };
    let version = doc.get("openapi").and_then(Value::as_str).unwrap_or("");
    if !version.starts_with("3.") {
        let hint = if doc.get("swagger").is_some() {
            "Swagger 2.0 is not supported; convert it to OpenAPI 3 (e.g. with swagger2openapi)"
        } else {
            "it has no \"openapi\": \"3.x\" field"
        };
        return Err(OpenApiError::Spec(format!(
            "the spec is not an OpenAPI 3.0 or 3.1 description: {hint}"
        )));
    }
    if !doc.get("paths").is_some_and(Value::is_object) {
        return Err(OpenApiError::Spec(
            "the spec has no \"paths\" object: it describes no operation".into(),
        ));
    }
    Ok(doc)
}

/// Whether the spec is OpenAPI 3.0 (whose schemas use `nullable` and boolean
/// `exclusiveMinimum`), not 3.1 (JSON Schema 2020-12).
pub fn is_3_0(doc: &Value) -> bool {
    doc.get("openapi")
        .and_then(Value::as_str)
        .is_some_and(|v| v.starts_with("3.0"))
}

/// Resolves local `$ref`s of one spec, every copy counted against its budget.
pub struct Resolver<'a> {
    pub doc: &'a Value,
    pub meter: &'a Meter,
}

impl Resolver<'_> {
    /// `value` with every local `$ref` replaced by what it points to (sibling keys of a
    /// `$ref` are kept, as 3.1 allows), for the spec's part `part` (named when the budget
    /// runs out). A remote `$ref` is an error; a circular one ends as `{}`.
    pub fn resolve(&self, value: &Value, part: &str) -> Result<Value, OpenApiError> {
        let mut stack = Vec::new();
        self.resolve_in(value, &mut stack, part)
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
        let doc = self.doc;
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    let Some(pointer) = r.strip_prefix('#') else {
                        return Err(OpenApiError::Spec(format!(
                            "the spec has a remote $ref {}: only local references (\"#/components/...\") are resolved; bundle the spec into one file first",
                            crate::term::clip(r, 200)
                        )));
                    };
                    if stack.iter().any(|s| s == r) || stack.len() >= MAX_REF_DEPTH {
                        // A recursive schema: the inner level accepts any value.
                        self.meter.resolved(budget::NODE_BYTES, part)?;
                        return Ok(Value::Object(Default::default()));
                    }
                    let target = doc.pointer(&unescape_pointer(pointer)).ok_or_else(|| {
                        OpenApiError::Spec(format!(
                            "the spec's $ref {} points to nothing",
                            crate::term::clip(r, 200)
                        ))
                    })?;
                    stack.push(r.clone());
                    let resolved = self.resolve_in(target, stack, part);
                    stack.pop();
                    let mut resolved = resolved?;
                    if let Value::Object(out) = &mut resolved {
                        for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "$ref") {
                            self.meter
                                .resolved(budget::entry_bytes(out.len(), k.len()), part)?;
                            out.insert(k.clone(), self.resolve_in(v, stack, part)?);
                        }
                    }
                    return Ok(resolved);
                }
                self.meter.resolved(budget::NODE_BYTES, part)?;
                let mut out = serde_json::Map::with_capacity(map.len());
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
}

/// A `$ref` fragment as a JSON pointer: percent-decoded (`~0`/`~1` stay as they are).
fn unescape_pointer(fragment: &str) -> String {
    percent_decode(fragment)
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
    fn resolves_local_refs_and_refuses_remote_ones() {
        let doc = json!({"components": {"schemas": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
            "B": {"type": "string"},
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}}
        }}});
        let m = meter();
        let r = Resolver {
            doc: &doc,
            meter: &m,
        };
        let a = r
            .resolve(&json!({"$ref": "#/components/schemas/A"}), "t")
            .unwrap();
        assert_eq!(
            a,
            json!({"type": "object", "properties": {"b": {"type": "string"}}})
        );
        let node = r
            .resolve(&json!({"$ref": "#/components/schemas/Node"}), "t")
            .unwrap();
        assert_eq!(node["properties"]["next"], json!({}));
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
    fn parses_yaml_and_json_and_refuses_swagger_2() {
        assert!(parse("openapi: 3.1.0\npaths: {}\n", &meter()).is_ok());
        assert!(parse(r#"{"openapi": "3.0.3", "paths": {}}"#, &meter()).is_ok());
        let err = parse("swagger: '2.0'\npaths: {}\n", &meter()).unwrap_err();
        assert!(err.to_string().contains("Swagger 2.0 is not supported"));
    }
}
