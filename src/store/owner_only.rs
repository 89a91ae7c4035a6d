//! The state file holds the audit log (code, arguments, who ran what): it, its WAL and SHM
//! files and any directory made for it are readable by their owner only (0600 / 0700),
//! whatever the umask. An existing file is narrowed too (an older build made it 0644).

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of the state file and its WAL/SHM.
pub const FILE_MODE: u32 = 0o600;
/// Mode of a directory made for the state file.
pub const DIR_MODE: u32 = 0o700;

/// Makes `dir` and its missing parents; the ones made here are owner-only (existing ones are
/// left as they are: they may be shared directories such as `~/.local/share`).
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Creates `path` owner-only when missing; narrows an existing one to owner-only.
pub fn restrict(path: &Path) -> io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => restrict_existing(path),
        Err(e) => Err(e),
    }
}

/// Narrows `path` to owner-only when it exists and is wider; a missing file is fine.
pub fn restrict_existing(path: &Path) -> io::Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if meta.permissions().mode() & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(
        path,
        Permissions::from_mode(meta.permissions().mode() & 0o700),
    )
}
