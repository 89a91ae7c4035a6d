//! The store-level test suites, run on both backends: each suite is a function of a `&Store`
//! (in the module it tests); [`suites!`] makes one test per suite on a fresh SQLite file, and one
//! test that starts a PostgreSQL server of its own (`tests/pg_support`) and runs every suite on a
//! fresh database of it (one server per run, not per suite: a server takes about a second).

#[path = "../../tests/pg_support/mod.rs"]
pub(crate) mod pg_support;

use super::{Backend, Store};

/// The number `sql` (a `SELECT COUNT(*)…`, the same text on both backends) answers.
pub(crate) fn count(s: &Store, sql: &str) -> i64 {
    match s.pg() {
        Some(pg) => pg.count(sql),
        None => s.with(|c| Ok(c.query_row(sql, [], |r| r.get(0))?)).unwrap(),
    }
}

/// A second handle on the same data, as another gateway (another process) would have: its own
/// connection (SQLite) or its own pool (PostgreSQL).
pub(crate) fn reopen(s: &Store) -> Store {
    Store::open(s.path()).unwrap()
}

macro_rules! suites {
    ($($name:ident => $suite:path),* $(,)?) => {
        mod on_sqlite {
            $(
                #[test]
                fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let s = crate::store::Store::open(&dir.path().join("s.db")).unwrap();
                    $suite(&s);
                }
            )*
        }

        #[test]
        fn every_suite_on_postgres() {
            let server = pg_support::PgServer::start();
            $(
                let url = server.database();
                let s = Store::open(std::path::Path::new(&url))
                    .unwrap_or_else(|e| panic!("{}: {e}", stringify!($name)));
                $suite(&s);
            )*
        }
    };
}

suites! {
    graph_mean_and_p95 => crate::store::graph::tests::mean_and_p95_over_successes_only,
    graph_duration_window => crate::store::graph::tests::the_duration_window_is_bounded,
    graph_duration_ring => crate::store::graph::tests::the_duration_ring_keeps_the_last_successes,
    graph_concurrent_writers => crate::store::suites::concurrent_graph_writers_lose_no_increment,
    capabilities_versions => crate::store::capabilities::tests::new_code_makes_a_new_version_and_the_latest_wins,
    capabilities_concurrent_saves => crate::store::suites::concurrent_saves_give_each_version_once,
    tokens => crate::store::tokens::tests::create_find_revoke,
    audit_retention => crate::store::audit::tests::retention_by_age_and_by_count,
    audit_web_view => crate::store::audit::tests::the_web_view_reads_a_record_and_its_detail,
    audit_list_pages => crate::store::audit_list::tests::the_list_pages_by_a_cursor,
    audit_concurrent_appends => crate::store::suites::concurrent_audit_appends_keep_one_record_each,
    audit_retried_completion => crate::store::audit::tests::a_retried_completion_writes_its_calls_once,
    session_values => crate::store::session_state::tests::values_are_kept_per_scope,
    session_quotas => crate::store::session_state::tests::quotas_name_their_bound,
    session_sealed => crate::store::session_state::tests::sealed_values_keep_their_mark_and_size,
    oauth_rows => crate::store::oauth::tests::rows_per_server,
    session_idle => crate::store::session_state::tests::an_idle_session_loses_its_values,
    rate_shared_starts => crate::store::rate::tests::starts_are_counted_per_principal,
    handle_sessions => crate::store::session_handles::tests::handle_sessions_open_resume_and_expire,
    mcp_sessions => crate::store::mcp_sessions::tests::sessions_are_kept_renewed_and_swept,
    yielded_read_once => crate::store::yielded::tests::read_once_by_its_scope,
    yielded_two_takers => crate::store::yielded::tests::two_takers_get_it_once,
    yielded_expiry => crate::store::yielded::tests::rows_expire,
    yielded_liveness => crate::store::yielded::tests::liveness_of_unknown_gateways,
    approvals_kept_and_answered_once => crate::store::approvals::tests::kept_listed_answered_once,
    approvals_first_answer_wins => crate::store::approvals::tests::the_first_answer_wins,
    learning_retry_once => crate::store::write_key::tests::a_retried_learning_write_is_applied_once,
    learning_keys_pruned => crate::store::write_key::tests::expired_learning_keys_are_pruned,
    audit_retry_once => crate::store::write_key::tests::a_retried_audit_record_is_written_once,
    audit_chain_pruned => crate::store::audit::tests::the_chain_holds_through_retention_and_names_a_forged_checkpoint,
    audit_chain_tampered => crate::store::audit::tests::the_chain_names_the_record_changed_removed_swapped_or_inserted,
}

