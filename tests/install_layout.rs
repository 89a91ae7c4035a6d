//! After an install, `mcp-sandbox run` finds its runner without `--runner` (issue 47 item 4):
//! beside itself (both crates installed with `cargo install --path . && cargo install --path
//! sandbox-runner`, into the same `bin/`), or in cargo's bin directory; when no place holds one,
//! the error names every place it looked at and how to install it.
//!
//! The installs are simulated: the real binaries of `target/debug` are hard-linked (copied if the
//! link fails) into temporary `bin/` directories, the layout `cargo install --root DIR` makes.
//! Running `cargo install` itself from the test would build the host again in another feature
//! set (minutes, and it would overwrite target/debug's binaries).

use crate::common::bin;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `name` of target/debug placed into `dir` (created), as `cargo install` would place it.
fn install(name: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("bin dir");
    let to = dir.join(name);
    if std::fs::hard_link(bin(name), &to).is_err() {
        std::fs::copy(bin(name), &to).expect("copy binary");
    }
    to
}

/// Runs `host run one.js` with no `MCP_SANDBOX_RUNNER`, `CARGO_HOME` at `cargo_home`, and
/// `$PATH` holding only `path_dir`: (status, stdout, stderr).
fn run_one_line(
    host: &Path,
    root: &Path,
    cargo_home: &Path,
    path_dir: &Path,
) -> (i32, String, String) {
    let script = root.join("one.js");
    std::fs::write(&script, "return 6 * 7").expect("script");
    let out = Command::new(host)
        .arg("run")
        .arg(&script)
        .env_remove("MCP_SANDBOX_RUNNER")
        .env_remove("CARGO_INSTALL_ROOT")
        .env("CARGO_HOME", cargo_home)
        .env("HOME", root.join("home"))
        .env("PATH", path_dir)
        .env("XDG_DATA_HOME", root.join("data"))
        .current_dir(root)
        .output()
        .expect("start the installed host");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn installed_host_finds_the_runner_beside_itself() {
    let root = tempfile::tempdir().expect("temp root");
    let root = root.path();
    let host = install("mcp-sandbox", &root.join("bin"));
    install("sandbox-runner", &root.join("bin"));
    let (status, stdout, stderr) =
        run_one_line(&host, root, &root.join("no-cargo"), &root.join("empty"));
    assert_eq!((status, stdout.trim()), (0, "42"), "stderr: {stderr}");
}

#[test]
fn installed_host_finds_the_runner_in_cargos_bin_directory() {
    let root = tempfile::tempdir().expect("temp root");
    let root = root.path();
    let host = install("mcp-sandbox", &root.join("opt"));
    install("sandbox-runner", &root.join("cargo/bin"));
    let (status, stdout, stderr) =
        run_one_line(&host, root, &root.join("cargo"), &root.join("empty"));
    assert_eq!((status, stdout.trim()), (0, "42"), "stderr: {stderr}");
}

#[test]
fn installed_host_without_a_runner_names_every_place_it_looked() {
    let root = tempfile::tempdir().expect("temp root");
    let root = root.path();
    let host = install("mcp-sandbox", &root.join("bin"));
    let (status, stdout, stderr) =
        run_one_line(&host, root, &root.join("cargo"), &root.join("path-dir"));
    let r = root.display();
    assert_eq!((status, stdout.as_str()), (1, ""), "stderr: {stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: SANDBOX_UNAVAILABLE: no sandbox-runner program found; looked at: \
             {r}/bin/sandbox-runner (beside this mcp-sandbox), \
             {r}/cargo/bin/sandbox-runner (cargo's bin directory, $CARGO_HOME/bin), \
             {r}/path-dir/sandbox-runner (on $PATH). \
             Install it beside mcp-sandbox with `cargo install --path sandbox-runner` from the \
             source tree (as `cargo install --path .` installed mcp-sandbox), or name it with \
             --runner PATH or MCP_SANDBOX_RUNNER"
        )
    );
}
