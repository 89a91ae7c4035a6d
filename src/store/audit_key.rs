//! The operator's audit key (Ed25519, `ed25519-dalek`): it signs the checkpoints that
//! retention leaves where the audit chain now starts ([`super::audit_chain`]) and the head of
//! an export; the public key, one line of text (`ed25519:<64 hex digits>`), is what an auditor
//! checks them with.
//!
//! The private key file (`mcp-sandbox audit keygen --key-file PATH`) holds one line,
//! `mcp-sandbox-audit-key-v1 <64 hex digits of the seed>`, mode 0600.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// What a private key file starts with.
const KEY_FILE_TAG: &str = "mcp-sandbox-audit-key-v1";
/// What a public key line starts with.
pub const PUBLIC_KEY_TAG: &str = "ed25519:";
/// Largest key file read (a key file is one short line).
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// Failures of the audit key.
#[derive(Debug, thiserror::Error)]
pub enum AuditKeyError {
    #[error("AUDIT_KEY_INVALID: cannot read the audit key file {path}: {source}; make one with `mcp-sandbox audit keygen --key-file PATH`")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("AUDIT_KEY_INVALID: {path} is not an audit key file (one line `{KEY_FILE_TAG} <64 hex digits>`); make one with `mcp-sandbox audit keygen --key-file PATH`")]
    Malformed { path: PathBuf },
    #[error("AUDIT_KEY_INVALID: the audit key file {path} may be read by others (mode {mode:o}); make it readable by its owner only (chmod 600)")]
    Exposed { path: PathBuf, mode: u32 },
    #[error("AUDIT_KEY_INVALID: cannot write the audit key file {path}: {source} (an existing file is never overwritten)")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("AUDIT_KEY_INVALID: cannot get random bytes from the OS: {0}")]
    Random(String),
    #[error("AUDIT_KEY_INVALID: {0:?} is not a public audit key: pass the line `audit keygen` printed (`ed25519:` and 64 hex digits) or a file holding it")]
    PublicKey(String),
}

/// The operator's private audit key.
#[derive(Clone)]
pub struct AuditKey(SigningKey);

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuditKey({})", self.public().line())
    }
}

/// A public audit key, as an auditor holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl AuditKey {
    /// A new random key written to `path` (created, never overwritten, mode 0600).
    pub fn generate(path: &Path) -> Result<AuditKey, AuditKeyError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| AuditKeyError::Random(e.to_string()))?;
        let key = AuditKey(SigningKey::from_bytes(&seed));
        let write_err = |source| AuditKeyError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(write_err)?;
        file.write_all(format!("{KEY_FILE_TAG} {}\n", hex(&seed)).as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(write_err)?;
        Ok(key)
    }

    /// The key in `path`; refused when others may read the file.
    pub fn load(path: &Path) -> Result<AuditKey, AuditKeyError> {
        use std::io::Read;
        use std::os::unix::fs::PermissionsExt;
        let read_err = |source| AuditKeyError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let mode = file.metadata().map_err(read_err)?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(AuditKeyError::Exposed {
                path: path.to_path_buf(),
                mode: mode & 0o777,
            });
        }
        let mut text = String::new();
        file.take(MAX_KEY_FILE_BYTES)
            .read_to_string(&mut text)
            .map_err(read_err)?;
        let malformed = || AuditKeyError::Malformed {
            path: path.to_path_buf(),
        };
        let seed = text
            .trim()
            .strip_prefix(KEY_FILE_TAG)
            .and_then(|rest| unhex::<32>(rest.trim()))
            .ok_or_else(malformed)?;
        Ok(AuditKey(SigningKey::from_bytes(&seed)))
    }

    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// The signature of `message`, in hex.
    pub fn sign(&self, message: &[u8]) -> String {
        hex(&self.0.sign(message).to_bytes())
    }
}

impl PublicKey {
    /// The one line an auditor keeps: `ed25519:<64 hex digits>`.
    pub fn line(&self) -> String {
        format!("{PUBLIC_KEY_TAG}{}", hex(self.0.as_bytes()))
    }

    /// A key from its line, or from a file holding the line.
    pub fn parse_or_read(text: &str) -> Result<PublicKey, AuditKeyError> {
        if let Some(key) = PublicKey::parse(text) {
            return Ok(key);
        }
        let path = Path::new(text);
        if path.is_file() {
            use std::io::Read;
            let mut line = String::new();
            std::fs::File::open(path)
                .and_then(|f| f.take(MAX_KEY_FILE_BYTES).read_to_string(&mut line))
                .map_err(|source| AuditKeyError::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
            return PublicKey::parse(&line).ok_or(AuditKeyError::PublicKey(line));
        }
        Err(AuditKeyError::PublicKey(crate::term::clip(text, 120)))
    }

    /// A key from its line, `None` when it is not one.
    pub fn parse(text: &str) -> Option<PublicKey> {
        let bytes = unhex::<32>(text.trim().strip_prefix(PUBLIC_KEY_TAG)?)?;
        VerifyingKey::from_bytes(&bytes).ok().map(PublicKey)
    }

    /// Whether `signature` (hex) is this key's signature of `message` (strict verification:
    /// no malleable or small-order forms).
    pub fn verifies(&self, message: &[u8], signature: &str) -> bool {
        let Some(bytes) = unhex::<64>(signature) else {
            return false;
        };
        let signature = Signature::from_bytes(&bytes);
        self.0.verify_strict(message, &signature).is_ok()
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` bytes from `2N` hex digits, `None` for anything else.
pub fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_signs_what_its_public_line_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let key = AuditKey::generate(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(matches!(
            AuditKey::generate(&path),
            Err(AuditKeyError::Write { .. })
        ));
        let loaded = AuditKey::load(&path).unwrap();
        let public = PublicKey::parse(&loaded.public().line()).unwrap();
        assert_eq!(public, key.public());
        let sig = key.sign(b"head");
        assert!(public.verifies(b"head", &sig));
        assert!(!public.verifies(b"head!", &sig));
        let other = AuditKey::generate(&dir.path().join("other")).unwrap();
        assert!(!other.public().verifies(b"head", &sig));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            AuditKey::load(&path),
            Err(AuditKeyError::Exposed { .. })
        ));
    }
}