/// Runs `sql` (the same text on both backends), for tests that edit the store by hand.
pub(crate) fn exec(s: &Store, sql: &str) {
    match s.pg() {
        Some(pg) => pg.exec(sql),
        None => s.with(|c| Ok(c.execute_batch(sql)?)).unwrap(),
    }
}

/// Writers (threads)…
const WRITERS: usize = 4;
/// …each recording this many executions.
const ROUNDS: usize = 50;

pub(super) fn two_call_traces(i: usize) -> Vec<crate::trace::TraceEvent> {
    use crate::trace::{TraceEvent, TraceKind};
    let ev = |kind, tool: &str, id: String, success, duration_ms| TraceEvent {
        kind,
        tool: tool.into(),
        trace_id: id,
        parent_trace_id: None,
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
    let mut out = Vec::new();
    // Half the writers call a then b, the other half b then a: their upserts take the rows'
    // locks in opposite orders (the deadlock case on PostgreSQL, run again by the store).
    let tools = if i.is_multiple_of(2) {
        ["g:a", "g:b"]
    } else {
        ["g:b", "g:a"]
    };
    for (n, tool) in tools.iter().enumerate() {
        out.push(ev(
            TraceKind::ToolStart,
            tool,
            format!("{i}-{n}"),
            None,
            None,
        ));
        out.push(ev(
            TraceKind::ToolEnd,
            tool,
            format!("{i}-{n}"),
            Some(true),
            Some(1.0),
        ));
    }
    out
}

/// Graph counters and edges: no increment lost when several writers record the same tools
/// and edges at once.
fn concurrent_graph_writers_lose_no_increment(s: &Store) {
    std::thread::scope(|scope| {
        for w in 0..WRITERS {
            let store = reopen(s);
            scope.spawn(move || {
                for _ in 0..ROUNDS {
                    store.record_traces(&two_call_traces(w), false).unwrap();
                }
            });
        }
    });
    let g = s.graph(None).unwrap();
    let calls: Vec<(String, i64, i64)> = g
        .tools
        .iter()
        .map(|t| (t.tool.clone(), t.calls, t.successes))
        .collect();
    let n = (WRITERS * ROUNDS) as i64;
    assert_eq!(
        calls,
        vec![("g:a".into(), n, n), ("g:b".into(), n, n)],
        "every call counted"
    );
    let edges: Vec<(String, String, i64)> = g
        .edges
        .iter()
        .map(|e| (e.source.clone(), e.target.clone(), e.count))
        .collect();
    assert_eq!(
        edges,
        vec![
            ("g:a".into(), "g:b".into(), n / 2),
            ("g:b".into(), "g:a".into(), n / 2)
        ]
    );
}

/// Capability versions: writers saving different code under one name at once get distinct,
/// gapless version numbers.
fn concurrent_saves_give_each_version_once(s: &Store) {
    let quota = super::CapabilityQuota {
        max_versions: 1000,
        ..Default::default()
    };
    let versions = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for w in 0..WRITERS {
            let store = reopen(s);
            let (versions, quota) = (&versions, &quota);
            scope.spawn(move || {
                for i in 0..10 {
                    let new = super::NewCapability {
                        name: "race:save".into(),
                        code: format!("return {w} * 1000 + {i}"),
                        ..Default::default()
                    };
                    let rec = store.save_capability_within(&new, quota).unwrap();
                    versions.lock().unwrap().push(rec.version);
                }
            });
        }
    });
    let mut versions = versions.into_inner().unwrap();
    versions.sort_unstable();
    let expected: Vec<i64> = (1..=(WRITERS as i64 * 10)).collect();
    assert_eq!(versions, expected);
    assert_eq!(
        s.capability_versions("race:save").unwrap().len(),
        expected.len()
    );
}

