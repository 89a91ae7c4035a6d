//! Telemetry: OpenTelemetry traces (OTLP over HTTP/protobuf) and Prometheus metrics, both made
//! from what an execution already records — its socket trace and its outcome — when it ends.
//!
//! - [`Telemetry::begin`] gives a top-level request its trace (the incoming `traceparent`'s, or a
//!   new one) and the sampler's decision; `tools/catalog/mcp_client.rs` sends each call's
//!   `traceparent` downstream from it.
//! - [`Telemetry::finish`] builds the spans (`spans`) and hands them to the batch exporter
//!   (`export`), and counts the outcome (`metrics`).
//!
//! Off (no endpoint in the config or the environment, and no metrics asked for) the sandbox has
//! no `Telemetry` at all. Sits between `sandbox.rs` and `exec/`: may import `exec` and below;
//! `sandbox.rs` and `front/` import it.

mod export;
mod http_client;
pub mod metrics;
mod spans;

use crate::config::telemetry::{sampler_kind, SamplerKind, TelemetryConfig};
use crate::context::trace_context::{span_id_of, trace_id_of, RemoteParent, TraceContext};
use crate::context::RequestContext;
use crate::exec::outcome::Outcome;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Context, InstrumentationScope};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, ShouldSample};
use opentelemetry_sdk::Resource;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use export::ExportStats;

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry: {0}")]
    Setup(String),
}

/// The spans' way out: sampler, scope and the counted batch exporter.
struct Traces {
    sampler: Sampler,
    /// What decides for a parent the host does not trust (an unauthenticated caller's): the
    /// sampler's own rule for a trace without a parent (`parentbased_X`: X).
    root: Box<dyn ShouldSample>,
    scope: InstrumentationScope,
    exporter: export::Counted,
}

/// What the host exports. `None` parts are off.
pub struct Telemetry {
    traces: Option<Traces>,
    metrics: Option<Arc<metrics::Metrics>>,
}

/// What [`Telemetry::finish`] needs of a request that has gone into the sandbox.
pub struct Started {
    at: SystemTime,
    trace: TraceContext,
    execution_id: String,
    tenant: String,
    principal: Option<String>,
    /// The MCP client's name as it gave it (`initialize`, or the request's `_meta`).
    client: Option<String>,
    front: &'static str,
    limits: BTreeMap<&'static str, u64>,
}

