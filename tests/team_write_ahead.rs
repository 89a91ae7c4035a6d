//! Issue 25, the audit before any effect and the HTTP front's shares, through the real binary:
//! a tool call does not leave the host before the execution's audit record is committed, and
//! with the state file locked no call is made (item 3); client strings stored are bounded
//! (item 3); code refused at the HTTP front is audited by size and hash (item 9); refused
//! scripts and `--audit-code hash` keep no copy of the code in the store (item 15); a dropped
//! connection does not free a `max_concurrent` slot (item 6); sessions are capped per principal,
//! not per address, once authenticated (item 7); slow request bodies time out and one caller's
//! bodies cannot exhaust the shared budget (item 5).

use crate::common::{assert_not_hung, ms};
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn structured(a: &Answer, id: i64) -> Value {
    a.reply(id)["result"]["structuredContent"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tool_call_leaves_the_host_before_its_audit_record_is_committed() {
    let h = start_http_with(json!({"audit": {"code": "hash"}}), &[]).await;
    let s = open_session(&h.addr).await;
    // Another writer holds the state file's write lock (as a full disk or a stuck host would
    // make every write fail): the write-ahead record cannot be committed within the busy
    // timeout, so the call is refused and never reaches the server.
    let lock = rusqlite::Connection::open(&h.state).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let t = Instant::now();
    let a = post(
        &h.addr,
        Some(&s),
        &execute_body(2, json!({"code": "return await mcp.fixture.count({})"})),
    )
    .await;
    let out = structured(&a, 2);
    assert_eq!(out["error"]["code"], json!("SANDBOX_UNAVAILABLE"), "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("audit record"),
        "{out}"
    );
    eprintln!("refused after {:?}", t.elapsed());
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    // The refused call never reached the server: its counter starts at 1 now.
    let b = post(
        &h.addr,
        Some(&s),
        &execute_body(3, json!({"code": "return await mcp.fixture.count({})"})),
    )
    .await;
    assert_eq!(structured(&b, 3)["result"], json!("1"), "{b:?}");
    // While an execution waits in its call, its record is already there (outcome RUNNING),
    // and it is completed at the end.
    let (addr, sid) = (h.addr.clone(), s.clone());
    let slow = tokio::spawn(async move {
        post(
            &addr,
            Some(&sid),
            &execute_body(
                4,
                json!({"code": "await mcp.fixture.sleep({ms: 1500}); return 'slept'"}),
            ),
        )
        .await
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let records = audit(&h.state, &[]);
        if records.iter().any(|r| r["outcome"] == json!("RUNNING")) {
            let r = records.last().unwrap();
            assert_eq!(r["outcome"], json!("RUNNING"), "{records:?}");
            assert_eq!(r["code"], Value::Null, "--audit-code hash keeps no code");
            break;
        }
        assert!(Instant::now() < deadline, "no RUNNING record: {records:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done = slow.await.unwrap();
    assert_eq!(structured(&done, 4)["result"], json!("slept"));
    // The refused execution made no call and its outcome was withheld (its record could not
    // be written either); the two after it are complete.
    let records = audit(&h.state, &[]);
    assert_eq!(records.len(), 2, "{records:?}");
    let last = &records[1];
    assert_eq!(last["outcome"], json!("OK"));
    assert_eq!(last["calls"][0]["tool"], json!("fixture:sleep"));
    assert!(records.iter().all(|r| r["outcome"] != json!("RUNNING")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_client_name_is_stored_bounded() {
    for (mode, marker) in [("full", "[cut: 3145728 bytes in all]"), ("hash", "sha256:")] {
        let h = start_http_with(json!({"audit": {"code": mode}}), &[]).await;
        let name = "n".repeat(3 * 1024 * 1024);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": name, "version": "0"}}});
        let a = post(&h.addr, None, &init).await;
        assert_eq!(a.status, 200, "{a:?}");
        let s = a.header("mcp-session-id").unwrap().to_string();
        let n = post(
            &h.addr,
            Some(&s),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        assert_eq!(n.status, 202);
        for id in [2, 3] {
            let r = post(
                &h.addr,
                Some(&s),
                &execute_body(id, json!({"code": "return 1"})),
            )
            .await;
            assert_eq!(structured(&r, id)["result"], json!(1), "{r:?}");
        }
        let records = audit(&h.state, &[]);
        assert_eq!(records.len(), 2);
        for r in &records {
            let client = r["client"].as_str().unwrap();
            assert!(client.len() < 400, "{mode}: {} bytes stored", client.len());
            assert!(client.contains(marker), "{mode}: {client}");
        }
        let mut bytes = std::fs::metadata(&h.state).unwrap().len();
        let mut wal = h.state.as_os_str().to_owned();
        wal.push("-wal");
        bytes += std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        assert!(bytes < 1024 * 1024, "{mode}: the state takes {bytes} bytes");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn code_refused_at_the_http_front_is_audited_by_size_and_hash() {
    let h = start_http_with(json!({"limits": {"source_bytes": 1000}}), &[]).await;
    let s = open_session(&h.addr).await;
    let code = format!("return '{}'", "REFUSED-MARKER".repeat(400));
    let a = post(&h.addr, Some(&s), &execute_body(2, json!({ "code": code }))).await;
    assert_eq!(
        structured(&a, 2)["error"]["code"],
        json!("LIMIT_EXCEEDED"),
        "{a:?}"
    );
    let records = audit(&h.state, &[]);
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(r["outcome"], json!("LIMIT_EXCEEDED"));
    assert_eq!(r["principal"], json!("anonymous"));
    assert_eq!(r["front"], json!("http"));
    assert_eq!(r["code"], Value::Null);
    assert_eq!(r["code_bytes"], json!(code.len()));
    assert_eq!(r["code_sha256"], json!(sha256_hex(&code)));
    let state = std::fs::read(&h.state).unwrap();
    assert!(!state.windows(14).any(|w| w == b"REFUSED-MARKER"));
}

/// Bytes of the state file and its WAL containing `needle`.
fn state_contains(state: &std::path::Path, needle: &[u8]) -> bool {
    let mut wal = state.as_os_str().to_owned();
    wal.push("-wal");
    [state.to_path_buf(), wal.into()].iter().any(|p| {
        std::fs::read(p)
            .unwrap_or_default()
            .windows(needle.len())
            .any(|w| w == needle)
    })
}

#[test]
fn refused_scripts_and_hash_only_audits_keep_no_copy_of_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {}, "sandbox": {"limits": {"source_bytes": 100000}}}).to_string(),
    )
    .unwrap();
    // Over the limit: refused; nothing of it is stored (audit record, last execution).
    let state = dir.path().join("state.db");
    let big = dir.path().join("big.js");
    let big_code = format!("// BIG-MARKER\nreturn '{}'", "\u{0}".repeat(2_000_000));
    std::fs::write(&big, &big_code).unwrap();
    let run = crate::common::cli_run_script(&[], &config, &state, &big);
    assert_eq!(run.outcome()["error"]["code"], json!("LIMIT_EXCEEDED"));
    let records = audit(&state, &[]);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["code"], Value::Null);
    assert_eq!(records[0]["code_bytes"], json!(big_code.len()));
    assert_eq!(records[0]["code_sha256"], json!(sha256_hex(&big_code)));
    assert!(!state_contains(&state, b"BIG-MARKER"));
    // The schema's pages alone (about 100 KB with every table and index), a tenth of the code.
    let size = std::fs::metadata(&state).unwrap().len();
    assert!(
        size < big_code.len() as u64 / 10,
        "the state file takes {size} bytes"
    );
    // `--audit-code hash`: no copy of the code anywhere in the store (kv.last_execution too).
    let state = dir.path().join("hash.db");
    let small = dir.path().join("small.js");
    std::fs::write(&small, "// SMALL-MARKER\nreturn 1").unwrap();
    let run = crate::common::cli_run_script(&["--audit-code", "hash"], &config, &state, &small);
    assert_eq!(run.outcome()["result"], json!(1));
    assert!(!state_contains(&state, b"SMALL-MARKER"));
    assert_eq!(
        audit(&state, &[])[0]["code_sha256"],
        json!(sha256_hex("// SMALL-MARKER\nreturn 1"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_connection_does_not_free_a_max_concurrent_slot() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {"single": {"max_concurrent": 1}}}),
        &[],
    )
    .await;
    let token = create_token(&h.state, "single", &["--policy", "single"]);
    let s = open_session_as(&h.addr, &token).await;
    // Start a 2 s execution and drop the connection at once.
    let mut c = tokio::net::TcpStream::connect(&h.addr).await.unwrap();
    let body = execute_body(
        1,
        json!({"code": "await mcp.fixture.sleep({ms: 2000}); return 'slow'"}),
    )
    .to_string();
    let bearer = format!("Bearer {token}");
    c.write_all(&post_bytes(
        &h.addr,
        Some(&s),
        &body,
        &[("authorization", &bearer)],
    ))
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(c);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The execution still runs: a second one is over the bound.
    let a = execute_as(&h.addr, &token, &s, 2, "return 'fast'").await;
    assert_eq!(a.status, 429, "{a:?}");
    // Once it has ended, the slot is free.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let a = execute_as(&h.addr, &token, &s, 3, "return 'fast'").await;
        if a.status == 200 {
            assert_eq!(structured(&a, 3)["result"], json!("fast"));
            break;
        }
        assert!(Instant::now() < deadline, "the slot was never freed: {a:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_capped_per_principal_not_per_address_once_authenticated() {
    let h = start_http_with(
        json!({"auth": {}}),
        &[
            "--max-sessions-per-client",
            "2",
            "--max-sessions-per-principal",
            "2",
        ],
    )
    .await;
    let alice = create_token(&h.state, "alice", &[]);
    let bob = create_token(&h.state, "bob", &[]);
    for _ in 0..2 {
        open_session_as(&h.addr, &alice).await;
    }
    // Same address, another principal: its own cap.
    open_session_as(&h.addr, &bob).await;
    let a = post_as(&h.addr, Some(&alice), None, &initialize_body(1)).await;
    assert_eq!(a.status, 429, "{a:?}");
    assert!(
        a.body.contains("--max-sessions-per-principal"),
        "{}",
        a.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_bodies_time_out_and_one_callers_bodies_do_not_starve_another() {
    let h = start_http_with(json!({"auth": {}}), &["--body-timeout-ms", "3000"]).await;
    let slow = create_token(&h.state, "slow", &[]);
    let other = create_token(&h.state, "other", &[]);
    let s = open_session_as(&h.addr, &other).await;
    // 17 POSTs each declaring 4 MiB and sending one byte: past the caller's share, 429 at once.
    let head = |len: usize| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nauthorization: Bearer {slow}\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n{{",
            h.addr
        )
    };
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..17 {
        let mut c = tokio::net::TcpStream::connect(&h.addr).await.unwrap();
        c.write_all(head(4 * 1024 * 1024).as_bytes()).await.unwrap();
        held.push(c);
    }
    let t = Instant::now();
    // Another principal is served at once.
    let a = execute_as(&h.addr, &other, &s, 2, "return 'served'").await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(structured(&a, 2)["result"], json!("served"));
    assert_not_hung(
        t.elapsed(),
        ms(5_000),
        ms(200),
        "another principal's execution",
    );
    // The slow caller's connections: 429 past its share, 408 once the body timeout passes.
    let mut timed_out = 0;
    for mut c in held {
        use tokio::io::AsyncReadExt;
        let mut raw = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut raw)).await;
        match parse(&raw).status {
            429 => refused += 1,
            408 => timed_out += 1,
            other => panic!("status {other}: {}", String::from_utf8_lossy(&raw)),
        }
    }
    assert_eq!((refused, timed_out), (13, 4));
}
