//! Where the host finds `sandbox-runner` when neither `--runner` nor `MCP_SANDBOX_RUNNER` names
//! it: beside the host's own executable (how `cargo build` and a `cargo install` of both crates lay
//! them out), in `target/<profile>` for test binaries in `target/<profile>/deps`, in cargo's bin
//! directory (`$CARGO_INSTALL_ROOT/bin`, `$CARGO_HOME/bin`, `~/.cargo/bin`), then on `$PATH`. Every
//! place looked at is kept, so the error when none holds a runner names them all.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The runner's file name.
pub const RUNNER_NAME: &str = "sandbox-runner";

/// The runner program to start, and the places looked at to find it (empty when it was named
/// explicitly).
#[derive(Debug, Clone)]
pub struct Located {
    pub program: PathBuf,
    pub searched: Vec<String>,
}

/// What the search reads from the process: its executable and environment.
#[derive(Debug, Clone, Default)]
pub struct SearchEnv {
    pub exe: Option<PathBuf>,
    pub runner_var: Option<OsString>,
    pub cargo_install_root: Option<OsString>,
    pub cargo_home: Option<OsString>,
    pub home: Option<PathBuf>,
    pub path: Option<OsString>,
}

impl SearchEnv {
    pub fn from_process() -> Self {
        SearchEnv {
            exe: std::env::current_exe().ok(),
            runner_var: std::env::var_os("MCP_SANDBOX_RUNNER"),
            cargo_install_root: std::env::var_os("CARGO_INSTALL_ROOT"),
            cargo_home: std::env::var_os("CARGO_HOME"),
            home: dirs::home_dir(),
            path: std::env::var_os("PATH"),
        }
    }
}

/// The runner this process would start: `MCP_SANDBOX_RUNNER` when set (not empty), otherwise
/// the first place of [`candidates`] holding a file; when none does, the first candidate (the
/// spawn then fails with every place listed).
pub fn locate() -> Located {
    locate_in(&SearchEnv::from_process())
}

pub fn locate_in(env: &SearchEnv) -> Located {
    if let Some(var) = env.runner_var.as_ref().filter(|v| !v.is_empty()) {
        return Located {
            program: PathBuf::from(var),
            searched: Vec::new(),
        };
    }
    let places = candidates(env);
    let searched = places
        .iter()
        .map(|(p, why)| format!("{} ({why})", p.display()))
        .collect();
    let program = places
        .iter()
        .find(|(p, _)| p.is_file())
        .or(places.first())
        .map(|(p, _)| p.clone())
        .unwrap_or_else(|| PathBuf::from(RUNNER_NAME));
    Located { program, searched }
}

/// Every place looked at, in order, each with why it is looked at; no path twice.
pub fn candidates(env: &SearchEnv) -> Vec<(PathBuf, &'static str)> {
    let mut places: Vec<(PathBuf, &'static str)> = Vec::new();
    let mut push = |dir: &Path, why: &'static str| {
        if dir.as_os_str().is_empty() {
            return;
        }
        let p = dir.join(RUNNER_NAME);
        if !places.iter().any(|(q, _)| *q == p) {
            places.push((p, why));
        }
    };
    if let Some(dir) = env.exe.as_deref().and_then(Path::parent) {
        push(dir, "beside this mcp-sandbox");
        // Test and bench binaries live one level down, in target/<profile>/deps.
        if dir.file_name().is_some_and(|n| n == "deps") {
            if let Some(up) = dir.parent() {
                push(up, "the build directory above deps/");
            }
        }
    }
    let non_empty = |v: &Option<OsString>| v.clone().filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(root) = non_empty(&env.cargo_install_root) {
        push(
            &root.join("bin"),
            "cargo's bin directory, $CARGO_INSTALL_ROOT/bin",
        );
    } else if let Some(home) = non_empty(&env.cargo_home) {
        push(&home.join("bin"), "cargo's bin directory, $CARGO_HOME/bin");
    } else if let Some(home) = env.home.as_deref() {
        push(
            &home.join(".cargo/bin"),
            "cargo's bin directory, ~/.cargo/bin",
        );
    }
    if let Some(path) = env.path.as_ref() {
        for dir in std::env::split_paths(path) {
            // A relative $PATH entry would name a different file for every working directory.
            if dir.is_absolute() {
                push(&dir, "on $PATH");
            }
        }
    }
    places
}

/// The message of a runner that is not where it was looked for.
pub fn missing_message(program: &Path, searched: &[String]) -> String {
    if searched.is_empty() {
        return format!(
            "runner program {} does not exist or is not a file (a relative --runner or MCP_SANDBOX_RUNNER is taken from the current directory); install it with `cargo install --path sandbox-runner` from the source tree, or pass --runner PATH",
            program.display()
        );
    }
    format!(
        "no {RUNNER_NAME} program found; looked at: {}. Install it beside mcp-sandbox with `cargo install --path sandbox-runner` from the source tree (as `cargo install --path .` installed mcp-sandbox), or name it with --runner PATH or MCP_SANDBOX_RUNNER",
        searched.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(exe: &str) -> SearchEnv {
        SearchEnv {
            exe: Some(PathBuf::from(exe)),
            home: Some(PathBuf::from("/home/u")),
            ..SearchEnv::default()
        }
    }

    #[test]
    fn looks_beside_the_host_then_in_cargo_bin_then_on_path() {
        let mut e = env("/opt/x/bin/mcp-sandbox");
        e.path = Some(OsString::from(
            "/usr/local/bin:relative:/opt/x/bin:/usr/bin",
        ));
        let got: Vec<String> = candidates(&e)
            .into_iter()
            .map(|(p, why)| format!("{} ({why})", p.display()))
            .collect();
        assert_eq!(
            got,
            [
                "/opt/x/bin/sandbox-runner (beside this mcp-sandbox)",
                "/home/u/.cargo/bin/sandbox-runner (cargo's bin directory, ~/.cargo/bin)",
                "/usr/local/bin/sandbox-runner (on $PATH)",
                "/usr/bin/sandbox-runner (on $PATH)",
            ]
        );
    }

    #[test]
    fn deps_directory_looks_one_level_up_and_cargo_env_wins_over_home() {
        let mut e = env("/r/target/debug/deps/integration-abc");
        e.cargo_home = Some(OsString::from("/ch"));
        let got: Vec<PathBuf> = candidates(&e).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            got,
            [
                PathBuf::from("/r/target/debug/deps/sandbox-runner"),
                PathBuf::from("/r/target/debug/sandbox-runner"),
                PathBuf::from("/ch/bin/sandbox-runner"),
            ]
        );
        e.cargo_install_root = Some(OsString::from("/root2"));
        assert_eq!(
            candidates(&e)[2].0,
            PathBuf::from("/root2/bin/sandbox-runner")
        );
    }

    #[test]
    fn the_variable_names_the_runner_unless_empty() {
        let mut e = env("/nowhere-n47b/bin/mcp-sandbox");
        e.runner_var = Some(OsString::from("/x/runner"));
        let l = locate_in(&e);
        assert_eq!(l.program, PathBuf::from("/x/runner"));
        assert!(l.searched.is_empty());
        e.runner_var = Some(OsString::new());
        let l = locate_in(&e);
        assert_eq!(l.program, PathBuf::from("/nowhere-n47b/bin/sandbox-runner"));
        assert_eq!(l.searched.len(), 2);
    }
}
