//! A gateway that is not root: its runners' layers are verified, not taken on trust. With a
//! subordinate range in `/etc/subuid`/`/etc/subgid` its runners are mapped to an unused uid, so
//! every layer holds and `check --require-isolation all` passes; without one the `uid` layer is
//! named with its fix. The host reads what an unprivileged process may read of its runner
//! (`Uid:`, `uid_map`, `net/unix`, `mountinfo`), since the `ns` links of a non-dumpable process
//! need root. Fewer layers is never silent: `run` says which do not hold, `serve
//! --require-isolation all` refuses to start.
//!
//! The commands run through `setpriv` (util-linux) with the binaries copied to a directory every
//! user may read: as uid 65534, which `scripts/setup.sh` gives the range 300000-365535, and as
//! uid 65533, which has no range.

use crate::common::bin;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

/// The user `scripts/setup.sh` gives a subordinate range, and the last id of it.
const WITH_RANGE: u32 = 65534;
/// A user with no subordinate range.
const WITHOUT_RANGE: u32 = 65533;

struct NonRoot {
    uid: u32,
    _dir: tempfile::TempDir,
    host: std::path::PathBuf,
    runner: std::path::PathBuf,
    home: std::path::PathBuf,
}

fn non_root(uid: u32) -> NonRoot {
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
        uid,
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
            .arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.uid))
            .args(["--clear-groups", "--"])
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

/// The last id of `uid`'s range in `file`, as `scripts/setup.sh` writes it.
fn last_id_of_range(file: &str, uid: u32) -> Option<u32> {
    std::fs::read_to_string(file).ok()?.lines().find_map(|l| {
        let mut p = l.split(':');
        let owner = p.next()?;
        let start: u32 = p.next()?.parse().ok()?;
        let count: u32 = p.next()?.parse().ok()?;
        (owner == uid.to_string() || (uid == 65534 && owner == "nobody")).then(|| start + count - 1)
    })
}

#[test]
fn a_non_root_gateway_with_a_subordinate_range_holds_every_layer() {
    if !is_root() {
        eprintln!("skipped: switching to uid 65534 needs root (this test runs as root in CI)");
        return;
    }
    let sub = last_id_of_range("/etc/subuid", WITH_RANGE)
        .expect("uid 65534 has a range in /etc/subuid: run scripts/setup.sh (as root)");
    assert!(
        last_id_of_range("/etc/subgid", WITH_RANGE).is_some(),
        "uid 65534 has a range in /etc/subgid: run scripts/setup.sh (as root)"
    );
    let nr = non_root(WITH_RANGE);
    let out = nr.run(&["check", "--json", "--require-isolation", "all"], "");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ns = r["layers"]["namespaces"].as_str().unwrap();
    assert!(
        ns.starts_with("enforced (the kernel shows its own user (uid_map), network (no host socket) and mount (mountinfo) namespaces"),
        "{ns}"
    );
    // The kernel shows the runner as the last id of the range: not 0, not the host's 65534.
    assert_eq!(
        r["layers"]["uid"].as_str().unwrap(),
        format!("enforced (the kernel shows uid {sub}, no capabilities)")
    );
    let uids: Vec<&str> = r["uid"].as_str().unwrap().split_whitespace().collect();
    assert_eq!(uids, vec![sub.to_string(); 4], "{}", r["uid"]);
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

    // `run` has nothing to warn about, and scripts run as before.
    let out = nr.run(&["run", "-"], "return 6 * 7");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("isolation layers that do not hold"), "{err}");
}

#[test]
fn a_non_root_gateway_without_a_range_names_the_uid_layer_and_its_fix() {
    if !is_root() {
        eprintln!("skipped: switching to uid 65533 needs root (this test runs as root in CI)");
        return;
    }
    assert_eq!(last_id_of_range("/etc/subuid", WITHOUT_RANGE), None);
    let nr = non_root(WITHOUT_RANGE);
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
    assert!(r["uid"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .all(|u| u == "65533"));
    assert_eq!(r["ok"], true);

    // `all` refuses, naming the layer and both fixes.
    let out = nr.run(&["check", "--require-isolation", "all"], "");
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("NOT OK: missing uid"), "{text}");
    assert!(
        text.contains("fix: give the gateway's user a subordinate range of its own so the runner is mapped to an unused uid (`usermod --add-subuids 200000-265535 --add-subgids 200000-265535 USER`, `apt-get install uidmap`), or start the gateway as root"),
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
        eprintln!("skipped: switching to uid 65533 needs root (this test runs as root in CI)");
        return;
    }
    let nr = non_root(WITHOUT_RANGE);
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
    assert!(
        err.contains("fix: give the gateway's user a subordinate range"),
        "{err}"
    );

    // `serve --require-isolation all` does not start (exit 1) rather than serve with fewer.
    let out = nr.run(&["serve", "--require-isolation", "all"], "");
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SANDBOX_UNAVAILABLE: refusing to start: --require-isolation needs rlimits, no_new_privs, seccomp, uid, namespaces, empty_root, landlock but uid do not hold here"),
        "{err}"
    );
    assert!(
        err.contains("fix: give the gateway's user a subordinate range"),
        "{err}"
    );
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
