//! OAuth credentials of remote servers, kept in the state file and encrypted at rest.
//!
//! - The key is the operator's: 32 bytes as 64 hex digits, from the file named by
//!   `MCP_SANDBOX_KEY_FILE` or from `MCP_SANDBOX_KEY`. Without one, nothing is stored (and
//!   `auth login` says how to make one).
//! - Each server's credentials (rmcp's `StoredCredentials`: client id, access and refresh
//!   token, scopes, when they were received) are serialized to JSON and sealed with
//!   XChaCha20-Poly1305 (a random 24-byte nonce per write). The server's name and URL are the
//!   associated data: a row copied to another server, or left from a server whose URL changed,
//!   does not open.
//! - One table, `oauth_credentials`, created on first use in the same SQLite file as the tool
//!   graph; nothing in it is readable without the key.

use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use rusqlite::OptionalExtension;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming the key file.
pub const KEY_FILE_VAR: &str = "MCP_SANDBOX_KEY_FILE";
/// The environment variable holding the key itself (hex).
pub const KEY_VAR: &str = "MCP_SANDBOX_KEY";
/// How to make a key, for error messages.
pub const KEY_HOWTO: &str = "set MCP_SANDBOX_KEY_FILE to a file holding a 32-byte key as 64 hex digits (e.g. `openssl rand -hex 32 > ~/.config/mcp-sandbox/key && chmod 600 ~/.config/mcp-sandbox/key`), or MCP_SANDBOX_KEY to the digits";

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS oauth_credentials (
    server TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    nonce BLOB NOT NULL,
    sealed BLOB NOT NULL,
    updated_at REAL NOT NULL
)";

/// The operator's key.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey([REDACTED])")
    }
}

/// What can go wrong with the key or the store.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("no key for OAuth tokens: {KEY_HOWTO}")]
    NoKey,
    #[error("the OAuth token key {0} is not 64 hex digits (32 bytes): {KEY_HOWTO}")]
    BadKey(String),
    #[error("cannot read the OAuth token key file {path}: {source}")]
    KeyFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the state file {path}: {message}")]
    Store { path: PathBuf, message: String },
    #[error("encryption failed")]
    Seal,
}

impl SealKey {
    /// The key from `MCP_SANDBOX_KEY_FILE` or `MCP_SANDBOX_KEY`.
    pub fn from_env() -> Result<SealKey, SealError> {
        if let Some(path) = std::env::var_os(KEY_FILE_VAR) {
            let path = PathBuf::from(path);
            let meta = std::fs::metadata(&path).map_err(|source| SealError::KeyFile {
                path: path.clone(),
                source,
            })?;
            if meta.len() > 1024 {
                return Err(SealError::BadKey(format!("file {}", path.display())));
            }
            let text = std::fs::read_to_string(&path).map_err(|source| SealError::KeyFile {
                path: path.clone(),
                source,
            })?;
            return SealKey::from_hex(&text)
                .ok_or_else(|| SealError::BadKey(format!("file {}", path.display())));
        }
        match std::env::var(KEY_VAR) {
            Ok(text) => SealKey::from_hex(&text).ok_or_else(|| SealError::BadKey(KEY_VAR.into())),
            Err(_) => Err(SealError::NoKey),
        }
    }

    fn from_hex(text: &str) -> Option<SealKey> {
        let text = text.trim();
        if text.len() != 64 || !text.is_ascii() {
            return None;
        }
        let mut key = [0u8; 32];
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(SealKey(key))
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(Key::from_slice(&self.0))
    }

    /// A random key for this process only (what is sealed with it opens in no other).
    pub fn ephemeral() -> SealKey {
        let key = XChaCha20Poly1305::generate_key(&mut OsRng);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(key.as_slice());
        SealKey(bytes)
    }

    /// `plain` sealed under this key with `aad` as associated data: (a fresh random 24-byte
    /// nonce, the ciphertext). Used for the OAuth tokens and for sessions' placeholder maps.
    pub fn seal(&self, aad: &[u8], plain: &[u8]) -> Result<(Vec<u8>, Vec<u8>), SealError> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher()
            .encrypt(&nonce, Payload { msg: plain, aad })
            .map_err(|_| SealError::Seal)?;
        Ok((nonce.to_vec(), sealed))
    }

    /// What [`SealKey::seal`] sealed, when it opens with this key and `aad`.
    pub fn open(&self, aad: &[u8], nonce: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if nonce.len() != 24 {
            return None;
        }
        self.cipher()
            .decrypt(XNonce::from_slice(nonce), Payload { msg: sealed, aad })
            .ok()
    }
}

/// One server's credentials in the state file (rmcp's `CredentialStore`).
#[derive(Clone, Debug)]
pub struct SealedStore {
    path: PathBuf,
    server: String,
    url: String,
    key: SealKey,
}

fn aad(server: &str, url: &str) -> Vec<u8> {
    format!("mcp-sandbox oauth v1\0{server}\0{url}").into_bytes()
}

fn open(path: &Path) -> Result<rusqlite::Connection, String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
    Ok(conn)
}

/// Removes the stored credentials of `server` from the state file at `path` (no key needed);
/// whether there were any.
pub fn remove(path: &Path, server: &str) -> Result<bool, SealError> {
    let store_err = |message: String| SealError::Store {
        path: path.to_path_buf(),
        message,
    };
    let conn = open(path).map_err(store_err)?;
    let n = conn
        .execute("DELETE FROM oauth_credentials WHERE server = ?1", [server])
        .map_err(|e| store_err(e.to_string()))?;
    Ok(n > 0)
}

