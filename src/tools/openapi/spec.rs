//! Reading an OpenAPI description: from a file (relative to the config file's directory) or
//! fetched once over https (bounded in size and time), JSON or YAML, OpenAPI 3.0 or 3.1; then
//! its `$ref`s are resolved by `resolver`.

use super::budget::{self, Meter};
use super::OpenApiError;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest spec read (file or download).
pub const MAX_SPEC_BYTES: u64 = 64 * 1024 * 1024;
/// How long downloading a spec may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// Where a spec's text is: downloaded already, or a file read by [`Source::text`] (on the
/// blocking thread that loads it: a file can be slow or a pipe).
pub enum Source {
    Text(String),
    File(PathBuf),
}

/// The spec at `location` (a path relative to `base_dir`, or an http(s) URL fetched now).
pub async fn locate(
    location: &str,
    base_dir: &Path,
    client: &reqwest::Client,
) -> Result<Source, OpenApiError> {
    if location.contains("://") {
        return fetch(location, client).await.map(Source::Text);
    }
    Ok(Source::File(if Path::new(location).is_absolute() {
        Path::new(location).to_path_buf()
    } else {
        base_dir.join(location)
    }))
}

impl Source {
    /// The spec's text (at most [`MAX_SPEC_BYTES`]). Blocking.
    pub fn text(self) -> Result<String, OpenApiError> {
        let path = match self {
            Source::Text(t) => return Ok(t),
            Source::File(path) => path,
        };
        let shown = path.display().to_string();
        let fail =
            |e: std::io::Error| OpenApiError::Spec(format!("cannot read the spec {shown}: {e}"));
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_SPEC_BYTES + 1).read_to_end(&mut bytes))
            .map_err(fail)?;
        if bytes.len() as u64 > MAX_SPEC_BYTES {
            return Err(OpenApiError::Spec(format!(
                "the spec {shown} is larger than {MAX_SPEC_BYTES} bytes"
            )));
        }
        String::from_utf8(bytes).map_err(|_| {
            OpenApiError::Spec(format!(
                "cannot read the spec {shown}: it is not UTF-8 text"
            ))
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn meter() -> Meter {
        Meter::new(Default::default(), Default::default())
    }

    #[test]
    fn parses_yaml_and_json_and_refuses_swagger_2() {
        assert!(parse("openapi: 3.1.0\npaths: {}\n", &meter()).is_ok());
        assert!(parse(r#"{"openapi": "3.0.3", "paths": {}}"#, &meter()).is_ok());
        let err = parse("swagger: '2.0'\npaths: {}\n", &meter()).unwrap_err();
        assert!(err.to_string().contains("Swagger 2.0 is not supported"));
    }
}
