//! The audit log: one record per execution from `run`, `serve` over stdio and over HTTP,
//! committed before the outcome is returned (so it survives a SIGKILL of the host: every
//! outcome a client received is in the log), with exact `audit` filters, `--audit-code hash`
//! and `--audit-args full`.

use crate::common::fixture_config_file;
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn run_cli(config: &Path, state: &Path, script: &str, extra: &[&str]) -> (i32, String) {
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
    (status, err)
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fair share as large as the queue: these tests send one principal's hundreds of executions
/// at once.
fn whole_queue() -> serde_json::Value {
    json!({"per_principal": 2000, "per_tenant": 2000})
}

#[test]
fn run_records_every_execution_and_audit_filters_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), json!({}));
    let state = dir.path().join("state.db");
    let echo = "return await mcp.fixture.echo({message: 'hi'}) // A";
    let fail = "try { await mcp.fixture.fail({message: 'no'}) } catch (e) { return e.code } // B";
    let boom = "throw new Error('boom') // C";
    assert_eq!(
        run_cli(&config, &state, echo, &["--audit-args", "full"]).0,
        0
    );
    assert_eq!(run_cli(&config, &state, fail, &[]).0, 0);
    assert_eq!(
        run_cli(&config, &state, boom, &["--audit-code", "hash"]).0,
        1
    );

    let all = audit(&state, &[]);
    assert_eq!(all.len(), 3, "{all:?}");
    for r in &all {
        assert_eq!(r["principal"], json!("local"));
        assert_eq!(r["tenant"], json!("default"));
        assert_eq!(r["front"], json!("run"));
    }
    // A: the code, its hash, the call with its full arguments.
    assert_eq!(all[0]["code"], json!(echo));
    assert_eq!(all[0]["code_sha256"], json!(sha256_hex(echo)));
    assert_eq!(all[0]["outcome"], json!("OK"));
    let call = &all[0]["calls"][0];
    assert_eq!(call["tool"], json!("fixture:echo"));
    assert_eq!(call["kind"], json!("tool"));
    assert_eq!(call["args"], json!(r#"{"message":"hi"}"#));
    assert_eq!(
        call["args_sha256"],
        json!(sha256_hex(r#"{"message":"hi"}"#))
    );
    assert_eq!(call["error"], Value::Null);
    // B: the script caught the failure (outcome OK); the call's error code is kept, its
    // arguments only as a digest.
    assert_eq!(all[1]["outcome"], json!("OK"));
    assert_eq!(all[1]["calls"][0]["error"], json!("TOOL_ERROR"));
    assert_eq!(all[1]["calls"][0].get("args"), None);
    assert_eq!(
        all[1]["calls"][0]["args_sha256"],
        json!(sha256_hex(r#"{"message":"no"}"#))
    );
    // C: only the hash of the code.
    assert_eq!(all[2]["code"], Value::Null);
    assert_eq!(all[2]["code_sha256"], json!(sha256_hex(boom)));
    assert_eq!(all[2]["outcome"], json!("RUNTIME_ERROR"));

    let ids =
        |records: Vec<Value>| -> Vec<Value> { records.iter().map(|r| r["id"].clone()).collect() };
    assert_eq!(
        ids(audit(&state, &["--tool", "fixture:echo"])),
        vec![all[0]["id"].clone()]
    );
    assert_eq!(
        ids(audit(&state, &["--tool", "fixture:ech"])),
        Vec::<Value>::new()
    );
    assert_eq!(
        ids(audit(&state, &["--error", "TOOL_ERROR"])),
        vec![all[1]["id"].clone()]
    );
    assert_eq!(
        ids(audit(&state, &["--error", "RUNTIME_ERROR"])),
        vec![all[2]["id"].clone()]
    );
    assert_eq!(audit(&state, &["--principal", "local"]).len(), 3);
    assert_eq!(audit(&state, &["--principal", "token:local"]).len(), 0);
    assert_eq!(audit(&state, &["--since", "1h"]).len(), 3);
    assert_eq!(audit(&state, &["--since", "2099-01-01T00:00:00Z"]).len(), 0);
    assert_eq!(
        ids(audit(&state, &["--limit", "1"])),
        vec![all[2]["id"].clone()]
    );
    let (status, _, err) = cli(&[
        "audit".as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
        "--error".as_ref(),
        "NOPE".as_ref(),
    ]);
    assert_eq!(status, 2);
    assert!(
        err.contains("--error \"NOPE\" is not an error code"),
        "{err}"
    );
    // The text form: one line per record.
    let (status, out, _) = cli(&["audit".as_ref(), "--state".as_ref(), state.as_os_str()]);
    assert_eq!(status, 0);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("local tenant=default via=run"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_executions_are_recorded() {
    let s = serve_support::start(&[]).await;
    let r = s
        .call(
            "execute_code",
            json!({"code": "return await mcp.fixture.echo({message: 'x'})"}),
        )
        .await
        .unwrap();
    assert!(!serve_support::is_error(&r));
    let records = audit(&s.state, &[]);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["front"], json!("stdio"));
    assert_eq!(records[0]["principal"], json!("local"));
    assert_eq!(records[0]["calls"][0]["tool"], json!("fixture:echo"));
}

/// Each execution returns its tag; the answers received are matched with the records' code.
fn tag_code(i: usize, sleep_ms: u64) -> String {
    format!("await mcp.fixture.sleep({{ms: {sleep_ms}}}); return 'tag-{i}'")
}

async fn fire(
    addr: &str,
    token: &str,
    sessions: &[String],
    n: usize,
    sleep: impl Fn(usize) -> u64,
    answers: &Arc<AtomicUsize>,
) -> Vec<tokio::task::JoinHandle<Option<usize>>> {
    (0..n)
        .map(|i| {
            let answers = answers.clone();
            let (addr, token, session) = (
                addr.to_string(),
                token.to_string(),
                sessions[i % sessions.len()].clone(),
            );
            let code = tag_code(i, sleep(i));
            tokio::spawn(async move {
                let request = post_bytes(
                    &addr,
                    Some(&session),
                    &execute_body(i as i64, json!({ "code": code })).to_string(),
                    &[("authorization", &format!("Bearer {token}"))],
                );
                // A connection cut by the kill is no answer.
                let mut s = tokio::net::TcpStream::connect(&addr).await.ok()?;
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                s.write_all(&request).await.ok()?;
                let mut raw = Vec::new();
                s.read_to_end(&mut raw).await.ok()?;
                let a = parse(&raw);
                let reply = a.messages().into_iter().find(|m| m["id"] == json!(i))?;
                answers.fetch_add(1, Ordering::SeqCst);
                let tagged =
                    reply["result"]["structuredContent"]["result"] == json!(format!("tag-{i}"));
                if !tagged {
                    // Said on stderr so that a failing count says what the others got.
                    eprintln!("execution {i} answered without its tag: {reply}");
                }
                tagged.then_some(i)
            })
        })
        .collect()
}

fn tags_in(records: &[Value]) -> std::collections::BTreeSet<usize> {
    records
        .iter()
        .filter_map(|r| r["code"].as_str())
        .filter_map(|c| c.rsplit("'tag-").next())
        .filter_map(|t| t.trim_end_matches('\'').parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_concurrent_http_executions_have_one_record_each() {
    // One principal's executions at once, past the default fair share (32): this is about the
    // audit, not the share.
    let h = start_http_with(json!({"auth": {}, "fair_share": whole_queue()}), &[]).await;
    let token = create_token(&h.state, "load", &[]);
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(open_session_as(&h.addr, &token).await);
    }
    let started = std::time::Instant::now();
    let tasks = fire(&h.addr, &token, &sessions, 200, |_| 0, &Default::default()).await;
    let mut answered = std::collections::BTreeSet::new();
    for t in tasks {
        if let Some(i) = t.await.unwrap() {
            answered.insert(i);
        }
    }
    eprintln!(
        "200 executions over HTTP with the audit log: {:?}",
        started.elapsed()
    );
    assert_eq!(answered.len(), 200);
    let records = audit(&h.state, &["--limit", "1000"]);
    assert_eq!(records.len(), 200);
    assert_eq!(tags_in(&records), answered);
    assert!(records.iter().all(|r| r["principal"] == json!("token:load")
        && r["calls"][0]["tool"] == json!("fixture:sleep")));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_answer_received_before_a_sigkill_is_in_the_log() {
    let mut h = start_http_with(json!({"auth": {}, "fair_share": whole_queue()}), &[]).await;
    let token = create_token(&h.state, "kill", &[]);
    let sessions = vec![
        open_session_as(&h.addr, &token).await,
        open_session_as(&h.addr, &token).await,
    ];
    let answers = Arc::new(AtomicUsize::new(0));
    // Sleeps from 0 to 3 s: some executions answer early, many are still running at the kill.
    let tasks = fire(
        &h.addr,
        &token,
        &sessions,
        120,
        |i| (i as u64 * 101) % 3000,
        &answers,
    )
    .await;
    let waited = std::time::Instant::now();
    while answers.load(Ordering::SeqCst) < 30 && waited.elapsed().as_secs() < 30 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(h.pid as i32, libc::SIGKILL) };
    let _ = h.child.wait().await;
    let mut answered = std::collections::BTreeSet::new();
    for t in tasks {
        if let Some(i) = t.await.unwrap() {
            answered.insert(i);
        }
    }
    eprintln!("{} of 120 answered before the SIGKILL", answered.len());
    assert!(
        !answered.is_empty() && answered.len() < 120,
        "{}",
        answered.len()
    );
    let recorded = tags_in(&audit(&h.state, &["--limit", "1000"]));
    let missing: Vec<_> = answered.difference(&recorded).collect();
    assert!(
        missing.is_empty(),
        "answered but not in the audit log: {missing:?}"
    );
    // The chain holds through the SIGKILL: the records written ahead of executions the kill
    // cut short are left running, in the chain (issue 62).
    let (status, out, err) = cli(&[
        "audit".as_ref(),
        "verify".as_ref(),
        "--state".as_ref(),
        h.state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{out}{err}");
    assert!(out.starts_with("intact: "), "{out}");
}

#[test]
fn retention_keeps_the_newest_records_when_the_host_starts() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), json!({}));
    let state = dir.path().join("state.db");
    for i in 0..3 {
        assert_eq!(run_cli(&config, &state, &format!("return {i}"), &[]).0, 0);
    }
    assert_eq!(audit(&state, &[]).len(), 3);
    // Pruned to 2 at start, then this execution's record: the newest 3 remain.
    let (status, err) = run_cli(
        &config,
        &state,
        "return 3",
        &["--audit-retain-records", "2"],
    );
    assert_eq!(status, 0, "{err}");
    let codes: Vec<Value> = audit(&state, &[])
        .iter()
        .map(|r| r["code"].clone())
        .collect();
    assert_eq!(
        codes,
        vec![json!("return 1"), json!("return 2"), json!("return 3")]
    );
    // Records older than 0 days (all of them) go at the next start.
    let (status, _) = run_cli(&config, &state, "return 4", &["--audit-retain-days", "0"]);
    assert_eq!(status, 0);
    let codes: Vec<Value> = audit(&state, &[])
        .iter()
        .map(|r| r["code"].clone())
        .collect();
    assert_eq!(codes, vec![json!("return 4")]);
}

#[test]
fn a_capability_call_and_the_calls_inside_it_are_in_the_callers_record() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), json!({}));
    let state = dir.path().join("state.db");
    let file = dir.path().join("cap.js");
    std::fs::write(&file, "return await mcp.fixture.echo({message: args.m})").unwrap();
    let (status, _, err) = cli(&[
        "capability".as_ref(),
        "save".as_ref(),
        "notes:say".as_ref(),
        "--file".as_ref(),
        file.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    let (status, err) = run_cli(
        &config,
        &state,
        "return await mcp.notes.say({m: 'hey'})",
        &[],
    );
    assert_eq!(status, 0, "{err}");
    let all = audit(&state, &[]);
    // The save is audited too (issue 25): its own record, before the execution's.
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(
        all[0]["calls"][0]["kind"],
        json!("capability_save"),
        "{all:?}"
    );
    let records = &all[1..];
    assert_eq!(records.len(), 1, "one record per execution: {records:?}");
    let calls = records[0]["calls"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c["kind"].as_str().unwrap(), c["tool"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        vec![("capability", "notes:say"), ("tool", "fixture:echo")]
    );
    assert_eq!(calls[0]["args_sha256"], json!(sha256_hex(r#"{"m":"hey"}"#)));
    assert_eq!(
        calls[1]["args_sha256"],
        json!(sha256_hex(r#"{"message":"hey"}"#))
    );
    assert_eq!(
        audit(&state, &["--tool", "fixture:echo"]).len(),
        1,
        "calls inside a capability are found by --tool"
    );
}

#[test]
fn approval_decisions_are_in_the_callers_record() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), json!({}));
    let state = dir.path().join("state.db");
    // In a new session (no controlling terminal to ask on): `--approve` pre-approves echo, and
    // add is denied at once.
    let file = dir.path().join("s.js");
    std::fs::write(
        &file,
        "await mcp.fixture.echo({message: 'a'});\n\
         try { await mcp.fixture.add({a: 1, b: 2}) } catch (e) {}\n\
         return 1",
    )
    .unwrap();
    let mut cmd = std::process::Command::new(crate::common::bin("mcp-sandbox"));
    cmd.arg("run")
        .arg(&file)
        .arg("--config")
        .arg(&config)
        .arg("--state")
        .arg(&state)
        .args(["--ask", "fixture:echo", "--ask", "fixture:add"])
        .args(["--approve", "fixture:echo"])
        .env("MCP_SANDBOX_RUNNER", crate::common::bin("sandbox-runner"))
        .stdin(std::process::Stdio::null());
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = audit(&state, &[]);
    assert_eq!(all.len(), 1, "{all:?}");
    let calls = &all[0]["calls"];
    assert_eq!(calls[0]["tool"], json!("fixture:echo"));
    assert_eq!(calls[0]["approval"], json!("granted by flag"));
    assert_eq!(calls[0]["error"], Value::Null);
    assert_eq!(calls[1]["tool"], json!("fixture:add"));
    assert_eq!(calls[1]["approval"], json!("denied by flag"));
    assert_eq!(calls[1]["error"], json!("PERMISSION_DENIED"));
    // `audit --error` finds the record by the denied call's code.
    assert_eq!(audit(&state, &["--error", "PERMISSION_DENIED"]).len(), 1);
}
