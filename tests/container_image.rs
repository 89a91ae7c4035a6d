//! The OCI image, built offline (deploy/build-image.sh: Debian's packages through mmdebstrap, the
//! release binaries, `podman import`) and run under Debian's podman as an operator would:
//!
//! - with the shipped seccomp profile (deploy/seccomp.json), `check --require-isolation all`
//!   inside the container reports every layer enforced;
//! - `serve --http` in the container answers the official Python SDK client from outside, whose
//!   script calls an MCP server started inside the container;
//! - under a profile that refuses what Docker's and containerd's default profiles refuse without
//!   CAP_SYS_ADMIN (`unshare`, `mount`, `umount2`, `pivot_root`), `check` names the missing layers
//!   with the fix, `--require-isolation all` exits 1 and `serve --require-isolation all` refuses
//!   to start.
//!
//! Skipped, saying why, where the machine has no podman or mmdebstrap or is not root (CI on this
//! machine has all three: scripts/setup.sh installs them).

use crate::common::{bin, free_port, repo_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn said(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn why_skipped() -> Option<String> {
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "building the image with mmdebstrap and running rootful podman needs root".into(),
        );
    }
    for tool in ["podman", "mmdebstrap", "runc"] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "'{tool}' is not installed (apt-get install {tool})"
            ));
        }
    }
    None
}

/// `podman` with the OCI runtime this machine can use: Debian's crun 1.8 refuses a hybrid cgroup
/// layout with a controller on the v2 hierarchy ("cgroups in hybrid mode not supported", as on
/// this machine), runc 1.1 runs there (scripts/setup.sh installs it).
fn podman() -> Command {
    let mut cmd = Command::new("podman");
    cmd.args(["--runtime", "runc"]);
    cmd
}

/// Limits at or below this machine's hard limits: podman's defaults are higher, and raising a
/// hard limit needs CAP_SYS_RESOURCE, which root here lacks.
const LIMITS: [&str; 4] = [
    "--ulimit",
    "nofile=16384:16384",
    "--ulimit",
    "nproc=4096:4096",
];

/// The image, built once per test run under a name of its own; removed on drop.
struct Image {
    tag: String,
}

impl Image {
    fn build() -> Image {
        let tag = format!("localhost/mcp-sandbox-test:{}", std::process::id());
        let bin_dir = bin("mcp-sandbox").parent().unwrap().to_path_buf();
        let out = Command::new(repo_root().join("deploy/build-image.sh"))
            .arg("--tag")
            .arg(&tag)
            .arg("--bin-dir")
            .arg(&bin_dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", said(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("built {tag}: ")), "{err}");
        eprintln!("{err}");
        Image { tag }
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = podman().args(["rmi", "--force", &self.tag]).output();
    }
}

fn podman_run(profile: &Path, image: &Image, extra: &[&str], args: &[&str]) -> Output {
    podman()
        .args(["run", "--rm", "--pull=never"])
        .args(LIMITS)
        .arg("--security-opt")
        .arg(format!("seccomp={}", profile.display()))
        .args(extra)
        .arg(&image.tag)
        .args(args)
        .output()
        .unwrap()
}

/// deploy/seccomp.json with the calls Docker's and containerd's defaults refuse without
/// CAP_SYS_ADMIN moved to its EPERM list: the default-profile case on this machine, whose podman
/// default allows them.
fn refusing_profile(dir: &Path) -> PathBuf {
    let mut profile: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("deploy/seccomp.json")).unwrap(),
    )
    .unwrap();
    let refused = ["unshare", "mount", "umount2", "pivot_root"];
    for rule in profile["syscalls"].as_array_mut().unwrap() {
        let allow = rule["action"] == "SCMP_ACT_ALLOW";
        let names = rule["names"].as_array_mut().unwrap();
        if allow {
            names.retain(|n| !refused.contains(&n.as_str().unwrap()));
        } else {
            names.extend(refused.iter().map(|n| Value::from(*n)));
        }
    }
    let path = dir.join("refusing.json");
    std::fs::write(&path, serde_json::to_vec(&profile).unwrap()).unwrap();
    path
}

/// Stops the container on drop (SIGTERM, then podman's own kill after 10 s).
struct Running(String);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = podman()
            .args(["rm", "--force", "--time", "10", &self.0])
            .output();
    }
}

