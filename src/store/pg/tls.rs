//! TLS to PostgreSQL: `sslmode` and `sslrootcert` in the state URL.
//!
//! - `sslmode` absent or `disable`: no TLS (a Unix socket, a private network, a tunnel).
//! - `sslmode=verify-full` or `require`: TLS (rustls, ring) and the server's certificate is
//!   verified against the roots — the system's, or only those of the PEM file `sslrootcert=`
//!   names — and its name against the host. `require` is verified too: an unverified
//!   certificate would let anyone on the path read the state; there is no silent fallback to
//!   clear text either (tokio-postgres fails when the server offers no TLS).
//! - Any other mode (`prefer`, `allow`, `verify-ca`, …): refused with [`SSLMODE_UNSUPPORTED`].
//!
//! tokio-postgres parses neither `verify-full` nor `sslrootcert`: both are taken off the URL
//! here before it is parsed.

use std::path::PathBuf;

/// The stable code of a `sslmode` this build does not offer.
pub const SSLMODE_UNSUPPORTED: &str = "STATE_SSLMODE_UNSUPPORTED";
/// The stable code of a TLS setup or handshake with the database that failed.
pub const TLS_FAILED: &str = "STATE_TLS_FAILED";
/// Largest `sslrootcert` file read.
const MAX_ROOT_FILE_BYTES: u64 = 1024 * 1024;

/// What the URL asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Clear,
    /// TLS, verified against `roots` (a PEM file) or the system's roots.
    Verified {
        roots: Option<PathBuf>,
    },
}

/// `url` without its `sslmode`/`sslrootcert` parameters (which tokio-postgres does not parse),
/// and the mode they ask for.
pub fn split(url: &str) -> Result<(String, Mode), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), Mode::Clear));
    };
    let (mut mode, mut roots, mut kept) = (None, None, Vec::new());
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("sslmode", v)) => mode = Some(v.to_string()),
            Some(("sslrootcert", v)) => roots = Some(PathBuf::from(decode(v))),
            _ => kept.push(pair),
        }
    }
    let mode = match mode.as_deref() {
        None | Some("disable") if roots.is_none() => Mode::Clear,
        Some("verify-full" | "require") => Mode::Verified { roots },
        None | Some("disable") => {
            return Err(format!(
                "{SSLMODE_UNSUPPORTED}: the PostgreSQL state URL names sslrootcert without sslmode=verify-full; add sslmode=verify-full (or remove sslrootcert)"
            ))
        }
        Some(other) => {
            return Err(format!(
                "{SSLMODE_UNSUPPORTED}: sslmode={other} is not supported for the PostgreSQL state store; use sslmode=verify-full (TLS, the server's certificate verified; sslrootcert=FILE for a private CA) or sslmode=disable"
            ))
        }
    };
    let rest = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, mode))
}

/// `%XX` escapes decoded (a path in a URL's query); anything malformed is kept as written.
fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls connector of `roots` (a PEM file) or the system's roots.
pub fn connector(
    roots: Option<&PathBuf>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = store.add(cert);
            }
        }
        Some(path) => {
            let shown = path.display();
            let fail = |e: String| format!("{TLS_FAILED}: sslrootcert {shown}: {e}");
            let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
            if meta.len() > MAX_ROOT_FILE_BYTES {
                return Err(fail(format!("larger than {MAX_ROOT_FILE_BYTES} bytes")));
            }
            let pem = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
            use rustls::pki_types::pem::PemObject;
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| fail(format!("not valid PEM: {e}")))?;
                store
                    .add(cert)
                    .map_err(|e| fail(format!("a bad certificate: {e}")))?;
            }
            if store.is_empty() {
                return Err(fail("holds no PEM certificate".into()));
            }
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("{TLS_FAILED}: TLS setup failed: {e}"))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// When `e` (a connection failure) is one of TLS — a certificate that does not verify, a
/// server without TLS — what to tell the operator.
pub fn failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(tls) = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(format!(
                "{TLS_FAILED}: the TLS handshake with the PostgreSQL server failed: {tls}; check the server's certificate, its name in the URL and sslrootcert"
            ));
        }
        if c.to_string().contains("server does not support TLS") {
            return Some(format!(
                "{TLS_FAILED}: the PostgreSQL server does not offer TLS and the URL asks for it (sslmode); nothing was sent in clear"
            ));
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_of_the_url() {
        let clear = |u: &str| split(u).unwrap();
        assert_eq!(
            clear("postgres://h/db"),
            ("postgres://h/db".into(), Mode::Clear)
        );
        assert_eq!(
            clear("postgres://h/db?sslmode=disable&port=5"),
            ("postgres://h/db?port=5".into(), Mode::Clear)
        );
        assert_eq!(
            clear("postgres://h/db?sslmode=verify-full&sslrootcert=/a%20b/ca.pem"),
            (
                "postgres://h/db".into(),
                Mode::Verified {
                    roots: Some("/a b/ca.pem".into())
                }
            )
        );
        assert_eq!(
            clear("postgres://h/db?port=5&sslmode=require").1,
            Mode::Verified { roots: None }
        );
        for bad in [
            "postgres://h/db?sslmode=prefer",
            "postgres://h/db?sslmode=verify-ca",
            "postgres://h/db?sslrootcert=/x",
        ] {
            let e = split(bad).unwrap_err();
            assert!(e.starts_with(SSLMODE_UNSUPPORTED), "{e}");
        }
    }

    /// A private CA and a server certificate for localhost signed by it: (CA PEM, chain, key).
    fn private_ca() -> (String, String, String) {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "state store test CA");
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (ca_pem, leaf.pem(), key.serialize_pem())
    }

    /// A real server with `ssl=on` on a local TCP port: verify-full with its CA connects over
    /// TLS; without that root (system roots), or with another CA's, the connection fails with
    /// TLS_FAILED — nothing falls back to clear text; `disable` stays in clear.
    #[test]
    fn verify_full_against_a_real_server() {
        let (ca, chain, key) = private_ca();
        let server = crate::store::suites::pg_support::PgServer::start_tls(&chain, &key);
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca).unwrap();
        let other_ca = dir.path().join("other.pem");
        std::fs::write(&other_ca, private_ca().0).unwrap();
        let db = server
            .database()
            .rsplit_once('?')
            .unwrap()
            .0
            .rsplit('/')
            .next()
            .unwrap()
            .to_string();
        let open = |query: String| {
            crate::store::Store::open(std::path::Path::new(&server.tcp_url(&db, &query)))
        };
        let tls_in_use = "SELECT COUNT(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl";

        let s = open(format!(
            "sslmode=verify-full&sslrootcert={}",
            ca_file.display()
        ))
        .unwrap();
        assert_eq!(
            s.pg().unwrap().count(tls_in_use),
            1,
            "the connection uses TLS"
        );
        assert_eq!(s.schema_version().unwrap(), super::super::schema::known());

        for query in [
            "sslmode=verify-full".to_string(),
            "sslmode=require".to_string(),
            format!("sslmode=verify-full&sslrootcert={}", other_ca.display()),
        ] {
            let e = open(query.clone()).unwrap_err().to_string();
            assert!(e.contains(TLS_FAILED), "{query}: {e}");
            assert!(
                e.contains("UnknownIssuer") || e.contains("invalid peer certificate"),
                "{query}: {e}"
            );
        }
        let e = open("sslmode=prefer".into()).unwrap_err().to_string();
        assert!(e.contains(SSLMODE_UNSUPPORTED), "{e}");

        let clear = open("sslmode=disable".into()).unwrap();
        assert_eq!(clear.pg().unwrap().count(tls_in_use), 0);
    }
}
