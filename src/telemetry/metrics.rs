//! Prometheus metrics (`/metrics`, OpenMetrics text): counted from each execution's outcome and
//! socket trace when it ends, and the host's state (pool, zygote, queue, calls in flight, server
//! restarts) read when scraped. Label values are bounded: outcome codes and signals are the
//! host's, servers and tools the catalog's (a call the gate refused as unknown counts as
//! `_unknown`), and past [`MAX_TOOL_SERIES`] tool series new ones count as `_other`.

use crate::exec::outcome::Outcome;
use crate::trace::TraceKind;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// Distinct `server`/`tool` label pairs kept at most.
pub const MAX_TOOL_SERIES: usize = 1000;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolResultLabels {
    server: String,
    tool: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SignalLabels {
    signal: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EgressLabels {
    server: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabels {
    server: String,
    direction: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AnswerLabels {
    answer: String,
}

fn histogram() -> Histogram {
    // 1 ms .. ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The host's state at scrape time.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostState {
    pub running: usize,
    pub queued: usize,
    pub pool_idle: usize,
    pub zygote_up: bool,
    pub zygotes_started: u64,
    pub calls_in_flight: usize,
    /// Audit records this process lost (`sandbox.audit.required: false`: dropped from its
    /// bounded queue while the store was unreachable, or still queued at shutdown).
    pub audit_records_lost: u64,
    /// Audit records written without their content: the store refused it (a value it cannot
    /// hold; `store::audit_content`).
    pub audit_records_reduced: u64,
    /// Audit records queued now, waiting for the store (`sandbox.audit.required: false`).
    pub audit_records_queued: usize,
    /// Learning records (tool graph) this process dropped: its bounded queue was full while
    /// the store was down, or still held them at shutdown.
    pub learning_writes_lost: u64,
}

pub struct Metrics {
    registry: Registry,
    executions: Family<CodeLabels, Counter>,
    execution_seconds: Histogram,
    tool_calls: Family<ToolResultLabels, Counter>,
    tool_seconds: Family<ToolLabels, Histogram, fn() -> Histogram>,
    crashes: Family<SignalLabels, Counter>,
    restarts: Family<ServerLabels, Counter>,
    approvals: Family<AnswerLabels, Counter>,
    egress: Family<EgressLabels, Counter>,
    egress_bytes: Family<DirectionLabels, Counter>,
    running: Gauge,
    queued: Gauge,
    pool_idle: Gauge,
    zygote_up: Gauge,
    zygotes_started: Counter,
    audit_lost: Counter,
    audit_reduced: Counter,
    audit_queued: Gauge,
    learning_lost: Counter,
    unmatched_after_relist: Counter,
    calls_in_flight: Gauge,
    spans_exported: Counter,
    spans_failed: Counter,
    spans_dropped: Counter,
    tool_series: Mutex<HashSet<(String, String)>>,
    /// One scrape at a time (the catch-up of counters counted elsewhere is read-then-add).
    rendering: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("mcp_sandbox");
        let m = Metrics {
            executions: Family::default(),
            execution_seconds: histogram(),
            tool_calls: Family::default(),
            tool_seconds: Family::new_with_constructor(histogram as fn() -> Histogram),
            crashes: Family::default(),
            restarts: Family::default(),
            approvals: Family::default(),
            egress: Family::default(),
            egress_bytes: Family::default(),
            running: Gauge::default(),
            queued: Gauge::default(),
            pool_idle: Gauge::default(),
            zygote_up: Gauge::default(),
            zygotes_started: Counter::default(),
            audit_lost: Counter::default(),
            audit_reduced: Counter::default(),
            audit_queued: Gauge::default(),
            learning_lost: Counter::default(),
            unmatched_after_relist: Counter::default(),
            calls_in_flight: Gauge::default(),
            spans_exported: Counter::default(),
            spans_failed: Counter::default(),
            spans_dropped: Counter::default(),
            tool_series: Mutex::new(HashSet::new()),
            rendering: Mutex::new(()),
            registry: Registry::default(),
        };
        registry.register(
            "executions",
            "Executions by outcome code (OK or the error code)",
            m.executions.clone(),
        );
        registry.register(
            "execution_duration_seconds",
            "Execution wall time, queue wait included",
            m.execution_seconds.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool calls by server, tool and result code (OK or the error code)",
            m.tool_calls.clone(),
        );
        registry.register(
            "tool_call_duration_seconds",
            "Tool call latency by server and tool",
            m.tool_seconds.clone(),
        );
        registry.register(
            "tool_calls_in_flight",
            "Tool calls started and not answered",
            m.calls_in_flight.clone(),
        );
        registry.register(
            "executions_running",
            "Executions holding a runner slot",
            m.running.clone(),
        );
        registry.register(
            "executions_queued",
            "Executions waiting for a runner slot (queue depth)",
            m.queued.clone(),
        );
        registry.register(
            "pool_idle_runners",
            "Runners started ahead and waiting in the pool",
            m.pool_idle.clone(),
        );
        registry.register(
            "zygote_up",
            "1 when a zygote runs to fork runners from",
            m.zygote_up.clone(),
        );
        registry.register(
            "zygote_starts",
            "Zygotes started since the host started",
            m.zygotes_started.clone(),
        );
        registry.register(
            "audit_records_lost",
            "Audit records dropped because the state store could not take them in time (sandbox.audit.required: false; bounded queue)",
            m.audit_lost.clone(),
        );
        registry.register(
            "audit_records_reduced",
            "Audit records written without their code, client name, arguments and detail because the state store refused their content",
            m.audit_reduced.clone(),
        );
        registry.register(
            "audit_records_queued",
            "Audit records queued while the state store cannot take them, retried (sandbox.audit.required: false)",
            m.audit_queued.clone(),
        );
        registry.register(
            "learning_writes_lost",
            "Learning records (tool graph) dropped because the state store could not take them in time (bounded queue)",
            m.learning_lost.clone(),
        );
        registry.register(
            "policy_globs_unmatched_after_relist",
            "Policy globs found matching none of a server's tools after it re-listed them (list_changed); each is also a warning in the log",
            m.unmatched_after_relist.clone(),
        );
        registry.register(
            "runner_crashes",
            "Runners that died during an execution, by signal",
            m.crashes.clone(),
        );
        registry.register(
            "mcp_server_restarts",
            "MCP server processes restarted after they died, by server",
            m.restarts.clone(),
        );
        registry.register(
            "approvals",
            "Approval questions by answer (granted, denied)",
            m.approvals.clone(),
        );
        registry.register(
            "egress_connections",
            "Connections of confined servers through their egress proxy, by server and outcome (allowed, refused, failed, bad_request)",
            m.egress.clone(),
        );
        registry.register(
            "egress_bytes",
            "Bytes relayed by confined servers' egress proxies, by server and direction (up: to the destination)",
            m.egress_bytes.clone(),
        );
        registry.register(
            "telemetry_spans_exported",
            "Spans the OTLP exporter delivered",
            m.spans_exported.clone(),
        );
        registry.register(
            "telemetry_spans_failed",
            "Spans whose export failed (collector down, slow or refusing)",
            m.spans_failed.clone(),
        );
        registry.register(
            "telemetry_spans_dropped",
            "Spans dropped because the export queue was full",
            m.spans_dropped.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Counts one finished execution.
    pub fn observe(&self, outcome: &Outcome, seconds: f64) {
        let code = outcome.error.as_ref().map_or("OK", |e| e.code.as_str());
        self.executions
            .get_or_create(&CodeLabels { code: code.into() })
            .inc();
        self.execution_seconds.observe(seconds);
        if let Some(sig) = outcome.error.as_ref().and_then(|e| e.signal) {
            self.crashes
                .get_or_create(&SignalLabels {
                    signal: signal_name(sig),
                })
                .inc();
        }
        for e in &outcome.traces {
            match e.kind {
                TraceKind::ToolEnd | TraceKind::CapabilityEnd => {
                    let code = e.error.as_ref().map_or("OK", |err| err.code.as_str());
                    let (server, tool) = self.tool_labels(&e.tool, code);
                    if let Some(ms) = e.duration_ms {
                        self.tool_seconds
                            .get_or_create(&ToolLabels {
                                server: server.clone(),
                                tool: tool.clone(),
                            })
                            .observe(ms / 1000.0);
                    }
                    self.tool_calls
                        .get_or_create(&ToolResultLabels {
                            server,
                            tool,
                            code: code.into(),
                        })
                        .inc();
                }
                TraceKind::ApprovalGranted | TraceKind::ApprovalDenied => {
                    let answer = if e.kind == TraceKind::ApprovalGranted {
                        "granted"
                    } else {
                        "denied"
                    };
                    self.approvals
                        .get_or_create(&AnswerLabels {
                            answer: answer.into(),
                        })
                        .inc();
                }
                _ => {}
            }
        }
    }

    /// Bounded labels of a call to `server:tool`.
    fn tool_labels(&self, qualified: &str, code: &str) -> (String, String) {
        let unknown = ("_unknown".to_string(), "_unknown".to_string());
        if code == crate::error::ErrorCode::ToolNotFound.as_str() {
            return unknown;
        }
        let Some((server, tool)) = qualified.split_once(':') else {
            return unknown;
        };
        let key = (server.to_string(), tool.to_string());
        let Ok(mut series) = self.tool_series.lock() else {
            return unknown;
        };
        if series.contains(&key) {
            return key;
        }
        if series.len() >= MAX_TOOL_SERIES {
            return ("_other".to_string(), "_other".to_string());
        }
        series.insert(key.clone());
        key
    }

    /// The OpenMetrics text of every metric, with the host's state as of now.
    pub fn render(
        &self,
        state: HostState,
        restarts: &[(String, u64)],
        spans: Option<&super::export::ExportStats>,
    ) -> String {
        let _one = self.rendering.lock();
        self.running.set(state.running as i64);
        self.queued.set(state.queued as i64);
        self.pool_idle.set(state.pool_idle as i64);
        self.zygote_up.set(i64::from(state.zygote_up));
        self.calls_in_flight.set(state.calls_in_flight as i64);
        self.audit_queued.set(state.audit_records_queued as i64);
        catch_up(&self.zygotes_started, state.zygotes_started);
        catch_up(&self.audit_lost, state.audit_records_lost);
        catch_up(&self.audit_reduced, state.audit_records_reduced);
        catch_up(&self.learning_lost, state.learning_writes_lost);
        catch_up(
            &self.unmatched_after_relist,
            crate::config::rule_names::unmatched_after_relist(),
        );
        for (server, n) in restarts {
            catch_up(
                &self.restarts.get_or_create(&ServerLabels {
                    server: server.clone(),
                }),
                *n,
            );
        }
        for (server, outcome, n) in crate::tools::egress::events::counts() {
            let labels = EgressLabels {
                server,
                outcome: outcome.into(),
            };
            catch_up(&self.egress.get_or_create(&labels), n);
        }
        for (server, up, down) in crate::tools::egress::events::bytes() {
            for (direction, n) in [("up", up), ("down", down)] {
                let labels = DirectionLabels {
                    server: server.clone(),
                    direction: direction.into(),
                };
                catch_up(&self.egress_bytes.get_or_create(&labels), n);
            }
        }
        if let Some(s) = spans {
            catch_up(&self.spans_exported, s.exported.load(Ordering::Relaxed));
            catch_up(&self.spans_failed, s.failed.load(Ordering::Relaxed));
            catch_up(&self.spans_dropped, s.dropped.load(Ordering::Relaxed));
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Raises a counter to a total counted elsewhere.
fn catch_up(counter: &Counter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("{sig}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::egress::events::{self, Connection, Outcome};

    #[test]
    fn egress_connections_are_counted_by_server_and_outcome() {
        let c = |outcome, reason: &str| Connection {
            server: "fetcher".into(),
            tenant: Some("acme".into()),
            principal: None,
            host: "169.254.169.254".into(),
            port: 80,
            address: Some("169.254.169.254".into()),
            outcome,
            reason: reason.into(),
            bytes_up: 7,
            bytes_down: 11,
            at: std::time::SystemTime::now(),
        };
        events::record(c(Outcome::Refused, "link_local"));
        events::record(c(Outcome::Refused, "link_local"));
        events::record(c(Outcome::Allowed, ""));
        let text = Metrics::new().render(HostState::default(), &[], None);
        for line in [
            r#"mcp_sandbox_egress_connections_total{server="fetcher",outcome="refused"} 2"#,
            r#"mcp_sandbox_egress_connections_total{server="fetcher",outcome="allowed"} 1"#,
            r#"mcp_sandbox_egress_bytes_total{server="fetcher",direction="up"} 21"#,
            r#"mcp_sandbox_egress_bytes_total{server="fetcher",direction="down"} 33"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
