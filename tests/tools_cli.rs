//! `mcp-sandbox tools`: the catalog from the command line, and TypeScript declarations for every
//! tool of the reference filesystem, memory and everything servers, type-checked by the real
//! TypeScript compiler (node_modules/.bin/tsc, pinned in package.json).

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

fn tools(config: &Path, flags: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .arg("tools")
        .arg("--config")
        .arg(config)
        .args(flags)
        .output()
        .unwrap()
}

fn tsc(dir: &Path, files: &[&str]) -> Output {
    let tsc = repo_root().join("node_modules/.bin/tsc");
    assert!(tsc.exists(), "run scripts/setup.sh (npm ci) first");
    Command::new(tsc)
        .current_dir(dir)
        .args([
            "--noEmit", "--strict", "--target", "es2022", "--lib", "es2022",
        ])
        .args(files)
        .output()
        .unwrap()
}

const USES: &str = r#"
async function main(): Promise<unknown> {
  const file = await mcp.filesystem.read_text_file({ path: "/data/a.txt", head: 3 });
  const text: string = file.content;
  const weather = await mcp.everything["get-structured-content"]({ location: "Chicago" });
  const celsius: number = weather.temperature;
  const sum = await mcp.everything["get-sum"]({ a: 1, b: 2 });
  const len = typeof sum === "string" ? sum.length : 0;
  const graph = await mcp.memory.read_graph();
  await mcp.memory.create_entities({ entities: [{ name: "x", entityType: "y", observations: ["z"] }] });
  return [text, celsius, len, graph];
}
main();
"#;

#[test]
fn declarations_for_every_reference_tool_type_check_with_tsc() {
    let bin_dir = repo_root().join("node_modules/.bin");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().canonicalize().unwrap();
    let config = dir.path().join("mcp.json");
    let text = json!({"mcpServers": {
        "filesystem": {"command": bin_dir.join("mcp-server-filesystem"), "args": [&data], "files": {"write": [&data]}},
        "memory": {"command": bin_dir.join("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": data.join("memory.jsonl")}, "files": {"write": [&data]}},
        "everything": {"command": bin_dir.join("mcp-server-everything")}
    }});
    std::fs::write(&config, text.to_string()).unwrap();

    let out = tools(&config, &["--typescript"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decls = String::from_utf8(out.stdout).unwrap();
    let listed = tools(&config, &["--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let all = listed["tools"].as_array().unwrap();
    // Every tool of the three servers is declared (the field notes count 14 filesystem and 9
    // memory tools; everything has a dozen or so, some with dashes).
    for server in ["filesystem", "memory", "everything"] {
        let n = all.iter().filter(|t| t["server"] == server).count();
        assert!(n >= 9, "{server} has only {n} tools");
    }
    for t in all {
        let name = t["name"].as_str().unwrap();
        let declared = mcp_sandbox::tools::typescript::prop_name(name);
        assert!(
            decls.contains(&format!("    {declared}(args")),
            "{name} is not declared:\n{decls}"
        );
    }
    assert!(decls.contains("\"get-sum\"(args: {"), "{decls}");

    std::fs::write(dir.path().join("mcp.d.ts"), &decls).unwrap();
    std::fs::write(dir.path().join("use.ts"), USES).unwrap();
    let ok = tsc(dir.path(), &["mcp.d.ts", "use.ts"]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "tsc rejected the declarations:\n{}{}\n{decls}",
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr)
    );

    // A wrong argument type, a missing required argument and a misspelt tool must be rejected.
    for (bad, expected) in [
        (
            r#"mcp.everything["get-sum"]({ a: "1", b: 2 });"#,
            "error TS2322",
        ),
        (
            r#"mcp.filesystem.read_text_file({ head: 3 });"#,
            "error TS2741",
        ),
        (
            r#"mcp.filesystem.read_txt_file({ path: "x" });"#,
            "error TS2551",
        ),
        (
            r#"mcp.everything["get-structured-content"]({ location: "Paris" });"#,
            "error TS2322",
        ),
    ] {
        std::fs::write(dir.path().join("bad.ts"), bad).unwrap();
        let rejected = tsc(dir.path(), &["mcp.d.ts", "bad.ts"]);
        let said = String::from_utf8_lossy(&rejected.stdout);
        assert_eq!(
            rejected.status.code(),
            Some(1),
            "tsc accepted {bad}: {said}"
        );
        assert!(said.contains(expected), "{bad}: {said}");
    }
}

#[test]
fn broken_servers_are_reported_and_the_others_listed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let text = json!({
        "mcpServers": {
            "fixture": {"command": bin("fixture-mcp-server")},
            "failing": {"command": bin("fixture-mcp-server"), "args": ["--fail-start"]},
            "missing": {"command": "/nonexistent/mcp-server"}
        },
        "sandbox": {"deny": ["fixture:crash"]}
    });
    std::fs::write(&config, text.to_string()).unwrap();

    let out = tools(&config, &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("fixture:echo  Returns the message as one text item.\n"),
        "{text}"
    );
    assert!(
        text.contains("fixture:crash [denied by policy]  "),
        "{text}"
    );
    assert!(
        text.contains("failing: UNAVAILABLE: initialize failed"),
        "{text}"
    );
    assert!(
        text.contains("failing at start as asked (--fail-start)"),
        "{text}"
    );
    assert!(
        text.contains("missing: UNAVAILABLE: cannot start `/nonexistent/mcp-server`"),
        "{text}"
    );

    let out = tools(&config, &["--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let unavailable: Vec<&str> = v["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["server"].as_str().unwrap())
        .collect();
    assert_eq!(unavailable, ["failing", "missing"]);
    let crash = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "crash")
        .unwrap();
    assert_eq!(crash["allowed"], false);
    assert_eq!(
        crash["denied_reason"],
        "fixture:crash is denied by the config rule deny \"fixture:crash\""
    );

    let out = tools(&config, &["--typescript"]);
    let ts = String::from_utf8(out.stdout).unwrap();
    assert!(
        ts.contains("// mcp.missing is unavailable: cannot start"),
        "{ts}"
    );
    assert!(
        ts.contains("@denied calls fail with PERMISSION_DENIED"),
        "{ts}"
    );
}
