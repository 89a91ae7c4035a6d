//! A confined server's private directories on the host, one set per server and scope key
//! (`shared`, a tenant, or `tenant/principal`), kept across restarts:
//! `<state dir>/servers/<server>/<scope key>/home` (its `HOME`) and `.../layer` (what it
//! writes beside its script), each mode 0700. The state directory is the one of the state file
//! this process opened first, else the default state file's.

use crate::config::ServerConfig;
use std::path::{Path, PathBuf};

/// The private directories of one server process.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub home: PathBuf,
    pub layer: PathBuf,
    /// Every server's private directories (masked inside each sandbox).
    pub all_homes: PathBuf,
}

/// Where every server's private directories live.
pub fn all_homes() -> PathBuf {
    let state = crate::store::private_paths::first_state_dir().or_else(|| {
        crate::store::default_path()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
    });
    state.unwrap_or_else(std::env::temp_dir).join("servers")
}

/// A name safe as one path component: kept as is when it is made of letters, digits, `-`,
/// `_` and `.` (and is not `.`/`..`), else its slug.
fn component(name: &str) -> String {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        name.to_string()
    } else {
        crate::config::server_entry::principal_slug(name)
    }
}

impl Dirs {
    /// The directories of `server`'s process for its scope key, made if missing.
    pub fn of(server: &str, config: &ServerConfig) -> Result<Dirs, (PathBuf, std::io::Error)> {
        let all_homes = all_homes();
        let mut base = all_homes.join(component(server));
        match &config.scope_key {
            // A tenant name is a plain word; a principal is already a slug.
            Some(key) => {
                for part in key.split('/') {
                    base = base.join(component(part));
                }
            }
            None => base = base.join("shared"),
        }
        let home = base.join("home");
        let layer = base.join("layer");
        for dir in [&all_homes, &home, &layer] {
            make_private_dir(dir).map_err(|e| (dir.clone(), e))?;
        }
        Ok(Dirs {
            home,
            layer,
            all_homes,
        })
    }
}

/// Makes `dir` (and its parents) if missing, mode 0700.
pub fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