/// What `auth status` shows of one stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    Missing,
    /// Stored, but it does not open with this key (or for this URL).
    Unreadable,
    Present {
        /// Seconds until the access token expires (negative: expired), when known.
        expires_in: Option<i64>,
        refreshable: bool,
    },
}

impl SealedStore {
    pub fn new(path: &Path, server: &str, url: &str, key: SealKey) -> SealedStore {
        SealedStore {
            path: path.to_path_buf(),
            server: server.to_string(),
            url: url.to_string(),
            key,
        }
    }

    fn store_err(&self, message: String) -> AuthError {
        AuthError::CredentialStoreError(format!(
            "the state file {}: {message}",
            self.path.display()
        ))
    }

    /// Reads and opens the entry (blocking).
    fn read(&self) -> Result<Option<Result<StoredCredentials, ()>>, String> {
        let conn = open(&self.path)?;
        let row: Option<(String, Vec<u8>, Vec<u8>)> = conn
            .query_row(
                "SELECT url, nonce, sealed FROM oauth_credentials WHERE server = ?1",
                [&self.server],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| e.to_string())?;
        let Some((_url, nonce, sealed)) = row else {
            return Ok(None);
        };
        let aad = aad(&self.server, &self.url);
        let plain = self.key.open(&aad, &nonce, &sealed);
        Ok(Some(
            plain
                .and_then(|p| serde_json::from_slice::<StoredCredentials>(&p).ok())
                .ok_or(()),
        ))
    }

    fn write(&self, credentials: &StoredCredentials) -> Result<(), String> {
        let plain = serde_json::to_vec(credentials).map_err(|e| e.to_string())?;
        let aad = aad(&self.server, &self.url);
        let (nonce, sealed) = self.key.seal(&aad, &plain).map_err(|e| e.to_string())?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let conn = open(&self.path)?;
        conn.execute(
            "INSERT INTO oauth_credentials (server, url, nonce, sealed, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(server) DO UPDATE SET url = ?2, nonce = ?3, sealed = ?4, updated_at = ?5",
            rusqlite::params![self.server, self.url, nonce, sealed, now],
        )
        .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Removes the entry; whether there was one.
    pub fn remove(&self) -> Result<bool, SealError> {
        remove(&self.path, &self.server)
    }

    /// The entry as `auth status` shows it.
    pub fn status(&self) -> Result<Stored, SealError> {
        let read = self.read().map_err(|message| SealError::Store {
            path: self.path.clone(),
            message,
        })?;
        Ok(match read {
            None => Stored::Missing,
            Some(Err(())) => Stored::Unreadable,
            Some(Ok(c)) => {
                let Some(token) = &c.token_response else {
                    return Ok(Stored::Missing);
                };
                use oauth2::TokenResponse;
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let expires_in = match (token.expires_in(), c.token_received_at) {
                    (Some(ttl), Some(at)) => {
                        // Both come from the server's answer: no arithmetic may overflow.
                        let end =
                            i64::try_from(at.saturating_add(ttl.as_secs())).unwrap_or(i64::MAX);
                        let now = i64::try_from(now).unwrap_or(i64::MAX);
                        Some(end.saturating_sub(now))
                    }
                    _ => None,
                };
                Stored::Present {
                    expires_in,
                    refreshable: token.refresh_token().is_some(),
                }
            }
        })
    }
}

#[async_trait::async_trait]
impl CredentialStore for SealedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let this = self.clone();
        let read = tokio::task::spawn_blocking(move || this.read())
            .await
            .map_err(|e| self.store_err(e.to_string()))?
            .map_err(|e| self.store_err(e))?;
        match read {
            None => Ok(None),
            Some(Ok(c)) => Ok(Some(c)),
            Some(Err(())) => {
                tracing::warn!(server = %self.server, "stored OAuth credentials do not open with this key (or were made for another URL); log in again");
                Ok(None)
            }
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.write(&credentials))
            .await
            .map_err(|e| self.store_err(e.to_string()))?
            .map_err(|e| self.store_err(e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.remove())
            .await
            .map_err(|e| self.store_err(e.to_string()))?
            .map(|_| ())
            .map_err(|e| self.store_err(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn seals_opens_and_refuses_another_key_or_url() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let key = SealKey::from_hex(&"ab".repeat(32)).unwrap();
        let store = SealedStore::new(&path, "s", "https://a/mcp", key.clone());
        assert!(store.load().await.unwrap().is_none());
        let creds = StoredCredentials::new("client-1".into(), None, vec!["x".into()], Some(5));
        store.save(creds).await.unwrap();
        let back = store.load().await.unwrap().unwrap();
        assert_eq!(back.client_id, "client-1");
        let raw = std::fs::read(&path).unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains("client-1"));
        let other_key = SealKey::from_hex(&"cd".repeat(32)).unwrap();
        let wrong = SealedStore::new(&path, "s", "https://a/mcp", other_key);
        assert!(wrong.load().await.unwrap().is_none());
        assert_eq!(wrong.status().unwrap(), Stored::Unreadable);
        let moved = SealedStore::new(&path, "s", "https://b/mcp", key);
        assert!(moved.load().await.unwrap().is_none());
        store.clear().await.unwrap();
        assert_eq!(store.status().unwrap(), Stored::Missing);
        assert!(SealKey::from_hex("12").is_none());
        assert!(SealKey::from_hex(&"zz".repeat(32)).is_none());
    }
}
