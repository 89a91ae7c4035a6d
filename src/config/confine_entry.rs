//! The confinement keys of a stdio server entry (`tools::catalog::confine` applies them):
//! `confine` (default on), `files` (what the server may read and write besides its own install
//! and its private home) and `limits` (its rlimits, its `/tmp` size and its home's bound on disk).

use serde::Deserialize;

/// Default address-space limit of a confined server (`limits.addressSpaceMb`): 4 GiB, which
/// Node's and Python's servers start and work in.
pub const DEFAULT_ADDRESS_SPACE_MB: u64 = 4096;
/// Default process limit (`limits.processes`): the server and what it starts.
pub const DEFAULT_PROCESSES: u64 = 256;
/// Default open-file limit (`limits.openFiles`).
pub const DEFAULT_OPEN_FILES: u64 = 1024;
/// Default largest file the server may write (`limits.fileSizeMb`).
pub const DEFAULT_FILE_SIZE_MB: u64 = 256;
/// Default size of its private `/tmp` (`limits.tmpMb`), a tmpfs.
pub const DEFAULT_TMP_MB: u64 = 64;
/// Default bound of its private home and writable layer together (`limits.homeMb`), on disk.
pub const DEFAULT_HOME_MB: u64 = 1024;

/// `"files": {"read": [...], "write": [...]}`: host paths the confined server sees, read-only
/// or read-write. `${MCP_SANDBOX_TENANT}` and `${MCP_SANDBOX_PRINCIPAL}` in a path are the
/// caller's (scoped servers), `~` at the start is the gateway's home.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesConfig {
    #[serde(default)]
    pub read: Vec<String>,
    #[serde(default)]
    pub write: Vec<String>,
}

/// `"limits": {...}` of a confined server; every key optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    #[serde(default, rename = "addressSpaceMb")]
    pub address_space_mb: Option<u64>,
    #[serde(default)]
    pub processes: Option<u64>,
    #[serde(default, rename = "openFiles")]
    pub open_files: Option<u64>,
    #[serde(default, rename = "fileSizeMb")]
    pub file_size_mb: Option<u64>,
    #[serde(default, rename = "tmpMb")]
    pub tmp_mb: Option<u64>,
    #[serde(default, rename = "homeMb")]
    pub home_mb: Option<u64>,
}

/// The limits with their defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub address_space_bytes: u64,
    pub processes: u64,
    pub open_files: u64,
    pub file_size_bytes: u64,
    pub tmp_bytes: u64,
    pub home_bytes: u64,
}

const MB: u64 = 1024 * 1024;

impl LimitsConfig {
    pub fn resolved(&self) -> Limits {
        Limits {
            address_space_bytes: self
                .address_space_mb
                .unwrap_or(DEFAULT_ADDRESS_SPACE_MB)
                .saturating_mul(MB),
            processes: self.processes.unwrap_or(DEFAULT_PROCESSES),
            open_files: self.open_files.unwrap_or(DEFAULT_OPEN_FILES),
            file_size_bytes: self
                .file_size_mb
                .unwrap_or(DEFAULT_FILE_SIZE_MB)
                .saturating_mul(MB),
            tmp_bytes: self.tmp_mb.unwrap_or(DEFAULT_TMP_MB).saturating_mul(MB),
            home_bytes: self.home_mb.unwrap_or(DEFAULT_HOME_MB).saturating_mul(MB),
        }
    }

    /// A zero limit would stop the server from starting at all: refused with the key's name.
    pub fn check(&self, server: &str) -> Result<(), String> {
        let keys = [
            ("addressSpaceMb", self.address_space_mb),
            ("processes", self.processes),
            ("openFiles", self.open_files),
            ("fileSizeMb", self.file_size_mb),
            ("tmpMb", self.tmp_mb),
            ("homeMb", self.home_mb),
        ];
        match keys.iter().find(|(_, v)| *v == Some(0)) {
            Some((key, _)) => Err(format!(
                "server \"{server}\": limits.{key} is 0, which no server can start with; give a positive number or leave it out for the default"
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_refuse_zero_and_reject_garbage_with_the_key_named() {
        let none = LimitsConfig::default().resolved();
        assert_eq!(none.home_bytes, DEFAULT_HOME_MB * MB);
        assert_eq!(none.tmp_bytes, DEFAULT_TMP_MB * MB);
        let zero: LimitsConfig = serde_json::from_str(r#"{"homeMb": 0}"#).unwrap();
        assert_eq!(
            zero.check("mem").unwrap_err(),
            "server \"mem\": limits.homeMb is 0, which no server can start with; give a positive number or leave it out for the default"
        );
        let huge: LimitsConfig =
            serde_json::from_str(r#"{"homeMb": 18446744073709551615}"#).unwrap();
        assert_eq!(huge.resolved().home_bytes, u64::MAX);
        for bad in [
            r#"{"homeMb": -1}"#,
            r#"{"homeMb": "big"}"#,
            r#"{"homeMb": 1.5}"#,
            r#"{"homeMB": 4}"#,
        ] {
            // Refused, never read as a default (the config loader names the entry around it).
            assert!(serde_json::from_str::<LimitsConfig>(bad).is_err(), "{bad}");
        }
    }
}
