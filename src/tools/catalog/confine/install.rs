//! What a confined server needs to see of the host to run at all, found from its command and
//! arguments: the program (resolved through `PATH` like `execvp`, and its real path through
//! symlinks), the interpreter of a `#!` script, and the install root of each: a Python venv (the
//! directory holding `pyvenv.cfg`), the outermost `node_modules` (Node resolves packages up the
//! tree), a prefix (`<prefix>/bin/python` with `<prefix>/lib`), or else the file's directory.
//! A script argument (an existing file) is found the same way. System directories are already
//! visible: nothing under them is listed.

use std::path::{Path, PathBuf};

/// Directories every confined server sees read-only anyway.
pub const SYSTEM: [&str; 7] = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc"];

/// The program `command` resolves to: a path with a `/` (relative to `cwd`), or the first
/// executable file named `command` in `path_var`'s directories.
pub fn resolve_command(command: &str, cwd: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    if command.contains('/') {
        let p = cwd.join(command);
        return p.is_file().then_some(p);
    }
    let dirs = path_var.unwrap_or("/usr/local/bin:/usr/bin:/bin");
    dirs.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| cwd.join(d).join(command))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Whether `p` is already visible as a system directory.
pub fn is_system(p: &Path) -> bool {
    SYSTEM.iter().any(|s| p.starts_with(s))
}

/// The directory to show for a program or script at `file` (absolute).
pub fn install_root(file: &Path) -> Option<PathBuf> {
    if is_system(file) {
        return None;
    }
    let mut outer_modules = None;
    for dir in file.ancestors().skip(1) {
        if dir.join("pyvenv.cfg").is_file() {
            return Some(dir.to_path_buf());
        }
        if dir.file_name().is_some_and(|n| n == "node_modules") {
            outer_modules = Some(dir.to_path_buf());
        }
    }
    if outer_modules.is_some() {
        return outer_modules;
    }
    let parent = file.parent()?;
    if parent.file_name().is_some_and(|n| n == "bin") {
        if let Some(prefix) = parent.parent().filter(|p| p.join("lib").is_dir()) {
            if prefix.parent().is_some() && !is_system(prefix) {
                return Some(prefix.to_path_buf());
            }
        }
    }
    (parent.parent().is_some()).then(|| parent.to_path_buf())
}

/// The interpreter a `#!` script names (`#!/usr/bin/env node` gives `/usr/bin/env`).
fn shebang(file: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let text = std::str::from_utf8(head.get(..n)?).ok()?;
    let line = text.strip_prefix("#!")?.lines().next()?;
    let interp = line.split_whitespace().next()?;
    Some(PathBuf::from(interp))
}

/// Every directory a server started as `program` (resolved) with `args` needs to see.
pub fn roots(program: &Path, args: &[String], cwd: &Path) -> Vec<PathBuf> {
    let mut files = vec![program.to_path_buf()];
    for arg in args {
        if arg.starts_with('-') && !arg.contains('/') {
            continue;
        }
        let p = cwd.join(arg);
        if p.is_file() {
            files.push(p);
            continue;
        }
        // A shell wrapper's command line (`sh -c "exec /opt/server --flag"`): its absolute
        // paths to programs.
        for word in arg.split_whitespace() {
            let w = Path::new(word.trim_matches(|c: char| "\"';&|()".contains(c)));
            if !w.is_absolute() {
                continue;
            }
            if w.is_file() && files.len() < 16 {
                files.push(w.to_path_buf());
            }
        }
    }
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen = 0;
    while seen < files.len() {
        let file = files[seen].clone();
        seen += 1;
        let real = std::fs::canonicalize(&file).ok();
        for f in std::iter::once(file.clone()).chain(real.clone()) {
            if let Some(root) = install_root(&f) {
                if !out.iter().any(|o| root.starts_with(o)) {
                    out.retain(|o| !o.starts_with(&root));
                    out.push(root);
                }
            }
        }
        if files.len() < 8 {
            if let Some(interp) = real.as_deref().and_then(shebang) {
                if interp.is_absolute() && !files.contains(&interp) {
                    files.push(interp);
                }
            }
        }
    }
    out
}

/// The directory of the server's script: the first script argument (an existing file), else
/// the program itself when it is a `#!` script (`node_modules/.bin/mcp-server-memory`). The
/// memory server keeps its file there, so it gets a writable layer per scope.
pub fn script_dir(program: &Path, args: &[String], cwd: &Path) -> Option<PathBuf> {
    let arg = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| cwd.join(a))
        .find(|p| p.is_file());
    let script = arg.or_else(|| {
        let real = std::fs::canonicalize(program).ok()?;
        shebang(&real).map(|_| real)
    })?;
    std::fs::canonicalize(script)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .filter(|d| !is_system(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_of_node_and_a_venv_script() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let memory = "node_modules/@modelcontextprotocol/server-memory/dist/index.js";
        let node = resolve_command("node", &root, Some("/usr/bin")).unwrap();
        assert_eq!(
            roots(&node, &[memory.to_string()], &root),
            vec![root.join("node_modules")]
        );
        let python = root.join(".venv/bin/python");
        let got = roots(&python, &["tests/python/x.py".to_string()], &root);
        assert!(got.contains(&root.join(".venv")), "{got:?}");
    }
}
