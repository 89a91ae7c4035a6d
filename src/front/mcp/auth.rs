//! Authentication of `serve --http` (MCP authorization, resource-server side): every request to
//! `/mcp` carries `Authorization: Bearer <token>`, an API token (`token create`) or a JWT access
//! token from the configured identity provider. Without a valid one: 401 with
//! `WWW-Authenticate: Bearer resource_metadata="…"`, pointing at the protected-resource metadata
//! document served (without authentication) at `/.well-known/oauth-protected-resource`. A valid
//! credential that may not use this server (no mapped scope, an unknown policy): 403.
//!
//! Token values never appear in logs, traces, the audit log or any message.

use crate::config::gateway::{AuthConfig, PrincipalPolicy};
use crate::context::principal::Principal;
use crate::store::Store;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Longest `Authorization` header value read.
pub const MAX_CREDENTIAL_BYTES: usize = 16 * 1024;

/// The path of the protected-resource metadata document (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

pub use super::auth_failure::AuthFailure;

/// Checks credentials for the HTTP front.
pub struct Authenticator {
    store: Store,
    tokens: bool,
    jwt: Option<super::jwt::JwtVerifier>,
    policies: BTreeMap<String, PrincipalPolicy>,
    /// The MCP endpoint's public URL.
    pub resource: String,
    /// Where the metadata document is.
    pub metadata_url: String,
}

impl Authenticator {
    pub async fn new(
        config: &AuthConfig,
        policies: BTreeMap<String, PrincipalPolicy>,
        base_dir: &std::path::Path,
        store: Store,
        resource: String,
    ) -> Result<Self, String> {
        let jwt = match &config.jwt {
            None => None,
            Some(j) => Some(super::jwt::JwtVerifier::new(j, base_dir).await?),
        };
        let metadata_url = metadata_url_for(&resource);
        Ok(Authenticator {
            store,
            tokens: config.tokens,
            jwt,
            policies,
            resource,
            metadata_url,
        })
    }

    /// What the startup line says.
    pub fn describe(&self) -> String {
        let mut kinds = Vec::new();
        if self.tokens {
            kinds.push("API tokens".to_string());
        }
        if let Some(j) = &self.jwt {
            kinds.push(format!("JWT from {}", j.issuer()));
        }
        format!("on ({})", kinds.join(", "))
    }

