//! Session state (issue 27 item 1) through the official MCP Python SDK client
//! (tests/python/budget_client.py runs a list of calls in one session) over stdio and HTTP: a
//! value stored in one execution is loaded by the next execution of the same session, and by no
//! other session, principal or tenant; values past each bound are refused with the bound named;
//! an idle session's state is gone after its TTL; traces carry the key and size, never the value;
//! `list_state` shows keys, sizes and ages. And `run --session` for the CLI.

use crate::common::{bin, cli_run};
use crate::serve_support::http::start_http_with;
use crate::serve_support::team::{create_token, url};
use serde_json::{json, Value};

fn client(args: &[&std::ffi::OsStr]) -> Value {
    crate::serve_support::sdk::client("budget_client.py", args)
}

/// One stdio session (one `serve` process) on `state` with `sandbox` as the config's section.
fn stdio_session(dir: &std::path::Path, sandbox: &Value, calls: &Value) -> Value {
    let config = crate::serve_support::sdk::fixture_config(dir, sandbox);
    crate::serve_support::sdk::over_stdio("budget_client.py", &config, &dir.join("state.db"), calls)
}

/// One HTTP session with `token`.
fn http_session(url: &str, token: Option<&str>, calls: &Value) -> Value {
    let calls = calls.to_string();
    client(&[
        "http".as_ref(),
        url.as_ref(),
        token.unwrap_or("-").as_ref(),
        calls.as_ref(),
    ])
}

fn results(report: &Value) -> &Vec<Value> {
    report["results"].as_array().unwrap()
}

/// A 1 KiB-ish list kept in one execution and worked on in the next.
const STORE: &str =
    "const issues = Array.from({length: 20}, (_, i) => ({id: i, title: 'issue ' + i}));\n\
                     await store('issues', issues);\n\
                     return issues.length";
const LOAD: &str = "const issues = await load('issues');\n\
                    return issues === undefined ? 'absent' : issues.filter((i) => i.id % 2).length";

fn stored_then_loaded() -> Value {
    json!([
        {"code": STORE},
        {"code": LOAD},
        {"code": "return await keys()"},
        {"tool": "list_state", "arguments": {}}
    ])
}

/// The answers of [`stored_then_loaded`] in one session.
fn check_one_session(report: &Value) {
    let r = results(report);
    assert_eq!(r[0]["out"]["result"], json!(20), "{report}");
    assert_eq!(r[1]["out"]["result"], json!(10), "{report}");
    assert_eq!(r[2]["out"]["result"], json!(["issues"]), "{report}");
    // The store's trace: its key and size, never the value.
    let traces = &r[0]["out"]["traces"];
    let event = traces
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "state_store")
        .unwrap_or_else(|| panic!("no state_store in {traces}"));
    let bytes = serde_json::to_string(
        &(0..20)
            .map(|i| json!({"id": i, "title": format!("issue {i}")}))
            .collect::<Vec<_>>(),
    )
    .unwrap()
    .len() as u64;
    assert_eq!(event["key"], json!("issues"));
    assert_eq!(event["bytes"], json!(bytes));
    assert_eq!(event["tool"], json!("$state:store"));
    assert!(!event.to_string().contains("issue 3"), "{event}");
    let load = &r[1]["out"]["traces"][0];
    assert_eq!(load["type"], json!("state_load"), "{load}");
    assert_eq!(load["bytes"], json!(bytes));
    // list_state: the key, its size and age; the totals and bounds.
    let listed = &r[3]["out"];
    assert_eq!(r[3]["is_error"], json!(false), "{listed}");
    assert_eq!(listed["count"], json!(1));
    assert_eq!(listed["keys"][0]["key"], json!("issues"));
    assert_eq!(listed["keys"][0]["bytes"], json!(bytes));
    assert!(listed["keys"][0]["age_ms"].as_u64().unwrap() < 60_000);
    assert_eq!(listed["limits"]["max_keys"], json!(1000));
    assert!(
        r[3]["text"].as_str().unwrap().contains("issues ("),
        "{listed}"
    );
}

