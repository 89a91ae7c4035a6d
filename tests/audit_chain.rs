//! The audit log proves it was not edited (issue 62): `audit verify` walks the hash chain the
//! records are linked into and names the first record changed, removed, inserted or
//! reordered by hand (here with SQLite, as anyone with the state file could); retention leaves
//! a checkpoint signed with the operator's key; an export verifies offline with the public key
//! and fails after any edit.

use crate::common::fixture_config_file;
use crate::serve_support::team::{audit, cli};
use serde_json::json;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

fn run(config: &Path, state: &Path, script: &str, extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.js");
    std::fs::write(&file, script).unwrap();
    let mut args: Vec<&OsStr> = vec![
        "run".as_ref(),
        file.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    let (status, _, err) = cli(&args);
    assert_eq!(status, 0, "{script}: {err}");
}

/// `mcp-sandbox audit ARGS`: (status, stdout, stderr).
fn audit_cmd(args: &[&OsStr]) -> (i32, String, String) {
    let mut all: Vec<&OsStr> = vec!["audit".as_ref()];
    all.extend_from_slice(args);
    cli(&all)
}

fn verify(state: &Path, extra: &[&str]) -> (i32, String) {
    let mut args: Vec<&OsStr> = vec!["verify".as_ref(), "--state".as_ref(), state.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    let (status, out, err) = audit_cmd(&args);
    (status, format!("{out}{err}"))
}

/// A copy of the state file to edit by hand (the CLI closed it: its WAL was checkpointed).
fn copy_of(state: &Path, name: &str) -> PathBuf {
    let to = state.with_file_name(name);
    std::fs::copy(state, &to).unwrap();
    to
}

/// Runs `sql` on the state file as the `sqlite3` shell would (foreign keys not enforced).
fn edit(state: &Path, sql: &str) {
    let c = rusqlite::Connection::open(state).unwrap();
    c.execute_batch(&format!("PRAGMA foreign_keys = OFF; {sql}"))
        .unwrap();
}

fn four_records(dir: &Path) -> (PathBuf, PathBuf) {
    let config = fixture_config_file(dir, json!({}));
    let state = dir.join("state.db");
    run(&config, &state, "return 1", &[]);
    run(
        &config,
        &state,
        "return await mcp.fixture.echo({message: 'two'})",
        &[],
    );
    run(
        &config,
        &state,
        "return await mcp.fixture.echo({message: 'three'})",
        &[],
    );
    run(&config, &state, "return 4", &[]);
    (config, state)
}

#[test]
fn verify_is_intact_after_use_and_names_each_record_edited_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let (_, state) = four_records(dir.path());
    let records = audit(&state, &[]);
    let ids: Vec<i64> = records.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    // Each record names its execution.
    for r in &records {
        let id = r["execution_id"].as_str().expect("an execution id");
        assert_eq!(id.len(), 36, "{id}");
    }
    let (status, out) = verify(&state, &[]);
    assert_eq!(status, 0, "{out}");
    assert!(out.starts_with("intact: 4 records from #1 ("), "{out}");
    assert!(out.contains(") to #4 ("), "{out}");

    // One byte of one record's code.
    let s = copy_of(&state, "byte.db");
    edit(&s, "UPDATE audit SET code = 'return 5' WHERE id = 4");
    let (status, out) = verify(&s, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: record #4 was changed"),
        "{out}"
    );

    // One call's answer code in another (the calls are covered too).
    let s = copy_of(&state, "call.db");
    edit(
        &s,
        "UPDATE audit_calls SET error = 'TOOL_ERROR' WHERE audit_id = 2",
    );
    let (status, out) = verify(&s, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: record #2 was changed"),
        "{out}"
    );

    // A record deleted.
    let s = copy_of(&state, "deleted.db");
    edit(
        &s,
        "DELETE FROM audit_calls WHERE audit_id = 3; DELETE FROM audit WHERE id = 3",
    );
    let (status, out) = verify(&s, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: record #3 was removed"),
        "{out}"
    );

    // A record deleted with its links: the hole is named after the record before it.
    let s = copy_of(&state, "unlinked.db");
    edit(
        &s,
        "DELETE FROM audit_calls WHERE audit_id = 3; DELETE FROM audit WHERE id = 3; DELETE FROM audit_links WHERE audit_id = 3",
    );
    let (status, out) = verify(&s, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: records were removed: chain local lacks its links at positions 5..=6 (after record #2)"),
        "{out}"
    );

    // Two records swapped (their rows and calls change places).
    let s = copy_of(&state, "swapped.db");
    edit(
        &s,
        "UPDATE audit SET id = -2 WHERE id = 2; UPDATE audit SET id = 2 WHERE id = 3; UPDATE audit SET id = 3 WHERE id = -2;
         UPDATE audit_calls SET audit_id = -2 WHERE audit_id = 2; UPDATE audit_calls SET audit_id = 2 WHERE audit_id = 3; UPDATE audit_calls SET audit_id = 3 WHERE audit_id = -2;",
    );
    let (status, out) = verify(&s, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: records were reordered: record #2 holds what chain local has for record #3"),
        "{out}"
    );

    // A record inserted.
    let s = copy_of(&state, "inserted.db");
    edit(
        &s,
        "INSERT INTO audit (ts, principal, tenant, front, code, code_sha256, outcome, duration_ms) SELECT ts + 1, principal, tenant, front, 'return 0', code_sha256, 'OK', 1.0 FROM audit WHERE id = 2",
    );
    let (status, out) = verify(&s, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: record #5 was inserted"),
        "{out}"
    );

    // Nothing changed: still intact.
    assert_eq!(verify(&state, &[]).0, 0);
}

/// `audit keygen` writes the private key owner-only and prints the public line.
fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let (status, out, err) =
        audit_cmd(&["keygen".as_ref(), "--key-file".as_ref(), path.as_os_str()]);
    assert_eq!(status, 0, "{err}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let line = out.trim().to_string();
    assert!(
        line.starts_with("ed25519:") && line.len() == 8 + 64,
        "{line}"
    );
    assert_eq!(out.lines().count(), 1, "{out}");
    (path, line)
}

#[test]
fn retention_leaves_a_checkpoint_that_only_the_operators_key_proves() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "audit.key");
    let (other, other_public) = keygen(dir.path(), "other.key");
    // keygen never overwrites a key.
    let (status, _, err) = audit_cmd(&["keygen".as_ref(), "--key-file".as_ref(), key.as_os_str()]);
    assert_eq!(status, 2, "{err}");
    let (config, state) = four_records(dir.path());
    let key_arg = key.to_str().unwrap();
    // Pruned to 2 at start (records 1 and 2 go), then this execution's record.
    run(
        &config,
        &state,
        "return 5",
        &["--audit-retain-records", "2", "--audit-key-file", key_arg],
    );
    let ids: Vec<i64> = audit(&state, &[])
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [3, 4, 5]);
    let (status, out) = verify(&state, &["--public-key", &public]);
    assert_eq!(status, 0, "{out}");
    assert!(
        out.starts_with("intact: 3 records from #3 (")
            && out.contains("1 chain(s) start at a checkpoint signed by the key"),
        "{out}"
    );
    // The private key file gives the same public key; a file holding the line too.
    assert_eq!(verify(&state, &["--audit-key-file", key_arg]).0, 0);
    let line_file = dir.path().join("public.txt");
    std::fs::write(&line_file, format!("{public}\n")).unwrap();
    assert_eq!(
        verify(&state, &["--public-key", line_file.to_str().unwrap()]).0,
        0
    );
    // Without a key the start of the chain is not proven.
    let (status, out) = verify(&state, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(out.contains("pass --public-key KEY"), "{out}");
    assert_eq!(verify(&state, &["--public-key", &other_public]).0, 1);

    // Someone with another key prunes (to hide the start of the log) and signs the checkpoint.
    run(
        &config,
        &state,
        "return 6",
        &[
            "--audit-retain-records",
            "1",
            "--audit-key-file",
            other.to_str().unwrap(),
        ],
    );
    let (status, out) = verify(&state, &["--public-key", &public]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with(
            "AUDIT_TAMPERED: the start of chain local is not proven: its checkpoint (position"
        ),
        "{out}"
    );
    assert!(out.contains("is not signed by this key"), "{out}");
}

