//! The tool graph on PostgreSQL (what is recorded: see `store::graph`). Counters are upserts
//! that add to the stored value, which PostgreSQL applies atomically per row: two gateways
//! recording the same edge at once both count.

use super::super::graph::{
    neighbourhood, nearest_rank, sequences, stats_of, Edge, GraphSnapshot, P95_WINDOW,
};
use super::super::StoreError;
use super::{Pg, Transaction};
use crate::trace::{now_ms, TraceEvent};

/// Records one execution's traces in an open transaction.
pub(super) async fn record(
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
                        VALUES ($1, 1, 1, $2, $3)
                     ON CONFLICT (tenant, tool) DO UPDATE SET calls = tool_stats.calls + 1,
                        failures = tool_stats.failures + 1, last_seen = excluded.last_seen",
                    &[&call.tool, &now, &tenant],
                )
                .await?;
            } else if !aborted {
                let successes: i64 = tx
                    .query_one(
                        "INSERT INTO tool_stats (tool, calls, successes, total_ms, last_seen, tenant)
                            VALUES ($1, 1, 1, $2, $3, $4)
                         ON CONFLICT (tenant, tool) DO UPDATE SET calls = tool_stats.calls + 1,
                            successes = tool_stats.successes + 1,
                            total_ms = tool_stats.total_ms + excluded.total_ms,
                            last_seen = excluded.last_seen
                         RETURNING successes",
                        &[&call.tool, &call.duration_ms, &now, &tenant],
                    )
                    .await?
                    .get(0);
                let slot = (successes - 1).rem_euclid(P95_WINDOW);
                tx.execute(
                    "INSERT INTO tool_durations (tool, slot, duration_ms, tenant)
                        VALUES ($1, $2, $3, $4)
                     ON CONFLICT (tenant, tool, slot) DO UPDATE SET duration_ms = excluded.duration_ms",
                    &[&call.tool, &slot, &call.duration_ms, &tenant],
                )
                .await?;
            }
        }
        if aborted {
            continue;
        }
        let ok: Vec<_> = seq.iter().filter(|c| c.success).collect();
        for pair in ok.windows(2) {
            tx.execute(
                "INSERT INTO edges (source, target, count, last_seen, tenant)
                    VALUES ($1, $2, 1, $3, $4)
                 ON CONFLICT (tenant, source, target) DO UPDATE SET count = edges.count + 1,
                    last_seen = excluded.last_seen",
                &[&pair[0].tool, &pair[1].tool, &now, &tenant],
            )
            .await?;
        }
    }
    Ok(())
}

impl Pg {
    /// Records one execution's traces and, when given, the last execution (JSON).
    pub fn record_execution(
        &self,
        tenant: &str,
        traces: &[TraceEvent],
        aborted: bool,
        last: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write(async |tx| {
            record(tx, tenant, traces, aborted).await?;
            if let Some(text) = last {
                super::capabilities::set_kv(tx, super::super::capabilities::LAST_EXECUTION_KEY, text)
                    .await?;
            }
            Ok(())
        })
    }

    /// The tool graph of `tenant` (see `Store::graph`).
    pub fn graph(&self, tenant: &str, tool: Option<&str>) -> Result<GraphSnapshot, StoreError> {
        self.read(async |c| {
            let edges: Vec<Edge> = c
                .query(
                    "SELECT source, target, count, last_seen FROM edges
                     WHERE tenant = $2 AND ($1::TEXT IS NULL OR source = $1 OR target = $1)
                     ORDER BY count DESC, source COLLATE \"C\", target COLLATE \"C\"",
                    &[&tool, &tenant],
                )
                .await?
                .iter()
                .map(|r| Edge {
                    source: r.get(0),
                    target: r.get(1),
                    count: r.get(2),
                    last_seen: r.get(3),
                })
                .collect();
            let names = neighbourhood(tool, &edges);
            let mut tools = Vec::new();
            for r in c
                .query(
                    "SELECT tool, calls, successes, failures, total_ms, last_seen FROM tool_stats
                     WHERE tenant = $1 ORDER BY tool COLLATE \"C\"",
                    &[&tenant],
                )
                .await?
            {
                let name: String = r.get(0);
                if tool.is_some() && !names.contains(&name) {
                    continue;
                }
                tools.push(stats_of((name, r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))));
            }
            for t in &mut tools {
                let durations: Vec<f64> = c
                    .query(
                        "SELECT duration_ms FROM tool_durations WHERE tenant = $2 AND tool = $1
                         ORDER BY duration_ms",
                        &[&t.tool, &tenant],
                    )
                    .await?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                t.p95_ms = nearest_rank(&durations, 0.95);
            }
            Ok(GraphSnapshot { tools, edges })
        })
    }
}
