//! Yielded executions (issue 27 item 3) through the official MCP Python SDK client
//! (tests/python/yield_client.py) over stdio and HTTP: a 5 s script called with
//! `yield_after_ms: 200` answers `running` within 500 ms and `wait_execution` returns its
//! outcome; an outcome that finished while the client sent other requests is still there (and
//! is read once); two yielded executions are waited on independently; `cancel_execution` ends
//! one with `CANCELLED` and its runner exits; another session's id is refused exactly like an
//! unknown one; calls done reach the client as progress; the session's cap on running
//! executions and its idle TTL; the descriptions say what an agent needs.

use crate::common::{assert_not_hung, ms};
use crate::serve_support::http::start_http_with;
use crate::serve_support::team::url;
use serde_json::{json, Value};
use std::time::Duration;

/// Sleeps 5 s (a timer: no CPU), logging before and after.
const FIVE_S: &str = "console.log('start'); await new Promise(r => setTimeout(r, 5000)); console.log('end'); return 'slept'";
/// Ends 400 ms after its one tool call.
const SHORT: &str = "console.log('a'); const s = await mcp.fixture.add({a: 1, b: 2}); await new Promise(r => setTimeout(r, 400)); return {short: s}";
/// Works ~200 ms of CPU (so its runner is recognisable), then sleeps 20 s.
const BUSY: &str = "let x = 0; for (let i = 0; i < 3e6; i++) x += i; await new Promise(r => setTimeout(r, 20000)); return x";
const NOBODY: &str = "00000000-0000-4000-8000-000000000000";

fn sleeper(ms: u64, result: &str) -> String {
    format!("await new Promise(r => setTimeout(r, {ms})); return '{result}'")
}

fn client(args: &[&std::ffi::OsStr]) -> Value {
    crate::serve_support::sdk::client("yield_client.py", args)
}

fn over_stdio(sandbox: Value, steps: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::serve_support::sdk::fixture_config(dir.path(), &sandbox);
    let state = dir.path().join("state.db");
    crate::serve_support::sdk::over_stdio("yield_client.py", &config, &state, steps)
}

async fn over_http(sandbox: Value, steps: &Value) -> Value {
    let h = start_http_with(sandbox, &[]).await;
    let (url, pid, steps) = (url(&h), h.pid.to_string(), steps.to_string());
    tokio::task::spawn_blocking(move || {
        client(&["http".as_ref(), url.as_ref(), pid.as_ref(), steps.as_ref()])
    })
    .await
    .unwrap()
}

fn call(tool: &str, args: Value) -> Value {
    json!({"call": tool, "args": args})
}

fn saved(tool: &str, args: Value, key: &str) -> Value {
    json!({"call": tool, "args": args, "save": key})
}

fn wait(key: &str, timeout_ms: Option<u64>) -> Value {
    let mut args = json!({"execution_id": format!("${key}")});
    if let Some(t) = timeout_ms {
        args["timeout_ms"] = json!(t);
    }
    call("wait_execution", args)
}

/// The steps both transports run, in one session.
fn main_steps() -> Value {
    json!([
        saved("execute_code", json!({"code": FIVE_S, "yield_after_ms": 200}), "long"),
        saved("execute_code", json!({"code": SHORT, "yield_after_ms": 50}), "short"),
        // Other requests while `short` finishes.
        call("execute_code", json!({"code": "return 1"})),
        call("search_tools", json!({"query": "add"})),
        {"sleep": 700},
        call("execute_code", json!({"code": "return 2"})),
        wait("long", Some(0)),
        wait("short", None),
        wait("short", None),
        call("wait_execution", json!({"execution_id": NOBODY})),
        wait("long", Some(60_000)),
        // Two at once, waited on independently (the later one first).
        saved("execute_code", json!({"code": sleeper(1200, "three"), "yield_after_ms": 50}), "three"),
        saved("execute_code", json!({"code": sleeper(300, "four"), "yield_after_ms": 50}), "four"),
        wait("four", None),
        wait("three", Some(0)),
        wait("three", None),
        // Cancelled: its runner exits.
        saved("execute_code", json!({"code": BUSY, "yield_after_ms": 200}), "busy"),
        {"sleep": 300},
        {"runners": "busy"},
        call("cancel_execution", json!({"execution_id": "$busy"})),
        {"gone": "busy", "within_ms": 3000},
        wait("busy", None),
        call("cancel_execution", json!({"execution_id": NOBODY})),
        // Calls done as progress of the request, before it yields.
        {"call": "execute_code", "progress": true, "save": "p", "args": {"code": "for (let i = 0; i < 3; i++) await mcp.fixture.add({a: i, b: 1}); await new Promise(r => setTimeout(r, 3000)); return 'p'", "yield_after_ms": 1500}},
        call("cancel_execution", json!({"execution_id": "$p"})),
        // A running answer within a small output budget: the oldest new lines go.
        saved("execute_code", json!({"code": "for (let i = 0; i < 200; i++) console.log('line ' + i); await new Promise(r => setTimeout(r, 3000)); return 1", "yield_after_ms": 300, "max_output_bytes": 1024}), "cut"),
        call("cancel_execution", json!({"execution_id": "$cut"})),
    ])
}

