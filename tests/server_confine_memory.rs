//! The reference memory server from npm, confined and with NO `MEMORY_FILE_PATH` (issue 59):
//! it writes `memory.jsonl` beside its own script, which inside the sandbox is a writable layer
//! of that tenant's (under the state directory), so two tenants' instances do not see each
//! other's entities and the installed package is never written.

use crate::common::repo_root;
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

fn code(code: &str) -> Value {
    json!({ "code": code })
}

fn result(r: &Value) -> &Value {
    assert_eq!(r["is_error"], json!(false), "{r}");
    &r["out"]["result"]
}

#[tokio::test(flavor = "multi_thread")]
async fn two_tenants_memory_servers_without_a_file_setting_keep_apart() {
    let dist = repo_root().join("node_modules/@modelcontextprotocol/server-memory/dist");
    let h = start_http_config(
        json!({
            "mcpServers": {"memory": {"command": "node", "args": [dist.join("index.js")]}},
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
    // Each tenant's file is in its own layer under the state directory; the package is clean.
    let servers = h.dir.path().join("servers/memory");
    let red_file = std::fs::read_to_string(servers.join("red/layer/memory.jsonl")).unwrap();
    assert!(red_file.contains("RED-ONLY"), "{red_file}");
    assert!(!servers.join("blue/layer/memory.jsonl").exists());
    assert!(!dist.join("memory.jsonl").exists());
    // Red's graph survives a restart of the gateway's process for red (it is a file).
    let again = results(&sdk(&url(&h), Some(&red), &json!([code(read)])));
    assert_eq!(result(&again[0]), &json!(["RED-ONLY"]));
}
