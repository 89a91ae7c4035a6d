//! What `deploy/` ships, checked by the tools its platforms use: the systemd unit by
//! `systemd-analyze verify`, the Kubernetes manifests by `kubernetes-validate` against the
//! Kubernetes 1.33 schemas offline (`--strict`: an unknown field is an error), and the seccomp
//! profile for what the runner's lockdown needs. The image itself: tests/container_image.rs.

use crate::common::{bin, repo_root};
use serde_json::Value;
use std::process::Command;

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_systemd_unit_verifies_and_holds_no_secret() {
    let unit = std::fs::read_to_string(repo_root().join("deploy/mcp-sandbox.service")).unwrap();
    // The unit names the installed binary; verify it against the one built here (verify checks
    // that ExecStart's program exists and is executable).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-sandbox.service");
    let built = bin("mcp-sandbox");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/mcp-sandbox", built.to_str().unwrap()),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian's systemd package)");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(text(&out).trim(), "", "verify printed warnings");
    // The same unit with a misspelt option fails: the check can fail.
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/mcp-sandbox", built.to_str().unwrap())
            .replace("ProtectSystem=strict", "ProtectSystem=strictly"),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        text(&out).contains("Failed to parse protect system value, ignoring: strictly"),
        "{}",
        text(&out)
    );

    // The key comes in as a credential from a root-only file, tokens live in the store: neither
    // is in the unit.
    assert!(unit.contains("LoadCredential=key:/etc/mcp-sandbox/key"));
    assert!(unit.contains("Environment=MCP_SANDBOX_KEY_FILE=%d/key"));
    for secret in ["MCP_SANDBOX_KEY=", "PGPASSWORD=", "Bearer", "mcp_sandbox_"] {
        assert!(!unit.contains(secret), "the unit names {secret}");
    }
    // It refuses to start with fewer layers.
    assert!(unit.contains("ExecStartPre=/usr/local/bin/mcp-sandbox check --require-isolation all"));
    assert!(unit.contains("--require-isolation all"));
}

#[test]
fn the_kubernetes_manifests_validate_offline_against_1_33() {
    let dir = repo_root().join("deploy/kubernetes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    let validate = repo_root().join(".venv/bin/kubernetes-validate");
    let out = Command::new(&validate)
        .args(["--kubernetes-version", "1.33.0", "--strict"])
        .args(&files)
        .output()
        .expect("kubernetes-validate in .venv (scripts/setup.sh installs it)");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    for kind in [
        "deployment/mcp-sandbox",
        "service/mcp-sandbox",
        "poddisruptionbudget/mcp-sandbox",
        "secret/mcp-sandbox-secrets",
        "configmap/mcp-sandbox-config",
    ] {
        assert!(
            said.contains(&format!("passed for resource {kind} against version 1.33")),
            "{said}"
        );
    }
    // A misspelt field is refused: the validation can fail.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("deployment.yaml");
    let deployment = std::fs::read_to_string(dir.join("deployment.yaml")).unwrap();
    std::fs::write(
        &bad,
        deployment.replace("hostUsers: false", "hostUser: false"),
    )
    .unwrap();
    let out = Command::new(&validate)
        .args(["--kubernetes-version", "1.33.0", "--strict"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("'hostUser' was unexpected"),
        "{}",
        text(&out)
    );

    // What keeps every layer: its own user namespace, the shipped seccomp profile, the least
    // capabilities, no privilege escalation, probes on /healthz and on `check`.
    for needle in [
        "hostUsers: false",
        "localhostProfile: profiles/mcp-sandbox.json",
        "drop: [\"ALL\"]",
        "add: [\"SETUID\", \"SETGID\", \"KILL\"]",
        "allowPrivilegeEscalation: false",
        "readOnlyRootFilesystem: true",
        "path: /healthz",
        "command: [\"mcp-sandbox\", \"check\", \"--require-isolation\", \"all\"]",
        "PGPASSWORD_FILE",
        "MCP_SANDBOX_KEY_FILE",
    ] {
        assert!(
            deployment.contains(needle),
            "deployment.yaml lacks {needle}"
        );
    }
    assert!(!deployment.contains("privileged: true"));
}

fn names(rule: &Value) -> Vec<&str> {
    rule["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

#[test]
fn the_seccomp_profile_allows_the_lockdown_and_denies_what_no_gateway_needs() {
    let profile: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("deploy/seccomp.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(profile["defaultAction"], "SCMP_ACT_ERRNO");
    let rules = profile["syscalls"].as_array().unwrap();
    let allowed: Vec<&str> = rules
        .iter()
        .filter(|r| r["action"] == "SCMP_ACT_ALLOW")
        .flat_map(names)
        .collect();
    let denied: Vec<&str> = rules
        .iter()
        .filter(|r| r["action"] == "SCMP_ACT_ERRNO")
        .flat_map(names)
        .collect();
    // What the runner's lockdown calls (sandbox-runner/src/lockdown/) and what Docker's and
    // containerd's default profiles allow only with CAP_SYS_ADMIN.
    for needed in [
        "unshare",
        "clone",
        "clone3",
        "mount",
        "umount2",
        "pivot_root",
        "seccomp",
        "prctl",
        "landlock_create_ruleset",
        "landlock_add_rule",
        "landlock_restrict_self",
        "setresuid",
        "setgroups",
        "capset",
        "close_range",
        "setrlimit",
        "prlimit64",
    ] {
        assert!(allowed.contains(&needed), "{needed} is not allowed");
    }
    for never in [
        "ptrace",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "kexec_load",
        "init_module",
        "keyctl",
        "process_vm_readv",
        "io_uring_setup",
        "setns",
    ] {
        assert!(denied.contains(&never), "{never} is not denied");
        assert!(!allowed.contains(&never), "{never} is allowed");
    }
}
