//! An audit record made fit for the store, whatever a client put in it.
//!
//! - **Encoded**: U+0000 (a NUL in a client's name, a script, a tool name) is written as U+2400
//!   `␀` in every text column, on both stores: PostgreSQL refuses a NUL in text (`invalid byte
//!   sequence for encoding "UTF8": 0x00`), and SQLite keeps the same text so the log reads the
//!   same on either. (`code_sha256` is the digest of the code as it ran, NULs included.)
//! - **Reduced**: a record the store still refuses for its *content* ([`StoreError::Refused`]:
//!   PostgreSQL SQLSTATE class 22, SQLite's `SQLITE_TOOBIG` or `SQLITE_MISMATCH`) is that
//!   record's problem, not the store's: it is written again without the text a client chose
//!   (code, client name, arguments, labels, detail; the client column then holds
//!   [`REDUCED_CLIENT`] and the detail one log line saying why), principal, tenant and tool
//!   names kept as printable ASCII. Each such record is counted ([`records_reduced`], on
//!   `/metrics` as `mcp_sandbox_audit_records_reduced_total`) and logged at most once a minute.

use super::audit_record::{AuditCall, AuditDetail, AuditRecord, DetailLog};
use super::StoreError;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a U+0000 in a record's text is written.
pub const NUL_SHOWN_AS: char = '\u{2400}';

/// The client column of a reduced record.
pub const REDUCED_CLIENT: &str = "[not kept: the audit store refused this record's content]";

/// Longest string a reduced record keeps of a name (principal, tenant, tool).
const REDUCED_NAME_BYTES: usize = 256;

static REDUCED: AtomicU64 = AtomicU64::new(0);
static LAST_LOG: Mutex<Option<Instant>> = Mutex::new(None);
const LOG_EVERY: Duration = Duration::from_secs(60);

/// How many audit records this process wrote reduced (the store refused their content).
pub fn records_reduced() -> u64 {
    REDUCED.load(Ordering::Relaxed)
}

fn has_nul(s: &str) -> bool {
    s.as_bytes().contains(&0)
}

fn encode(s: &mut String) {
    if has_nul(s) {
        *s = s.replace('\0', &NUL_SHOWN_AS.to_string());
    }
}

fn encode_opt(s: &mut Option<String>) {
    if let Some(s) = s {
        encode(s);
    }
}

/// `r` with every U+0000 of its text columns written as [`NUL_SHOWN_AS`]; borrowed when it has
/// none. (`labels` and `detail` are stored as JSON, where a NUL is the escape `\u0000`.)
pub fn storable(r: &AuditRecord) -> Cow<'_, AuditRecord> {
    let opt = |s: &Option<String>| s.as_deref().is_some_and(has_nul);
    let dirty = [
        &r.principal,
        &r.tenant,
        &r.front,
        &r.code_sha256,
        &r.outcome,
    ]
    .into_iter()
    .any(|s| has_nul(s))
        || opt(&r.client)
        || opt(&r.code)
        || r.calls.iter().any(|c| {
            has_nul(&c.kind)
                || has_nul(&c.tool)
                || opt(&c.args_sha256)
                || opt(&c.args)
                || opt(&c.error)
                || opt(&c.approval)
        });
    if !dirty {
        return Cow::Borrowed(r);
    }
    let mut r = r.clone();
    for s in [
        &mut r.principal,
        &mut r.tenant,
        &mut r.front,
        &mut r.code_sha256,
        &mut r.outcome,
    ] {
        encode(s);
    }
    encode_opt(&mut r.client);
    encode_opt(&mut r.code);
    for c in &mut r.calls {
        encode(&mut c.kind);
        encode(&mut c.tool);
        for s in [
            &mut c.args_sha256,
            &mut c.args,
            &mut c.error,
            &mut c.approval,
        ] {
            encode_opt(s);
        }
    }
    Cow::Owned(r)
}

