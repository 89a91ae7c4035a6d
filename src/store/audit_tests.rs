//! The audit log's store suites (run on both backends by `store::suites`).

use super::*;

fn record(ts: f64) -> AuditRecord {
    AuditRecord {
        id: 0,
        execution_id: None,
        ts,
        principal: "p".into(),
        tenant: "default".into(),
        client: None,
        front: "run".into(),
        code: None,
        code_sha256: "00".into(),
        code_bytes: None,
        outcome: "OK".into(),
        duration_ms: 1.0,
        labels: vec!["private".into()],
        detail: None,
        write_key: None,
        calls: vec![AuditCall {
            kind: "tool".into(),
            tool: "s:t".into(),
            args_sha256: None,
            args: None,
            error: None,
            duration_ms: None,
            approval: None,
        }],
    }
}

pub(crate) fn retention_by_age_and_by_count(s: &Store) {
    for ts in 1..=10 {
        s.append_audit(&record(f64::from(ts))).unwrap();
    }
    assert_eq!(s.prune_audit(3.0, None).unwrap(), 2);
    assert_eq!(s.prune_audit_to(5, None).unwrap(), 3);
    assert_eq!(s.prune_audit_to(5, None).unwrap(), 0);
    let all = s
        .query_audit(&AuditFilter {
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    let ts: Vec<f64> = all.iter().map(|r| r.ts).collect();
    assert_eq!(ts, [6.0, 7.0, 8.0, 9.0, 10.0]);
    assert!(all.iter().all(|r| r.calls.len() == 1));
    let orphans = crate::store::suites::count(
        s,
        "SELECT COUNT(*) FROM audit_calls WHERE audit_id NOT IN (SELECT id FROM audit)",
    );
    assert_eq!(orphans, 0);
}

/// The web view's reads: one record with its calls and detail (written with the outcome
/// of a write-ahead record, or appended whole), and the tenants the log names.
pub(crate) fn the_web_view_reads_a_record_and_its_detail(s: &Store) {
    let detail = AuditDetail {
        traces: crate::store::suites::two_call_traces(0),
        traces_dropped: 3,
        logs: vec![DetailLog {
            level: "info".into(),
            message: "hello".into(),
        }],
        logs_dropped: 1,
        error: Some(crate::trace::TraceError {
            code: crate::error::ErrorCode::RuntimeError,
            message: "boom".into(),
        }),
        recording: None,
    };
    let mut ahead = record(1.0);
    ahead.calls.clear();
    ahead.outcome = RUNNING.into();
    let id = s.begin_audit(&ahead).unwrap();
    let mut done = record(1.0);
    done.outcome = "RUNTIME_ERROR".into();
    done.detail = Some(detail.clone());
    s.complete_audit(id, &done).unwrap();
    let mut other = record(2.0);
    other.tenant = "acme".into();
    other.detail = Some(AuditDetail::default());
    let other_id = s.append_audit(&other).unwrap();
    s.append_audit(&record(3.0)).unwrap();

    let got = s.audit_record(id).unwrap().expect("the completed record");
    assert_eq!(got.id, id);
    assert_eq!(got.outcome, "RUNTIME_ERROR");
    assert_eq!(got.calls, done.calls);
    assert_eq!(got.labels, done.labels);
    assert_eq!(got.detail, Some(detail));
    let got = s
        .audit_record(other_id)
        .unwrap()
        .expect("the appended record");
    assert_eq!(
        (got.tenant.as_str(), got.detail),
        ("acme", Some(AuditDetail::default()))
    );
    // The log's query leaves the detail out (the view reads it for one record only).
    let listed = s
        .query_audit(&AuditFilter {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|r| r.detail.is_none()));
    assert_eq!(s.audit_record(id + 1000).unwrap(), None);
    assert_eq!(s.audit_tenants().unwrap(), ["acme", "default"]);
}

/// A completion retried (its first commit went through, its answer was lost): the record
/// and its calls are there once, and the retry succeeds (`required: false` retries it from
/// its queue until it does).
pub(crate) fn a_retried_completion_writes_its_calls_once(s: &Store) {
    let mut ahead = record(1.0);
    ahead.calls.clear();
    ahead.outcome = RUNNING.into();
    let id = s.begin_audit(&ahead).unwrap();
    let mut done = record(1.0);
    done.calls.push(AuditCall {
        tool: "s:u".into(),
        ..done.calls[0].clone()
    });
    s.complete_audit(id, &done).unwrap();
    s.complete_audit(id, &done).unwrap();
    let got = s.audit_record(id).unwrap().expect("the completed record");
    assert_eq!((got.outcome.as_str(), got.calls), ("OK", done.calls));
    assert_eq!(
        crate::store::suites::count(s, "SELECT COUNT(*) FROM audit"),
        1
    );
    assert_eq!(
        crate::store::suites::count(s, "SELECT COUNT(*) FROM audit_calls"),
        2
    );
}

/// Three records through the store's write paths: written ahead then completed, appended
/// whole, and one left running (its host stopped); returns their ids.
fn three(s: &Store) -> [i64; 3] {
    let mut ahead = record(1.0);
    ahead.calls.clear();
    ahead.outcome = RUNNING.into();
    ahead.write_key = Some(crate::store::write_key::new_key());
    let a = s.begin_audit(&ahead).unwrap();
    let mut done = ahead.clone();
    done.outcome = "OK".into();
    done.calls = record(1.0).calls;
    s.complete_audit(a, &done).unwrap();
    let b = s.append_audit(&record(2.0)).unwrap();
    let mut running = record(3.0);
    running.calls.clear();
    running.outcome = RUNNING.into();
    let c = s.begin_audit(&running).unwrap();
    [a, b, c]
}

fn intact(
    s: &Store,
    key: Option<&crate::store::audit_key::PublicKey>,
) -> crate::store::audit_verify::Intact {
    s.verify_audit(key)
        .unwrap()
        .unwrap_or_else(|f| panic!("the chain holds: {f}"))
}

/// Retention cuts the chain at one place and leaves a checkpoint signed with the operator's
/// key: the chain still verifies with that key, not without one, not with another.
pub(crate) fn the_chain_holds_through_retention_and_names_a_forged_checkpoint(s: &Store) {
    use crate::store::audit_verify::Finding;
    let dir = tempfile::tempdir().unwrap();
    let key = crate::store::audit_key::AuditKey::generate(&dir.path().join("k")).unwrap();
    let other = crate::store::audit_key::AuditKey::generate(&dir.path().join("o")).unwrap();
    let [_, b, c] = three(s);
    let got = intact(s, None);
    assert_eq!((got.records, got.running, got.checkpoints), (3, 1, 0));
    for ts in 4..=8 {
        s.append_audit(&record(f64::from(ts))).unwrap();
    }
    // Records before ts 2.5 go: the first one only (the running one, ts 3, stays).
    assert_eq!(s.prune_audit(2.5, Some(&key)).unwrap(), 2);
    let got = intact(s, Some(&key.public()));
    assert_eq!((got.records, got.running, got.checkpoints), (6, 1, 1));
    assert_eq!(got.first.map(|f| f.0), Some(c));
    assert!(s.audit_record(b).unwrap().is_none());
    let chain = s.audit_snapshot().unwrap().chains[0].chain.clone();
    match s.verify_audit(None).unwrap() {
        Err(Finding::Checkpoint { chain: named, why }) => {
            assert_eq!(named, chain);
            assert!(why.contains("--public-key"), "{why}");
        }
        other => panic!("a checkpoint needs the key: {other:?}"),
    }
    // A checkpoint forged with another key (to hide records removed from the start).
    assert_eq!(s.prune_audit_to(2, Some(&other)).unwrap(), 4);
    match s.verify_audit(Some(&key.public())).unwrap() {
        Err(Finding::Checkpoint { chain: named, why }) => {
            assert_eq!(named, chain);
            assert!(why.contains("not signed by this key"), "{why}");
        }
        other => panic!("a forged checkpoint fails: {other:?}"),
    }
    assert_eq!(intact(s, Some(&other.public())).records, 2);
}

/// Edits made in the store by hand are named: a field changed, a record deleted, two records
/// swapped, a record inserted.
pub(crate) fn the_chain_names_the_record_changed_removed_swapped_or_inserted(s: &Store) {
    use crate::store::audit_verify::Finding;
    use crate::store::suites::exec;
    let [a, b, _] = three(s);
    let d = s.append_audit(&record(4.0)).unwrap();
    intact(s, None);
    exec(
        s,
        &format!("UPDATE audit SET principal = 'q' WHERE id = {b}"),
    );
    assert!(matches!(s.verify_audit(None).unwrap(), Err(Finding::Changed { id, .. }) if id == b));
    exec(
        s,
        &format!("UPDATE audit SET principal = 'p' WHERE id = {b}"),
    );
    exec(
        s,
        &format!("UPDATE audit_calls SET error = 'TOOL_ERROR' WHERE audit_id = {a}"),
    );
    assert!(matches!(s.verify_audit(None).unwrap(), Err(Finding::Changed { id, .. }) if id == a));
    exec(
        s,
        &format!("UPDATE audit_calls SET error = NULL WHERE audit_id = {a}"),
    );
    intact(s, None);
    // Swapped: b and d differ only in their times; each row takes the other's.
    let swap = format!(
        "UPDATE audit SET ts = CASE WHEN id = {b} THEN 4.0 ELSE 2.0 END WHERE id IN ({b}, {d})"
    );
    exec(s, &swap);
    match s.verify_audit(None).unwrap() {
        Err(Finding::Reordered { id, other, .. }) => assert_eq!((id, other), (b, d)),
        other => panic!("a swap is named: {other:?}"),
    }
    exec(
        s,
        &format!(
            "UPDATE audit SET ts = CASE WHEN id = {b} THEN 2.0 ELSE 4.0 END WHERE id IN ({b}, {d})"
        ),
    );
    intact(s, None);
    exec(s, "INSERT INTO audit (ts, principal, tenant, front, code_sha256, outcome, duration_ms) VALUES (2.5, 'p', 'default', 'run', '00', 'OK', 1.0)");
    match s.verify_audit(None).unwrap() {
        Err(Finding::Inserted { id }) => assert!(id > d),
        other => panic!("an insertion is named: {other:?}"),
    }
    exec(s, &format!("DELETE FROM audit WHERE id > {d}"));
    intact(s, None);
    exec(
        s,
        &format!("DELETE FROM audit_calls WHERE audit_id = {b}; DELETE FROM audit WHERE id = {b}"),
    );
    assert!(matches!(s.verify_audit(None).unwrap(), Err(Finding::Removed { id, .. }) if id == b));
    // Removing its links too leaves a hole in the chain.
    exec(s, &format!("DELETE FROM audit_links WHERE audit_id = {b}"));
    assert!(matches!(
        s.verify_audit(None).unwrap(),
        Err(Finding::LinksRemoved { after: Some(id), .. }) if id == a
    ));
}
