//! Writes tried again after a commit whose answer was lost, on both backends (run by
//! `store::suites`). The first try is committed for real; the retry is what the queue sends then.

use super::*;
use crate::store::audit::{AuditCall, AuditFilter, AuditRecord, RUNNING};
use crate::store::suites::{count, two_call_traces};
use crate::store::{FinishedExecution, Store};
use crate::trace::TraceEvent;

struct Finished(Vec<TraceEvent>);

impl FinishedExecution for Finished {
    fn success(&self) -> bool {
        true
    }
    fn error_code(&self) -> Option<crate::error::ErrorCode> {
        None
    }
    fn traces(&self) -> &[TraceEvent] {
        &self.0
    }
}

/// `g:a` and `g:b`'s call counts and the edges' total.
fn counts(s: &Store) -> (Vec<i64>, i64) {
    let g = s.graph(None).unwrap();
    let calls = g.tools.iter().map(|t| t.calls).collect();
    (calls, g.edges.iter().map(|e| e.count).sum())
}

/// A learning write retried with the key of a committed first try counts nothing twice; a
/// retry whose first try was not committed is applied; another key is another write.
pub(crate) fn a_retried_learning_write_is_applied_once(s: &Store) {
    let once = Finished(two_call_traces(0));
    let key = |id, retry| WriteKey { id, retry };
    s.record_execution_once(
        &once,
        Some(("return 1", Default::default())),
        key("k1", false),
    )
    .unwrap();
    assert_eq!(counts(s), (vec![1, 1], 1));
    s.record_execution_once(&once, None, key("k1", true))
        .unwrap();
    assert_eq!(counts(s), (vec![1, 1], 1), "the retry of a committed write");
    s.record_execution_once(&once, None, key("k2", true))
        .unwrap();
    assert_eq!(
        counts(s),
        (vec![2, 2], 2),
        "a retry of a write never committed"
    );
    s.record_execution_once(&once, None, key("k3", false))
        .unwrap();
    assert_eq!(counts(s), (vec![3, 3], 3));
    assert_eq!(count(s, "SELECT COUNT(*) FROM learning_writes"), 3);
}

/// Keys older than [`KEY_RETENTION_MS`] are deleted by the next writes, a batch at a time.
pub(crate) fn expired_learning_keys_are_pruned(s: &Store) {
    for i in 0..PRUNE_BATCH + 6 {
        let added = count(
            s,
            &format!("INSERT INTO learning_writes (key, at) VALUES ('old{i}', {i}) RETURNING CAST(1 AS BIGINT)"),
        );
        assert_eq!(added, 1);
    }
    let once = Finished(two_call_traces(0));
    let first = WriteKey {
        id: "new1",
        retry: false,
    };
    s.record_execution_once(&once, None, first).unwrap();
    // One batch of the oldest went; the new key stays.
    let left = "SELECT COUNT(*) FROM learning_writes WHERE key LIKE 'old%'";
    assert_eq!(count(s, left), 6);
    assert_eq!(
        count(s, "SELECT COUNT(*) FROM learning_writes WHERE at < 64"),
        0
    );
    s.record_execution_once(
        &once,
        None,
        WriteKey {
            id: "new2",
            retry: false,
        },
    )
    .unwrap();
    assert_eq!(count(s, left), 0);
    assert_eq!(count(s, "SELECT COUNT(*) FROM learning_writes"), 2);
}

fn record(key: &str, outcome: &str, calls: usize) -> AuditRecord {
    AuditRecord {
        id: 0,
        execution_id: None,
        ts: 1.0,
        principal: "p".into(),
        tenant: "default".into(),
        client: None,
        front: "test".into(),
        code: Some("return 1".into()),
        code_sha256: "00".into(),
        code_bytes: Some(8),
        outcome: outcome.into(),
        duration_ms: 2.0,
        calls: (0..calls)
            .map(|i| AuditCall {
                kind: "tool".into(),
                tool: format!("s:t{i}"),
                args_sha256: None,
                args: None,
                error: None,
                duration_ms: Some(1.0),
                approval: None,
            })
            .collect(),
        labels: Vec::new(),
        detail: None,
        write_key: Some(key.into()),
    }
}

fn all(s: &Store) -> Vec<AuditRecord> {
    s.query_audit(&AuditFilter {
        limit: 100,
        ..Default::default()
    })
    .unwrap()
}

/// A whole audit record appended again (its first append committed, the answer lost) stays one
/// record with its calls once; one appended whole after its write-ahead record was committed
/// (the write-ahead's answer lost) completes that record instead of leaving it `RUNNING`.
pub(crate) fn a_retried_audit_record_is_written_once(s: &Store) {
    let whole = record("a1", "OK", 2);
    let id = s.append_audit(&whole).unwrap();
    assert_eq!(s.append_audit(&whole).unwrap(), id);
    let records = all(s);
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].id, records[0].outcome.as_str()), (id, "OK"));
    assert_eq!(count(s, "SELECT COUNT(*) FROM audit_calls"), 2);

    let ahead = s.begin_audit(&record("a2", RUNNING, 0)).unwrap();
    assert_ne!(ahead, id);
    assert_eq!(s.begin_audit(&record("a2", RUNNING, 0)).unwrap(), ahead);
    assert_eq!(
        s.append_audit(&record("a2", "RUNTIME_ERROR", 3)).unwrap(),
        ahead
    );
    let records = all(s);
    let outcomes: Vec<(i64, &str, usize)> = records
        .iter()
        .map(|r| (r.id, r.outcome.as_str(), r.calls.len()))
        .collect();
    assert_eq!(outcomes, vec![(id, "OK", 2), (ahead, "RUNTIME_ERROR", 3)]);

    // Records without a key (a capability save's, a label clearing's) are never merged.
    let mut plain = record("", "OK", 0);
    plain.write_key = None;
    let (p1, p2) = (
        s.append_audit(&plain).unwrap(),
        s.append_audit(&plain).unwrap(),
    );
    assert_ne!(p1, p2);
    assert_eq!(all(s).len(), 4);
}
