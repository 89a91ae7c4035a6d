//! The text content of an `execute_code` answer: a readable account of its `structuredContent`
//! (status, result or error, logs, tool calls, and what the output budget cut). It is rendered
//! from the answer as sent, so a cut answer's text is cut too and both count against the budget.

use serde_json::Value;
use std::fmt::Write;

/// The result is cut to this many characters in the text (more is in `structuredContent`).
pub const SUMMARY_RESULT_CHARS: usize = 4000;
const SUMMARY_LOG_LINES: usize = 20;

/// Characters of the result shown in the text of an answer whose budget is `max_output_bytes`:
/// at most an eighth of the budget (a character may take several bytes), at most 4000.
pub fn result_chars(max_output_bytes: u64) -> usize {
    usize::try_from(max_output_bytes / 8)
        .unwrap_or(usize::MAX)
        .min(SUMMARY_RESULT_CHARS)
}

/// The first `max` bytes of `value` as pretty JSON, without rendering the rest.
fn pretty_prefix(value: &Value, max: usize) -> String {
    struct Capped(Vec<u8>, usize);
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.1.saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::Error::other("enough"));
            }
            let n = buf.len().min(room);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped(Vec::new(), max);
    let _ = serde_json::to_writer_pretty(&mut out, value);
    String::from_utf8_lossy(&out.0).into_owned()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A readable account of an answer (an outcome as JSON, perhaps cut by the output budget).
pub fn summary(answer: &Value, result_chars: usize) -> String {
    let mut s = String::new();
    match answer.get("error").filter(|e| e.is_object()) {
        None if answer["success"] == Value::Bool(false) => s.push_str("failed\n"),
        None => {
            let m = &answer["metrics"];
            match (m["duration_ms"].as_f64(), m["tool_calls"].as_u64()) {
                (Some(ms), Some(calls)) => {
                    let _ = writeln!(s, "ok ({ms:.1} ms, {calls} tool calls)");
                }
                _ => s.push_str("ok\n"),
            }
            if let Some(result) = answer.get("result") {
                let mut r = pretty_prefix(result, result_chars * 4 + 4);
                if r.chars().count() > result_chars {
                    r = r.chars().take(result_chars).collect::<String>()
                        + "… (cut; the whole result is in structuredContent.result)";
                }
                let _ = writeln!(s, "result: {r}");
            }
        }
        Some(e) => {
            let _ = writeln!(s, "error {}: {}", str_of(e, "code"), str_of(e, "message"));
            if let Some(t) = e.get("tool").and_then(Value::as_str) {
                let _ = writeln!(s, "tool: {t}");
            }
            let alts: Vec<&str> = e
                .get("alternatives")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !alts.is_empty() {
                let _ = writeln!(s, "did you mean: {}", alts.join(", "));
            }
            if let Some(stack) = e.get("stack").and_then(Value::as_str) {
                let _ = writeln!(s, "stack: {stack}");
            }
        }
    }
    let logs = answer["logs"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !logs.is_empty() {
        let _ = writeln!(s, "logs:");
        for l in logs.iter().take(SUMMARY_LOG_LINES) {
            let _ = writeln!(s, "  [{}] {}", str_of(l, "level"), str_of(l, "message"));
        }
        if logs.len() > SUMMARY_LOG_LINES {
            let _ = writeln!(s, "  … {} more lines", logs.len() - SUMMARY_LOG_LINES);
        }
    }
    match answer.get("traces") {
        Some(Value::Array(traces)) => {
            let ends: Vec<&Value> = traces.iter().filter(|t| t["type"] == "tool_end").collect();
            if !ends.is_empty() {
                let _ = writeln!(s, "tool calls:");
                for t in ends {
                    let status = t["error"]["code"].as_str().unwrap_or("ok");
                    let ms = t["duration_ms"].as_f64().unwrap_or(0.0);
                    let _ = writeln!(s, "  {} {status} {ms:.1} ms", str_of(t, "tool"));
                }
            }
        }
        Some(t @ Value::Object(_)) => {
            let _ = writeln!(
                s,
                "tool calls: summarised ({} trace events; counts by kind and tool in structuredContent.traces)",
                t["events"].as_u64().unwrap_or(0)
            );
        }
        _ => {}
    }
    if answer["truncated"] == Value::Bool(true) {
        let out = &answer["output"];
        let cut: Vec<&str> = out["cut"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "truncated: the answer was over its output budget of {} bytes (max_output_bytes); cut: {}.",
            out["max_output_bytes"].as_u64().unwrap_or(0),
            cut.join(", ")
        );
        if cut.contains(&"result") {
            s.push_str("The result above is a preview (size, type, shape, first items): return less, or store() it and read it in pieces.\n");
        }
    }
    s
}
