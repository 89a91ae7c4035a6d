//! Fetching a JWKS from `sandbox.auth.jwt.jwks_url` (HTTPS with the system's trusted roots, or
//! plain HTTP): bounded in size and time. The verifier fetches it at start (the server does not
//! start without it) and again when a token names a key id it does not know, at most once per
//! [`REFETCH_AFTER`], so a key rotation at the identity provider is picked up without a restart.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls;

/// Largest JWKS document accepted.
pub const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// A fetch (connect, TLS, answer) must complete within this.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// An unknown key id triggers a new fetch at most this often (default of
/// `jwks_refetch_after_s`).
pub const REFETCH_AFTER: Duration = Duration::from_secs(60);

/// The JWKS at `url`, as text.
pub async fn fetch(url: &str) -> Result<String, String> {
    // The same parse and check as the config's: what is connected to is what was checked.
    let checked = crate::config::gateway::check_jwks_url(url)?;
    let uri: hyper::Uri = checked
        .as_str()
        .parse()
        .map_err(|e| format!("jwks_url {url:?} is not a URL: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The plain connector under TLS: no Nagle delay on the request's small writes.
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build(https);
    let get = async {
        let response = client
            .get(uri)
            .await
            .map_err(|e| format!("cannot fetch the JWKS from {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "the JWKS at {url} answered HTTP {}",
                response.status()
            ));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(|e| {
                format!("cannot read the JWKS from {url} (at most {MAX_JWKS_BYTES} bytes): {e}")
            })?
            .to_bytes();
        String::from_utf8(body.to_vec()).map_err(|_| format!("the JWKS at {url} is not UTF-8"))
    };
    tokio::time::timeout(FETCH_TIMEOUT, get)
        .await
        .map_err(|_| format!("fetching the JWKS from {url} took longer than {FETCH_TIMEOUT:?}"))?
}