/// `s` as printable ASCII (anything else as `\u{HHHH}`), at most [`REDUCED_NAME_BYTES`].
fn ascii(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if out.len() >= REDUCED_NAME_BYTES {
            out.push_str("[cut]");
            break;
        }
        if c.is_ascii_graphic() || c == ' ' {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
    out
}

/// What is left of `r` when the store refused its content (`why`): see the module's docs.
pub fn reduced(r: &AuditRecord, why: &StoreError) -> AuditRecord {
    let note = format!(
        "the audit store refused this record's content ({}); it is kept without its code, client name, arguments, labels and detail",
        ascii(&why.to_string())
    );
    AuditRecord {
        id: r.id,
        execution_id: r.execution_id.clone(),
        ts: r.ts,
        principal: ascii(&r.principal),
        tenant: ascii(&r.tenant),
        client: Some(REDUCED_CLIENT.to_string()),
        front: ascii(&r.front),
        code: None,
        code_sha256: ascii(&r.code_sha256),
        code_bytes: r.code_bytes,
        outcome: ascii(&r.outcome),
        duration_ms: r.duration_ms,
        calls: r
            .calls
            .iter()
            .map(|c| AuditCall {
                kind: ascii(&c.kind),
                tool: ascii(&c.tool),
                args_sha256: c.args_sha256.as_deref().map(ascii),
                args: None,
                error: c.error.as_deref().map(ascii),
                duration_ms: c.duration_ms,
                approval: c.approval.as_deref().map(ascii),
            })
            .collect(),
        labels: Vec::new(),
        detail: Some(AuditDetail {
            logs: vec![DetailLog {
                level: "audit".into(),
                message: note,
            }],
            ..AuditDetail::default()
        }),
        write_key: r.write_key.clone(),
    }
}

/// Runs `write` with `r` made [`storable`]; when the store refuses that for its content, once
/// more with the [`reduced`] record (counted). A refusal of the reduced record too is the
/// answer (the caller must not take it for an unreachable store).
pub(super) fn write_storable<T>(
    r: &AuditRecord,
    mut write: impl FnMut(&AuditRecord) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let r = storable(r);
    match write(&r) {
        Err(e) if e.refused_content() => {
            let done = write(&reduced(&r, &e))?;
            count_reduced(&e);
            Ok(done)
        }
        done => done,
    }
}

/// Counts one reduced record; logs at most once a minute.
pub(super) fn count_reduced(why: &StoreError) {
    let total = REDUCED.fetch_add(1, Ordering::Relaxed) + 1;
    let mut last = LAST_LOG.lock().unwrap_or_else(|p| p.into_inner());
    if last.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
        *last = Some(Instant::now());
        tracing::warn!(
            total,
            "an audit record was written without its content: the store refused it ({why}); see mcp_sandbox_audit_records_reduced_total"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> AuditRecord {
        AuditRecord {
            id: 0,
            execution_id: None,
            ts: 1.0,
            principal: "token:a\0b".into(),
            tenant: "t".into(),
            client: Some("c\0".into()),
            front: "http".into(),
            code: Some("return '\0'".into()),
            code_sha256: "00".into(),
            code_bytes: Some(10),
            outcome: "OK".into(),
            duration_ms: 1.0,
            calls: vec![AuditCall {
                kind: "tool".into(),
                tool: "s:t\u{202e}".into(),
                args_sha256: None,
                args: Some("{\"a\":\"\0\"}".into()),
                error: None,
                duration_ms: None,
                approval: None,
            }],
            labels: vec!["x".into()],
            detail: None,
            write_key: None,
        }
    }

    #[test]
    fn nul_is_written_as_the_symbol_for_null_and_clean_records_are_borrowed() {
        let r = record();
        let s = storable(&r);
        assert_eq!(s.principal, "token:a\u{2400}b");
        assert_eq!(s.client.as_deref(), Some("c\u{2400}"));
        assert_eq!(s.code.as_deref(), Some("return '\u{2400}'"));
        assert_eq!(s.calls[0].args.as_deref(), Some("{\"a\":\"\u{2400}\"}"));
        assert!(matches!(storable(&s), Cow::Borrowed(_)));
    }

    #[test]
    fn a_reduced_record_keeps_no_client_text() {
        let r = record();
        let why = StoreError::Refused("bad (22021)".into());
        let red = reduced(&r, &why);
        assert_eq!(red.principal, "token:a\\u{0000}b");
        assert_eq!(red.client.as_deref(), Some(REDUCED_CLIENT));
        assert_eq!(red.code, None);
        assert_eq!(red.calls[0].tool, "s:t\\u{202e}");
        assert_eq!(red.calls[0].args, None);
        assert!(red.labels.is_empty());
        let d = red.detail.unwrap();
        assert!(d.logs[0].message.contains("bad (22021)"), "{:?}", d.logs);
    }

    #[test]
    fn content_refusals_are_told_from_failures_of_the_store() {
        let sqlite = |code| {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                None,
            ))
        };
        assert!(sqlite(rusqlite::ffi::SQLITE_TOOBIG).refused_content());
        assert!(sqlite(rusqlite::ffi::SQLITE_MISMATCH).refused_content());
        assert!(!sqlite(rusqlite::ffi::SQLITE_BUSY).refused_content());
        assert!(!sqlite(rusqlite::ffi::SQLITE_FULL).refused_content());
        assert!(StoreError::Refused("x".into()).refused_content());
        assert!(!StoreError::Postgres("x".into()).refused_content());
        assert!(!StoreError::NoAnswer(5.0).refused_content());
    }
}
