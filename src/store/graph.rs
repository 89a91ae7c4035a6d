//! The tool graph learned from traces: per-tool stats and directed edges `a → b` between
//! consecutive successful calls.
//!
//! Exactly what one execution records ([`Store::record_traces`]):
//! - Calls are grouped by scope: the script's own calls (`parent_trace_id` null) form one
//!   sequence, and the calls made inside each capability call (`parent_trace_id` = that call's
//!   trace id) form another. A capability call is itself a call (`math:sum`) of its caller's
//!   sequence. Within a sequence, calls are taken in start order (the order of their
//!   `tool_start`/`capability_start` events).
//! - Every finished call counts once in `calls` of its tool, and once in `successes` or
//!   `failures`. Durations (mean and p95) are those of successful calls only: a failure's
//!   duration is mostly the timeout it hit.
//! - A call refused by the policy or an approver (`PERMISSION_DENIED`) never reached its tool:
//!   it is not counted at all (neither a call nor a failure) and not in the sequence.
//! - Failed calls are dropped from the sequence; each pair of neighbours in what remains adds 1
//!   to edge `a → b` (so `a, fail(b), c` adds `a → c`, and `a, a` adds `a → a`). Calling
//!   `fs:read, memory:store, fs:read, memory:store` adds 2 to `fs:read → memory:store` and 1 to
//!   `memory:store → fs:read`.
//! - An aborted execution (`EXECUTION_TIMEOUT`, `RUNNER_CRASHED`, `PROTOCOL_ERROR`,
//!   `SANDBOX_UNAVAILABLE`, `CPU_LIMIT`, `MEMORY_LIMIT`) records its failed calls (including the
//!   receipts of calls it cut off) as failures and nothing else: no successes, no durations, no
//!   edges. A script that fails in any other way (it threw, a tool failed) records normally:
//!   the calls that succeeded did succeed.
//!
//! p95 is the nearest-rank 95th percentile of the last [`P95_WINDOW`] successful durations of
//! the tool, kept in a ring table (`tool_durations`, slot = success number mod window): bounded
//! space, exact over the window, and computed when read. The mean is exact over all successes.

use super::{Store, StoreError};
use crate::error::ErrorCode;
use crate::trace::{now_ms, TraceEvent, TraceKind};
use rusqlite::{params, Transaction};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// How many recent successful durations per tool the p95 is computed over.
pub const P95_WINDOW: i64 = 1000;

/// One tool's stats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolStats {
    pub tool: String,
    pub calls: i64,
    pub successes: i64,
    pub failures: i64,
    /// Successes / calls.
    pub success_rate: f64,
    /// Mean duration of successful calls (0 when none).
    pub mean_ms: f64,
    /// p95 duration of the last [`P95_WINDOW`] successful calls (0 when none).
    pub p95_ms: f64,
    /// Milliseconds since the Unix epoch.
    pub last_seen: f64,
}

/// A directed edge: `target` was the next successful call after `source`, `count` times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Edge {
    pub source: String,
    pub target: String,
    pub count: i64,
    pub last_seen: f64,
}

/// A ranked next tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NextTool {
    pub tool: String,
    pub count: i64,
    /// count / all edges out of the tool.
    pub probability: f64,
}

/// The whole graph (or the part around one tool).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GraphSnapshot {
    pub tools: Vec<ToolStats>,
    pub edges: Vec<Edge>,
}

/// One finished call, as learning sees it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Finished {
    pub(super) tool: String,
    pub(super) success: bool,
    pub(super) duration_ms: f64,
}

/// Sequences of finished calls by scope, each in start order.
pub(super) fn sequences(traces: &[TraceEvent]) -> Vec<Vec<Finished>> {
    let mut ends: HashMap<&str, &TraceEvent> = HashMap::new();
    for e in traces {
        if matches!(e.kind, TraceKind::ToolEnd | TraceKind::CapabilityEnd) {
            ends.insert(e.trace_id.as_str(), e);
        }
    }
    let mut scopes: BTreeMap<Option<&str>, Vec<Finished>> = BTreeMap::new();
    for start in traces
        .iter()
        .filter(|e| matches!(e.kind, TraceKind::ToolStart | TraceKind::CapabilityStart))
    {
        // A call without an end cannot happen (the session writes receipts); skip it if it does.
        let Some(end) = ends.get(start.trace_id.as_str()) else {
            continue;
        };
        // Refused by the policy (or an approver): the tool never ran, so it neither failed nor
        // succeeded — counting it as a failure would blame the tool for the rule.
        if end
            .error
            .as_ref()
            .is_some_and(|e| e.code == ErrorCode::PermissionDenied)
        {
            continue;
        }
        scopes
            .entry(start.parent_trace_id.as_deref())
            .or_default()
            .push(Finished {
                tool: start.tool.clone(),
                success: end.success == Some(true),
                duration_ms: end.duration_ms.unwrap_or(0.0),
            });
    }
    scopes.into_values().collect()
}

