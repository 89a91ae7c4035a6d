//! An execution's spans, built from its socket trace when it ends and handed to the SDK's batch
//! processor: nothing is traced on the execution's path but the `traceparent` of each outgoing
//! call. Span ids come from the host's ids (`context::trace_context`), so the span a downstream
//! server was told about in `_meta.traceparent` is the span exported here.

use super::export::Counted;
use super::Started;
use crate::context::trace_context::span_id_of;
use crate::exec::outcome::Outcome;
use crate::trace::{TraceEvent, TraceKind};
use opentelemetry::trace::{
    Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Events kept on one span at most (approvals and flow decisions; a loop could make many).
const MAX_EVENTS_PER_SPAN: usize = 64;

pub(super) fn time_of(ms: f64) -> SystemTime {
    if ms.is_finite() && ms > 0.0 {
        UNIX_EPOCH + Duration::from_secs_f64(ms / 1000.0)
    } else {
        UNIX_EPOCH
    }
}

/// The spans of one finished execution, the execution's own last (it ends last).
pub(super) fn build(
    started: &Started,
    outcome: &Outcome,
    end: SystemTime,
    scope: &InstrumentationScope,
) -> Vec<SpanData> {
    let trace = started.trace;
    let flags = if trace.sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let trace_id = TraceId::from_bytes(trace.trace_id);
    let context = |span: [u8; 8]| {
        SpanContext::new(
            trace_id,
            SpanId::from_bytes(span),
            flags,
            false,
            TraceState::default(),
        )
    };
    let mut spans: Vec<SpanData> = Vec::new();
    let mut by_call: HashMap<&str, usize> = HashMap::new();
    let mut root_events: Vec<Event> = Vec::new();
    let span_of_parent = |parent: &Option<String>| match parent {
        Some(p) => span_id_of(p),
        None => trace.execution_span,
    };
    for e in &outcome.traces {
        match e.kind {
            TraceKind::ToolStart | TraceKind::CapabilityStart => {
                let capability = e.kind == TraceKind::CapabilityStart;
                let (server, tool) = e.tool.split_once(':').unwrap_or(("", &e.tool));
                let mut attributes = vec![
                    KeyValue::new("mcp.method.name", "tools/call"),
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", tool.to_string()),
                    KeyValue::new("gen_ai.tool.call.id", e.trace_id.clone()),
                    KeyValue::new("mcp_sandbox.server", server.to_string()),
                ];
                if let Some(t) = &e.transport {
                    attributes.push(KeyValue::new("network.transport", t.clone()));
                }
                if let Some(bytes) = e.bytes {
                    attributes.push(KeyValue::new(
                        "mcp_sandbox.arguments.bytes",
                        i64::try_from(bytes).unwrap_or(i64::MAX),
                    ));
                }
                let name = if capability {
                    format!("capability {}", e.tool)
                } else {
                    format!("tools/call {}", e.tool)
                };
                by_call.insert(e.trace_id.as_str(), spans.len());
                spans.push(SpanData {
                    span_context: context(span_id_of(&e.trace_id)),
                    parent_span_id: SpanId::from_bytes(span_of_parent(&e.parent_trace_id)),
                    parent_span_is_remote: false,
                    span_kind: if capability {
                        SpanKind::Internal
                    } else {
                        SpanKind::Client
                    },
                    name: Cow::Owned(name),
                    start_time: time_of(e.ts),
                    end_time: end,
                    attributes,
                    dropped_attributes_count: 0,
                    events: SpanEvents::default(),
                    links: SpanLinks::default(),
                    status: Status::Unset,
                    instrumentation_scope: scope.clone(),
                });
            }
            TraceKind::ToolEnd | TraceKind::CapabilityEnd => {
                let Some(span) = by_call.get(e.trace_id.as_str()).map(|&i| &mut spans[i]) else {
                    continue;
                };
                span.end_time = time_of(e.ts);
                let ok = e.success == Some(true);
                span.attributes
                    .push(KeyValue::new("mcp_sandbox.success", ok));
                if let Some(err) = &e.error {
                    span.attributes
                        .push(KeyValue::new("error.type", err.code.as_str()));
                    span.status = Status::error(err.code.as_str());
                }
            }
            _ => {
                let event = span_event(e);
                // Approvals name their call; flow events the tool: the latest call to it.
                let target = by_call.get(e.trace_id.as_str()).copied().or_else(|| {
                    spans.iter().rposition(|s| {
                        s.name.ends_with(&e.tool)
                            && s.parent_span_id
                                == SpanId::from_bytes(span_of_parent(&e.parent_trace_id))
                    })
                });
                match target {
                    Some(i) if spans[i].events.events.len() < MAX_EVENTS_PER_SPAN => {
                        spans[i].events.events.push(event)
                    }
                    Some(i) => spans[i].events.dropped_count += 1,
                    None if root_events.len() < MAX_EVENTS_PER_SPAN => root_events.push(event),
                    None => {}
                }
            }
        }
    }
    spans.push(execution_span(
        started,
        outcome,
        end,
        scope,
        context(trace.execution_span),
        root_events,
    ));
    spans
}

fn span_event(e: &TraceEvent) -> Event {
    let name = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut attributes = vec![KeyValue::new("mcp_sandbox.tool", e.tool.clone())];
    let mut add = |key: &'static str, v: &Option<String>| {
        if let Some(v) = v {
            attributes.push(KeyValue::new(key, v.clone()));
        }
    };
    add("mcp_sandbox.by", &e.by);
    add("mcp_sandbox.rule", &e.rule);
    add("mcp_sandbox.label", &e.label);
    add("mcp_sandbox.decision", &e.decision);
    if let Some(err) = &e.error {
        attributes.push(KeyValue::new("error.type", err.code.as_str()));
    }
    Event::new(name, time_of(e.ts), attributes, 0)
}

