//! The reference filesystem and memory servers from the npm registry (pinned in package.json,
//! installed by scripts/setup.sh): read a JSON file, parse it, store an entity, read the graph.

use crate::common;
use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn filesystem_and_memory_servers_from_npm() {
    let bin_dir = repo_root().join("node_modules/.bin");
    assert!(
        bin_dir.join("mcp-server-filesystem").exists(),
        "run scripts/setup.sh (npm ci) first"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"project": "mcp-sandbox", "version": 3}"#,
    )
    .unwrap();
    let memory_file = dir.path().join("memory.jsonl");
    let data = dir.path().canonicalize().unwrap();
    let catalog = mcp_catalog(
        json!({
            "filesystem": {"command": bin_dir.join("mcp-server-filesystem"), "args": [data], "files": {"write": [data]}},
            "memory": {"command": bin_dir.join("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": memory_file}, "files": {"write": [dir.path()]}}
        }),
        Duration::from_secs(60),
    )
    .await;
    let code = format!(
        r#"
        const file = await mcp.filesystem.read_text_file({{ path: {path:?} }});
        const cfg = JSON.parse(file.content);
        await mcp.memory.create_entities({{ entities: [{{ name: cfg.project, entityType: "project", observations: ["version " + cfg.version] }}] }});
        const graph = await mcp.memory.read_graph({{}});
        return {{ project: cfg.project, entities: graph.entities.map(e => [e.name, e.observations]) }};
        "#,
        path = data.join("config.json").to_string_lossy()
    );
    let o = run(&catalog, &code).await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        o.result,
        json!({"project": "mcp-sandbox", "entities": [["mcp-sandbox", ["version 3"]]]})
    );
    let tools: Vec<&str> = o
        .traces
        .iter()
        .filter(|t| t.kind == mcp_sandbox::trace::TraceKind::ToolEnd)
        .map(|t| t.tool.as_str())
        .collect();
    assert_eq!(
        tools,
        [
            "filesystem:read_text_file",
            "memory:create_entities",
            "memory:read_graph"
        ]
    );

    // A missing file is the server's isError → TOOL_ERROR with its text.
    let o = run(
        &catalog,
        &format!(
            "await mcp.filesystem.read_text_file({{ path: {:?} }})",
            data.join("nope.json").to_string_lossy()
        ),
    )
    .await;
    assert_eq!(common::code(&o), "TOOL_ERROR");
    assert!(
        o.error.as_ref().unwrap().message.contains("ENOENT"),
        "{o:?}"
    );
    catalog.shutdown().await;
}