/// Whether an execution that ended with this error records only failures.
pub fn is_aborted(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::ExecutionTimeout
            | ErrorCode::RunnerCrashed
            | ErrorCode::ProtocolError
            | ErrorCode::SandboxUnavailable
            | ErrorCode::CpuLimit
            | ErrorCode::MemoryLimit
            | ErrorCode::Cancelled
    )
}

/// Records one execution's traces in an open write transaction.
pub(super) fn record(
    tx: &Transaction<'_>,
    tenant: &str,
    traces: &[TraceEvent],
    aborted: bool,
) -> Result<(), StoreError> {
    let now = now_ms();
    for seq in sequences(traces) {
        for call in &seq {
            if !call.success {
                tx.execute(
                    "INSERT INTO tool_stats (tool, calls, failures, last_seen, tenant)
                        VALUES (?1, 1, 1, ?2, ?3)
                     ON CONFLICT (tenant, tool) DO UPDATE SET calls = calls + 1,
                        failures = failures + 1, last_seen = excluded.last_seen",
                    params![call.tool, now, tenant],
                )?;
            } else if !aborted {
                let successes: i64 = tx.query_row(
                    "INSERT INTO tool_stats (tool, calls, successes, total_ms, last_seen, tenant)
                        VALUES (?1, 1, 1, ?2, ?3, ?4)
                     ON CONFLICT (tenant, tool) DO UPDATE SET calls = calls + 1,
                        successes = successes + 1, total_ms = total_ms + excluded.total_ms,
                        last_seen = excluded.last_seen
                     RETURNING successes",
                    params![call.tool, call.duration_ms, now, tenant],
                    |r| r.get(0),
                )?;
                tx.execute(
                    "INSERT OR REPLACE INTO tool_durations (tool, slot, duration_ms, tenant)
                        VALUES (?1, ?2, ?3, ?4)",
                    params![
                        call.tool,
                        (successes - 1).rem_euclid(P95_WINDOW),
                        call.duration_ms,
                        tenant
                    ],
                )?;
            }
        }
        if aborted {
            continue;
        }
        let ok: Vec<&Finished> = seq.iter().filter(|c| c.success).collect();
        for pair in ok.windows(2) {
            tx.execute(
                "INSERT INTO edges (source, target, count, last_seen, tenant)
                    VALUES (?1, ?2, 1, ?3, ?4)
                 ON CONFLICT (tenant, source, target) DO UPDATE SET count = count + 1,
                    last_seen = excluded.last_seen",
                params![pair[0].tool, pair[1].tool, now, tenant],
            )?;
        }
    }
    Ok(())
}

impl Store {
    /// Records one execution's traces (see the module documentation for exactly what).
    pub fn record_traces(&self, traces: &[TraceEvent], aborted: bool) -> Result<(), StoreError> {
        if let Some(pg) = self.pg() {
            return pg.record_execution(&self.tenant, traces, aborted, None, None);
        }
        self.write(|tx| record(tx, &self.tenant, traces, aborted))
    }

