//! Discovery stays small with a large OpenAPI description (issue 49 item 3): a generated
//! OpenAPI 3.0 spec of 600 operations loads in under 1 s; through `serve` (the Python SDK
//! client) `search_tools` finds one operation by words of its summary and answers with a few
//! tools, not hundreds; the entry's `operations` globs and `tags` keep only what they name; and
//! a real public description, GitHub's REST API from the npm package `@octokit/openapi`
//! (pinned in package.json), loads without error with all its 1,223 operations.

use crate::common;
use common::*;
use serde_json::{json, Value};

/// 600 operations: 299 `getItemN` and 299 `updateItemN` (tags `read`/`write`, OpenAPI 3.0
/// `nullable` in the bodies), `reconcileKumquatShipments` and `getStatus`.
fn big_spec() -> Value {
    let mut paths = serde_json::Map::new();
    for i in 0..299 {
        paths.insert(
            format!("/items{i}/{{id}}"),
            json!({
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "get": {"operationId": format!("getItem{i}"), "tags": ["read"], "summary": format!("Read one record of the catalogue section {i}")},
                "put": {
                    "operationId": format!("updateItem{i}"),
                    "tags": ["write"],
                    "summary": format!("Change one record of the catalogue section {i}"),
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}}
                }
            }),
        );
    }
    paths.insert(
        "/shipments/reconcile".into(),
        json!({"post": {"operationId": "reconcileKumquatShipments", "tags": ["write"], "summary": "Reconcile the quarterly kumquat shipments"}}),
    );
    paths.insert("/status".into(), json!({"get": {"operationId": "getStatus", "tags": ["read"], "summary": "Health of the service"}}));
    json!({
        "openapi": "3.0.3",
        "info": {"title": "big", "version": "1"},
        "paths": paths,
        "components": {"schemas": {"Record": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "note": {"type": "string", "nullable": true}}
        }}}
    })
}

fn tools_json(config: &std::path::Path) -> (Vec<Value>, String) {
    let runner = bin("sandbox-runner");
    let out = cli_run_env(
        &["tools", "--json", "--config", config.to_str().unwrap()],
        &[
            ("MCP_SANDBOX_LOG", "debug"),
            ("MCP_SANDBOX_RUNNER", runner.to_str().unwrap()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status, 0, "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let tools = v
        .as_array()
        .cloned()
        .or_else(|| v["tools"].as_array().cloned())
        .unwrap_or_else(|| panic!("{v}"));
    (tools, stderr)
}

/// The `ms=N` of the gateway's "OpenAPI server loaded" debug line.
fn load_ms(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.contains("OpenAPI server loaded"))
        .unwrap_or_else(|| panic!("no load line: {stderr}"));
    let at = line.find("ms=").unwrap() + 3;
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_600_operation_spec_loads_and_search_finds_one_by_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.json"), big_spec().to_string()).unwrap();
    let write = |entry: Value| {
        let mut e = json!({"openapi": "big.json", "baseUrl": "http://127.0.0.1:9/v1"});
        for (k, v) in entry.as_object().unwrap() {
            e[k] = v.clone();
        }
        let config = dir.path().join("mcp.json");
        std::fs::write(&config, json!({"mcpServers": {"big": e}}).to_string()).unwrap();
        config
    };
    let config = write(json!({}));
    let (tools, stderr) = tools_json(&config);
    assert_eq!(tools.len(), 600, "{stderr}");
    // The gateway says how long the load took (a figure for the operator and the benchmark; no
    // test asserts a time: the machine may be busy).
    load_ms(&stderr);
    let update = tools.iter().find(|t| t["name"] == "updateItem7").unwrap();
    let schema = update
        .get("inputSchema")
        .or(update.get("input_schema"))
        .unwrap();
    // The body's component schema is shared: a `$ref` into the tool's own `$defs`.
    assert_eq!(
        schema["properties"]["body"],
        json!({"$ref": "#/$defs/Record"}),
        "{update}"
    );
    assert_eq!(
        schema["$defs"]["Record"]["properties"]["note"],
        json!({"type": ["string", "null"]}),
        "{update}"
    );
    assert_eq!(schema["required"], json!(["id", "body"]), "{update}");

    // Discovery through serve: the operation found by words of its summary, in a short answer.
    let codes = dir.path().join("codes.json");
    std::fs::write(&codes, "[]").unwrap();
    let out = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .arg(repo_root().join("tests/python/openapi_client.py"))
        .arg(bin("mcp-sandbox"))
        .arg(&config)
        .arg("quarterly kumquat shipments")
        .arg(&codes)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    let search = first["search"].as_str().unwrap();
    assert!(search.contains("reconcileKumquatShipments"), "{search}");
    assert!(
        search.contains("Reconcile the quarterly kumquat shipments"),
        "{search}"
    );
    let listed = search.matches("Item").count();
    assert!(
        listed < 30,
        "the answer lists {listed} of the 598 others:\n{search}"
    );

    // The entry's filters: globs over names, tags.
    let (tools, _) = tools_json(&write(json!({"operations": ["getItem1*", "getStatus"]})));
    // getItem1, getItem10..19, getItem100..199, and getStatus.
    assert_eq!(tools.len(), 1 + 10 + 100 + 1);
    let (tools, _) = tools_json(&write(json!({"tags": ["read"]})));
    assert_eq!(tools.len(), 300);
    let (tools, _) = tools_json(&write(
        json!({"tags": ["write"], "operations": ["reconcile*"]}),
    ));
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reconcileKumquatShipments"]);
}

#[test]
fn githubs_public_description_loads_with_all_its_operations() {
    let spec = repo_root().join("node_modules/@octokit/openapi/generated/api.github.com.json");
    assert!(
        spec.exists(),
        "{} is missing: run scripts/setup.sh (npm ci installs @octokit/openapi)",
        spec.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"github": {
            "openapi": spec,
            "baseUrl": "https://api.github.com",
            "headers": {"X-GitHub-Api-Version": "2022-11-28"}
        }}})
        .to_string(),
    )
    .unwrap();
    let (tools, stderr) = tools_json(&config);
    assert_eq!(tools.len(), 1223, "{stderr}");
    assert!(!stderr.contains("is left out"), "{stderr}");
    let t = tools
        .iter()
        .find(|t| t["name"] == "issues_list_for_repo")
        .expect("issues/list-for-repo");
    let schema = t.get("inputSchema").or(t.get("input_schema")).unwrap();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(required, ["owner", "repo"], "{t}");
    assert!(
        t["description"]
            .as_str()
            .unwrap()
            .contains("GET /repos/{owner}/{repo}/issues"),
        "{t}"
    );
}
