//! The output budget of `execute_code` (issue 27), through the official MCP Python SDK client
//! (tests/python/budget_client.py) over stdio and HTTP: a 5 MiB result comes back as an answer
//! of at most 64 KiB (text and structuredContent together) with `truncated: true` and a preview
//! of its shape; a request's `max_output_bytes` lowers the budget and a larger one is capped;
//! a principal's policy sets a smaller budget; tool and capability results inside the script are
//! never cut; the descriptions state the budget. And `run --max-output-bytes`.

use crate::common::{bin, cli_run};
use crate::serve_support::http::start_http_with;
use crate::serve_support::team::{create_token, url};
use serde_json::{json, Value};

const ITEMS: usize = 40_000;
/// A script whose result is an array of 40 000 objects, about 5 MiB of JSON.
const FIVE_MIB: &str = "return Array.from({length: 40000}, (_, i) => ({id: i, name: 'item ' + i, pad: 'x'.repeat(100)}))";

/// The result of [`FIVE_MIB`] as the runner serialises it (compact JSON).
fn five_mib_bytes() -> u64 {
    let items: Vec<Value> = (0..ITEMS)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "pad": "x".repeat(100)}))
        .collect();
    serde_json::to_string(&items).unwrap().len() as u64
}

fn client(args: &[&std::ffi::OsStr]) -> Value {
    crate::serve_support::sdk::client("budget_client.py", args)
}

/// The SDK over stdio against `serve` with the fixture server and `sandbox` as the config's
/// sandbox section.
fn over_stdio(sandbox: Value, calls: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::serve_support::sdk::fixture_config(dir.path(), &sandbox);
    let state = dir.path().join("state.db");
    crate::serve_support::sdk::over_stdio("budget_client.py", &config, &state, calls)
}

fn over_http(url: &str, token: Option<&str>, calls: &Value) -> Value {
    let calls = calls.to_string();
    client(&[
        "http".as_ref(),
        url.as_ref(),
        token.unwrap_or("-").as_ref(),
        calls.as_ref(),
    ])
}

/// The calls both transports make, and the checks of their answers.
fn budget_calls() -> Value {
    json!([
        {"code": FIVE_MIB},
        {"code": FIVE_MIB, "max_output_bytes": 4096},
        {"code": FIVE_MIB, "max_output_bytes": 100_000_000},
        {"code": "return {small: true}", "max_output_bytes": 100_000_000},
        {"code": "for (let i = 0; i < 3000; i++) console.log('line ' + i);\n\
                  for (let i = 0; i < 200; i++) await mcp.fixture.add({a: i, b: 1});\n\
                  return 'x'.repeat(200000)"},
        {"code": "return 1", "max_output_bytes": 10}
    ])
}

