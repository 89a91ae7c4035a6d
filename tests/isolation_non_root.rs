//! A gateway that is not root: its runners' layers are verified, not taken on trust, and the one
//! layer only root can give (`uid`) is named with its fix. The host reads what an unprivileged
//! process may read of its runner (`uid_map`, `net/unix`, `mountinfo`), since the `ns` links of a
//! non-dumpable process need root. Fewer layers is never silent: `run` says which do not hold,
//! `serve --require-isolation all` refuses to start.
//!
//! The commands run as uid 65534 through `setpriv` (util-linux) with the binaries copied to a
//! directory that user may read.

use crate::common::bin;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

struct NonRoot {
    _dir: tempfile::TempDir,
    host: std::path::PathBuf,
    runner: std::path::PathBuf,
    home: std::path::PathBuf,
}

fn non_root() -> NonRoot {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let host = dir.path().join("mcp-sandbox");
    let runner = dir.path().join("sandbox-runner");
    std::fs::copy(bin("mcp-sandbox"), &host).unwrap();
    std::fs::copy(bin("sandbox-runner"), &runner).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    NonRoot {
        _dir: dir,
        host,
        runner,
        home,
    }
}

impl NonRoot {
    fn run(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&self.host)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", &self.home)
            .env("MCP_SANDBOX_RUNNER", &self.runner)
            .current_dir(&self.home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("setpriv (util-linux)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

fn said(out: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_non_root_gateway_verifies_its_runners_namespaces_from_what_it_may_read() {
    if !is_root() {
        eprintln!("skipped: switching to uid 65534 needs root (this test runs as root in CI)");
        return;
    }
    let nr = non_root();
    let out = nr.run(
        &[
            "check",
            "--json",
            "--require-isolation",
            "namespaces,empty_root,landlock",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ns = r["layers"]["namespaces"].as_str().unwrap();
    assert!(
        ns.starts_with("enforced (the kernel shows its own user (uid_map), network (no host socket) and mount (mountinfo) namespaces"),
        "{ns}"
    );
    assert!(r["uid"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .all(|u| u == "65534"));
    for layer in [
        "empty_root",
        "landlock",
        "seccomp",
        "no_new_privs",
        "rlimits",
    ] {
        assert!(
            r["layers"][layer].as_str().unwrap().starts_with("enforced"),
            "{layer}: {}",
            r["layers"][layer]
        );
    }
    assert_eq!(r["ok"], true);

    // The uid layer needs root: `all` refuses, naming it and the fix.
    let out = nr.run(&["check", "--require-isolation", "all"], "");
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("NOT OK: missing uid"), "{text}");
    assert!(
        text.contains("fix: start the gateway as root so the runner drops to an unused uid"),
        "{text}"
    );
    // Without the requirement the verdict is honest: not "ok".
    let out = nr.run(&["check"], "");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("degraded: the required layers are enforced, but uid do not hold"),
        "{text}"
    );
}

#[test]
fn fewer_layers_is_never_silent_and_serve_refuses_to_start_with_fewer() {
    if !is_root() {
        eprintln!("skipped: switching to uid 65534 needs root (this test runs as root in CI)");
        return;
    }
    let nr = non_root();
    // `run` says once which layer does not hold, why, and the fix; the script still runs.
    let out = nr.run(&["run", "-"], "return 6 * 7");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("warning: isolation layers that do not hold here: uid (scripts still run behind the others)")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("fix: start the gateway as root"), "{err}");

    // `serve --require-isolation all` does not start (exit 1) rather than serve with fewer.
    let out = nr.run(&["serve", "--require-isolation", "all"], "");
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SANDBOX_UNAVAILABLE: refusing to start: --require-isolation needs rlimits, no_new_privs, seccomp, uid, namespaces, empty_root, landlock but uid do not hold here"),
        "{err}"
    );
    assert!(err.contains("fix: start the gateway as root"), "{err}");
    // A layer that holds is not required away: the same with the layers a non-root user has.
    let out = nr.run(
        &[
            "serve",
            "--require-isolation",
            "namespaces,empty_root,landlock",
        ],
        "",
    );
    // It gets past the check and serves: stdin is closed at once, so the stdio session finds no
    // client (exit 2, saying so).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("SANDBOX_UNAVAILABLE"), "{err}");
    assert!(
        err.contains("the MCP session did not start: connection closed: initialize request"),
        "{err}"
    );
    assert!(
        err.contains("warning: isolation layers that do not hold here: uid"),
        "{err}"
    );
}
