//! JWT access tokens from an identity provider (`sandbox.auth.jwt`): the signature is checked
//! with a key of the configured JWKS (asymmetric algorithms only: RS*, PS*, ES256/384, EdDSA;
//! never HS* or `none`), and `exp`, `nbf`, `iss`, `aud` with the `jsonwebtoken` crate. The
//! subject becomes the principal `jwt:<sub>`; the token's scopes (`scope`, space-separated, or
//! `scp`, an array) map to policies through `scopes`; a token with none of the mapped scopes is
//! refused with 403.

use super::auth_failure::AuthFailure;
use crate::config::gateway::JwtConfig;
use crate::context::principal::{Principal, DEFAULT_TENANT};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

/// Largest JWKS document read.
const MAX_JWKS_BYTES: u64 = super::jwks::MAX_JWKS_BYTES as u64;
/// Clock skew allowed for `exp` and `nbf`, in seconds.
const LEEWAY_SECS: u64 = 30;

const ALLOWED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

type Keys = Vec<(Option<String>, DecodingKey, Option<Algorithm>)>;

pub struct JwtVerifier {
    issuer: String,
    audience: String,
    keys: RwLock<Arc<Keys>>,
    /// `jwks_url`, refetched when a token names an unknown key id.
    url: Option<String>,
    last_fetch: Mutex<Instant>,
    refetch_after: std::time::Duration,
    scopes: BTreeMap<String, String>,
    tenant_claim: Option<String>,
}

/// The claims read from a verified token.
#[derive(Debug, Deserialize)]
pub struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

impl JwtVerifier {
    pub async fn new(config: &JwtConfig, base_dir: &Path) -> Result<Self, String> {
        let text = match (&config.jwks_file, &config.jwks_url) {
            (Some(file), _) => {
                let path = base_dir.join(file);
                let meta = std::fs::metadata(&path)
                    .map_err(|e| format!("sandbox.auth.jwt.jwks_file {}: {e}", path.display()))?;
                if meta.len() > MAX_JWKS_BYTES {
                    return Err(format!(
                        "sandbox.auth.jwt.jwks_file {} is larger than {MAX_JWKS_BYTES} bytes",
                        path.display()
                    ));
                }
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("sandbox.auth.jwt.jwks_file {}: {e}", path.display()))?
            }
            (None, Some(url)) => super::jwks::fetch(url)
                .await
                .map_err(|e| format!("sandbox.auth.jwt.jwks_url: {e}"))?,
            (None, None) => {
                return Err("sandbox.auth.jwt: one of jwks_file and jwks_url is required".into())
            }
        };
        let keys = parse_keys(&text).map_err(|e| format!("sandbox.auth.jwt: {e}"))?;
        Ok(JwtVerifier {
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            keys: RwLock::new(Arc::new(keys)),
            url: config.jwks_url.clone(),
            last_fetch: Mutex::new(Instant::now()),
            refetch_after: config
                .jwks_refetch_after_s
                .map(std::time::Duration::from_secs)
                .unwrap_or(super::jwks::REFETCH_AFTER),
            scopes: config.scopes.clone(),
            tenant_claim: config.tenant_claim.clone(),
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn scopes(&self) -> Vec<String> {
        self.scopes.keys().cloned().collect()
    }

    fn current_keys(&self) -> Arc<Keys> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// With `jwks_url`: fetches the JWKS again if the last fetch is older than
    /// `jwks_refetch_after_s` (a key id the cached set does not have was seen).
    async fn refresh(&self) {
        let Some(url) = &self.url else { return };
        {
            let mut last = self.last_fetch.lock().unwrap_or_else(|p| p.into_inner());
            if last.elapsed() < self.refetch_after {
                return;
            }
            *last = Instant::now();
        }
        match super::jwks::fetch(url).await.and_then(|t| parse_keys(&t)) {
            Ok(keys) => {
                tracing::info!("JWKS refreshed from {url}: {} keys", keys.len());
                *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
            }
            Err(e) => tracing::warn!("JWKS refresh failed (keeping the cached keys): {e}"),
        }
    }

    /// Verifies a token; the message says why it is refused (never the token).
    pub async fn verify(&self, token: &str) -> Result<Claims, String> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| "the token is not valid".to_string())?;
        if !ALLOWED.contains(&header.alg) {
            return Err(format!("JWT algorithm {:?} is not accepted", header.alg));
        }
        let known = |keys: &Keys| {
            header
                .kid
                .as_deref()
                .is_none_or(|kid| keys.iter().any(|(k, _, _)| k.as_deref() == Some(kid)))
        };
        if !known(&self.current_keys()) {
            self.refresh().await;
        }
        let keys = self.current_keys();
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let candidates = keys.iter().filter(|(kid, _, alg)| {
            (header.kid.is_none() || kid.as_deref() == header.kid.as_deref())
                && alg.is_none_or(|a| a == header.alg)
        });
        let mut last = "no key of the JWKS matches the token's kid".to_string();
        for (_, key, _) in candidates {
            match jsonwebtoken::decode::<Claims>(token, key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => {
                    use jsonwebtoken::errors::ErrorKind as K;
                    last = match e.kind() {
                        K::ExpiredSignature => "the token has expired".into(),
                        K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
                        K::InvalidIssuer => "the token is for another issuer".into(),
                        K::InvalidAudience => "the token is for another audience".into(),
                        K::InvalidSignature => "the token's signature does not verify".into(),
                        K::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
                        _ => "the token is not valid".into(),
                    };
                    // A wrong signature may be another key's; anything else is final.
                    if !matches!(e.kind(), K::InvalidSignature) {
                        break;
                    }
                }
            }
        }
        Err(last)
    }
}