fn check_budget_answers(report: &Value, budget: u64) {
    let r = report["results"].as_array().unwrap();
    let full = five_mib_bytes();
    assert!(full > 5 * 1024 * 1024, "{full}");

    // 5 MiB under the operator's budget: within it, truncated, the preview's shape is right.
    let a = &r[0];
    assert!(
        a["bytes"].as_u64().unwrap() <= budget,
        "{} > {budget}",
        a["bytes"]
    );
    let out = &a["out"];
    assert_eq!(out["success"], json!(true), "{out}");
    assert_eq!(out["truncated"], json!(true), "{out}");
    assert_eq!(
        out["output"]["max_output_bytes"],
        json!(budget),
        "{}",
        out["output"]
    );
    assert_eq!(out["output"]["capped"], json!(false));
    assert_eq!(out["output"]["cut"], json!(["traces", "result"]));
    let p = &out["result"];
    assert_eq!(p["truncated"], json!(true), "{p}");
    assert_eq!(p["type"], json!("array"));
    assert_eq!(p["length"], json!(ITEMS));
    assert_eq!(p["bytes"], json!(full));
    assert_eq!(
        p["first"][0],
        json!({"id": 0, "name": "item 0", "pad": "x".repeat(100)}),
        "{p}"
    );
    assert_eq!(p["first"][2]["id"], json!(2));
    assert!(p["hint"].as_str().unwrap().contains("store()"), "{p}");
    let text = a["text"].as_str().unwrap();
    assert!(text.starts_with("ok ("), "{text}");
    assert!(
        text.contains(&format!(
            "truncated: the answer was over its output budget of {budget} bytes"
        )),
        "{text}"
    );

    // A request lowers the budget.
    let a = &r[1];
    assert!(a["bytes"].as_u64().unwrap() <= 4096, "{}", a["bytes"]);
    assert_eq!(
        a["out"]["output"],
        json!({"max_output_bytes": 4096, "requested": 4096, "capped": false,
               "full_bytes": a["out"]["output"]["full_bytes"], "cut": ["traces", "result"]})
    );
    assert_eq!(a["out"]["result"]["length"], json!(ITEMS));
    assert_eq!(
        a["out"]["metrics"]["limits"]["max_output_bytes"],
        json!({"requested": 4096, "applied": 4096, "capped": false})
    );

    // A larger request is capped, and the answer says so.
    for a in &r[2..4] {
        assert!(a["bytes"].as_u64().unwrap() <= budget, "{}", a["bytes"]);
        assert_eq!(a["out"]["output"]["max_output_bytes"], json!(budget));
        assert_eq!(a["out"]["output"]["requested"], json!(100_000_000));
        assert_eq!(a["out"]["output"]["capped"], json!(true));
    }
    assert_eq!(r[3]["out"]["result"], json!({"small": true}));
    assert_eq!(r[3]["out"].get("truncated"), None, "{}", r[3]["out"]);

    // Traces first, then logs, then the result: the first and last log lines are kept.
    let a = &r[4];
    assert!(a["bytes"].as_u64().unwrap() <= budget, "{}", a["bytes"]);
    let out = &a["out"];
    assert_eq!(out["output"]["cut"], json!(["traces", "logs", "result"]));
    assert_eq!(out["traces"]["by_tool"]["fixture:add"]["calls"], json!(200));
    assert_eq!(out["traces"]["by_kind"]["tool_end"], json!(200));
    let logs = out["logs"].as_array().unwrap();
    assert_eq!(logs[0]["message"], json!("line 0"));
    assert_eq!(logs.last().unwrap()["message"], json!("line 2999"));
    let cut_line = logs.iter().find(|l| l["level"] == "cut").unwrap();
    assert!(
        cut_line["message"].as_str().unwrap().contains(" lines cut"),
        "{cut_line}"
    );
    assert_eq!(out["result"]["type"], json!("string"));
    assert_eq!(out["result"]["length"], json!(200_000));

    // A budget below the smallest answer is a wrong call.
    let e = r[5]["protocol_error"].as_str().unwrap_or_default();
    assert!(
        e.contains("`max_output_bytes` must be an integer of at least 1024"),
        "{r:?}"
    );

    // The descriptions state the budget and what a truncated answer means.
    let d = report["tools"]["execute_code"].as_str().unwrap();
    for needle in [
        // Human-readable (issue 63 item 7).
        format!(
            "is at most {} (max_output_bytes",
            match budget {
                65_536 => "64 KiB",
                20_000 => "19.5 KiB (20000 bytes)",
                other => panic!("no expected text for a budget of {other}"),
            }
        ),
        "max_output_bytes".into(),
        "truncated: true".into(),
        "A truncated answer means the script ran to its end".into(),
        "return less".into(),
        "tool results and capability results inside the script are always whole".into(),
    ] {
        assert!(d.contains(&needle), "{needle:?} not in {d}");
    }
    let s = report["tools"]["search_tools"].as_str().unwrap();
    assert!(
        s.contains("Use it before") && s.contains("output budget"),
        "{s}"
    );
}

#[test]
fn a_five_mib_result_fits_64_kib_over_stdio() {
    let report = over_stdio(json!({}), &budget_calls());
    check_budget_answers(&report, 64 * 1024);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_five_mib_result_fits_64_kib_over_http() {
    let h = start_http_with(json!({}), &[]).await;
    let report = over_http(&url(&h), None, &budget_calls());
    check_budget_answers(&report, 64 * 1024);
}

/// The operator's budget from the config file applies like the default.
#[test]
fn the_config_sets_the_operators_budget() {
    let report = over_stdio(
        json!({"limits": {"max_output_bytes": 20_000}}),
        &budget_calls(),
    );
    check_budget_answers(&report, 20_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_principals_policy_sets_a_smaller_budget() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {"terse": {"limits": {"max_output_bytes": 2048}}}}),
        &[],
    )
    .await;
    let terse = create_token(&h.state, "terse", &["--policy", "terse"]);
    let free = create_token(&h.state, "free", &[]);
    let calls = json!([{"code": FIVE_MIB}, {"code": FIVE_MIB, "max_output_bytes": 65536}]);
    let report = over_http(&url(&h), Some(&terse), &calls);
    for a in report["results"].as_array().unwrap() {
        assert!(a["bytes"].as_u64().unwrap() <= 2048, "{a}");
        assert_eq!(a["out"]["output"]["max_output_bytes"], json!(2048), "{a}");
        assert_eq!(a["out"]["truncated"], json!(true));
        assert_eq!(a["out"]["result"]["type"], json!("array"), "{a}");
    }
    assert_eq!(report["results"][1]["out"]["output"]["capped"], json!(true));
    let d = report["tools"]["execute_code"].as_str().unwrap();
    assert!(d.contains("is at most 2 KiB (max_output_bytes"), "{d}");

    let report = over_http(&url(&h), Some(&free), &calls);
    let a = &report["results"][0];
    assert_eq!(a["out"]["output"]["max_output_bytes"], json!(65536), "{a}");
    assert!(a["bytes"].as_u64().unwrap() <= 65536);
}

