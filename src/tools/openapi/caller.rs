//! Sending one request of an OpenAPI tool and reading its answer: within the API's
//! concurrency cap and the call's timeout, redirects not followed (the client has none), the
//! body read chunk by chunk and given up at `maxResponseBytes` (a `Content-Length` over it is
//! refused before any byte is read). The result is `{status, body}`: the body parsed as JSON
//! when it is JSON, else its text. A non-2xx answer is `TOOL_ERROR` with the status and an
//! excerpt of the body; the size cap is `LIMIT_EXCEEDED`; the timeout `TOOL_TIMEOUT`.

use super::credentials::Credentials;
use super::operations::Operation;
use super::redact::Redactor;
use super::request::Built;
use crate::error::{ErrorCode, ExecError};
use serde_json::{json, Value};
use std::time::Duration;

/// Longest excerpt of an error answer put into the error message.
const EXCERPT_CHARS: usize = 500;

/// What one API's calls share.
pub struct Caller {
    pub server: String,
    pub client: reqwest::Client,
    pub credentials: Credentials,
    pub permits: tokio::sync::Semaphore,
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl Caller {
    /// Sends `built` for `op` and maps the answer (see the module docs).
    pub async fn call(
        &self,
        op: &Operation,
        built: Built,
        timeout: Duration,
    ) -> Result<Value, ExecError> {
        let tool = op.name.clone();
        let work = self.send(op, built);
        match tokio::time::timeout(timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(ExecError::new(
                ErrorCode::ToolTimeout,
                format!(
                    "{}.{tool} got no complete answer within {} ms (the server's timeoutMs, or what was left of the execution); raise timeoutMs in its entry if the API is slow",
                    self.server,
                    timeout.as_millis()
                ),
            )
            .with_tool(tool)),
        }
    }

    async fn send(&self, op: &Operation, built: Built) -> Result<Value, ExecError> {
        let tool = op.name.as_str();
        let fail = |code: ErrorCode, m: String| ExecError::new(code, m).with_tool(tool);
        let _permit = self.permits.acquire().await.map_err(|_| {
            fail(
                ErrorCode::ServerUnavailable,
                format!("server '{}' was shut down", self.server),
            )
        })?;
        let Built {
            mut url,
            headers: params,
            body,
        } = built;
        // A credential travels only as the config says: a script's value for its query
        // parameter is dropped.
        let secret_names = self.credentials.query_names();
        if !secret_names.is_empty() && url.query().is_some() {
            let kept: Vec<(String, String)> = url
                .query_pairs()
                .filter(|(k, _)| !secret_names.contains(&k.as_ref()))
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            url.set_query(None);
            if !kept.is_empty() {
                url.query_pairs_mut().extend_pairs(kept.iter());
            }
        }
        let mut headers = reqwest::header::HeaderMap::new();
        for (k, v) in params {
            headers.insert(k, v);
        }
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("application/json, */*;q=0.5"),
        );
        if let Some((_, content_type)) = &body {
            headers.insert(
                reqwest::header::CONTENT_TYPE,
                reqwest::header::HeaderValue::from_static(content_type),
            );
        }
        self.credentials
            .apply(&self.client, &op.security, &mut url, &mut headers)
            .await
            .map_err(|m| {
                fail(
                    ErrorCode::ServerUnavailable,
                    format!("server '{}': {m}", self.server),
                )
            })?;
        let mut request = self.client.request(op.method.clone(), url).headers(headers);
        if let Some((b, _)) = body {
            request = request.body(b);
        }
        tracing::debug!(server = %self.server, tool = %tool, method = %op.method, "OpenAPI request");
        let mut resp = request.send().await.map_err(|e| {
            let sent = if e.is_connect() {
                "the request was not sent"
            } else {
                "the request may have reached the API"
            };
            fail(
                ErrorCode::ServerUnavailable,
                // Without the URL: its query may hold an API key.
                format!(
                    "server '{}' cannot be reached ({sent}): {}",
                    self.server,
                    crate::tools::catalog::error_chain(&e.without_url())
                ),
            )
        })?;
        let status = resp.status();
        let too_large = || {
            fail(
                ErrorCode::LimitExceeded,
                format!(
                    "the answer of {}.{tool} is larger than its maxResponseBytes ({} bytes); it was not read further: ask for less (a filter, a smaller page) or raise maxResponseBytes in the server's entry",
                    self.server, self.max_bytes
                ),
            )
        };
        if resp.content_length().is_some_and(|n| n > self.max_bytes) {
            return Err(too_large());
        }
        let is_json = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                let m = ct
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                m == "application/json" || m.ends_with("+json")
            });
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            let chunk = resp.chunk().await.map_err(|e| {
                fail(
                    ErrorCode::ToolError,
                    format!(
                        "the answer of {}.{tool} broke off: {}",
                        self.server,
                        crate::tools::catalog::error_chain(&e.without_url())
                    ),
                )
            })?;
            let Some(chunk) = chunk else { break };
            if (bytes.len() + chunk.len()) as u64 > self.max_bytes {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let excerpt = crate::term::clip(&self.credentials.redact(&text), EXCERPT_CHARS);
            let what = if status.is_redirection() {
                " (redirects are not followed: the API's baseUrl may be wrong)"
            } else {
                ""
            };
            return Err(fail(
                ErrorCode::ToolError,
                format!("HTTP {status}{what} from {}.{tool}: {excerpt}", self.server),
            ));
        }
        // The body as the script gets it, every credential it echoes redacted (a large one on a
        // blocking thread: parsing and scanning megabytes is CPU work).
        let redactor = self.credentials.redactor();
        let body = if bytes.len() > BLOCKING_BODY_BYTES {
            tokio::task::spawn_blocking(move || answer_body(bytes, is_json, &redactor))
                .await
                .map_err(|e| {
                    fail(
                        ErrorCode::ToolError,
                        format!("reading the answer of {}.{tool} failed: {e}", self.server),
                    )
                })?
        } else {
            answer_body(bytes, is_json, &redactor)
        };
        Ok(json!({"status": status.as_u16(), "body": body}))
    }
}

/// Bodies larger than this are parsed and redacted on a blocking thread.
const BLOCKING_BODY_BYTES: usize = 64 * 1024;

/// An answer's body: parsed when it is JSON, else its text (`null` when empty); every
/// credential in it redacted, in each string and key (so an escaped spelling in the JSON text
/// is matched once decoded).
fn answer_body(bytes: Vec<u8>, is_json: bool, redactor: &Redactor) -> Value {
    let text = |b: &[u8]| redactor.text(&String::from_utf8_lossy(b));
    if bytes.is_empty() {
        return Value::Null;
    }
    if is_json {
        if let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) {
            redactor.value(&mut v);
            return v;
        }
    }
    Value::String(text(&bytes))
}
