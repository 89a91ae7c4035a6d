//! The tool graph on PostgreSQL (what is recorded: see `store::graph`). Counters are upserts
//! that add to the stored value, which PostgreSQL applies atomically per row: two gateways
//! recording the same edge at once both count.

use super::super::graph::{
    nearest_rank, neighbourhood, sequences, stats_of, Edge, GraphSnapshot, P95_WINDOW,
};
use super::super::write_key::{WriteKey, CLAIM_PG, KEY_RETENTION_MS, PRUNE_BATCH, PRUNE_PG};
use super::super::StoreError;
use super::{pipelined, Params, Pg, Transaction};
use crate::trace::{now_ms, TraceEvent};
use std::collections::BTreeMap;

/// What one execution adds to one tool's row.
#[derive(Default)]
struct Delta {
    calls: i64,
    successes: i64,
    failures: i64,
    total_ms: f64,
    /// Durations of its successful calls, in call order.
    durations: Vec<f64>,
}

/// The statements of [`record`], prepared once per connection (deadpool's statement cache).
const UPSERT_STATS: &str =
    "INSERT INTO tool_stats (tool, calls, successes, failures, total_ms, last_seen, tenant)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (tenant, tool) DO UPDATE SET calls = tool_stats.calls + excluded.calls,
        successes = tool_stats.successes + excluded.successes,
        failures = tool_stats.failures + excluded.failures,
        total_ms = tool_stats.total_ms + excluded.total_ms,
        last_seen = excluded.last_seen";
/// The `i`-th ($3) of this execution's `k` ($4) successful durations of a tool goes to slot
/// `successes - k + i` of the ring, `successes` read from the row the upsert above just wrote
/// (in the same transaction, so no other writer's count is in between).
const UPSERT_DURATION: &str = "INSERT INTO tool_durations (tool, slot, duration_ms, tenant)
        SELECT $1, (s.successes - $4 + $3) % $6, $2, $5 FROM tool_stats s
        WHERE s.tenant = $5 AND s.tool = $1
     ON CONFLICT (tenant, tool, slot) DO UPDATE SET duration_ms = excluded.duration_ms";
const UPSERT_EDGE: &str = "INSERT INTO edges (source, target, count, last_seen, tenant)
        VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant, source, target) DO UPDATE SET count = edges.count + excluded.count,
        last_seen = excluded.last_seen";

/// What one execution adds to the graph: per tool, and per edge (source, target).
type Deltas = (BTreeMap<String, Delta>, BTreeMap<(String, String), i64>);

/// Sums one execution's calls per row (see [`record`]).
fn deltas(traces: &[TraceEvent], aborted: bool) -> Deltas {
    let mut tools: BTreeMap<String, Delta> = BTreeMap::new();
    let mut edges: BTreeMap<(String, String), i64> = BTreeMap::new();
    for seq in sequences(traces) {
        for call in &seq {
            if !call.success {
                let d = tools.entry(call.tool.clone()).or_default();
                d.calls += 1;
                d.failures += 1;
            } else if !aborted {
                let d = tools.entry(call.tool.clone()).or_default();
                d.calls += 1;
                d.successes += 1;
                d.total_ms += call.duration_ms;
                d.durations.push(call.duration_ms);
            }
        }
        if aborted {
            continue;
        }
        let ok: Vec<_> = seq.iter().filter(|c| c.success).collect();
        for pair in ok.windows(2) {
            *edges
                .entry((pair[0].tool.clone(), pair[1].tool.clone()))
                .or_default() += 1;
        }
    }
    (tools, edges)
}