    /// The principal of a request, or why it is refused.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthFailure> {
        let mut values = headers.get_all("authorization").iter();
        let Some(value) = values.next() else {
            return Err(AuthFailure::Missing);
        };
        if values.next().is_some() {
            return Err(AuthFailure::Invalid(
                "more than one Authorization header".into(),
            ));
        }
        if value.len() > MAX_CREDENTIAL_BYTES {
            return Err(AuthFailure::Invalid(format!(
                "the Authorization header is longer than {MAX_CREDENTIAL_BYTES} bytes"
            )));
        }
        let text = value
            .to_str()
            .map_err(|_| AuthFailure::Invalid("the Authorization header is not ASCII".into()))?;
        let (scheme, credential) = text.split_once(' ').unwrap_or((text, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthFailure::Missing);
        }
        let credential = credential.trim();
        if credential.is_empty() {
            return Err(AuthFailure::Missing);
        }
        let principal =
            if credential.starts_with(crate::front::cli::team::TOKEN_PREFIX) && self.tokens {
                self.api_token(credential).await?
            } else if let Some(jwt) = &self.jwt {
                jwt.verify(credential)
                    .await
                    .map_err(AuthFailure::Invalid)?
                    .into_principal(jwt)?
            } else {
                return Err(AuthFailure::Invalid("the token is not valid".into()));
            };
        if let Some(missing) = principal
            .policies
            .iter()
            .find(|p| !self.policies.contains_key(*p))
        {
            return Err(AuthFailure::Forbidden(format!(
                "the credential's policy '{missing}' is not in this server's sandbox.policies"
            )));
        }
        Ok(principal)
    }

    async fn api_token(&self, credential: &str) -> Result<Principal, AuthFailure> {
        let hash: Vec<u8> = Sha256::digest(credential.as_bytes()).to_vec();
        let id = token_id(&hash);
        let found = self
            .store
            .run(move |s| s.find_token(&hash))
            .await
            .map_err(|e| {
                tracing::error!("token lookup failed: {e}");
                AuthFailure::Invalid("the token could not be checked; retry later".into())
            })?;
        let Some(record) = found else {
            return Err(AuthFailure::Invalid("the token is not valid".into()));
        };
        if let Some(why) = record.unusable(crate::trace::now_ms()) {
            return Err(AuthFailure::Invalid(why.into()));
        }
        Ok(Principal {
            name: format!("token:{}", record.name),
            id,
            tenant: record.tenant,
            policies: record.policy.into_iter().collect(),
        })
    }

    /// The ids ([`Principal::id`]) of the API tokens that may still be used: a session
    /// owned by another token id ends (its token was revoked, expired or replaced). `None`
    /// when the store cannot say (nothing is ended then).
    pub async fn usable_token_ids(&self) -> Option<std::collections::HashSet<String>> {
        let now = crate::trace::now_ms();
        match self.store.run(move |s| s.usable_token_hashes(now)).await {
            Ok(hashes) => Some(
                hashes
                    .iter()
                    .map(|h| format!("{TOKEN_ID_PREFIX}{h}"))
                    .collect(),
            ),
            Err(e) => {
                tracing::warn!("cannot list the usable API tokens: {e}");
                None
            }
        }
    }

    /// The protected-resource metadata document (RFC 9728).
    pub fn metadata(&self) -> serde_json::Value {
        let mut doc = serde_json::json!({
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
            "resource_name": "mcp-sandbox",
        });
        if let Some(j) = &self.jwt {
            doc["authorization_servers"] = serde_json::json!([j.issuer()]);
            doc["scopes_supported"] = serde_json::json!(j.scopes());
        }
        doc
    }

    /// The 401 or 403 answer to a refused request.
    pub fn refusal(&self, failure: &AuthFailure) -> Response {
        let (status, challenge, message) = match failure {
            AuthFailure::Missing => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer resource_metadata=\"{}\"", self.metadata_url),
                "authentication required: send Authorization: Bearer <token> (an API token from `mcp-sandbox token create`, or an access token from the identity provider)".to_string(),
            ),
            AuthFailure::Invalid(why) => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{}\"",
                    quoted(why),
                    self.metadata_url
                ),
                format!("invalid credential: {why}"),
            ),
            AuthFailure::Forbidden(why) => (
                StatusCode::FORBIDDEN,
                format!(
                    "Bearer error=\"insufficient_scope\", error_description=\"{}\", resource_metadata=\"{}\"",
                    quoted(why),
                    self.metadata_url
                ),
                format!("forbidden: {why}"),
            ),
        };
        let mut r = (
            status,
            [("content-type", "application/json")],
            serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": message}})
                .to_string(),
        )
            .into_response();
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            r.headers_mut().insert("www-authenticate", v);
        }
        r
    }
}

/// The SHA-256 of a request's one `Authorization` value (`None` without exactly one, or one
/// longer than [`MAX_CREDENTIAL_BYTES`]): a key for what was decided about that credential.
pub fn credential_hash(headers: &HeaderMap) -> Option<[u8; 32]> {
    let mut values = headers.get_all("authorization").iter();
    let value = values.next()?;
    if values.next().is_some() || value.len() > MAX_CREDENTIAL_BYTES {
        return None;
    }
    Some(Sha256::digest(value.as_bytes()).into())
}

/// How an API token's [`Principal::id`] starts (then the hex SHA-256 of the token).
pub const TOKEN_ID_PREFIX: &str = "token#";

fn token_id(sha256: &[u8]) -> String {
    let mut id = String::with_capacity(TOKEN_ID_PREFIX.len() + 64);
    id.push_str(TOKEN_ID_PREFIX);
    for b in sha256 {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// `https://host/mcp` → `https://host/.well-known/oauth-protected-resource/mcp` (RFC 9728 §3.1).
fn metadata_url_for(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("http", resource));
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let path = path.trim_end_matches('/');
    format!("{scheme}://{host}{METADATA_PATH}{path}")
}

/// Text safe inside a quoted header parameter.
fn quoted(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .filter(|c| *c != '"' && *c != '\\')
        .collect()
}

/// The rules and limits of a principal's policies.
pub fn policies_of<'a>(
    principal: &Principal,
    all: &'a BTreeMap<String, PrincipalPolicy>,
) -> Vec<(&'a str, &'a PrincipalPolicy)> {
    principal
        .policies
        .iter()
        .filter_map(|name| all.get_key_value(name).map(|(k, v)| (k.as_str(), v)))
        .collect()
}

/// Shared handle used by the HTTP front.
pub type SharedAuth = Option<Arc<Authenticator>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_path() {
        assert_eq!(
            metadata_url_for("http://127.0.0.1:8080/mcp"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url_for("https://gw.example"),
            "https://gw.example/.well-known/oauth-protected-resource"
        );
    }
}