/// `OTEL_SDK_DISABLED=true` turns every signal off, as the specification says.
fn sdk_disabled() -> bool {
    std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Telemetry {
    /// Traces from the config and the standard environment variables (the config wins), and
    /// metrics when `metrics` is set. `None` when both are off. Must be called within the tokio
    /// runtime the exporter will use.
    pub fn new(config: &TelemetryConfig, metrics: bool) -> Result<Option<Self>, TelemetryError> {
        let traces = if trace_wanted(config) {
            Some(traces(config)?)
        } else {
            None
        };
        if traces.is_none() && !metrics {
            return Ok(None);
        }
        Ok(Some(Telemetry {
            traces,
            metrics: metrics.then(|| Arc::new(metrics::Metrics::new())),
        }))
    }

    pub fn traces_on(&self) -> bool {
        self.traces.is_some()
    }

    pub fn metrics(&self) -> Option<&Arc<metrics::Metrics>> {
        self.metrics.as_ref()
    }

    pub fn export_stats(&self) -> Option<&ExportStats> {
        self.traces.as_ref().map(|t| &*t.exporter.stats)
    }

    /// Gives a top-level request its trace (traces on) and notes what `finish` will need.
    pub fn begin(&self, request: &mut RequestContext) -> Option<Started> {
        let at = SystemTime::now();
        let trace = match &self.traces {
            Some(t) => {
                let trace = t.context_for(request);
                request.trace = Some(trace);
                trace
            }
            None => TraceContext {
                trace_id: [0; 16],
                execution_span: [0; 8],
                parent: None,
                sampled: false,
            },
        };
        let l = &request.limits;
        let principal = &request.caller.principal;
        Some(Started {
            at,
            trace,
            execution_id: request.execution_id.clone(),
            tenant: request.caller.tenant.clone(),
            principal: (principal != "anonymous" && principal != "local")
                .then(|| principal.clone()),
            client: request.caller.client.clone(),
            front: request.caller.front,
            limits: BTreeMap::from([
                ("timeout_ms", l.timeout_ms),
                ("cpu_ms", l.cpu_ms),
                ("memory_mb", l.memory_mb),
                ("max_calls", l.max_calls),
                ("max_concurrent_calls", l.max_concurrent_calls),
                ("call_timeout_ms", l.call_timeout_ms),
            ]),
        })
    }

    /// Exports the execution's spans (when sampled) and counts its outcome.
    pub fn finish(&self, started: Started, outcome: &Outcome) {
        let end = SystemTime::now();
        if let Some(m) = &self.metrics {
            let seconds = end
                .duration_since(started.at)
                .unwrap_or(Duration::ZERO)
                .as_secs_f64();
            m.observe(outcome, seconds);
        }
        if let Some(t) = &self.traces {
            if started.trace.sampled {
                let spans = spans::build(&started, outcome, end, &t.scope);
                spans::submit(&t.exporter, spans);
            }
        }
    }

    /// Exports what is still queued (at shutdown; bounded by the export timeout).
    pub fn shutdown(&self) {
        if let Some(t) = &self.traces {
            t.exporter.flush();
            t.exporter.shutdown();
        }
    }
}

/// Whether traces are asked for: an endpoint in the config or the environment, unless the
/// config says `enabled: false` or `OTEL_SDK_DISABLED=true`.
fn trace_wanted(config: &TelemetryConfig) -> bool {
    if sdk_disabled() || config.enabled == Some(false) {
        return false;
    }
    config.enabled == Some(true)
        || config.endpoint.is_some()
        || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
}

fn traces(config: &TelemetryConfig) -> Result<Traces, TelemetryError> {
    let setup = TelemetryError::Setup;
    let timeout = env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .or_else(|| env("OTEL_EXPORTER_OTLP_TIMEOUT"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis);
    let client = http_client::RuntimeClient::new(timeout).map_err(setup)?;
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(client)
        .with_timeout(timeout);
    if let Some(base) = &config.endpoint {
        let base = base.trim_end_matches('/');
        builder = builder.with_endpoint(format!("{base}/v1/traces"));
    }
    if !config.headers.is_empty() {
        builder = builder.with_headers(config.headers.clone().into_iter().collect());
    }
    let exporter = builder
        .build()
        .map_err(|e| setup(format!("cannot set up the OTLP exporter: {e}")))?;
    let service = config
        .service_name
        .clone()
        .or_else(|| env("OTEL_SERVICE_NAME"))
        .unwrap_or_else(|| "mcp-sandbox".to_string());
    let resource = Resource::builder().with_service_name(service).build();
    let max_queue = config
        .max_queue
        .or_else(|| env("OTEL_BSP_MAX_QUEUE_SIZE").and_then(|v| v.trim().parse().ok()))
        .filter(|n| *n > 0)
        .unwrap_or(2048);
    let sampler = sampler(config)?;
    Ok(Traces {
        root: root_of(&sampler),
        sampler,
        scope: InstrumentationScope::builder("mcp-sandbox")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
        exporter: export::Counted::new(exporter, &resource, max_queue),
    })
}

/// The sampler of the config, else of `OTEL_TRACES_SAMPLER`/`_ARG`, else parent-based always-on.
fn sampler(config: &TelemetryConfig) -> Result<Sampler, TelemetryError> {
    let name = config
        .sampler
        .clone()
        .or_else(|| env("OTEL_TRACES_SAMPLER"))
        .unwrap_or_else(|| "parentbased_always_on".to_string());
    let kind = sampler_kind(name.trim()).ok_or_else(|| {
        TelemetryError::Setup(format!(
            "unknown sampler {name:?} (OTEL_TRACES_SAMPLER or sandbox.telemetry.sampler)"
        ))
    })?;
    let ratio = config
        .sampler_arg
        .or_else(|| env("OTEL_TRACES_SAMPLER_ARG").and_then(|v| v.trim().parse().ok()))
        .unwrap_or(1.0)
        .clamp(0.0, 1.0);
    let parent = |s: Sampler| Sampler::ParentBased(Box::new(s));
    Ok(match kind {
        SamplerKind::AlwaysOn => Sampler::AlwaysOn,
        SamplerKind::AlwaysOff => Sampler::AlwaysOff,
        SamplerKind::Ratio => Sampler::TraceIdRatioBased(ratio),
        SamplerKind::ParentAlwaysOn => parent(Sampler::AlwaysOn),
        SamplerKind::ParentAlwaysOff => parent(Sampler::AlwaysOff),
        SamplerKind::ParentRatio => parent(Sampler::TraceIdRatioBased(ratio)),
    })
}

/// The rule of `sampler` for a trace without a parent.
fn root_of(sampler: &Sampler) -> Box<dyn ShouldSample> {
    match sampler {
        Sampler::ParentBased(root) => root.clone(),
        other => Box::new(other.clone()),
    }
}

/// Whether a request's `traceparent` flag is believed: not from an unauthenticated caller of
/// `serve --http` (anyone who can reach it), who could otherwise have any trace exported, under
/// any trace id, whatever the operator's sampler says.
fn trusted_parent(request: &RequestContext) -> bool {
    request.caller.principal != "anonymous"
}

impl Traces {
    /// The request's trace: its `traceparent`'s, or one of its own; sampled or not.
    fn context_for(&self, request: &RequestContext) -> TraceContext {
        let execution_span = span_id_of(&request.execution_id);
        let (trace_id, parent) = match request.traceparent {
            Some(p) => (p.trace_id, Some(p)),
            None => (trace_id_of(&request.execution_id), None),
        };
        TraceContext {
            trace_id,
            execution_span,
            parent: parent.map(|p| p.span_id),
            sampled: sampled(
                &self.sampler,
                self.root.as_ref(),
                parent,
                trusted_parent(request),
                trace_id,
            ),
        }
    }
}

/// The sampling decision for a trace `trace_id` with `parent`: `sampler`'s, or `root`'s when
/// the parent is not `trusted` (its flag is then ignored; it still names the trace and the
/// parent span).
fn sampled(
    sampler: &Sampler,
    root: &dyn ShouldSample,
    parent: Option<RemoteParent>,
    trusted: bool,
    trace_id: [u8; 16],
) -> bool {
    let parent_cx = parent.map(|p| {
        let flags = if p.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from_bytes(p.trace_id),
            SpanId::from_bytes(p.span_id),
            flags,
            true,
            TraceState::default(),
        ))
    });
    let (sampler, parent_cx): (&dyn ShouldSample, _) = if trusted {
        (sampler, parent_cx)
    } else {
        (root, None)
    };
    let decision = sampler.should_sample(
        parent_cx.as_ref(),
        TraceId::from_bytes(trace_id),
        "execute_code",
        &SpanKind::Server,
        &[],
        &[],
    );
    decision.decision == SamplingDecision::RecordAndSample
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's `sampled` flag forces nothing unless the caller is trusted: under
    /// `parentbased_traceidratio` with ratio 0 an anonymous caller's sampled parent is not
    /// exported (even under another trace's id), an authenticated one's is; an anonymous
    /// caller's unsampled parent does not switch off `parentbased_always_on`.
    #[test]
    fn the_operators_sampler_decides_for_untrusted_parents() {
        let parent = |sampled| RemoteParent {
            trace_id: [7; 16],
            span_id: [9; 8],
            sampled,
        };
        let ratio0 = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(0.0)));
        let root = root_of(&ratio0);
        assert!(!sampled(
            &ratio0,
            root.as_ref(),
            Some(parent(true)),
            false,
            [7; 16]
        ));
        assert!(sampled(
            &ratio0,
            root.as_ref(),
            Some(parent(true)),
            true,
            [7; 16]
        ));
        assert!(!sampled(&ratio0, root.as_ref(), None, false, [7; 16]));
        let on = Sampler::ParentBased(Box::new(Sampler::AlwaysOn));
        let root = root_of(&on);
        assert!(sampled(
            &on,
            root.as_ref(),
            Some(parent(false)),
            false,
            [7; 16]
        ));
        assert!(!sampled(
            &on,
            root.as_ref(),
            Some(parent(false)),
            true,
            [7; 16]
        ));
    }
}