/// What another session sees: nothing.
fn check_nothing_seen(report: &Value) {
    let r = results(report);
    assert_eq!(r[0]["out"]["result"], json!("absent"), "{report}");
    assert_eq!(r[1]["out"]["result"], json!([]), "{report}");
    assert_eq!(r[2]["out"]["count"], json!(0), "{report}");
}

fn nothing_calls() -> Value {
    json!([
        {"code": LOAD},
        {"code": "return await keys()"},
        {"tool": "list_state", "arguments": {}}
    ])
}

#[test]
fn state_lives_in_its_stdio_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let report = stdio_session(dir.path(), &json!({}), &stored_then_loaded());
    check_one_session(&report);
    // Another connection on the same state file is another session.
    let other = stdio_session(dir.path(), &json!({}), &nothing_calls());
    check_nothing_seen(&other);
    // The descriptions say how to use state, its lifetime and its bounds.
    let d = report["tools"]["execute_code"].as_str().unwrap();
    for needle in [
        "await store(key, value)",
        "await load(key)",
        "deleted after 60 minutes idle",
        // Human-readable (issue 63 item 7), not "1048576 bytes".
        "1 MiB a value, 1000 keys, 16 MiB a session",
    ] {
        assert!(d.contains(needle), "{needle:?} not in {d}");
    }
    let s = report["tools"]["search_tools"].as_str().unwrap();
    assert!(
        s.contains("session-state functions every script has"),
        "{s}"
    );
    let l = report["tools"]["list_state"].as_str().unwrap();
    for needle in [
        "idle for 60 minutes",
        "await load(key)",
        "another session or client never sees it",
    ] {
        assert!(l.contains(needle), "{needle:?} not in {l}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn state_is_never_seen_by_another_session_principal_or_tenant_over_http() {
    let h = start_http_with(json!({"auth": {}}), &[]).await;
    let alice = create_token(&h.state, "alice", &[]);
    let bob = create_token(&h.state, "bob", &[]);
    let carol = create_token(&h.state, "carol", &["--tenant", "other"]);
    check_one_session(&http_session(&url(&h), Some(&alice), &stored_then_loaded()));
    // Alice's next session, Bob (same tenant), Carol (another tenant): nothing.
    for token in [&alice, &bob, &carol] {
        check_nothing_seen(&http_session(&url(&h), Some(token), &nothing_calls()));
    }
}

#[test]
fn values_past_each_bound_are_refused_with_the_bound_named() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = json!({"session": {"max_value_bytes": 1000, "max_keys": 2, "max_bytes": 1500}});
    let refused = |code: &str| json!({"code": format!("try {{ {code}; return 'kept' }} catch (e) {{ return [e.code, e.message] }}")});
    let calls = json!([
        refused("await store('big', 'x'.repeat(2000))"),
        refused("await store('a', 'x'.repeat(900)); await store('b', 'y'.repeat(900))"),
        refused("await store('b', 1); await store('c', 2)"),
        refused("await store('', 1)"),
        refused("await store('u', undefined)"),
        {"code": "return [await keys(), (await load('a')).length]"}
    ]);
    let report = stdio_session(dir.path(), &sandbox, &calls);
    let r = results(&report);
    let answer = |i: usize| r[i]["out"]["result"].clone();
    assert_eq!(answer(0)[0], json!("LIMIT_EXCEEDED"), "{report}");
    assert_eq!(
        answer(0)[1],
        json!("store(\"big\") was refused: the value is 2002 bytes of JSON; one value may be at most 1000 bytes (sandbox.session.max_value_bytes)")
    );
    assert_eq!(answer(1)[0], json!("LIMIT_EXCEEDED"), "{report}");
    assert!(
        answer(1)[1]
            .as_str()
            .unwrap()
            .contains("it may hold at most 1500 (sandbox.session.max_bytes)"),
        "{report}"
    );
    assert_eq!(answer(2)[0], json!("LIMIT_EXCEEDED"), "{report}");
    assert!(
        answer(2)[1]
            .as_str()
            .unwrap()
            .contains("already holds 2 keys, the most it may (sandbox.session.max_keys)"),
        "{report}"
    );
    assert_eq!(answer(3)[0], json!("INVALID_ARGUMENTS"), "{report}");
    assert_eq!(answer(4)[0], json!("INVALID_ARGUMENTS"), "{report}");
    assert_eq!(answer(5), json!([["a", "b"], 900]), "{report}");
    // A refused store is traced as a failed state_store with its key.
    let t = &r[0]["out"]["traces"][0];
    assert_eq!(t["type"], json!("state_store"), "{t}");
    assert_eq!(t["key"], json!("big"));
    assert_eq!(t["success"], json!(false));
    assert_eq!(t["error"]["code"], json!("LIMIT_EXCEEDED"));
}