    /// Stats of every tool (or of `tool` and its neighbours) and the edges (touching `tool`).
    pub fn graph(&self, tool: Option<&str>) -> Result<GraphSnapshot, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.graph(&self.tenant, tool);
        }
        self.with(|conn| {
            let mut edges = Vec::new();
            {
                let mut stmt = conn.prepare(
                    "SELECT source, target, count, last_seen FROM edges
                     WHERE tenant = ?2 AND (?1 IS NULL OR source = ?1 OR target = ?1)
                     ORDER BY count DESC, source, target",
                )?;
                let rows = stmt.query_map(params![tool, &*self.tenant], |r| {
                    Ok(Edge {
                        source: r.get(0)?,
                        target: r.get(1)?,
                        count: r.get(2)?,
                        last_seen: r.get(3)?,
                    })
                })?;
                for e in rows {
                    edges.push(e?);
                }
            }
            let names = neighbourhood(tool, &edges);
            let mut tools = Vec::new();
            {
                let mut stmt = conn.prepare(
                    "SELECT tool, calls, successes, failures, total_ms, last_seen FROM tool_stats
                     WHERE tenant = ?1 ORDER BY tool",
                )?;
                let rows = stmt.query_map(params![&*self.tenant], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, f64>(4)?,
                        r.get::<_, f64>(5)?,
                    ))
                })?;
                for row in rows {
                    let row = row?;
                    if tool.is_some() && !names.contains(&row.0) {
                        continue;
                    }
                    tools.push(stats_of(row));
                }
            }
            let mut stmt = conn.prepare(
                "SELECT duration_ms FROM tool_durations WHERE tenant = ?2 AND tool = ?1
                 ORDER BY duration_ms",
            )?;
            for t in &mut tools {
                let durations: Vec<f64> = stmt
                    .query_map(params![t.tool, &*self.tenant], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                t.p95_ms = nearest_rank(&durations, 0.95);
            }
            Ok(GraphSnapshot { tools, edges })
        })
    }

    /// The tools seen right after `tool`, most frequent first.
    pub fn next_tools(&self, tool: &str) -> Result<Vec<NextTool>, StoreError> {
        let edges = self.graph(Some(tool))?.edges;
        let out: Vec<&Edge> = edges.iter().filter(|e| e.source == tool).collect();
        let total: i64 = out.iter().map(|e| e.count).sum();
        let mut ranked: Vec<NextTool> = out
            .into_iter()
            .map(|e| NextTool {
                tool: e.target.clone(),
                count: e.count,
                probability: if total > 0 {
                    e.count as f64 / total as f64
                } else {
                    0.0
                },
            })
            .collect();
        ranked.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.tool.cmp(&b.tool)));
        Ok(ranked)
    }

    /// Tools that co-occur with `names` (edges in either direction), with a score in (0, 1]:
    /// the share of the edge weight touching `names` that links to the tool. The names
    /// themselves are left out. For ranking search results: a tool related to a query's
    /// matches should rank higher.
    pub fn related_tools(&self, names: &[String]) -> Result<Vec<(String, f64)>, StoreError> {
        let mut weights: BTreeMap<String, i64> = BTreeMap::new();
        for name in names {
            for e in self.graph(Some(name))?.edges {
                let other = if &e.source == name {
                    e.target
                } else {
                    e.source
                };
                if !names.contains(&other) {
                    *weights.entry(other).or_default() += e.count;
                }
            }
        }
        let total: i64 = weights.values().sum();
        let mut out: Vec<(String, f64)> = weights
            .into_iter()
            .map(|(t, w)| (t, w as f64 / total.max(1) as f64))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(out)
    }
}