#[test]
fn the_image_keeps_every_layer_with_the_shipped_profile_and_names_the_fix_without_it() {
    if let Some(why) = why_skipped() {
        eprintln!("skipped: {why}");
        return;
    }
    let image = Image::build();
    let shipped = repo_root().join("deploy/seccomp.json");

    // 1. Every layer, as the kernel shows it inside the container.
    let out = podman_run(
        &shipped,
        &image,
        &[],
        &["check", "--json", "--require-isolation", "all"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (layer, state) in r["layers"].as_object().unwrap() {
        assert!(
            state.as_str().unwrap().starts_with("enforced"),
            "{layer}: {state}"
        );
    }
    assert_eq!(r["layers"].as_object().unwrap().len(), 8, "{r}");
    assert_eq!(r["ok"], true);

    // 2. serve --http in the container; the Python SDK from outside runs a script that calls an
    // MCP server inside it (the fixture server, mounted read-only).
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"fixture": {"command": "/opt/fixture/fixture-mcp-server"}}}"#,
    )
    .unwrap();
    let port = free_port();
    let name = format!("mcp-sandbox-test-{}", std::process::id());
    let out = podman()
        .args([
            "run",
            "--detach",
            "--pull=never",
            "--name",
            &name,
            "--network",
            "host",
        ])
        .args(LIMITS)
        // The confined MCP server's bubblewrap mounts a /proc of its own, which the kernel
        // refuses under podman's default /proc masks (docs/server-sandbox.md).
        .args(["--security-opt", "unmask=/proc/*"])
        .arg("--security-opt")
        .arg(format!("seccomp={}", shipped.display()))
        .arg("--volume")
        .arg(format!(
            "{}:/opt/fixture/fixture-mcp-server:ro",
            bin("fixture-mcp-server").display()
        ))
        .arg("--volume")
        .arg(format!("{}:/etc/mcp-sandbox/mcp.json:ro", config.display()))
        .arg(&image.tag)
        .args(["serve", "--config", "/etc/mcp-sandbox/mcp.json", "--http"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--require-isolation", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let running = Running(name.clone());
    // Wait for /healthz (the probe the manifests use) before the client connects.
    let started = Instant::now();
    loop {
        let up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
            use std::io::{Read, Write};
            let _ = s.write_all(
                b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            );
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok\n")
        });
        if up {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let logs = podman().args(["logs", &name]).output().unwrap();
            panic!(
                "the gateway in the container did not answer /healthz: {}",
                said(&logs)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = Command::new(repo_root().join(".venv/bin/python"))
        .arg(repo_root().join("tests/python/container_client.py"))
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("OK"), "{stdout}");
    let seen: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(seen["result"]["sum"], 42, "{seen}");
    for (layer, state) in seen["isolation"].as_object().unwrap() {
        assert!(
            state.as_str().unwrap().starts_with("enforced"),
            "{layer}: {state}"
        );
    }
    // SIGTERM: the gateway stops cleanly (exit 0).
    let out = podman()
        .args(["stop", "--time", "20", &name])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let out = podman()
        .args(["inspect", "--format", "{{.State.ExitCode}}", &name])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "0",
        "{}",
        said(&out)
    );
    drop(running);

    // 3. Under a profile that refuses unshare and mount, as Docker's default does: named, with
    // the fix, and refused where every layer is required.
    let refusing = refusing_profile(dir.path());
    let out = podman_run(&refusing, &image, &[], &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  namespaces    unavailable: unshare(CLONE_NEWUSER|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS|CLONE_NEWNS) failed: EPERM"), "{text}");
    assert!(
        text.contains("fix: unshare(CLONE_NEWUSER) is refused: in a container, run it with the shipped seccomp profile (podman or docker run --security-opt seccomp=deploy/seccomp.json"),
        "{text}"
    );
    assert!(
        text.contains("degraded: the required layers are enforced, but "),
        "{text}"
    );
    let out = podman_run(
        &refusing,
        &image,
        &[],
        &["check", "--require-isolation", "all"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("NOT OK: missing namespaces, empty_root"),
        "{}",
        said(&out)
    );
    let out = podman_run(
        &refusing,
        &image,
        &["--network", "none"],
        &[
            "serve",
            "--http",
            "127.0.0.1:8787",
            "--require-isolation",
            "all",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SANDBOX_UNAVAILABLE: refusing to start: --require-isolation needs"),
        "{err}"
    );
    assert!(
        err.contains("--security-opt seccomp=deploy/seccomp.json"),
        "{err}"
    );
}
