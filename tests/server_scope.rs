//! One server process per tenant (issue 25, item 4b): a stdio server without a `scope` is
//! `tenant`, so what one tenant leaves in a stateful server another tenant cannot read; over
//! real HTTP with the official Python SDK client, the reference `memory` server from npm and
//! the fixture server (its `pid` and `env` tools show which process a call reached).

use crate::common::{bin, repo_root, server_alive, server_ended};
use crate::serve_support;
use crate::serve_tenant_isolation::tenant_clients;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;
use std::time::Duration;

fn code(code: &str) -> Value {
    json!({ "code": code })
}

fn result(r: &Value) -> &Value {
    assert_eq!(r["is_error"], json!(false), "{r}");
    &r["out"]["result"]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_server_without_a_scope_keeps_two_tenants_apart() {
    let files = tempfile::tempdir().unwrap();
    let h = start_http_config(
        json!({
            "mcpServers": {"memory": {
                "command": repo_root().join("node_modules/.bin/mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": files.path().join("memory-${MCP_SANDBOX_TENANT}.jsonl")},
                "files": {"write": [files.path()]}
            }},
            "sandbox": {"auth": {}}
        }),
        &[],
    )
    .await;
    let red = create_token(&h.state, "red", &["--tenant", "red"]);
    let blue = create_token(&h.state, "blue", &["--tenant", "blue"]);
    let store = "await mcp.memory.create_entities({entities: [{name: 'RED-ONLY', entityType: 'secret', observations: ['red keeps this']}]}); return 'stored'";
    let read = "const g = await mcp.memory.read_graph({}); return g.entities.map(e => e.name)";
    let r = results(&sdk(
        &url(&h),
        Some(&red),
        &json!([code(store), code(read)]),
    ));
    assert_eq!(result(&r[0]), &json!("stored"));
    assert_eq!(result(&r[1]), &json!(["RED-ONLY"]));
    let b = results(&sdk(&url(&h), Some(&blue), &json!([code(read)])));
    assert_eq!(result(&b[0]), &json!([]), "blue read red's entity: {b:?}");
    // Each tenant's process keeps its own file.
    let red_file = std::fs::read_to_string(files.path().join("memory-red.jsonl")).unwrap();
    assert!(red_file.contains("RED-ONLY"), "{red_file}");
    let blue_file =
        std::fs::read_to_string(files.path().join("memory-blue.jsonl")).unwrap_or_default();
    assert!(!blue_file.contains("RED-ONLY"), "{blue_file}");
}

/// The fixture under three scopes: `fixture` (no scope: tenant), `per_principal` and `shared`.
fn three_scopes(idle_ms: u64) -> Value {
    let fixture = bin("fixture-mcp-server");
    json!({
        "mcpServers": {
            // Confined (the default): each process says who it is with `pid_ns`, and the test
            // finds it on the host from that (tests/common/server_process.rs).
            "fixture": {"command": fixture, "idleTimeoutMs": idle_ms},
            "per_principal": {"command": fixture, "scope": "principal"},
            "shared": {"command": fixture, "scope": "shared"}
        },
        "sandbox": {"auth": {}}
    })
}

/// Who answers each server: `{pid, ns, start}` (the fixture's `pid_ns`), one process each.
const PIDS: &str = "return [await mcp.fixture.pid_ns({}), await mcp.per_principal.pid_ns({}), await mcp.shared.pid_ns({})]";

fn pids(h: &HttpServed, token: &str) -> Vec<Value> {
    let r = results(&sdk(&url(h), Some(token), &json!([code(PIDS)])));
    serde_json::from_value(result(&r[0]).clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn processes_follow_the_scope_and_an_idle_tenants_process_stops() {
    let h = start_http_config(three_scopes(2000), &[]).await;
    let red = create_token(&h.state, "red", &["--tenant", "red"]);
    let red2 = create_token(&h.state, "red2", &["--tenant", "red"]);
    let blue = create_token(&h.state, "blue", &["--tenant", "blue"]);
    // At once, well within the idle time.
    let plan = json!([
        {"name": "red", "token": red, "calls": [code(PIDS)]},
        {"name": "red2", "token": red2, "calls": [code(PIDS)]},
        {"name": "blue", "token": blue, "calls": [code(PIDS)]}
    ]);
    let out = tenant_clients(&url(&h), &plan);
    let of = |name: &str| -> Vec<Value> {
        serde_json::from_value(out[name]["results"][0]["result"].clone())
            .unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let (r, r2, b) = (of("red"), of("red2"), of("blue"));
    // tenant scope: red's two principals share a process, blue has its own.
    assert_eq!(r[0], r2[0], "{r:?} {r2:?}");
    assert_ne!(r[0], b[0], "{r:?} {b:?}");
    // principal scope: every principal its own.
    assert_ne!(r[1], r2[1], "{r:?} {r2:?}");
    assert_ne!(r[1], b[1], "{r:?} {b:?}");
    // shared: one process for all.
    assert_eq!(r[2], r2[2]);
    assert_eq!(r[2], b[2]);
    // Each process knows whom it serves.
    let env = "const e = await mcp.fixture.env({}); const p = await mcp.per_principal.env({}); return [e.MCP_SANDBOX_TENANT, e.MCP_SANDBOX_PRINCIPAL ?? null, p.MCP_SANDBOX_TENANT, p.MCP_SANDBOX_PRINCIPAL.startsWith('token_red-')]";
    let e = results(&sdk(&url(&h), Some(&red), &json!([code(env)])));
    assert_eq!(result(&e[0]), &json!(["red", null, "red", true]));

    // Idle for longer than idleTimeoutMs: red's tenant process is stopped, and red's next call
    // starts a new one.
    assert!(
        server_alive(&r[2]),
        "the shared process is not running: {r:?}"
    );
    let gone = r[0].clone();
    assert!(
        tokio::task::spawn_blocking(move || server_ended(&gone, Duration::from_secs(10)))
            .await
            .unwrap(),
        "red's idle process {} still runs",
        r[0]
    );
    let again = pids(&h, &red);
    assert_ne!(again[0], r[0]);
    assert!(server_alive(&again[0]), "{again:?}");
    assert!(
        server_alive(&r[2]),
        "the shared process is never stopped for idleness"
    );
    let log = h.stderr();
    assert!(log.contains("stopping an idle server process"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn at_max_instances_with_every_process_busy_a_new_tenant_is_refused() {
    let h = start_http_config(
        json!({
            "mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "maxInstances": 1}},
            "sandbox": {"auth": {}}
        }),
        &[],
    )
    .await;
    let red = create_token(&h.state, "red", &["--tenant", "red"]);
    let blue = create_token(&h.state, "blue", &["--tenant", "blue"]);
    let plan = json!([
        {"name": "red", "token": red, "delay_s": 0,
         "calls": [{"code": "await mcp.fixture.sleep({ms: 2500}); return 'red done'"}]},
        {"name": "blue", "token": blue, "delay_s": 0.8,
         "calls": [{"code": "try { await mcp.fixture.pid({}) } catch (e) { return [e.code, e.message] }"}]}
    ]);
    let out = tenant_clients(&url(&h), &plan);
    assert_eq!(
        out["red"]["results"][0]["result"],
        json!("red done"),
        "{out}"
    );
    let blue_said = &out["blue"]["results"][0]["result"];
    assert_eq!(blue_said[0], json!("SERVER_UNAVAILABLE"), "{out}");
    let message = blue_said[1].as_str().unwrap();
    assert!(
        message.contains("already runs 1 processes (one per tenant), each with a call in flight")
            && message.contains("maxInstances"),
        "{message}"
    );
    // Once red's call is over, its idle process makes room for blue's.
    let b = results(&sdk(
        &url(&h),
        Some(&blue),
        &json!([code("return await mcp.fixture.pid({})")]),
    ));
    assert!(
        result(&b[0])
            .as_str()
            .is_some_and(|p| p.parse::<u32>().is_ok()),
        "{b:?}"
    );
    assert!(h
        .stderr()
        .contains("stopping the least recently used process"));
}

#[test]
fn scope_variables_outside_their_scope_are_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    for (entry, says) in [
        (
            json!({"command": "x", "scope": "shared", "env": {"F": "${MCP_SANDBOX_TENANT}"}}),
            "env.F uses ${MCP_SANDBOX_TENANT}, which only a server with \"scope\": \"tenant\" or \"principal\" has",
        ),
        (
            json!({"command": "x", "env": {"F": "/data/${MCP_SANDBOX_PRINCIPAL}.db"}}),
            "env.F uses ${MCP_SANDBOX_PRINCIPAL}, which only a server with \"scope\": \"principal\" has",
        ),
        (json!({"command": "x", "maxInstances": 0}), "maxInstances must be at least 1"),
        (json!({"command": "x", "scope": "team"}), "unknown variant `team`"),
    ] {
        std::fs::write(&config, json!({"mcpServers": {"s": entry}}).to_string()).unwrap();
        let (status, _, stderr) = cli(&[
            "tools".as_ref(),
            "--config".as_ref(),
            config.as_os_str(),
        ]);
        assert_eq!(status, 2, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}