/// How long a step's call took, as the client measured it.
fn elapsed(step: &Value) -> Duration {
    Duration::from_secs_f64(step["elapsed_ms"].as_f64().unwrap() / 1000.0)
}

fn outcome_of(step: &Value) -> &Value {
    assert!(step.get("error").is_none(), "a protocol error: {step}");
    &step["out"]
}

/// A `running` answer with `calls_done` and `logs` (when given).
fn assert_running(step: &Value, calls_done: Option<u64>, logs: Option<Value>) {
    let o = outcome_of(step);
    assert_eq!(o["status"], "running", "{step}");
    assert_eq!(step["is_error"], false, "{step}");
    if let Some(n) = calls_done {
        assert_eq!(o["calls_done"], n, "{step}");
    }
    if let Some(logs) = logs {
        assert_eq!(o["logs_so_far"], logs, "{step}");
    }
    let id = o["execution_id"].as_str().unwrap();
    assert!(step["text"].as_str().unwrap().contains(id), "{step}");
}

fn assert_refused_as_unknown(step: &Value) {
    let e = &step["error"];
    assert_eq!(e["code"], -32602, "{step}");
    assert_eq!(e["data"], json!({"code": "INVALID_ARGUMENTS"}), "{step}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("no such execution in this session"),
        "{step}"
    );
}

fn log(message: &str) -> Value {
    json!({"level": "log", "message": message})
}