fn execution_span(
    started: &Started,
    outcome: &Outcome,
    end: SystemTime,
    scope: &InstrumentationScope,
    span_context: SpanContext,
    events: Vec<Event>,
) -> SpanData {
    let code = outcome.error.as_ref().map_or("OK", |e| e.code.as_str());
    let mut attributes = vec![
        KeyValue::new("mcp_sandbox.execution.id", started.execution_id.clone()),
        KeyValue::new("mcp_sandbox.outcome.code", code),
        KeyValue::new("mcp_sandbox.duration_ms", outcome.metrics.duration_ms),
        KeyValue::new("mcp_sandbox.tool_calls", outcome.metrics.tool_calls as i64),
        KeyValue::new("mcp_sandbox.front", started.front),
        KeyValue::new("mcp_sandbox.tenant", started.tenant.clone()),
    ];
    if let Some(p) = &started.principal {
        attributes.push(KeyValue::new("enduser.id", p.clone()));
    }
    if let Some(c) = &started.client {
        attributes.push(KeyValue::new("mcp_sandbox.client.name", c.clone()));
    }
    if let Some(pid) = outcome.metrics.runner_pid {
        attributes.push(KeyValue::new("mcp_sandbox.runner.pid", i64::from(pid)));
    }
    if let Some(e) = &outcome.error {
        attributes.push(KeyValue::new("error.type", e.code.as_str()));
        if let Some(sig) = e.signal {
            attributes.push(KeyValue::new("mcp_sandbox.runner.signal", i64::from(sig)));
        }
    }
    for (name, value) in &started.limits {
        attributes.push(KeyValue::new(
            format!("mcp_sandbox.limit.{name}"),
            *value as i64,
        ));
    }
    for (layer, state) in &outcome.metrics.isolation {
        attributes.push(KeyValue::new(
            format!("mcp_sandbox.isolation.{layer}"),
            state.clone(),
        ));
    }
    let parent = started.trace.parent;
    SpanData {
        span_context,
        parent_span_id: parent.map_or(SpanId::INVALID, SpanId::from_bytes),
        parent_span_is_remote: parent.is_some(),
        span_kind: SpanKind::Server,
        name: Cow::Borrowed("execute_code"),
        start_time: started.at,
        end_time: end,
        attributes,
        dropped_attributes_count: 0,
        events: {
            let mut all = SpanEvents::default();
            all.events = events;
            all
        },
        links: SpanLinks::default(),
        status: match &outcome.error {
            Some(e) => Status::error(e.code.as_str()),
            None => Status::Ok,
        },
        instrumentation_scope: scope.clone(),
    }
}

/// Hands spans to the batch processor, or counts them dropped when its queue is full.
pub(super) fn submit(exporter: &Counted, spans: Vec<SpanData>) {
    for span in spans {
        exporter.offer(span);
    }
}