/// The usable keys of a JWKS document.
fn parse_keys(text: &str) -> Result<Keys, String> {
    let set: JwkSet =
        serde_json::from_str(text).map_err(|e| format!("the JWKS is not valid: {e}"))?;
    let mut keys = Vec::new();
    for jwk in &set.keys {
        let alg = jwk
            .common
            .key_algorithm
            .and_then(|a| a.to_string().parse::<Algorithm>().ok());
        match DecodingKey::from_jwk(jwk) {
            Ok(k) => keys.push((jwk.common.key_id.clone(), k, alg)),
            Err(e) => tracing::warn!("JWKS key {:?} skipped: {e}", jwk.common.key_id),
        }
    }
    if keys.is_empty() {
        return Err("the JWKS has no usable key".into());
    }
    Ok(keys)
}

impl Claims {
    /// The principal of verified claims: 403 when none of its scopes maps to a policy.
    pub fn into_principal(self, verifier: &JwtVerifier) -> Result<Principal, AuthFailure> {
        let mut scopes: Vec<String> = self
            .scope
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        scopes.extend(self.scp.unwrap_or_default());
        let policies: Vec<String> = scopes
            .iter()
            .filter_map(|s| verifier.scopes.get(s).cloned())
            .collect();
        if policies.is_empty() {
            return Err(AuthFailure::Forbidden(format!(
                "the token has none of the scopes this server accepts ({})",
                verifier.scopes().join(", ")
            )));
        }
        let tenant = match &verifier.tenant_claim {
            None => DEFAULT_TENANT.to_string(),
            Some(claim) => match self.rest.get(claim).and_then(|v| v.as_str()) {
                Some(t) if crate::context::principal::valid_tenant_name(t) => t.to_string(),
                _ => {
                    return Err(AuthFailure::Forbidden(format!(
                        "the token's {claim} claim (the tenant) is missing or not a valid name"
                    )))
                }
            },
        };
        if self.sub.is_empty() || self.sub.len() > 256 || self.sub.chars().any(char::is_control) {
            return Err(AuthFailure::Invalid(
                "the token's sub claim is not usable".into(),
            ));
        }
        Ok(Principal {
            name: format!("jwt:{}", self.sub),
            id: format!("jwt:{}", self.sub),
            tenant,
            policies,
        })
    }
}