fn check_main(report: &Value) {
    let s = report["steps"].as_array().unwrap();
    // The 5 s script answers `running` (not its result) after its 200 ms yield.
    assert_running(&s[0], Some(0), Some(json!([log("start")])));
    let took = elapsed(&s[0]);
    assert!(took >= ms(200), "answered after {took:?}");
    assert_not_hung(took, ms(2_500), ms(250), "the yield after 200 ms");
    assert_running(&s[1], None, Some(json!([log("a")])));
    assert_eq!(outcome_of(&s[2])["result"], 1);
    assert_eq!(s[3]["is_error"], false, "{}", s[3]);
    assert_eq!(outcome_of(&s[5])["result"], 2);
    // A look at `long`: still running, nothing new since the first answer.
    assert_running(&s[6], Some(0), Some(json!([])));
    // `short` finished while other requests came: its outcome is there, read once.
    let short = outcome_of(&s[7]);
    assert_eq!(short["success"], true, "{}", s[7]);
    assert_eq!(short["result"], json!({"short": {"sum": 3}}));
    assert_eq!(short["logs"], json!([log("a")]));
    assert_eq!(short["metrics"]["tool_calls"], 1, "{short}");
    assert_refused_as_unknown(&s[8]);
    assert_refused_as_unknown(&s[9]);
    assert_eq!(s[8]["error"], s[9]["error"]);
    // `long`'s outcome, whole.
    let long = outcome_of(&s[10]);
    assert_eq!(long["result"], "slept", "{}", s[10]);
    assert_eq!(long["logs"], json!([log("start"), log("end")]));
    assert_eq!(s[10]["is_error"], false);
    // Two waited on independently.
    assert_eq!(outcome_of(&s[13])["result"], "four", "{}", s[13]);
    // Waiting on `four` did not wait for `three` (1.2 s): `three` still runs after it.
    assert_not_hung(elapsed(&s[13]), ms(3_000), ms(300), "the wait on four");
    assert_running(&s[14], Some(0), Some(json!([])));
    assert_eq!(outcome_of(&s[15])["result"], "three", "{}", s[15]);
    // Cancelled: CANCELLED, its runner gone, its id forgotten.
    assert_eq!(outcome_of(&s[16])["status"], "running", "{}", s[16]);
    let runners = s[18]["runners"].as_array().unwrap();
    assert_eq!(runners.len(), 1, "one busy runner: {}", s[18]);
    assert_eq!(s[19]["is_error"], true, "{}", s[19]);
    let cancelled = &outcome_of(&s[19])["error"];
    assert_eq!(cancelled["code"], "CANCELLED", "{}", s[19]);
    assert_not_hung(
        elapsed(&s[19]),
        ms(3_000),
        ms(300),
        "the wait on a cancelled execution",
    );
    assert_eq!(s[20]["gone"], true, "the runner still runs: {}", s[20]);
    assert_refused_as_unknown(&s[21]);
    assert_refused_as_unknown(&s[22]);
    assert_eq!(s[21]["error"], s[22]["error"]);
    // One progress notification per ended call, increasing.
    assert_running(&s[23], Some(3), Some(json!([])));
    // (`in flight` is read when the notification is made: the next call may have started.)
    let progress: Vec<(f64, String)> = s[23]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let m = p[1].as_str().unwrap();
            (
                p[0].as_f64().unwrap(),
                m.split(',').next().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(f64, String)> = (1..=3)
        .map(|n| (n as f64, format!("{n} tool calls done")))
        .collect();
    assert_eq!(progress, expected, "{}", s[23]);
    assert_eq!(outcome_of(&s[24])["error"]["code"], "CANCELLED");
    let cut = outcome_of(&s[25]);
    assert_eq!(cut["status"], "running", "{}", s[25]);
    let kept = cut["logs_so_far"].as_array().unwrap();
    assert_eq!(kept.last(), Some(&log("line 199")), "{}", s[25]);
    assert_eq!(
        kept.len() as u64 + cut["logs_dropped"].as_u64().unwrap(),
        200
    );
    let bytes = serde_json::to_string(cut).unwrap().len()
        + serde_json::to_string(&s[25]["text"]).unwrap().len();
    assert!(bytes <= 1024, "{bytes} bytes: {}", s[25]);
    assert_eq!(outcome_of(&s[26])["error"]["code"], "CANCELLED");
}

fn check_descriptions(report: &Value) {
    let tools = &report["tools"];
    let wait = tools["wait_execution"].as_str().unwrap();
    for needle in [
        "yield_after_ms",
        "timeout_ms (default 10000, at most 60000)",
        "exactly like execute_code's",
        "output budget",
        "a truncated answer means the script ran to its end",
        "read it once",
        "logs_so_far, calls_done, calls_in_flight",
        "INVALID_ARGUMENTS",
    ] {
        assert!(
            wait.contains(needle),
            "wait_execution lacks {needle:?}: {wait}"
        );
    }
    let cancel = tools["cancel_execution"].as_str().unwrap();
    for needle in ["killed", "CANCELLED", "INVALID_ARGUMENTS", "forgotten"] {
        assert!(
            cancel.contains(needle),
            "cancel_execution lacks {needle:?}: {cancel}"
        );
    }
    let execute = tools["execute_code"].as_str().unwrap();
    assert!(execute.contains("yield_after_ms"), "{execute}");
    let arg = report["schemas"]["execute_code"]["properties"]["yield_after_ms"]["description"]
        .as_str()
        .unwrap();
    for needle in [
        "{status: \"running\", execution_id",
        "wait_execution",
        "cancel_execution",
        "own timeout and CPU",
        "until you read it",
        "other requests never discard it",
        "time-to-live",
        "LIMIT_EXCEEDED",
    ] {
        assert!(
            arg.contains(needle),
            "yield_after_ms lacks {needle:?}: {arg}"
        );
    }
}

#[test]
fn yielded_executions_over_stdio() {
    let report = over_stdio(json!({}), &main_steps());
    check_main(&report);
    check_descriptions(&report);
}

#[tokio::test(flavor = "multi_thread")]
async fn yielded_executions_over_http() {
    let report = over_http(json!({}), &main_steps()).await;
    check_main(&report);
    check_descriptions(&report);
}

/// Session B (same principal, its own `Mcp-Session-Id`) gets for A's id the very answer of an
/// unknown id, to wait and to cancel; A's execution goes on and is still A's to read.
#[tokio::test(flavor = "multi_thread")]
async fn another_sessions_id_is_refused_like_an_unknown_one() {
    let on_b =
        |tool: &str, id: &str| json!({"call": tool, "args": {"execution_id": id}, "session": "B"});
    let steps = json!([
        saved(
            "execute_code",
            json!({"code": sleeper(1500, "mine"), "yield_after_ms": 100}),
            "mine"
        ),
        on_b("wait_execution", "$mine"),
        on_b("cancel_execution", "$mine"),
        on_b("wait_execution", NOBODY),
        on_b("cancel_execution", NOBODY),
        wait("mine", None),
    ]);
    let report = over_http(json!({}), &steps).await;
    let s = report["steps"].as_array().unwrap();
    assert_eq!(outcome_of(&s[0])["status"], "running", "{}", s[0]);
    for step in &s[1..5] {
        assert_refused_as_unknown(step);
        assert_eq!(step["error"], s[3]["error"], "{step}");
    }
    assert_eq!(outcome_of(&s[5])["result"], "mine", "{}", s[5]);
}

/// `sandbox.session.max_running` caps the yielded executions running in one session; an unread
/// outcome outlives the TTL while the session is in use and is dropped once it is idle past it.
#[test]
fn running_cap_and_idle_ttl() {
    let steps = json!([
        saved("execute_code", json!({"code": sleeper(3000, "m"), "yield_after_ms": 50}), "m"),
        call("execute_code", json!({"code": sleeper(3000, "n"), "yield_after_ms": 50})),
        call("execute_code", json!({"code": "return 'not yielded'"})),
        call("cancel_execution", json!({"execution_id": "$m"})),
        saved("execute_code", json!({"code": sleeper(100, "kept"), "yield_after_ms": 20}), "k"),
        {"sleep": 900},
        call("execute_code", json!({"code": "return 1"})),
        {"sleep": 900},
        call("execute_code", json!({"code": "return 1"})),
        {"sleep": 900},
        wait("k", None),
        saved("execute_code", json!({"code": sleeper(100, "idle"), "yield_after_ms": 20}), "x"),
        {"sleep": 2600},
        wait("x", None),
    ]);
    let report = over_stdio(
        json!({"session": {"max_running": 1, "ttl_ms": 2000}}),
        &steps,
    );
    let s = report["steps"].as_array().unwrap();
    assert_eq!(outcome_of(&s[0])["status"], "running", "{}", s[0]);
    assert_eq!(s[1]["is_error"], true, "{}", s[1]);
    let e = &outcome_of(&s[1])["error"];
    assert_eq!(e["code"], "LIMIT_EXCEEDED", "{}", s[1]);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("sandbox.session.max_running"),
        "{e}"
    );
    assert_eq!(outcome_of(&s[2])["result"], "not yielded");
    assert_eq!(outcome_of(&s[3])["error"]["code"], "CANCELLED");
    assert_eq!(outcome_of(&s[4])["status"], "running", "{}", s[4]);
    assert_eq!(outcome_of(&s[10])["result"], "kept", "{}", s[10]);
    assert_eq!(outcome_of(&s[11])["status"], "running", "{}", s[11]);
    assert_refused_as_unknown(&s[13]);
}

