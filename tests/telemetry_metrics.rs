//! `/metrics` on `serve --http`: parsed by the Prometheus project's own parser (Python
//! prometheus_client, OpenMetrics), its counters match the executions run — by outcome code,
//! tool calls by server/tool/code, latency histograms' counts — and a tool name a script made up
//! never becomes a label value. With `sandbox.auth` on, a scrape
//! without a credential is refused like any request.

use crate::serve_support::http::{
    exchange, execute_body, open_session, post, start_http, start_http_with,
};
use serde_json::{json, Value};

async fn scrape(addr: &str, token: Option<&str>) -> crate::serve_support::http::Answer {
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    let req = format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\n{auth}connection: close\r\n\r\n");
    exchange(addr, req.as_bytes()).await
}

fn parse(dir: &std::path::Path, text: &str) -> Value {
    let file = dir.join("metrics.txt");
    std::fs::write(&file, text).unwrap();
    crate::serve_support::python_json("parse_metrics.py", &[file.as_os_str()], &[])
}

/// The value of sample `name` with exactly these labels (0 when absent).
fn sample(parsed: &Value, name: &str, labels: Value) -> f64 {
    parsed["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name && s["labels"] == labels)
        .map_or(0.0, |s| s["value"].as_f64().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_the_executions_run() {
    let served = start_http(&[]).await;
    let addr = served.addr.clone();
    let session = open_session(&addr).await;
    let scripts = [
        "return 1",
        "return 2",
        "throw new Error('boom')",
        "await mcp.fixture.echo({message: 'a'}); return await mcp.fixture.echo({message: 'b'})",
        "try { await mcp.fixture.no_such_tool({}) } catch (e) { return e.code }",
        "return await mcp.fixture.add({a: 1, b: 2})",
    ];
    let mut codes: Vec<String> = Vec::new();
    for (i, code) in scripts.iter().enumerate() {
        let a = post(
            &addr,
            Some(&session),
            &execute_body(10 + i as i64, json!({"code": code})),
        )
        .await;
        let out = &a.reply(10 + i as i64)["result"]["structuredContent"];
        codes.push(
            out["error"]["code"]
                .as_str()
                .unwrap_or(if out["success"] == json!(true) {
                    "OK"
                } else {
                    "?"
                })
                .to_string(),
        );
    }
    assert_eq!(codes.iter().filter(|c| *c == "OK").count(), 5, "{codes:?}");
    let failed = codes.iter().find(|c| *c != "OK").unwrap().clone();

    let answer = scrape(&addr, None).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        answer
            .header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{answer:?}"
    );
    let parsed = parse(served.dir.path(), &answer.body);
    let families = &parsed["families"];
    assert_eq!(families["mcp_sandbox_executions"], "counter", "{families}");
    assert_eq!(
        families["mcp_sandbox_execution_duration_seconds"],
        "histogram"
    );
    assert_eq!(
        families["mcp_sandbox_tool_call_duration_seconds"],
        "histogram"
    );
    for gauge in [
        "mcp_sandbox_tool_calls_in_flight",
        "mcp_sandbox_executions_running",
        "mcp_sandbox_executions_queued",
        "mcp_sandbox_pool_idle_runners",
        "mcp_sandbox_zygote_up",
        "mcp_sandbox_audit_records_queued",
    ] {
        assert_eq!(families[gauge], "gauge", "{gauge}: {families}");
    }
    // Labelled families with no sample yet (crashes, restarts, approvals) are not listed.
    assert_eq!(
        families["mcp_sandbox_zygote_starts"], "counter",
        "{families}"
    );
    // Nothing lost: the state file took every audit record.
    assert_eq!(
        families["mcp_sandbox_audit_records_lost"], "counter",
        "{families}"
    );
    assert_eq!(
        sample(&parsed, "mcp_sandbox_audit_records_lost_total", json!({})),
        0.0
    );
    assert_eq!(
        sample(&parsed, "mcp_sandbox_audit_records_queued", json!({})),
        0.0
    );
    assert_eq!(
        families.get("mcp_sandbox_runner_crashes"),
        None,
        "{families}"
    );

    let total = "mcp_sandbox_executions_total";
    assert_eq!(sample(&parsed, total, json!({"code": "OK"})), 5.0);
    assert_eq!(sample(&parsed, total, json!({"code": failed})), 1.0);
    assert_eq!(
        sample(
            &parsed,
            "mcp_sandbox_execution_duration_seconds_count",
            json!({})
        ),
        6.0
    );
    let calls = "mcp_sandbox_tool_calls_total";
    let echo = json!({"server": "fixture", "tool": "echo", "code": "OK"});
    assert_eq!(sample(&parsed, calls, echo), 2.0);
    let add = json!({"server": "fixture", "tool": "add", "code": "OK"});
    assert_eq!(sample(&parsed, calls, add), 1.0);
    // A name a script made up is never a label value.
    assert!(!answer.body.contains("no_such_tool"), "{}", answer.body);
    let latency = "mcp_sandbox_tool_call_duration_seconds_count";
    assert_eq!(
        sample(
            &parsed,
            latency,
            json!({"server": "fixture", "tool": "echo"})
        ),
        2.0
    );
    assert_eq!(
        sample(&parsed, "mcp_sandbox_tool_calls_in_flight", json!({})),
        0.0
    );
    assert_eq!(
        sample(&parsed, "mcp_sandbox_executions_running", json!({})),
        0.0
    );
    assert_eq!(sample(&parsed, "mcp_sandbox_zygote_up", json!({})), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_a_credential_when_auth_is_on() {
    let served = start_http_with(json!({"auth": {}}), &[]).await;
    let answer = scrape(&served.addr, None).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert!(!answer.body.contains("mcp_sandbox_"), "{answer:?}");
    let token = crate::serve_support::team::create_token(&served.state, "scraper", &[]);
    let answer = scrape(&served.addr, Some(&token)).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        answer
            .body
            .contains("# TYPE mcp_sandbox_execution_duration_seconds histogram"),
        "{}",
        answer.body
    );
}
