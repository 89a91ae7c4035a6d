//! Optional TLS for `serve --http` (`--tls-cert`, `--tls-key`): rustls with the `ring`
//! provider, TLS 1.2 and 1.3, ALPN `http/1.1`. The handshake must finish within the header
//! timeout; a failed handshake closes the connection.

use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A TLS acceptor from PEM files: the certificate chain (leaf first) and its private key
/// (PKCS#8, PKCS#1 or SEC1).
pub fn acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {}: no PEM certificate in the file",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
