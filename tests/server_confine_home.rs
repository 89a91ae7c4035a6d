//! A confined server's private home is bounded on disk (issue 59, "fill the disk"): the
//! hostile server (tests/python/hostile_server.py, official Python SDK) of tenant red, with
//! `limits.homeMb` 4, writes synced 1 MiB files into its home 50 ms apart; the gateway's watch
//! finds the home over its bound and kills the server mid-call, the restart is refused with
//! `SERVER_CONFINEMENT_UNAVAILABLE` naming the bound and the directory to clean, and tenant
//! blue's instance of the same server is served.

use crate::common::repo_root;
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

fn code(code: &str) -> Value {
    json!({ "code": code })
}

/// What the script returned (its own value or the error it caught).
fn returned(r: &Value) -> &Value {
    assert_eq!(r["is_error"], json!(false), "{r}");
    &r["out"]["result"]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_filling_its_home_past_home_mb_is_killed_and_not_started_again() {
    let h = start_http_config(
        json!({"mcpServers": {"hostile": {
            "command": repo_root().join(".venv/bin/python"),
            "args": [repo_root().join("tests/python/hostile_server.py")],
            "limits": {"homeMb": 4},
            "startupTimeoutMs": 30000
        }}, "sandbox": {"auth": {}}}),
        &[],
    )
    .await;
    let red = create_token(&h.state, "red", &["--tenant", "red"]);
    let blue = create_token(&h.state, "blue", &["--tenant", "blue"]);
    let caught = |call: &str| {
        code(&format!(
            "try {{ return await {call} }} catch (e) {{ return {{code: e.code, message: e.message}} }}"
        ))
    };
    let fill = caught("mcp.hostile.fill_files({directory: '/home/server/junk', count: 100})");
    let again = caught("mcp.hostile.whoami({})");
    let r = results(&sdk(&url(&h), Some(&red), &json!([fill, again])));

    // Killed mid-call: the 100 files were not all written.
    let died = returned(&r[0]);
    assert_eq!(died["code"], "TOOL_ERROR", "{died}");
    let message = died["message"].as_str().unwrap();
    assert!(
        message.starts_with("MCP server 'hostile' died during the call"),
        "{message}"
    );
    let scope = h.dir.path().join("servers/hostile/red");
    let files = std::fs::read_dir(scope.join("home/junk")).unwrap().count();
    // Four 1 MiB files and their directory are over 4 MiB; fewer are not.
    assert!((4..100).contains(&files), "{files} files written");

    // Not started again while its home is over the bound: the code, the bound, what to clean.
    let refused = returned(&r[1]);
    assert_eq!(
        refused["code"], "SERVER_CONFINEMENT_UNAVAILABLE",
        "{refused}"
    );
    let message = refused["message"].as_str().unwrap();
    let expected = format!(
        "over limits.homeMb (4 MiB); remove files under {} or raise limits.homeMb",
        scope.display()
    );
    assert!(
        message
            .contains("SERVER_CONFINEMENT_UNAVAILABLE: server 'hostile': its private home holds ")
            && message.ends_with(&expected),
        "{message}"
    );

    // The other tenant's instance is served.
    let b = results(&sdk(
        &url(&h),
        Some(&blue),
        &json!([code("return await mcp.hostile.whoami({})")]),
    ));
    let who: Value = serde_json::from_str(returned(&b[0])["result"].as_str().unwrap()).unwrap();
    assert_eq!(who["uid"], 65534, "{who}");
}
