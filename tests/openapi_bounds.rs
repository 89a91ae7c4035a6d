//! The bounds of an OpenAPI server (issue 49 item 2): a 100 MB answer is cut at
//! `maxResponseBytes` while it streams (LIMIT_EXCEEDED), without the host's memory growing
//! anywhere near it (its VmHWM); one whose Content-Length is over the cap is refused before its
//! body is read; a slow answer ends at `timeoutMs` (TOOL_TIMEOUT); `maxConcurrency` caps the
//! requests in flight at the service.

use crate::common;
use common::*;
use serde_json::json;
use std::io::{Read, Write};

/// The service's peak of requests in flight (its /stats).
fn peak(notes: &Notes) -> u64 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", notes.server.port)).unwrap();
    s.write_all(b"GET /stats HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    serde_json::from_str::<serde_json::Value>(body).unwrap()["peak"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_huge_answer_is_cut_while_streaming_and_a_slow_one_times_out() {
    let notes = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let config = notes_config(
        dir.path(),
        &notes,
        json!({"maxResponseBytes": 4 * 1024 * 1024, "timeoutMs": 700}),
        json!({}),
    );
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"
const out = {};
for (const [k, args] of [["streamed", { mb: 100 }], ["declared", { mb: 100, declared: true }], ["slow", null]]) {
  try { await (args ? mcp.notes.getLarge(args) : mcp.notes.getSlow({ ms: 5000 })); out[k] = "answered" }
  catch (e) { out[k] = { code: e.code, message: e.message } }
}
out.small = (await mcp.notes.getLarge({ mb: 1 })).body.length;
return out;
"#,
    )
    .unwrap();
    let run = run_json(&config, &script, &notes);
    let o = run.outcome();
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    let cap = "the answer of notes.getLarge is larger than its maxResponseBytes (4194304 bytes); it was not read further: ask for less (a filter, a smaller page) or raise maxResponseBytes in the server's entry";
    assert_eq!(
        r["streamed"],
        json!({"code": "LIMIT_EXCEEDED", "message": cap}),
        "{r}"
    );
    assert_eq!(
        r["declared"],
        json!({"code": "LIMIT_EXCEEDED", "message": cap}),
        "{r}"
    );
    assert_eq!(r["slow"]["code"], "TOOL_TIMEOUT", "{r}");
    assert!(
        r["slow"]["message"]
            .as_str()
            .unwrap()
            .starts_with("notes.getSlow got no complete answer within 700 ms"),
        "{r}"
    );
    // 1 MiB of "x" between its quotes, under the cap: returned whole.
    assert_eq!(r["small"], 1024 * 1024, "{r}");
    // The host never held the 100 MB: its peak grows by far less than that over the same
    // host's run of an empty script (a debug host alone peaks at about 45 MB).
    let idle = dir.path().join("idle.js");
    std::fs::write(&idle, "return 1").unwrap();
    let base = run_json(&config, &idle, &notes);
    assert_eq!(base.outcome()["result"], 1);
    assert!(
        run.max_rss_kib < base.max_rss_kib + 32 * 1024,
        "the host's peak RSS was {} KiB, {} KiB for an empty script",
        run.max_rss_kib,
        base.max_rss_kib
    );
    // The service saw its writes fail long before 100 MB (for the streamed one).
    let cut: Vec<u64> = notes
        .requests()
        .iter()
        .filter_map(|r| r["large_cut_after"].as_u64())
        .collect();
    assert!(!cut.is_empty(), "{:?}", notes.requests());
    assert!(cut.iter().all(|&n| n < 100 * 1024 * 1024), "{cut:?}");
}

#[test]
fn max_concurrency_caps_the_requests_in_flight() {
    let notes = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let config = notes_config(dir.path(), &notes, json!({"maxConcurrency": 2}), json!({}));
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"
const all = await Promise.all([1, 2, 3, 4, 5, 6].map(() => mcp.notes.getSlow({ ms: 300 })));
return all.map(a => a.status);
"#,
    )
    .unwrap();
    let run = run_json(&config, &script, &notes);
    let o = run.outcome();
    assert_eq!(o["result"], json!([200, 200, 200, 200, 200, 200]), "{o}");
    assert_eq!(peak(&notes), 2);
}
