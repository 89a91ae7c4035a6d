//! `--state` takes a file path or a PostgreSQL URL (issues 15 item 6, 31): through the real CLI, a
//! value that looks like a URL of a store this build does not have (`mysql://…`) is a usage error
//! (exit 2) that names what is supported, and creates nothing; a PostgreSQL URL holding a password
//! is refused the same way (`STATE_PASSWORD_IN_URL`), on the command line and in the config.

use crate::common;

use common::bin;
use std::process::{Command, Output, Stdio};

fn cli(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(args)
        .current_dir(dir)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("XDG_DATA_HOME", dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_url_state_of_an_unsupported_scheme_exits_2_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.js"), "return 1").unwrap();
    for args in [
        &["run", "s.js", "--state", "mysql://user@host/db"][..],
        &["serve", "--state", "redis://host/0"],
        &["graph", "--state", "mysql+tls://h/db"],
        &["capability", "list", "--state", "sqlite://x.db"],
    ] {
        let out = cli(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("state stores are not supported by this build")
                && stderr.contains("a file path (SQLite)"),
            "{args:?}: {stderr}"
        );
    }
    for args in [
        &["run", "s.js", "--state", "postgres://user:hunter2@host/db"][..],
        &[
            "serve",
            "--state",
            "postgresql://user@host/db?password=hunter2",
        ],
    ] {
        let out = cli(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("STATE_PASSWORD_IN_URL") && stderr.contains("set PGPASSWORD"),
            "{args:?}: {stderr}"
        );
        // The refusal names the rule, never the value: the password is not echoed.
        assert!(!stderr.contains("hunter2"), "{args:?}: {stderr}");
    }
    for name in [
        "postgres:",
        "postgresql:",
        "mysql:",
        "redis:",
        "mysql+tls:",
        "sqlite:",
    ] {
        assert!(!dir.path().join(name).exists(), "{name} was created");
    }
    // A plain path (even with a colon) still works.
    let out = cli(dir.path(), &["run", "s.js", "--state", "a:b.db"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("a:b.db").exists());
}

#[test]
fn a_url_sandbox_state_in_the_config_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.js"), "return 1").unwrap();
    std::fs::write(
        dir.path().join("mcp.json"),
        r#"{"sandbox": {"state": "mysql://user@host/db"}}"#,
    )
    .unwrap();
    let out = cli(dir.path(), &["run", "s.js", "--config", "mcp.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sandbox.state: 'mysql://'"), "{stderr}");
    assert!(!dir.path().join("mysql:").exists());
    std::fs::write(
        dir.path().join("mcp.json"),
        r#"{"sandbox": {"state": "postgres://user:hunter2@host/db"}}"#,
    )
    .unwrap();
    let out = cli(dir.path(), &["run", "s.js", "--config", "mcp.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sandbox.state: STATE_PASSWORD_IN_URL") && !stderr.contains("hunter2"),
        "{stderr}"
    );
    assert!(!dir.path().join("postgres:").exists());
}
