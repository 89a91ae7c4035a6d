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
//! - The sealed bytes live in the state store (`store::oauth`: the `oauth_credentials` table of
//!   the SQLite file or of the PostgreSQL database, so every gateway of a team shares one
//!   login); nothing in it is readable without the key.

use crate::store::oauth::SealedRow;
use crate::store::Store;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// The environment variable naming the key file.
pub const KEY_FILE_VAR: &str = "MCP_SANDBOX_KEY_FILE";
/// The environment variable holding the key itself (hex).
pub const KEY_VAR: &str = "MCP_SANDBOX_KEY";
/// How to make a key, for error messages.
pub const KEY_HOWTO: &str = "set MCP_SANDBOX_KEY_FILE to a file holding a 32-byte key as 64 hex digits (e.g. `openssl rand -hex 32 > ~/.config/mcp-sandbox/key && chmod 600 ~/.config/mcp-sandbox/key`), or MCP_SANDBOX_KEY to the digits";

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
    #[error("the state store {path}: {message}")]
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

    /// A key of these 32 bytes (one derived from another secret).
    pub fn from_bytes(bytes: [u8; 32]) -> SealKey {
        SealKey(bytes)
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

/// One server's credentials in the state store (rmcp's `CredentialStore`).
#[derive(Clone, Debug)]
pub struct SealedStore {
    store: Store,
    server: String,
    url: String,
    key: SealKey,
}

fn aad(server: &str, url: &str) -> Vec<u8> {
    format!("mcp-sandbox oauth v1\0{server}\0{url}").into_bytes()
}

fn store_err(store: &Store, e: crate::store::StoreError) -> SealError {
    SealError::Store {
        path: store.path().to_path_buf(),
        message: e.to_string(),
    }
}

/// Removes the stored credentials of `server` from `store` (no key needed); whether there were
/// any.
pub fn remove(store: &Store, server: &str) -> Result<bool, SealError> {
    store
        .remove_oauth_credentials(server)
        .map_err(|e| store_err(store, e))
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
    pub fn new(store: &Store, server: &str, url: &str, key: SealKey) -> SealedStore {
        SealedStore {
            store: store.clone(),
            server: server.to_string(),
            url: url.to_string(),
            key,
        }
    }

    fn store_err(&self, message: String) -> AuthError {
        AuthError::CredentialStoreError(format!(
            "the state store {}: {message}",
            self.store.path().display()
        ))
    }

    /// Reads and opens the entry (blocking).
    fn read(&self) -> Result<Option<Result<StoredCredentials, ()>>, SealError> {
        let row = self
            .store
            .oauth_credentials(&self.server)
            .map_err(|e| store_err(&self.store, e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let aad = aad(&self.server, &self.url);
        let plain = self.key.open(&aad, &row.nonce, &row.sealed);
        Ok(Some(
            plain
                .and_then(|p| serde_json::from_slice::<StoredCredentials>(&p).ok())
                .ok_or(()),
        ))
    }

    fn write(&self, credentials: &StoredCredentials) -> Result<(), SealError> {
        let plain = serde_json::to_vec(credentials).map_err(|_| SealError::Seal)?;
        let aad = aad(&self.server, &self.url);
        let (nonce, sealed) = self.key.seal(&aad, &plain)?;
        let row = SealedRow {
            url: self.url.clone(),
            nonce,
            sealed,
        };
        self.store
            .put_oauth_credentials(&self.server, &row)
            .map_err(|e| store_err(&self.store, e))
    }

    /// Removes the entry; whether there was one.
    pub fn remove(&self) -> Result<bool, SealError> {
        remove(&self.store, &self.server)
    }

    /// The entry as `auth status` shows it.
    pub fn status(&self) -> Result<Stored, SealError> {
        let read = self.read()?;
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

impl SealedStore {
    /// Runs `f` off the async runtime's worker threads (the store is synchronous).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SealedStore) -> Result<T, SealError> + Send + 'static,
    ) -> Result<T, AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this))
            .await
            .map_err(|e| self.store_err(e.to_string()))?
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }
}

#[async_trait::async_trait]
impl CredentialStore for SealedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match self.blocking(|s| s.read()).await? {
            None => Ok(None),
            Some(Ok(c)) => Ok(Some(c)),
            Some(Err(())) => {
                tracing::warn!(server = %self.server, "stored OAuth credentials do not open with this key (or were made for another URL); log in again");
                Ok(None)
            }
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.blocking(move |s| s.write(&credentials)).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.blocking(|s| s.remove()).await.map(|_| ())
    }

    /// Held by rmcp from before it loads the tokens to refresh until it has saved the new ones:
    /// this process's other refreshes of the server wait (a lock per server), and so do other
    /// gateways on the same PostgreSQL database (`Store::oauth_refresh_lock`). With an
    /// authorization server that rotates refresh tokens (each one usable once), the second
    /// refresher then loads the token the first saved instead of spending a used one.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let local = refresh_mutex(&self.server).lock_owned().await;
        let shared = self
            .blocking(|s| {
                s.store
                    .oauth_refresh_lock(&s.server)
                    .map_err(|e| store_err(&s.store, e))
            })
            .await?;
        Ok(Some(CredentialRefreshGuard::new((local, shared))))
    }
}