#[test]
fn an_export_verifies_offline_and_fails_after_any_edit() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "audit.key");
    let (_, other_public) = keygen(dir.path(), "other.key");
    let (_, state) = four_records(dir.path());
    let export = |extra: &[&str]| -> String {
        let mut args: Vec<&OsStr> = vec![
            "export".as_ref(),
            "--audit-key-file".as_ref(),
            key.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        let (status, out, err) = audit_cmd(&args);
        assert_eq!(status, 0, "{err}");
        out
    };
    let file = dir.path().join("audit.jsonl");
    let text = export(&[]);
    std::fs::write(&file, &text).unwrap();
    // Filters: only the records that called the fixture; they keep their hashes.
    let some = dir.path().join("some.jsonl");
    std::fs::write(&some, export(&["--tool", "fixture:echo"])).unwrap();
    // The store is not needed: it is gone.
    std::fs::remove_file(&state).unwrap();
    let check = |path: &Path, key: &str| {
        let (status, out, err) = audit_cmd(&[
            "verify".as_ref(),
            "--file".as_ref(),
            path.as_os_str(),
            "--public-key".as_ref(),
            key.as_ref(),
        ]);
        (status, format!("{out}{err}"))
    };
    let (status, out) = check(&file, &public);
    assert_eq!(status, 0, "{out}");
    assert!(out.starts_with("intact: 4 records from #1 ("), "{out}");
    assert!(out.contains(&format!("signed by {public}")), "{out}");
    let (status, out) = check(&file, &other_public);
    assert_eq!(status, 1, "{out}");
    assert!(out.contains("not by the key given"), "{out}");
    let (status, out) = check(&some, &public);
    assert_eq!(status, 0, "{out}");
    assert!(out.starts_with("intact: 2 records from #2 ("), "{out}");

    // 8 links (a head and an end per record), then the signed head.
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 9, "{text}");
    let edited = |name: &str, lines: Vec<String>| {
        let p = dir.path().join(name);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        check(&p, &public)
    };
    let owned = || lines.iter().map(|l| l.to_string()).collect::<Vec<String>>();
    // One byte of a record (its code).
    let mut l = owned();
    l[7] = l[7].replacen("return 4", "return 5", 1);
    let (status, out) = edited("byte.jsonl", l);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: line 8: record #4 was changed"),
        "{out}"
    );
    // A record's lines removed.
    let mut l = owned();
    l.drain(2..4);
    let (status, out) = edited("removed.jsonl", l);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: line 3: record #3 does not follow the line before it"),
        "{out}"
    );
    // The last record removed (its lines are whole): the signed head no longer matches.
    let mut l = owned();
    l.drain(6..8);
    let (status, out) = edited("cut.jsonl", l);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.contains("are not the ones signed (8 signed, 6 found)"),
        "{out}"
    );
    // Two lines swapped.
    let mut l = owned();
    l.swap(2, 4);
    let (status, out) = edited("swapped.jsonl", l);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with("AUDIT_TAMPERED: line 3: record #3 does not follow the line before it"),
        "{out}"
    );
    // The head edited (more links claimed).
    let mut l = owned();
    l[8] = l[8].replacen("\"links\":8", "\"links\":6", 1);
    let (status, out) = edited("head.jsonl", l);
    assert_eq!(status, 1, "{out}");
    assert!(out.contains("head is not signed by this key"), "{out}");
}