/// The audit log: one record per append, each with its own id, whatever the concurrency.
fn concurrent_audit_appends_keep_one_record_each(s: &Store) {
    use super::audit::{AuditCall, AuditFilter, AuditRecord};
    std::thread::scope(|scope| {
        for w in 0..WRITERS {
            let store = reopen(s);
            scope.spawn(move || {
                for i in 0..ROUNDS {
                    let mut r = AuditRecord {
                        id: 0,
                        execution_id: None,
                        ts: i as f64,
                        principal: format!("w{w}"),
                        tenant: "default".into(),
                        client: None,
                        front: "test".into(),
                        code: None,
                        code_sha256: "00".into(),
                        code_bytes: None,
                        outcome: super::audit::RUNNING.into(),
                        duration_ms: 0.0,
                        calls: Vec::new(),
                        labels: Vec::new(),
                        detail: None,
                        write_key: None,
                    };
                    // Half written ahead then completed, half appended whole.
                    if i.is_multiple_of(2) {
                        let id = store.begin_audit(&r).unwrap();
                        r.outcome = "OK".into();
                        r.calls = vec![AuditCall {
                            kind: "tool".into(),
                            tool: "s:t".into(),
                            args_sha256: None,
                            args: None,
                            error: None,
                            duration_ms: Some(1.0),
                            approval: None,
                        }];
                        store.complete_audit(id, &r).unwrap();
                    } else {
                        r.outcome = "OK".into();
                        store.append_audit(&r).unwrap();
                    }
                }
            });
        }
    });
    let all = s
        .query_audit(&AuditFilter {
            limit: 100_000,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(all.len(), WRITERS * ROUNDS);
    assert!(all.iter().all(|r| r.outcome == "OK"));
    let mut ids: Vec<i64> = all.iter().map(|r| r.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), WRITERS * ROUNDS, "ids are unique");
    // The chain holds with every writer appending at once: one chain on SQLite, one per
    // writer (gateway) on PostgreSQL.
    let intact = s
        .verify_audit(None)
        .unwrap()
        .unwrap_or_else(|f| panic!("the chains hold: {f}"));
    assert_eq!(intact.records, (WRITERS * ROUNDS) as u64);
    assert_eq!(intact.chains, if s.pg().is_some() { WRITERS } else { 1 });
    assert_eq!(
        count(s, "SELECT COUNT(*) FROM audit_calls"),
        (WRITERS * ROUNDS / 2) as i64
    );
}

/// Not a test: the measurement behind "one chain per gateway" (docs/gateway.md). Two gateways
/// (two pools) with four writers each record 2,000 executions (write-ahead + completion), once
/// with a chain per gateway and once with both appending to one chain; prints the rates and
/// per-execution percentiles. Run with `cargo nextest run --cargo-profile inner --lib
/// --run-ignored only -E 'test(/measure_chain_per_gateway/)' --no-capture`.
#[test]
#[ignore]
fn measure_chain_per_gateway_against_one_chain() {
    use super::audit::AuditRecord;
    let server = pg_support::PgServer::start();
    let rec = |i: usize| AuditRecord {
        id: 0,
        execution_id: Some(format!("{i}")),
        ts: i as f64,
        principal: "p".into(),
        tenant: "default".into(),
        client: None,
        front: "test".into(),
        code: Some("return await mcp.fixture.echo({message: 'x'})".into()),
        code_sha256: "00".into(),
        code_bytes: Some(40),
        outcome: super::audit::RUNNING.into(),
        duration_ms: 0.0,
        calls: Vec::new(),
        labels: Vec::new(),
        detail: None,
        write_key: Some(crate::store::write_key::new_key()),
    };
    for shared in [false, true, false, true] {
        let url = server.database();
        let stores: Vec<Store> = (0..2)
            .map(|g| {
                let s = Store::open(std::path::Path::new(&url)).unwrap();
                let Backend::Postgres(pg) = &s.backend else {
                    unreachable!()
                };
                let name = if shared {
                    "one".to_string()
                } else {
                    format!("g{g}")
                };
                Store {
                    backend: Backend::Postgres(pg.clone().with_chain(&name)),
                    ..s.clone()
                }
            })
            .collect();
        let t = std::time::Instant::now();
        let per: Vec<Vec<f64>> = std::thread::scope(|scope| {
            let hs: Vec<_> = stores
                .iter()
                .flat_map(|s| (0..4).map(move |_| s))
                .map(|s| {
                    scope.spawn(move || {
                        let mut us = Vec::new();
                        for i in 0..250 {
                            let t = std::time::Instant::now();
                            let mut r = rec(i);
                            let id = s.begin_audit(&r).unwrap();
                            r.outcome = "OK".into();
                            s.complete_audit(id, &r).unwrap();
                            us.push(t.elapsed().as_secs_f64() * 1e6);
                        }
                        us
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let took = t.elapsed();
        let mut all: Vec<f64> = per.into_iter().flatten().collect();
        all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let intact = stores[0].verify_audit(None).unwrap().unwrap();
        eprintln!(
            "shared={shared}: 2 gateways x 4 threads x 250 executions (write-ahead + completion) in {took:?} = {:.0}/s; per execution p50 {:.0} us p99 {:.0} us; chains {}",
            2000.0 / took.as_secs_f64(),
            all[all.len() / 2],
            all[all.len() * 99 / 100],
            intact.chains
        );
    }
}
