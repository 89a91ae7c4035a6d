//! OAuth for remote MCP servers (the client side of the MCP authorization specification), on
//! rmcp's `auth` feature: discovery from the 401's `WWW-Authenticate` (protected resource
//! metadata, then authorization server metadata), dynamic client registration, the
//! authorization code flow with PKCE, refresh. Tokens live in the state store, sealed with the
//! operator's key ([`super::oauth_store`]).
//!
//! - `mcp-sandbox auth login NAME` ([`login`]) prints the authorization URL, listens on a
//!   loopback redirect (`http://127.0.0.1:<port>/callback`), exchanges the code and stores the
//!   tokens.
//! - At start (run, serve, tools) an `oauth` server is reached with the stored access token,
//!   refreshed by rmcp when it is (nearly) expired; a token the server rejects is refreshed once.
//!   Without usable tokens the server is unavailable: "needs `mcp-sandbox auth login NAME`".

use super::oauth_store::{SealKey, SealedStore, Stored};
use crate::config::ServerConfig;
use crate::store::Store;
use rmcp::transport::auth::{AuthClient, AuthorizationManager, AuthorizationRequest};
use rmcp::transport::AuthorizationSession;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The state file the front chose (`--state`, the config's `sandbox.state`); the XDG default
/// when none was set.
static STATE_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Records the state file OAuth tokens are read from and written to (first call wins).
pub fn use_state_file(path: PathBuf) {
    let _ = STATE_FILE.set(path);
}

fn state_file() -> Result<PathBuf, String> {
    if let Some(p) = STATE_FILE.get() {
        return Ok(p.clone());
    }
    crate::store::default_path().map_err(|e| e.to_string())
}

/// The state store the tokens live in, opened once per process (every `oauth` server shares
/// it: one SQLite connection, or one PostgreSQL pool).
fn state_store() -> Result<Store, String> {
    static OPEN: Mutex<Option<(PathBuf, Store)>> = Mutex::new(None);
    let path = state_file()?;
    let mut open = OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, store)) = open.as_ref().filter(|(p, _)| *p == path) {
        return Ok(store.clone());
    }
    let store = Store::open(&path).map_err(|e| e.to_string())?;
    *open = Some((path, store.clone()));
    Ok(store)
}

/// Why a server with stored tokens needs a new login.
pub const REFUSED: &str =
    "the server answered HTTP 401: its access token was refused and could not be refreshed";

/// The message of a server that has no usable tokens.
pub fn needs_login(name: &str, why: &str) -> String {
    format!("needs `mcp-sandbox auth login {name}` ({why})")
}

fn store_for(name: &str, config: &ServerConfig) -> Result<SealedStore, String> {
    let url = config.url.as_deref().unwrap_or_default();
    let key = SealKey::from_env().map_err(|e| e.to_string())?;
    Ok(SealedStore::new(&state_store()?, name, url, key))
}

/// An rmcp authorization manager for `config`'s server, using `client` (TLS, caFile) for every
/// OAuth request and the sealed store for credentials.
async fn manager(
    config: &ServerConfig,
    client: reqwest::Client,
    store: SealedStore,
) -> Result<AuthorizationManager, String> {
    let url = config.url.as_deref().unwrap_or_default();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| format!("OAuth setup failed: {e}"))?;
    manager
        .with_client(client)
        .map_err(|e| format!("OAuth setup failed: {e}"))?;
    manager.set_credential_store(store);
    Ok(manager)
}

/// The HTTP client of an `oauth` server at start: attaches (and refreshes) the stored token.
pub async fn client(
    name: &str,
    config: &ServerConfig,
    client: reqwest::Client,
) -> Result<AuthClient<reqwest::Client>, String> {
    let store = store_for(name, config).map_err(|e| needs_login(name, &e))?;
    match store.status() {
        Ok(Stored::Present { .. }) => {}
        Ok(Stored::Missing) => return Err(needs_login(name, "no stored tokens")),
        Ok(Stored::Unreadable) => {
            return Err(needs_login(
                name,
                "the stored tokens do not open with this key or were made for another URL",
            ))
        }
        Err(e) => return Err(needs_login(name, &e.to_string())),
    }
    let mut manager = manager(config, client.clone(), store).await?;
    match manager.initialize_from_store().await {
        Ok(true) => Ok(AuthClient::new(client, manager)),
        Ok(false) => Err(needs_login(
            name,
            "no stored tokens for this authorization server",
        )),
        Err(e) => Err(needs_login(name, &e.to_string())),
    }
}

