//! The OTLP exporter's HTTP client: our reqwest (rustls with ring, the system's roots) driven on
//! the host's tokio runtime. The SDK's batch processor exports from a thread of its own with a
//! plain executor; each request is spawned onto the runtime and awaited from there, so no second
//! runtime, reqwest or TLS stack is needed.

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use std::time::Duration;

/// An answer body read at most (collectors answer with a small protobuf or nothing).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub struct RuntimeClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl RuntimeClient {
    /// Must be called within the tokio runtime that will carry the requests.
    pub fn new(timeout: Duration) -> Result<Self, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "telemetry needs a tokio runtime".to_string())?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup failed: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the OTLP HTTP client: {e}"))?;
        Ok(RuntimeClient { client, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request: reqwest::Request = request.try_into()?;
        let client = self.client.clone();
        let task = self.runtime.spawn(async move {
            let mut answer = client.execute(request).await?;
            let mut builder = Response::builder().status(answer.status());
            let mut body = Vec::new();
            while let Some(chunk) = answer.chunk().await? {
                let room = MAX_ANSWER_BYTES.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if room <= chunk.len() {
                    break;
                }
            }
            if let Some(h) = builder.headers_mut() {
                *h = answer.headers().clone();
            }
            Ok::<_, reqwest::Error>(builder.body(Bytes::from(body)))
        });
        Ok(task.await???)
    }
}
