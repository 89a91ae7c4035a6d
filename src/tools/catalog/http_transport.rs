//! The transport of a remote MCP server: rmcp's streamable HTTP client over reqwest, with TLS
//! by rustls (ring) trusting the system's roots plus the server's `caFile`. There is no option
//! that turns verification off.
//!
//! Header values (after `${VAR}` expansion) are marked sensitive and live only inside the HTTP
//! client: they are never logged, traced or put into an error message.

use crate::config::server_entry::{expand, host_var};
use crate::config::ServerConfig;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long a TCP connect (and the TLS handshake) to a remote server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest CA file read for `caFile`.
const MAX_CA_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The transport of `config` (a `url` server) over `client` (plain, or rmcp's OAuth client).
pub fn transport<C>(
    client: C,
    config: StreamableHttpClientTransportConfig,
) -> StreamableHttpClientTransport<C>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Send + Sync + 'static,
{
    StreamableHttpClientTransport::with_client(client, config)
}

/// The HTTP client of a remote server: rustls (ring) with the system roots and `caFile`, a
/// connect timeout, no redirects.
pub fn http_client(config: &ServerConfig, base_dir: &Path) -> Result<reqwest::Client, String> {
    // rmcp's OAuth code builds reqwest clients of its own: give rustls its process-wide
    // provider (ring) once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config(config, base_dir)?)
        .connect_timeout(CONNECT_TIMEOUT)
        // Requests are small writes answered at once: no Nagle delay (reqwest's default, said
        // here because the gateway's latency depends on it).
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", super::error_chain(&e)))
}

/// rmcp's transport settings for `config`: the URL and the configured headers (expanded).
/// Errors name the problem, never a header value.
pub fn transport_config(
    name: &str,
    config: &ServerConfig,
) -> Result<StreamableHttpClientTransportConfig, String> {
    let Some(url) = &config.url else {
        return Err("it has no url".to_string());
    };
    let mut headers = HashMap::new();
    for (key, template) in &config.headers {
        let value =
            expand(template, &format!("headers.{key}"), host_var).map_err(|e| e.to_string())?;
        let name = HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("{key:?} is not a valid HTTP header name"))?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            format!("the value of header {key} (after ${{VAR}} expansion) is not a valid HTTP header value")
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    tracing::debug!(server = %name, url = %url, headers = headers.len(), "remote MCP server");
    Ok(StreamableHttpClientTransportConfig::with_uri(url.as_str())
        .custom_headers(headers)
        .reinit_on_expired_session(true))
}

/// rustls with the ring provider, the system's roots and the server's `caFile`.
fn tls_config(config: &ServerConfig, base_dir: &Path) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    if let Some(ca) = &config.ca_file {
        let path = if ca.is_absolute() {
            ca.clone()
        } else {
            base_dir.join(ca)
        };
        let shown = path.display();
        let meta =
            std::fs::metadata(&path).map_err(|e| format!("cannot read caFile {shown}: {e}"))?;
        if meta.len() > MAX_CA_FILE_BYTES {
            return Err(format!(
                "caFile {shown} is larger than {MAX_CA_FILE_BYTES} bytes"
            ));
        }
        let pem = std::fs::read(&path).map_err(|e| format!("cannot read caFile {shown}: {e}"))?;
        use rustls::pki_types::pem::PemObject;
        let mut added = 0;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("caFile {shown} is not valid PEM: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("caFile {shown} holds a bad certificate: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!("caFile {shown} holds no PEM certificate"));
        }
    }
    if roots.is_empty() {
        tracing::warn!("no system CA certificates were found; only caFile roots are trusted");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tls)
}

/// Whether a failed call surely never reached the server (the connection could not be made).
/// Whether a remote server's answer could not be read because it nests deeper than the MCP
/// client parses (serde_json's 128 levels, inside rmcp's HTTP client; issue 58). rmcp reports
/// it as text ("could not parse JSON response … recursion limit exceeded"), read from the chain.
pub fn nested_too_deep(reason: &str) -> bool {
    reason.contains("recursion limit exceeded")
}

pub fn not_sent(e: &(dyn std::error::Error + 'static)) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut next = Some(e);
    let mut depth = 0;
    while let Some(err) = next {
        depth += 1;
        if depth > 16 {
            return false;
        }
        if let Some(r) = err.downcast_ref::<reqwest::Error>() {
            return r.is_connect();
        }
        next = match err.downcast_ref::<rmcp::service::ServiceError>() {
            Some(rmcp::service::ServiceError::TransportSend(t)) => Some(t.error.as_ref()),
            _ => match err.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                Some(StreamableHttpError::Client(r)) => Some(r),
                _ => err.source(),
            },
        };
    }
    false
}

/// How a remote server is greeted: MCP 2026-07-28 where it speaks it (`server/discover`; a
/// server answering `input_required` needs it), else the legacy `initialize` handshake.
pub fn lifecycle() -> rmcp::service::ClientLifecycleMode {
    rmcp::service::ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    }
}