/// Records one execution's traces (and, when given, the last execution) in an open
/// transaction. The execution's increments are summed per row first, then applied in one order
/// (tools, then edges, each sorted): two gateways recording the same rows at once wait for each
/// other instead of deadlocking. The statements are prepared once per connection and
/// [`pipelined`]: a tool's durations are sent after its counts, whose new value they read.
///
/// With a `key` the write is applied at most once (`store::write_key`): a first try adds its
/// key in the same pipeline (with the pruning of expired keys); a retry adds it first, alone,
/// and applies nothing when it was there (its first try was committed).
pub(super) async fn record(
    tx: &Transaction<'_>,
    tenant: &str,
    traces: &[TraceEvent],
    aborted: bool,
    last: Option<&str>,
    key: Option<WriteKey<'_>>,
) -> Result<(), StoreError> {
    let now = now_ms();
    // The key and its statements (prepared once per connection), when there is a key.
    let keyed = match key {
        Some(k) => Some((
            k,
            tx.prepare_cached(CLAIM_PG).await?,
            tx.prepare_cached(PRUNE_PG).await?,
        )),
        None => None,
    };
    if let Some((k, claim, _)) = keyed.as_ref().filter(|(k, ..)| k.retry) {
        if tx.execute(claim, &[&k.id, &now]).await? == 0 {
            return Ok(());
        }
    }
    let (tools, edges) = deltas(traces, aborted);
    let window = P95_WINDOW;
    let last_key = super::super::capabilities::LAST_EXECUTION_KEY;
    let stats = tx.prepare_cached(UPSERT_STATS).await?;
    let duration = tx.prepare_cached(UPSERT_DURATION).await?;
    let edge = tx.prepare_cached(UPSERT_EDGE).await?;
    let kv = match last {
        Some(_) => Some(tx.prepare_cached(super::capabilities::SET_KV).await?),
        None => None,
    };
    // Each duration's index and its tool's count, in the tools' order (the statements'
    // parameters borrow them).
    let slots: Vec<(&String, &f64, i64, i64)> = tools
        .iter()
        .flat_map(|(tool, d)| {
            let k = d.durations.len() as i64;
            let skip = d.durations.len().saturating_sub(P95_WINDOW as usize);
            d.durations
                .iter()
                .enumerate()
                .skip(skip)
                .map(move |(i, ms)| (tool, ms, i as i64, k))
        })
        .collect();
    let (expired, batch) = (now - KEY_RETENTION_MS, PRUNE_BATCH);
    let mut writes = Vec::new();
    if let Some((k, claim, prune)) = keyed.as_ref().filter(|(k, ..)| !k.retry) {
        let p: Params<'_> = vec![&k.id, &now];
        writes.push(tx.execute_raw(claim, p));
        let p: Params<'_> = vec![&expired, &batch];
        writes.push(tx.execute_raw(prune, p));
    }
    let mut slots = slots.iter().peekable();
    for (tool, d) in &tools {
        let p: Params<'_> = vec![
            tool,
            &d.calls,
            &d.successes,
            &d.failures,
            &d.total_ms,
            &now,
            &tenant,
        ];
        writes.push(tx.execute_raw(&stats, p));
        while let Some((t, ms, i, k)) = slots.next_if(|s| s.0 == tool) {
            let p: Params<'_> = vec![*t, *ms, i, k, &tenant, &window];
            writes.push(tx.execute_raw(&duration, p));
        }
    }
    for ((source, target), n) in &edges {
        let p: Params<'_> = vec![source, target, n, &now, &tenant];
        writes.push(tx.execute_raw(&edge, p));
    }
    if let (Some(kv), Some(text)) = (&kv, &last) {
        let p: Params<'_> = vec![&last_key, text];
        writes.push(tx.execute_raw(kv, p));
    }
    pipelined(writes).await
}

impl Pg {
    /// Records one execution's traces and, when given, the last execution (JSON); with a
    /// `key`, at most once.
    pub fn record_execution(
        &self,
        tenant: &str,
        traces: &[TraceEvent],
        aborted: bool,
        last: Option<&str>,
        key: Option<WriteKey<'_>>,
    ) -> Result<(), StoreError> {
        self.write(async |tx| record(tx, tenant, traces, aborted, last, key).await)
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
                tools.push(stats_of((
                    name,
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                    r.get(5),
                )));
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