/// `auth login`: runs the authorization code flow for server `name`. `show` receives the
/// authorization URL (printed for the operator to open); the redirect is awaited for at most
/// `timeout`.
pub async fn login(
    name: &str,
    config: &ServerConfig,
    base_dir: &Path,
    timeout: Duration,
    show: impl FnOnce(&str),
) -> Result<(), String> {
    let oauth = config.oauth.clone().unwrap_or_default();
    let store = store_for(name, config)?;
    let http = super::http_transport::http_client(config, base_dir)?;
    let url = config.url.as_deref().unwrap_or_default();
    // Discovery starts from the server's own 401 challenge, as the specification says.
    let challenge = probe(&http, url).await;
    let mut manager = manager(config, http, store).await?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| format!("OAuth discovery failed: {e}"))?;
    manager.set_metadata(resolution.metadata);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("cannot listen on a loopback port for the redirect: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on a loopback port for the redirect: {e}"))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut request = AuthorizationRequest::new(redirect.clone())
        .with_client_name(oauth.client_name.as_deref().unwrap_or("mcp-sandbox"));
    if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.iter().cloned());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| format!("OAuth authorization could not start: {e}"))?;
    show(session.get_authorization_url());
    let callback = tokio::time::timeout(timeout, accept_redirect(&listener, port))
        .await
        .map_err(|_| {
            format!(
                "no redirect arrived within {} s; run `mcp-sandbox auth login {name}` again",
                timeout.as_secs()
            )
        })??;
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|e| format!("the authorization server refused the code: {e}"))?;
    Ok(())
}

/// An unauthenticated POST to the server: its `WWW-Authenticate` challenge, if it sends one.
async fn probe(http: &reqwest::Client, url: &str) -> Option<String> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcp-sandbox", "version": env!("CARGO_PKG_VERSION")}}});
    let answer = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    answer
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 4096)
        .map(str::to_string)
}

/// Waits for the browser's redirect to `/callback` on `listener`; answers it with a short page
/// and returns the full redirect URL. Other requests (a favicon) get 404 and are skipped.
async fn accept_redirect(listener: &tokio::net::TcpListener, port: u16) -> Result<String, String> {
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the redirect listener failed: {e}"))?;
        let mut buf = vec![0u8; 16 * 1024];
        let mut len = 0;
        // The request line and headers; bounded, with a short timeout per connection.
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while len < buf.len() {
                let n = socket.read(&mut buf[len..]).await.ok()?;
                if n == 0 {
                    break;
                }
                len += n;
                if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Some(())
        })
        .await;
        if read.is_err() {
            continue;
        }
        let head = String::from_utf8_lossy(&buf[..len]);
        let target = head
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or("");
        if target.starts_with("/callback?") {
            let page = "mcp-sandbox: authorization received; you can close this window.\n";
            let _ = socket
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                        page.len()
                    )
                    .as_bytes(),
                )
                .await;
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
        let _ = socket
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    }
}

/// `auth status` of one server: one line.
pub fn status_line(name: &str, config: &ServerConfig) -> String {
    let store = match store_for(name, config) {
        Ok(s) => s,
        Err(e) => return format!("{name}: unknown ({e})"),
    };
    match store.status() {
        Ok(Stored::Missing) => format!("{name}: not logged in"),
        Ok(Stored::Unreadable) => format!(
            "{name}: stored tokens do not open with this key (or were made for another URL); log in again"
        ),
        Ok(Stored::Present {
            expires_in,
            refreshable,
        }) => {
            let expiry = match expires_in {
                Some(s) if s > 0 => format!("access token valid for {s} s"),
                Some(_) => "access token expired".to_string(),
                None => "access token without an expiry".to_string(),
            };
            let refresh = if refreshable {
                "refreshable"
            } else {
                "not refreshable"
            };
            format!("{name}: logged in ({expiry}, {refresh})")
        }
        Err(e) => format!("{name}: unknown ({e})"),
    }
}

/// `auth logout`: forgets the server's tokens. Whether there were any.
pub fn logout(name: &str, config: &ServerConfig) -> Result<bool, String> {
    let _ = config;
    // Removing needs no key: the row is deleted, not opened.
    super::oauth_store::remove(&state_store()?, name).map_err(|e| e.to_string())
}