/// The end of its HTTP session (`DELETE`) cancels a yielded execution: its runner exits.
#[tokio::test(flavor = "multi_thread")]
async fn ending_the_http_session_cancels_its_yielded_executions() {
    use crate::serve_cancellation::{assert_gone_within_3s, wait_busy};
    use crate::serve_support::http::{delete, execute_body, open_session, post};
    let h = start_http_with(json!({}), &[]).await;
    let s = open_session(&h.addr).await;
    let a = post(
        &h.addr,
        Some(&s),
        &execute_body(2, json!({"code": BUSY, "yield_after_ms": 300})),
    )
    .await;
    let reply = a.reply(2);
    assert_eq!(
        reply["result"]["structuredContent"]["status"], "running",
        "{reply}"
    );
    // Answered, and still running on its own.
    let runners = wait_busy(h.pid, 1).await;
    let t = std::time::Instant::now();
    let d = delete(&h.addr, &s).await;
    assert!(d.status == 200 || d.status == 202, "{d:?}");
    assert_gone_within_3s(&runners, t).await;
}

/// The end of a stdio connection cancels its yielded executions: the runner exits within 3 s
/// (before the host's shutdown grace would have ended it).
#[tokio::test(flavor = "multi_thread")]
async fn closing_the_stdio_connection_cancels_its_yielded_executions() {
    use crate::serve_cancellation::{assert_gone_within_3s, wait_busy};
    let served = crate::serve_support::start(&["--shutdown-grace-ms", "20000"]).await;
    let r = served
        .call("execute_code", json!({"code": BUSY, "yield_after_ms": 300}))
        .await
        .unwrap();
    assert_eq!(
        crate::serve_support::structured(&r)["status"],
        "running",
        "{r:?}"
    );
    let runners = wait_busy(served.pid, 1).await;
    let t = std::time::Instant::now();
    let crate::serve_support::Served { client, child, .. } = served;
    client.cancel().await.unwrap();
    assert_gone_within_3s(&runners, t).await;
    drop(child);
}
