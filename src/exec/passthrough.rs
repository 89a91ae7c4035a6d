//! One execution's [`Feedback`]: its servers' log messages become log lines of the execution
//! (tagged `[server]`, within the execution's log budget); progress goes to the front's
//! receiver, if the front gave one (`serve`: progress of the `execute_code` request). With
//! `sandbox.sensitive`, what goes to the front before the end is redacted — progress messages,
//! log lines, and every string of a server's elicitation and sampling requests (`_meta` too) —
//! with the session's placeholders; the collected log lines are redacted with the outcome. The client's answer to
//! such a request goes back to the server as the client wrote it.

use crate::exec::outcome::LogLine;
use crate::exec::placeholders::ExecPlaceholders;
use crate::tools::passthrough::{Feedback, Forward};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Collects the servers' log lines until the session takes them; bounded by `max_bytes`.
pub struct ExecFeedback {
    lines: Mutex<(Vec<LogLine>, u64)>,
    max_bytes: u64,
    upstream: Option<Arc<dyn Feedback>>,
    /// The execution's wall-clock deadline: a forwarded request does not outlive it.
    deadline: tokio::time::Instant,
    /// `tenant/principal` (see [`Feedback::owner`]).
    owner: String,
    /// With `sandbox.sensitive`: progress messages reach the client redacted, like the outcome.
    placeholders: Option<Arc<ExecPlaceholders>>,
}

impl ExecFeedback {
    pub fn new(
        max_bytes: u64,
        upstream: Option<Arc<dyn Feedback>>,
        deadline: tokio::time::Instant,
    ) -> Self {
        ExecFeedback {
            lines: Mutex::new((Vec::new(), 0)),
            max_bytes,
            upstream,
            deadline,
            owner: String::new(),
            placeholders: None,
        }
    }

    /// The same, for an execution of `owner` (`tenant/principal`).
    pub fn owned_by(mut self, owner: String) -> Self {
        self.owner = owner;
        self
    }

    /// The same, redacting what reaches the client before the end with `placeholders`.
    pub fn redacting(mut self, placeholders: Option<Arc<ExecPlaceholders>>) -> Self {
        self.placeholders = placeholders;
        self
    }

    /// The lines collected since the last call.
    pub fn take(&self) -> Vec<LogLine> {
        self.lines
            .lock()
            .map(|mut l| std::mem::take(&mut l.0))
            .unwrap_or_default()
    }
}

/// `request` with every string of its params redacted, object keys too, `_meta` included (a
/// server may echo there what the script sent it): the elicitation's message and schema texts,
/// the sampling messages' content (text, and text in any other block), the system prompt, and
/// whatever protocol data the server added.
fn redacted(p: &ExecPlaceholders, request: Forward) -> Forward {
    let redact = |mut params: Value| {
        p.redact_value(&mut params);
        params
    };
    match request {
        Forward::Elicit(params) => Forward::Elicit(redact(params)),
        Forward::Sample(params) => Forward::Sample(redact(params)),
    }
}

impl Feedback for ExecFeedback {
    fn owner(&self) -> &str {
        &self.owner
    }

    fn progress(&self, server: &str, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(up) = &self.upstream {
            let message = match (&self.placeholders, message) {
                (Some(p), Some(m)) => Some(p.redact_text(&m)),
                (_, m) => m,
            };
            up.progress(server, progress, total, message);
        }
    }

    fn forward(&self, server: &str, request: Forward) -> BoxFuture<'static, Result<Value, String>> {
        let Some(up) = &self.upstream else {
            return Box::pin(async {
                Err("there is no MCP client to ask (mcp-sandbox run)".into())
            });
        };
        let request = match &self.placeholders {
            Some(p) => redacted(p, request),
            None => request,
        };
        let asked = up.forward(server, request);
        let deadline = self.deadline;
        Box::pin(async move {
            tokio::time::timeout_at(deadline, asked)
                .await
                .unwrap_or_else(|_| {
                    Err("the execution's time ran out before the client answered".into())
                })
        })
    }

    fn log(&self, server: &str, level: &str, message: String) {
        if let Some(up) = &self.upstream {
            let shown = match &self.placeholders {
                Some(p) => p.redact_text(&message),
                None => message.clone(),
            };
            up.log(server, level, shown);
        }
        let message = format!("[{server}] {message}");
        if let Ok(mut l) = self.lines.lock() {
            // Past the budget the session's own log limit says so; here the lines just stop.
            let cost = message.len() as u64 + crate::exec::outcome::LOG_LINE_OVERHEAD;
            if l.1 + cost > self.max_bytes {
                return;
            }
            l.1 += cost;
            l.0.push(LogLine {
                level: level.to_string(),
                message,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every string of `v`: its values and its object keys.
    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(m) => {
                for (k, x) in m {
                    out.push(k.clone());
                    strings(x, out);
                }
            }
            _ => {}
        }
    }

    /// A hostile server echoes what the script sent it everywhere a question can carry it: the
    /// message, the schema, `_meta` (a value, a key, nested), the sampling messages and system
    /// prompt. Every string the client would get holds a placeholder, none the real value.
    #[tokio::test]
    async fn every_string_of_a_relayed_question_is_redacted() {
        let config: crate::context::sensitive::SensitiveConfig =
            serde_json::from_value(json!({"detect": ["email"]})).unwrap();
        let sensitive = crate::context::sensitive::Sensitive::compile(&config).unwrap();
        let p = ExecPlaceholders::open(sensitive, None, None).await.unwrap();
        let real = "ada7@example.com";
        let said = format!("write to {real}");
        let meta = json!({"io.example/echo": said, "io.example/by-key": {real: [said, {"deep": real}]},
                          "progressToken": said});
        let elicit = json!({"message": said, "mode": "form", "_meta": meta,
            "requestedSchema": {"type": "object", "properties": {real: {"type": "string", "description": said}}}});
        let sample = json!({"messages": [{"role": "user", "content": {"type": "text", "text": said}}],
            "systemPrompt": said, "maxTokens": 10, "_meta": meta});
        for request in [Forward::Elicit(elicit), Forward::Sample(sample)] {
            let (Forward::Elicit(shown) | Forward::Sample(shown)) = redacted(&p, request);
            let mut all = Vec::new();
            strings(&shown, &mut all);
            assert!(all.iter().all(|s| !s.contains(real)), "{shown}");
            let mut meta_strings = Vec::new();
            strings(&shown["_meta"], &mut meta_strings);
            let marked = meta_strings
                .iter()
                .filter(|s| s.contains("⟪email:"))
                .count();
            assert_eq!(marked, 5, "every string of _meta that held it: {shown}");
        }
    }
}
