//! The real `mcp-sandbox` binary: `capability save|list|show|rm`, `--from-last`, `graph` in its
//! three formats and `graph next`, the `sandbox.state` config key and the XDG default.

use crate::common;
use common::bin;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn cli_env(args: &[&str], stdin: Option<&str>, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    cmd.args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// Runs with `--state` (and the fixture config for `run`).
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let text = json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}});
        std::fs::write(dir.path().join("mcp.json"), text.to_string()).unwrap();
        Env { dir }
    }
    fn state(&self) -> String {
        self.dir
            .path()
            .join("state.db")
            .to_string_lossy()
            .into_owned()
    }
    fn config(&self) -> String {
        self.dir
            .path()
            .join("mcp.json")
            .to_string_lossy()
            .into_owned()
    }
    fn cli(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.push("--state".into());
        all.push(self.state());
        if args[0] == "run" {
            all.push("--config".into());
            all.push(self.config());
        }
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        cli_env(&refs, stdin, &[])
    }
    fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.cli(args, stdin);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn capability_save_list_show_rm() {
    let env = Env::new();
    let code = "return [1,2,3,4,5].reduce((a, n) => a + n, 0)";
    let file = env.dir.path().join("sum.js");
    std::fs::write(&file, code).unwrap();
    let file = file.to_string_lossy().into_owned();
    let schema = env.dir.path().join("schema.json");
    std::fs::write(&schema, r#"{"type": "object"}"#).unwrap();

    let out = env.ok(
        &[
            "capability",
            "save",
            "math:sum",
            "--file",
            &file,
            "--description",
            "Sums 1..5",
            "--schema",
            &schema.to_string_lossy(),
        ],
        None,
    );
    let id = mcp_sandbox::store::capability_id("math:sum", code).unwrap();
    assert_eq!(
        out,
        format!("saved math:sum version 1 as {id} (author local)\n")
    );

    let list: Value =
        serde_json::from_str(&env.ok(&["capability", "list", "--json"], None)).unwrap();
    assert_eq!(list[0]["name"], "math:sum");
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["description"], "Sums 1..5");
    assert_eq!(list[0]["input_schema"], json!({"type": "object"}));

    let shown = env.ok(&["capability", "show", "math:sum"], None);
    assert!(shown.contains(&format!("id:          {id}\n")), "{shown}");
    assert!(shown.ends_with(&format!("code:\n{code}\n")), "{shown}");

    // The CLI runs it as a tool.
    let out = env.ok(&["run", "-"], Some("return await mcp.math.sum()"));
    assert_eq!(out.trim(), "15");

    // A new version from stdin wins.
    let out = env.ok(
        &["capability", "save", "math:sum", "--file", "-"],
        Some("return 16"),
    );
    assert!(
        out.starts_with("saved math:sum version 2 as local.default.math.sum."),
        "{out}"
    );
    assert_eq!(
        env.ok(&["run", "-"], Some("return await mcp.math.sum()"))
            .trim(),
        "16"
    );

    // Bad input: exit 2 with the reason.
    let out = env.cli(&["capability", "save", "sum", "--file", &file], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("capability name 'sum' is not valid: use namespace:action"));
    let out = env.cli(
        &["capability", "save", "a:b", "--file", "-"],
        Some("return ("),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the capability code does not parse"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&schema, r#"{"type": 12}"#).unwrap();
    let out = env.cli(
        &[
            "capability",
            "save",
            "a:b",
            "--file",
            &file,
            "--schema",
            &schema.to_string_lossy(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not a valid JSON Schema"),
        "{}",
        stderr(&out)
    );

    assert_eq!(
        env.ok(&["capability", "rm", "math:sum"], None),
        "removed 2 version(s) of math:sum\n"
    );
    let out = env.cli(&["capability", "show", "math:sum"], None);
    assert_eq!(out.status.code(), Some(1));
    let out = env.cli(&["run", "-", "--json"], Some("return await mcp.math.sum()"));
    let o: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(o["error"]["code"], "TOOL_NOT_FOUND");
}

#[test]
fn save_from_last_only_when_every_call_succeeded() {
    let env = Env::new();
    let out = env.cli(&["capability", "save", "x:y", "--from-last"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no execution has been run"),
        "{}",
        stderr(&out)
    );

    let failing = "try { await mcp.fixture.fail({message: 'no'}) } catch (e) {} return 1";
    env.ok(&["run", "-"], Some(failing));
    let out = env.cli(&["capability", "save", "x:y", "--from-last"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the last execution succeeded (1 of 1 tool calls failed)"),
        "{}",
        stderr(&out)
    );

    let good = "const r = await mcp.fixture.add({a: 2, b: 3}); return r.sum";
    assert_eq!(env.ok(&["run", "-"], Some(good)).trim(), "5");
    let out = env.ok(&["capability", "save", "calc:five", "--from-last"], None);
    assert!(out.starts_with("saved calc:five version 1"), "{out}");
    assert_eq!(
        env.ok(&["run", "-"], Some("return await mcp.calc.five()"))
            .trim(),
        "5"
    );
}

#[test]
fn graph_table_json_mermaid_and_next() {
    let env = Env::new();
    let code = "await mcp.fixture.echo({message: 'a'}); await mcp.fixture.add({a: 1, b: 1}); \
                await mcp.fixture.echo({message: 'b'}); await mcp.fixture.add({a: 1, b: 1});";
    env.ok(&["run", "-"], Some(code));

    let g: Value = serde_json::from_str(&env.ok(&["graph", "--json"], None)).unwrap();
    let edges: Vec<(String, String, i64)> = g["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["source"].as_str().unwrap().into(),
                e["target"].as_str().unwrap().into(),
                e["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("fixture:echo".into(), "fixture:add".into(), 2),
            ("fixture:add".into(), "fixture:echo".into(), 1)
        ]
    );
    assert_eq!(g["tools"][0]["tool"], "fixture:add");
    assert_eq!(g["tools"][0]["calls"], 2);
    assert_eq!(g["tools"][0]["success_rate"], 1.0);

    let m = env.ok(&["graph", "--mermaid"], None);
    assert_eq!(
        m.lines().collect::<Vec<_>>(),
        [
            "flowchart LR",
            "    t0[\"fixture:add<br/>2 calls, 100% ok\"]",
            "    t1[\"fixture:echo<br/>2 calls, 100% ok\"]",
            "    t1 -->|2| t0",
            "    t0 -->|1| t1",
        ]
    );

    let table = env.ok(&["graph"], None);
    assert!(table.starts_with("TOOL"), "{table}");
    assert!(
        table.contains("\nEDGES\nfixture:echo -> fixture:add  2\n"),
        "{table}"
    );

    let next = env.ok(&["graph", "next", "fixture:echo"], None);
    let rows: Vec<&str> = next.lines().collect();
    assert_eq!(rows.len(), 2, "{next}");
    assert!(rows[1].starts_with("fixture:add"), "{next}");
    assert!(rows[1].ends_with("1.000"), "{next}");

    let only: Value =
        serde_json::from_str(&env.ok(&["graph", "--json", "--tool", "fixture:add"], None)).unwrap();
    assert_eq!(only["edges"].as_array().unwrap().len(), 2);
}

#[test]
fn the_state_file_comes_from_config_or_xdg() {
    let dir = tempfile::tempdir().unwrap();
    // The config's sandbox.state, relative to the config file.
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
               "sandbox": {"state": "sub/learned.db"}})
        .to_string(),
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let xdg = dir.path().join("xdg");
    let env = [("XDG_DATA_HOME", xdg.as_path())];
    let out = cli_env(
        &["run", "-", "--config", &config],
        Some("await mcp.fixture.echo({message: 'x'})"),
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(dir.path().join("sub/learned.db").exists());
    assert!(!xdg.exists());
    let out = cli_env(&["graph", "--json", "--config", &config], None, &env);
    let g: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(g["tools"][0]["tool"], "fixture:echo");

    // No config: $XDG_DATA_HOME/mcp-sandbox/state.db.
    let out = cli_env(&["run", "-"], Some("return 1"), &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(xdg.join("mcp-sandbox/state.db").exists());

    // An unusable state file: the script still runs, with a warning.
    let bad = dir.path().join("not-a-dir");
    std::fs::write(&bad, "x").unwrap();
    let out = cli_env(
        &["run", "-", "--state", &bad.join("s.db").to_string_lossy()],
        Some("return 2"),
        &env,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    assert!(
        stderr(&out).contains("warning: running without the state store"),
        "{}",
        stderr(&out)
    );
}
