//! Trace events recorded by the host at the socket boundary, and their renderings (table, JSON
//! lines, Mermaid sequence diagram).

use crate::error::{ErrorCode, ExecError};
use crate::term::escape;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    ToolStart,
    ToolEnd,
    CapabilityStart,
    CapabilityEnd,
    /// A call an `ask` rule matched waits for approval (`rule` says which).
    ApprovalRequested,
    /// It was approved (`by`: elicitation, tty, flag).
    ApprovalGranted,
    /// It was refused (`by`: elicitation, tty, flag, timeout), with the error the script gets.
    ApprovalDenied,
    /// A capability call runs a version saved by another principal than the version before it
    /// (`by`: this version's author; `rule`: which versions, saved by whom).
    CapabilityAuthorChanged,
    /// The script read session state: `load(key)` or `keys()` (`key`, `bytes`).
    StateLoad,
    /// The script wrote session state: `store(key, value)` or `remove(key)` (`key`, `bytes`).
    StateStore,
    /// The execution read data of a flow label for the first time (`label`; `tool`: whose
    /// answer brought it, `rule`: `earlier` when an earlier execution of the session read it).
    LabelAdded,
    /// A flow rule refused or asked for a call (`tool`, `rule`, `label`: the called tool's,
    /// `decision`: `deny` or `ask`).
    FlowDecision,
}

/// The `{code, message}` of a failed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceError {
    pub code: ErrorCode,
    pub message: String,
}

impl From<&ExecError> for TraceError {
    fn from(e: &ExecError) -> Self {
        TraceError {
            code: e.code,
            message: e.message.clone(),
        }
    }
}

/// One event, exactly in the design's format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    #[serde(rename = "type")]
    pub kind: TraceKind,
    /// `server:tool`
    pub tool: String,
    pub trace_id: String,
    pub parent_trace_id: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub ts: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TraceError>,
    /// Approval events: who or what answered (`elicitation`, `tty`, `flag`, `timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// `approval_granted`/`approval_denied` by `web`: the principal who answered on the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// `approval_requested`: the policy rule that asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// `tool_start`/`tool_end` of a call to a remote MCP server: `http` (streamable HTTP).
    /// Absent for stdio servers and in-process tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// `state_load`/`state_store`: the key (`*` for `keys()`); the value is never traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `state_load`/`state_store`: bytes of JSON loaded or stored. `tool_start`/
    /// `capability_start`: the size of the call's arguments as JSON (for a frame too large to
    /// decode, the frame's size). Never the values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// `label_added`/`flow_decision`: the data-flow label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `flow_decision`: `deny` or `ask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
}

/// Milliseconds since the Unix epoch, with sub-millisecond precision.
pub fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

pub fn new_trace_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// How to print traces on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    Table,
    Json,
    Mermaid,
}

pub fn render(events: &[TraceEvent], format: TraceFormat) -> String {
    match format {
        TraceFormat::Table => table(events),
        TraceFormat::Json => events
            .iter()
            .filter_map(|e| serde_json::to_string(e).ok())
            .map(|l| l + "\n")
            .collect(),
        TraceFormat::Mermaid => mermaid(events),
    }
}