/// The cut is the gateway's alone: a tool result and a capability's result larger than the
/// budget reach the script whole, under the smallest budget.
#[test]
fn results_inside_the_script_are_never_cut() {
    let calls = json!([
        {"tool": "save_capability", "arguments": {"name": "blob:make", "code": "return 'y'.repeat(300000)"}},
        {"code": "const s = await mcp.fixture.big({bytes: 300000});\n\
                  const c = await mcp.blob.make({});\n\
                  return [s.length, s === 'x'.repeat(300000), c.length, c === 'y'.repeat(300000)]",
         "max_output_bytes": 1024}
    ]);
    let report = over_stdio(json!({}), &calls);
    let r = &report["results"];
    assert_eq!(r[0]["is_error"], json!(false), "{report}");
    let a = &r[1];
    assert_eq!(
        a["out"]["result"],
        json!([300000, true, 300000, true]),
        "{a}"
    );
    assert_eq!(a["out"]["success"], json!(true));
    assert!(a["bytes"].as_u64().unwrap() <= 1024, "{a}");
}

fn run_cli(script: &str, flags: &[&str]) -> crate::common::CliRun {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.js");
    std::fs::write(&path, script).unwrap();
    let runner = bin("sandbox-runner");
    let state = dir.path().join("state.db");
    let mut args = vec!["run", "--runner", runner.to_str().unwrap()];
    args.extend(["--state", state.to_str().unwrap()]);
    args.extend_from_slice(flags);
    args.push(path.to_str().unwrap());
    cli_run(&args)
}

#[test]
fn run_prints_everything_unless_given_max_output_bytes() {
    let full = five_mib_bytes();
    let all = run_cli(FIVE_MIB, &["--json"]);
    assert_eq!(all.status, 0, "{}", String::from_utf8_lossy(&all.stderr));
    assert!(all.stdout.len() as u64 > full, "{}", all.stdout.len());

    let cut = run_cli(FIVE_MIB, &["--json", "--max-output-bytes", "4096"]);
    assert_eq!(cut.status, 0, "{}", String::from_utf8_lossy(&cut.stderr));
    assert!(cut.stdout.len() + cut.stderr.len() <= 4096);
    let out: Value = serde_json::from_slice(&cut.stdout).unwrap();
    assert_eq!(out["truncated"], json!(true));
    assert_eq!(out["result"]["length"], json!(ITEMS));
    assert_eq!(out["result"]["bytes"], json!(full));
    assert_eq!(out["output"]["max_output_bytes"], json!(4096));

    // For a person: the preview on stdout, the note on stderr, both within the budget.
    let script = format!("for (let i = 0; i < 2000; i++) console.log('line ' + i);\n{FIVE_MIB}");
    let human = run_cli(&script, &["--max-output-bytes", "2048"]);
    assert_eq!(
        human.status,
        0,
        "{}",
        String::from_utf8_lossy(&human.stderr)
    );
    assert!(human.stdout.len() + human.stderr.len() <= 2048);
    let err = String::from_utf8_lossy(&human.stderr);
    assert!(err.starts_with("[log] line 0\n"), "{err}");
    assert!(
        err.contains(
            "mcp-sandbox: output cut to 2048 bytes (--max-output-bytes): traces, logs, result"
        ),
        "{err}"
    );
    let stdout: Value = serde_json::from_slice(&human.stdout).unwrap();
    assert_eq!(stdout["type"], json!("array"));

    for bad in ["10", "-1", "many"] {
        let r = run_cli("return 1", &["--max-output-bytes", bad]);
        assert_eq!(r.status, 2, "{bad}: {}", String::from_utf8_lossy(&r.stderr));
    }
    let r = run_cli("return 1", &["--max-output-bytes", "10"]);
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .contains("--max-output-bytes: limit max_output_bytes = 10 is out of range; use a value from 1024"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}