#[test]
fn an_idle_sessions_state_is_gone_after_its_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let calls = json!([
        {"code": "await store('k', 1); return await load('k')"},
        // The session is used again within the TTL: the value is still there.
        {"code": "await new Promise((r) => setTimeout(r, 700)); return await load('k')"},
        // Then idle (this execution does not touch state) for longer than the TTL.
        {"code": "await new Promise((r) => setTimeout(r, 2500)); return 'slept'"},
        {"code": "return [await load('k'), await keys()]"}
    ]);
    let report = stdio_session(dir.path(), &json!({"session": {"ttl_ms": 1500}}), &calls);
    let r = results(&report);
    assert_eq!(r[0]["out"]["result"], json!(1), "{report}");
    assert_eq!(r[1]["out"]["result"], json!(1), "{report}");
    assert_eq!(r[2]["out"]["result"], json!("slept"), "{report}");
    assert_eq!(r[3]["out"]["result"], json!([null, []]), "{report}");
    let d = report["tools"]["execute_code"].as_str().unwrap();
    assert!(d.contains("deleted after 1 seconds idle"), "{d}");
}

/// `run --session NAME` keeps state between runs of that name; without it a script has no
/// session; a capability never sees its caller's state; `store` cannot be a context key.
#[test]
fn run_keeps_state_only_with_a_session_name() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.db");
    let runner = bin("sandbox-runner");
    let run = |flags: &[&str], code: &str| {
        let script = dir.path().join("s.js");
        std::fs::write(&script, code).unwrap();
        let mut args = vec!["run", "--runner", runner.to_str().unwrap()];
        args.extend(["--state", state.to_str().unwrap(), "--json"]);
        args.extend_from_slice(flags);
        args.push(script.to_str().unwrap());
        let out = cli_run(&args);
        let value: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (
            out.status,
            value,
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (status, out, err) = run(&["--session", "work"], "await store('n', 41); return 1");
    assert_eq!(status, 0, "{out} {err}");
    let (_, out, _) = run(&["--session", "work"], "return (await load('n')) + 1");
    assert_eq!(out["result"], json!(42), "{out}");
    let (_, out, _) = run(&["--session", "play"], "return await keys()");
    assert_eq!(out["result"], json!([]), "{out}");
    let (status, out, _) = run(&[], "return await load('n')");
    assert_eq!(status, 1);
    assert_eq!(out["error"]["code"], json!("PERMISSION_DENIED"), "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`run` keeps state only with --session NAME"),
        "{out}"
    );
    let (status, _, err) = run(&["--session", "a b"], "return 1");
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("a session name is 1 to 64 letters"), "{err}");
    let (status, out, err) = run(
        &["--session", "work", "--context", "{\"store\": 1}"],
        "return 1",
    );
    assert_eq!(status, 1, "{out} {err}");
    assert_eq!(
        out["error"]["code"],
        json!("INVALID_ARGUMENTS"),
        "{out} {err}"
    );

    // A capability's code runs without its caller's session.
    let save = dir.path().join("cap.js");
    std::fs::write(&save, "return await load('n')").unwrap();
    let saved = cli_run(&[
        "capability",
        "save",
        "peek:n",
        "--state",
        state.to_str().unwrap(),
        "--file",
        save.to_str().unwrap(),
    ]);
    assert_eq!(
        saved.status,
        0,
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let (_, out, _) = run(
        &["--session", "work"],
        "try { return await mcp.peek.n({}) } catch (e) { return [e.code, (await load('n'))] }",
    );
    assert_eq!(out["result"], json!(["PERMISSION_DENIED", 41]), "{out}");
}