/// One row per finished call: tool, duration, status.
/// Names and messages are escaped (`crate::term::escape`): one line per call, whatever they hold.
fn table(events: &[TraceEvent]) -> String {
    let ends: Vec<&TraceEvent> = events.iter().filter(|e| is_end(e)).collect();
    let width = ends
        .iter()
        .map(|e| escape(&e.tool).len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!("{:<width$}  {:>10}  {}\n", "TOOL", "MS", "STATUS");
    for e in ends {
        let status = match (approval_status(e), &e.success, &e.error) {
            (Some(s), _, _) => s,
            (None, Some(true), _) => "ok".to_string(),
            (None, _, Some(err)) => format!("{}: {}", err.code, escape(&err.message)),
            _ => "failed".to_string(),
        };
        out.push_str(&format!(
            "{:<width$}  {:>10.2}  {}\n",
            escape(&e.tool),
            e.duration_ms.unwrap_or(0.0),
            status
        ));
    }
    out
}

fn is_end(e: &TraceEvent) -> bool {
    matches!(
        e.kind,
        TraceKind::ToolEnd
            | TraceKind::CapabilityEnd
            | TraceKind::ApprovalGranted
            | TraceKind::ApprovalDenied
    ) || is_state(e)
}

/// A `state_load`/`state_store` event (one event per operation, no start/end pair).
pub fn is_state(e: &TraceEvent) -> bool {
    matches!(e.kind, TraceKind::StateLoad | TraceKind::StateStore)
}

/// A `label_added`/`flow_decision` event (the host's data-flow bookkeeping).
pub fn is_flow(e: &TraceEvent) -> bool {
    matches!(e.kind, TraceKind::LabelAdded | TraceKind::FlowDecision)
}

/// A table row's status for an approval answer (its duration is the wait).
fn approval_status(e: &TraceEvent) -> Option<String> {
    let by = escape(e.by.as_deref().unwrap_or("?"));
    match e.kind {
        TraceKind::ApprovalGranted => Some(format!("approval granted by {by}")),
        TraceKind::ApprovalDenied => Some(match &e.error {
            Some(err) => format!("approval denied by {by}: {}", escape(&err.message)),
            None => format!("approval denied by {by}"),
        }),
        _ => None,
    }
}

/// A Mermaid `sequenceDiagram`: script → host → server for each call, with durations.
fn mermaid(events: &[TraceEvent]) -> String {
    let mut servers: Vec<&str> = Vec::new();
    // Session state and flow labels are the host's own: no participant of their own.
    for e in events.iter().filter(|e| !is_state(e) && !is_flow(e)) {
        let server = e.tool.split(':').next().unwrap_or("");
        if !servers.contains(&server) {
            servers.push(server);
        }
    }
    let mut out =
        String::from("sequenceDiagram\n    participant S as script\n    participant H as host\n");
    for s in &servers {
        out.push_str(&format!(
            "    participant {} as {}\n",
            id(s),
            mermaid_text(s)
        ));
    }
    for e in events {
        let (server, tool) = e.tool.split_once(':').unwrap_or((&e.tool, ""));
        let tool = mermaid_text(tool);
        match e.kind {
            TraceKind::ToolStart | TraceKind::CapabilityStart => {
                out.push_str(&format!(
                    "    S->>H: {tool}\n    H->>{}: {tool}\n",
                    id(server)
                ));
            }
            TraceKind::ToolEnd | TraceKind::CapabilityEnd => {
                let ms = e.duration_ms.unwrap_or(0.0);
                let status = match &e.error {
                    Some(err) => err.code.as_str().to_string(),
                    None => "ok".to_string(),
                };
                out.push_str(&format!(
                    "    {}-->>H: {status} ({ms:.1} ms)\n    H-->>S: {tool} {status}\n",
                    id(server)
                ));
            }
            TraceKind::ApprovalRequested => {
                let rule = mermaid_text(e.rule.as_deref().unwrap_or(""));
                out.push_str(&format!(
                    "    Note over H: {tool} waits for approval ({rule})\n"
                ));
            }
            TraceKind::ApprovalGranted | TraceKind::ApprovalDenied => {
                let ms = e.duration_ms.unwrap_or(0.0);
                let by = mermaid_text(e.by.as_deref().unwrap_or("?"));
                let what = if e.kind == TraceKind::ApprovalGranted {
                    "approved"
                } else {
                    "denied"
                };
                out.push_str(&format!(
                    "    Note over H: {tool} {what} by {by} after {ms:.1} ms\n"
                ));
            }
            TraceKind::CapabilityAuthorChanged => {
                let rule = mermaid_text(e.rule.as_deref().unwrap_or(""));
                out.push_str(&format!("    Note over H: {tool}: {rule}\n"));
            }
            TraceKind::StateLoad | TraceKind::StateStore => {
                let key = mermaid_text(e.key.as_deref().unwrap_or(""));
                let status = match &e.error {
                    Some(err) => err.code.as_str().to_string(),
                    None => format!("{} bytes", e.bytes.unwrap_or(0)),
                };
                out.push_str(&format!("    S->>H: {tool}({key}) {status}\n"));
            }
            TraceKind::LabelAdded => {
                let label = mermaid_text(e.label.as_deref().unwrap_or(""));
                let tool = mermaid_text(&e.tool);
                out.push_str(&format!("    Note over H: read {label} data from {tool}\n"));
            }
            TraceKind::FlowDecision => {
                let rule = mermaid_text(e.rule.as_deref().unwrap_or(""));
                let decision = mermaid_text(e.decision.as_deref().unwrap_or(""));
                let label = mermaid_text(e.label.as_deref().unwrap_or(""));
                out.push_str(&format!(
                    "    Note over H: {tool} is {label}: {decision} ({rule})\n"
                ));
            }
        }
    }
    out
}

/// Text for a Mermaid line: control characters escaped, and the characters that end or start
/// Mermaid syntax (`;`, `#`, `%`) replaced, so a name cannot add statements to the diagram.
fn mermaid_text(s: &str) -> String {
    escape(s)
        .chars()
        .map(|c| if matches!(c, ';' | '#' | '%') { '_' } else { c })
        .collect()
}

/// A Mermaid-safe participant id.
fn id(server: &str) -> String {
    let clean: String = server
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("srv_{clean}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_in_the_design_format() {
        let e = TraceEvent {
            kind: TraceKind::ToolEnd,
            tool: "filesystem:read_file".into(),
            trace_id: "t".into(),
            parent_trace_id: None,
            ts: 1.5,
            success: Some(true),
            duration_ms: Some(45.2),
            error: None,
            by: None,
            rule: None,
            transport: None,
            key: None,
            bytes: None,
            label: None,
            decision: None,
            approver: None,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"tool_end","tool":"filesystem:read_file","trace_id":"t","parent_trace_id":null,"ts":1.5,"success":true,"duration_ms":45.2}"#
        );
        let m = render(&[e], TraceFormat::Mermaid);
        assert!(m.starts_with("sequenceDiagram\n"), "{m}");
        assert!(m.contains("srv_filesystem-->>H: ok (45.2 ms)"), "{m}");
    }

    #[test]
    fn approval_events_render_in_every_format() {
        let ev =
            |kind, by: Option<&str>, rule: Option<&str>, error: Option<TraceError>| TraceEvent {
                kind,
                tool: "fs:write_file".into(),
                trace_id: "t".into(),
                parent_trace_id: None,
                ts: 1.0,
                success: None,
                duration_ms: Some(1500.0),
                error,
                by: by.map(str::to_string),
                rule: rule.map(str::to_string),
                transport: None,
                key: None,
                bytes: None,
                label: None,
                decision: None,
                approver: None,
            };
        let denied = TraceError {
            code: ErrorCode::PermissionDenied,
            message: "fs:write_file was denied by the person asked (tty): no".into(),
        };
        let events = [
            ev(
                TraceKind::ApprovalRequested,
                None,
                Some("config rule ask \"fs:write_*\""),
                None,
            ),
            ev(TraceKind::ApprovalGranted, Some("tty"), None, None),
            ev(
                TraceKind::ApprovalDenied,
                Some("timeout"),
                None,
                Some(denied),
            ),
        ];
        let json = render(&events, TraceFormat::Json);
        let lines: Vec<&str> = json.lines().collect();
        assert!(
            lines[0].contains(r#""type":"approval_requested""#)
                && lines[0].contains(r#""rule":"config rule ask \"fs:write_*\"""#),
            "{json}"
        );
        assert!(
            lines[1].contains(r#""type":"approval_granted""#) && lines[1].contains(r#""by":"tty""#)
        );
        assert!(lines[2].contains(r#""by":"timeout""#) && lines[2].contains("PERMISSION_DENIED"));
        let table = render(&events, TraceFormat::Table);
        assert!(
            table.contains("1500.00  approval granted by tty\n"),
            "{table}"
        );
        assert!(
            table.contains("approval denied by timeout: fs:write_file was denied by the person asked (tty): no"),
            "{table}"
        );
        let m = render(&events, TraceFormat::Mermaid);
        assert!(
            m.contains(
                "Note over H: write_file waits for approval (config rule ask \"fs:write_*\")"
            ),
            "{m}"
        );
        assert!(
            m.contains("Note over H: write_file approved by tty after 1500.0 ms"),
            "{m}"
        );
        assert!(
            m.contains("Note over H: write_file denied by timeout after 1500.0 ms"),
            "{m}"
        );
    }
}
