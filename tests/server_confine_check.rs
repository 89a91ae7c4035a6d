//! `mcp-sandbox check --config` shows each stdio server's layers as the kernel shows them for
//! its started process, `--require-isolation all` fails on a server with `"confine": false`
//! (naming it), `serve` warns about such a server, and a confined server that cannot be
//! confined (no bubblewrap) fails to start with SERVER_CONFINEMENT_UNAVAILABLE and the fix
//! (issue 59).

use crate::common::{bin, repo_root};
use serde_json::json;
use std::process::Command;

fn config(dir: &std::path::Path, extra: serde_json::Value) -> std::path::PathBuf {
    let mut servers = json!({"fixture": {"command": bin("fixture-mcp-server")}});
    for (k, v) in extra.as_object().unwrap() {
        servers[k] = v.clone();
    }
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path
}

fn check(path: &std::path::Path, more: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["check", "--json", "--config"])
        .arg(path)
        .args(more)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (
        out.status.code().unwrap(),
        json,
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn check_reads_each_layer_of_a_started_server_from_proc() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), json!({}));
    let (code, report, stderr) = check(&path, &["--require-isolation", "all"]);
    assert_eq!(code, 0, "{report}\n{stderr}");
    let s = &report["servers"][0];
    assert_eq!(s["server"], json!("fixture"));
    assert_eq!(s["confined"], json!(true));
    assert_eq!(s["error"], json!(null));
    let l = &s["layers"];
    assert_eq!(l["seccomp"], json!("Seccomp: 2"));
    assert_eq!(l["no_new_privs"], json!("NoNewPrivs: 1"));
    assert_eq!(
        l["namespaces"],
        json!("own user, mnt, pid, ipc, uts, net, cgroup")
    );
    let uid = l["uid"].as_str().unwrap();
    assert!(uid.starts_with("uid_map: 65534 "), "{uid}");
    assert!(uid.ends_with("CapEff: 0000000000000000"), "{uid}");
    assert_eq!(
        l["rlimits"],
        json!("address space 4294967296, processes 256, open files 1024, file size 268435456")
    );
    assert_eq!(
        l["gateway_files"],
        json!("none visible (config, state store)")
    );
    // No /proc file shows a Landlock domain: the layer is what the wrapper reported.
    let landlock = l["landlock"].as_str().unwrap();
    assert!(
        landlock.starts_with("fully enforced (ruleset abi 6, kernel abi ")
            && landlock.ends_with(") (the wrapper's report)"),
        "{landlock}"
    );
}

#[test]
fn require_isolation_all_fails_on_an_unconfined_server_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        dir.path(),
        json!({"open": {"command": bin("fixture-mcp-server"), "confine": false}}),
    );
    let (code, report, _) = check(&path, &["--require-isolation", "all"]);
    assert_eq!(code, 1, "{report}");
    let open = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == "open")
        .unwrap();
    assert_eq!(open["confined"], json!(false));
    assert_eq!(
        open["error"],
        json!("\"confine\": false: it runs with everything the gateway can reach")
    );
    // Without it, check passes and says so; serve warns, naming the server.
    let (code, _, _) = check(&path, &[]);
    assert_eq!(code, 0);
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["serve", "--require-isolation", "all", "--config"])
        .arg(&path)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "--require-isolation all covers MCP servers, and open say \"confine\": false"
        ),
        "{stderr}"
    );
}

/// `mcp-sandbox run --json -` of `script` with the fixture confined and no bubblewrap: the exit
/// status, the outcome and stderr.
fn run_without_bubblewrap(
    script: &str,
    language: &str,
) -> (Option<i32>, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), json!({}));
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["run", "--json", "--language", language, "-", "--config"])
        .arg(&path)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("MCP_SANDBOX_BWRAP", repo_root().join("no-such-bwrap"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(script.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let outcome = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (
        out.status.code(),
        outcome,
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn without_bubblewrap_a_confined_server_fails_closed_with_the_fix() {
    let (status, o, stderr) = run_without_bubblewrap(
        "return await mcp.fixture.echo({message: 'hi'})",
        "javascript",
    );
    assert_ne!(status, Some(0), "{o} {stderr}");
    assert_eq!(o["error"]["code"], "SERVER_CONFINEMENT_UNAVAILABLE", "{o}");
    assert_eq!(o["error"]["tool"], "fixture:echo", "{o}");
    let message = o["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("MCP server 'fixture' is unavailable: SERVER_CONFINEMENT_UNAVAILABLE: server 'fixture' is confined but bubblewrap was not found at"),
        "{message}"
    );
    assert!(message.contains("apt-get install bubblewrap"), "{message}");
    assert!(message.contains("\"confine\": false"), "{message}");
    // The script sees the code on the error it catches.
    let (status, o, _) = run_without_bubblewrap(
        "try { await mcp.fixture.echo({message: 'hi'}) } catch (e) { return e.code }",
        "javascript",
    );
    assert_eq!(status, Some(0), "{o}");
    assert_eq!(o["result"], "SERVER_CONFINEMENT_UNAVAILABLE", "{o}");
    // And a Python script: the exception's message starts with the code, and uncaught it is
    // the outcome's code.
    let (_, o, _) = run_without_bubblewrap(
        "try:\n    await mcp.fixture.echo(message='hi')\nexcept RuntimeError as e:\n    result = str(e).split(':', 1)[0]\nresult",
        "python",
    );
    assert_eq!(o["result"], "SERVER_CONFINEMENT_UNAVAILABLE", "{o}");
    let (status, o, _) = run_without_bubblewrap("await mcp.fixture.echo(message='hi')", "python");
    assert_ne!(status, Some(0), "{o}");
    assert_eq!(o["error"]["code"], "SERVER_CONFINEMENT_UNAVAILABLE", "{o}");
}

/// A bubblewrap that cannot make its namespaces (a kernel refusing unprivileged user
/// namespaces). This machine allows them, so a stand-in script plays bubblewrap refused by the
/// kernel: the only way to cause that fault here. The start fails, and only then the trial run
/// (once per process; a working machine never pays it) says why, with the fix.
#[test]
fn a_bubblewrap_refused_its_namespaces_fails_closed_with_the_reason_and_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), json!({}));
    let fake = dir.path().join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["tools", "--config"])
        .arg(&path)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("MCP_SANDBOX_BWRAP", &fake)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = format!(
        "SERVER_CONFINEMENT_UNAVAILABLE: server 'fixture' is confined but {} cannot make its namespaces here (bwrap: setting up uid map: Permission denied): install bubblewrap",
        fake.display()
    );
    assert!(all.contains(&said), "{all}");
    assert!(all.contains("\"confine\": false"), "{all}");
}
