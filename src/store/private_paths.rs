//! The gateway's own files, as this process learns them (the state file it opened, the config
//! file it read, key and token files): a confined MCP server never sees them, even when a
//! directory it may see holds them (`tools::catalog::confine` masks them).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static PATHS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Records `path` (made absolute) as the gateway's own.
pub fn hide(path: &Path) {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    if let Ok(mut paths) = PATHS.lock() {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
}

/// Records the state file `path` and its SQLite companions (`-wal`, `-shm`, `-journal`).
pub fn hide_state_file(path: &Path) {
    hide(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        hide(Path::new(&name));
    }
}

/// Every path recorded so far.
pub fn hidden() -> Vec<PathBuf> {
    PATHS.lock().map(|p| p.clone()).unwrap_or_default()
}

/// The first state file this process opened (not a PostgreSQL URL), if any.
pub fn first_state_dir() -> Option<PathBuf> {
    FIRST_STATE.lock().ok().and_then(|s| s.clone())
}

static FIRST_STATE: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Records the directory of the state file the process opened first: where confined servers'
/// private homes live (`<dir>/servers`).
pub fn record_state_dir(dir: &Path) {
    if let Ok(mut first) = FIRST_STATE.lock() {
        if first.is_none() {
            *first = Some(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
        }
    }
}