/// `tool` and the tools its edges touch (empty for no tool: every tool).
pub(super) fn neighbourhood(tool: Option<&str>, edges: &[Edge]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if let Some(t) = tool {
        names.push(t.to_string());
        for e in edges {
            for n in [&e.source, &e.target] {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
    }
    names
}

/// One row of `tool_stats` (tool, calls, successes, failures, total_ms, last_seen) as
/// [`ToolStats`], its p95 not filled in yet.
pub(super) type StatsRow = (String, i64, i64, i64, f64, f64);

pub(super) fn stats_of(row: StatsRow) -> ToolStats {
    let (tool, calls, successes, failures, total_ms, last_seen) = row;
    ToolStats {
        success_rate: if calls > 0 {
            successes as f64 / calls as f64
        } else {
            0.0
        },
        mean_ms: if successes > 0 {
            total_ms / successes as f64
        } else {
            0.0
        },
        p95_ms: 0.0,
        tool,
        calls,
        successes,
        failures,
        last_seen,
    }
}

/// Nearest-rank percentile of sorted values (0 for none).
pub(super) fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The graph as a Mermaid flowchart: nodes with call counts, edges labelled with their counts.
pub fn mermaid(g: &GraphSnapshot) -> String {
    let mut names: Vec<&str> = g.tools.iter().map(|t| t.tool.as_str()).collect();
    for e in &g.edges {
        for n in [e.source.as_str(), e.target.as_str()] {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let id = |name: &str| names.iter().position(|n| *n == name).unwrap_or(0);
    let mut out = String::from("flowchart LR\n");
    for (i, name) in names.iter().enumerate() {
        let stats = g
            .tools
            .iter()
            .find(|t| t.tool == *name)
            .map(|t| format!("<br/>{} calls, {:.0}% ok", t.calls, t.success_rate * 100.0))
            .unwrap_or_default();
        out.push_str(&format!("    t{i}[\"{}{stats}\"]\n", label(name)));
    }
    for e in &g.edges {
        out.push_str(&format!(
            "    t{} -->|{}| t{}\n",
            id(&e.source),
            e.count,
            id(&e.target)
        ));
    }
    out
}

/// A Mermaid-safe label.
fn label(s: &str) -> String {
    s.replace('"', "#quot;")
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn call(tool: &str, id: usize, ok: bool, ms: f64, parent: Option<&str>) -> [TraceEvent; 2] {
        let ev = |kind, success, duration_ms| TraceEvent {
            kind,
            tool: tool.into(),
            trace_id: format!("{tool}-{id}"),
            parent_trace_id: parent.map(str::to_string),
            ts: 0.0,
            success,
            duration_ms,
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
        [
            ev(TraceKind::ToolStart, None, None),
            ev(TraceKind::ToolEnd, Some(ok), Some(ms)),
        ]
    }

    #[test]
    fn policy_refusals_are_not_tool_failures() {
        let mut traces = Vec::new();
        traces.extend(call("a:x", 1, true, 1.0, None));
        let mut refused = call("a:del", 2, false, 0.0, None);
        refused[1].error = Some(crate::trace::TraceError {
            code: ErrorCode::PermissionDenied,
            message: "a:del is denied by the config rule deny \"a:del\"".into(),
        });
        traces.extend(refused);
        let mut failed = call("a:y", 3, false, 3.0, None);
        failed[1].error = Some(crate::trace::TraceError {
            code: ErrorCode::ToolError,
            message: "boom".into(),
        });
        traces.extend(failed);
        let seqs = sequences(&traces);
        let tools: Vec<(&str, bool)> = seqs[0]
            .iter()
            .map(|f| (f.tool.as_str(), f.success))
            .collect();
        assert_eq!(tools, [("a:x", true), ("a:y", false)]);
    }

    pub(crate) fn mean_and_p95_over_successes_only(s: &Store) {
        let mut traces = Vec::new();
        for i in 1..=20 {
            traces.extend(call("a:x", i, true, i as f64, None));
        }
        traces.extend(call("a:x", 99, false, 5000.0, None));
        s.record_traces(&traces, false).unwrap();
        let g = s.graph(None).unwrap();
        let t = &g.tools[0];
        assert_eq!((t.calls, t.successes, t.failures), (21, 20, 1));
        assert_eq!(t.mean_ms, 10.5);
        assert_eq!(t.p95_ms, 19.0);
        // a:x → a:x between consecutive successes, 19 times.
        assert_eq!(g.edges[0].count, 19);
        // Aborted: only the failure counts.
        s.record_traces(&traces, true).unwrap();
        let t = &s.graph(None).unwrap().tools[0];
        assert_eq!((t.calls, t.successes, t.failures), (22, 20, 2));
    }

    pub(crate) fn the_duration_window_is_bounded(s: &Store) {
        let mut traces = Vec::new();
        for i in 0..(P95_WINDOW as usize + 10) {
            traces.extend(call("b:y", i, true, 1.0, None));
        }
        s.record_traces(&traces, false).unwrap();
        let rows = crate::store::suites::count(s, "SELECT COUNT(*) FROM tool_durations");
        assert_eq!(rows, P95_WINDOW);
    }

    /// The ring of durations keeps exactly the last [`P95_WINDOW`] successes of a tool across
    /// executions: each execution's durations go to the slots after the previous ones.
    pub(crate) fn the_duration_ring_keeps_the_last_successes(s: &Store) {
        let run = |n: usize, ms: f64| {
            let traces: Vec<_> = (0..n)
                .flat_map(|i| call("b:y", i, true, ms, None))
                .collect();
            s.record_traces(&traces, false).unwrap();
        };
        let with = |ms: f64| {
            crate::store::suites::count(
                s,
                &format!("SELECT COUNT(*) FROM tool_durations WHERE duration_ms = {ms:.1}"),
            )
        };
        let window = P95_WINDOW as usize;
        run(window, 1.0);
        run(3, 500.0);
        assert_eq!((with(1.0), with(500.0)), (P95_WINDOW - 3, 3));
        // The rest of the ring, and not the three newest, is overwritten next.
        run(window - 3, 2.0);
        assert_eq!((with(1.0), with(2.0), with(500.0)), (0, P95_WINDOW - 3, 3));
        let rows = crate::store::suites::count(s, "SELECT COUNT(*) FROM tool_durations");
        assert_eq!(rows, P95_WINDOW);
    }

    #[test]
    fn nearest_rank_percentile() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.95), 95.0);
        assert_eq!(nearest_rank(&[7.0], 0.95), 7.0);
        assert_eq!(nearest_rank(&[], 0.95), 0.0);
        assert_eq!(nearest_rank(&[1.0, 2.0], 0.95), 2.0);
    }
}