/// This process's refresh lock of `server`.
fn refresh_mutex(server: &str) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    locks.entry(server.to_string()).or_default().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: &str) -> SealKey {
        SealKey::from_hex(&byte.repeat(32)).unwrap()
    }

    /// The sealing, on either backend: what is saved loads with the key and URL it was sealed
    /// for, no other; the stored bytes hold no token in clear.
    async fn seals_opens_and_refuses_another_key_or_url(db: &Store) {
        let store = SealedStore::new(db, "s", "https://a/mcp", key("ab"));
        assert!(store.load().await.unwrap().is_none());
        let creds = StoredCredentials::new("client-1".into(), None, vec!["x".into()], Some(5));
        store.save(creds).await.unwrap();
        let back = store.load().await.unwrap().unwrap();
        assert_eq!(back.client_id, "client-1");
        let row = db.oauth_credentials("s").unwrap().unwrap();
        assert_eq!(row.url, "https://a/mcp");
        assert!(!String::from_utf8_lossy(&row.sealed).contains("client-1"));
        let wrong = SealedStore::new(db, "s", "https://a/mcp", key("cd"));
        assert!(wrong.load().await.unwrap().is_none());
        assert_eq!(wrong.status().unwrap(), Stored::Unreadable);
        let moved = SealedStore::new(db, "s", "https://b/mcp", key("ab"));
        assert!(moved.load().await.unwrap().is_none());
        store.clear().await.unwrap();
        assert_eq!(store.status().unwrap(), Stored::Missing);
        assert!(!remove(db, "s").unwrap());
        assert!(SealKey::from_hex("12").is_none());
        assert!(SealKey::from_hex(&"zz".repeat(32)).is_none());
    }

    #[tokio::test]
    async fn sealing_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let db = Store::open(&dir.path().join("state.db")).unwrap();
        seals_opens_and_refuses_another_key_or_url(&db).await;
        // Nothing in clear in the file, its WAL or SHM either.
        SealedStore::new(&db, "s", "https://a/mcp", key("ab"))
            .save(StoredCredentials::new(
                "client-2".into(),
                None,
                vec![],
                None,
            ))
            .await
            .unwrap();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let raw = std::fs::read(entry.unwrap().path()).unwrap();
            assert!(!String::from_utf8_lossy(&raw).contains("client-2"));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sealing_on_postgres() {
        let server = crate::store::suites::pg_support::PgServer::start();
        let url = server.database();
        let db = Store::open(std::path::Path::new(&url)).unwrap();
        seals_opens_and_refuses_another_key_or_url(&db).await;

        // Two gateways (two pools): while one holds a server's refresh lock, the other waits
        // for it; another server's lock is free; dropping the lock frees it.
        let other = Store::open(std::path::Path::new(&url)).unwrap();
        let held = db
            .oauth_refresh_lock("s")
            .unwrap()
            .expect("a lock on PostgreSQL");
        let waiting = {
            let other = other.clone();
            tokio::task::spawn_blocking(move || other.oauth_refresh_lock("s").map(|l| l.is_some()))
        };
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert!(!waiting.is_finished(), "the second gateway must wait");
        assert!(other.oauth_refresh_lock("t").unwrap().is_some());
        drop(held);
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the lock is released when its holder drops it")
            .unwrap();
        assert!(got.unwrap());
    }

    /// In one process, rmcp's refreshes of one server take turns (the guard it holds from the
    /// load to the save); on SQLite there is no database lock to add.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refreshes_of_one_server_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let db = Store::open(&dir.path().join("state.db")).unwrap();
        assert!(db.oauth_refresh_lock("s").unwrap().is_none());
        let a = SealedStore::new(&db, "turns", "https://a/mcp", key("ab"));
        let b = SealedStore::new(&db, "turns", "https://a/mcp", key("ab"));
        let held = a.acquire_refresh_guard().await.unwrap().expect("a guard");
        let waiting =
            tokio::spawn(async move { b.acquire_refresh_guard().await.map(|g| g.is_some()) });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "the second refresh must wait");
        drop(held);
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("released with the guard")
            .unwrap();
        assert!(got.unwrap());
    }

    /// A state file whose `oauth_credentials` table the OAuth code created itself (before the
    /// table moved behind the store, at schema version 10): its logins still load.
    #[tokio::test]
    async fn a_login_stored_by_an_older_build_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        drop(Store::open(&path).unwrap());
        let (nonce, sealed) = key("ab")
            .seal(
                &aad("s", "https://a/mcp"),
                &serde_json::to_vec(&StoredCredentials::new("old".into(), None, vec![], None))
                    .unwrap(),
            )
            .unwrap();
        {
            // What the older build left: version 10 (without what migrations 11 and later
            // add), its own table, one row.
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "DROP TABLE oauth_credentials; PRAGMA user_version = 10;
                 DROP TABLE mcp_sessions; DROP TABLE yielded_executions; DROP TABLE pending_approvals;
                 ALTER TABLE capabilities DROP COLUMN language;
                 DROP TABLE learning_writes; DROP INDEX audit_by_write_key;
                 ALTER TABLE audit DROP COLUMN write_key;
                 DROP TABLE audit_links; DROP TABLE audit_chains; DROP TABLE audit_checkpoints;
                 DROP TABLE audit_unchained; ALTER TABLE audit DROP COLUMN execution_id;
                 ALTER TABLE state_values DROP COLUMN value_nonce;
                 ALTER TABLE state_values DROP COLUMN value_sealed;
                 CREATE TABLE IF NOT EXISTS oauth_credentials (
                    server TEXT PRIMARY KEY, url TEXT NOT NULL, nonce BLOB NOT NULL,
                    sealed BLOB NOT NULL, updated_at REAL NOT NULL)",
            )
            .unwrap();
            conn.execute(
                "INSERT INTO oauth_credentials VALUES ('s', 'https://a/mcp', ?1, ?2, 1.0)",
                rusqlite::params![nonce, sealed],
            )
            .unwrap();
        }
        let db = Store::open(&path).unwrap();
        assert_eq!(db.schema_version().unwrap(), crate::store::schema_version());
        let store = SealedStore::new(&db, "s", "https://a/mcp", key("ab"));
        assert_eq!(store.load().await.unwrap().unwrap().client_id, "old");
    }
}
