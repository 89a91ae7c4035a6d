//! An OpenAPI server's credentials, held host-side: the entry's `headers` (`${VAR}` expanded
//! at start, as for remote MCP servers), and `auth` applied as the spec's security schemes say
//! (an `apiKey` in the header or query they name, an `http` `bearer` token, an `oauth2` client
//! credentials token fetched and refreshed by the host). Every value is marked sensitive and
//! never enters an error message, a trace or a log.

use super::redact::Redactor;
use super::OpenApiError;
use crate::config::openapi_entry::{allowed_url, ApiAuth};
use crate::config::server_entry::{expand, host_var};
use crate::config::ServerConfig;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A token is refreshed this long before it expires (or halfway, for short-lived ones).
const REFRESH_MARGIN: Duration = Duration::from_secs(30);
/// How long a token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest token endpoint answer read.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;

/// How one security scheme of the spec is satisfied.
#[derive(Debug, Clone)]
enum Scheme {
    ApiKeyHeader(HeaderName),
    ApiKeyQuery(String),
    Bearer,
    OAuth2 { token_url: Option<String> },
}

/// A fetched OAuth 2 token and when to fetch the next one.
struct Token {
    value: HeaderValue,
    refresh_at: Instant,
}

pub struct Credentials {
    headers: Vec<(HeaderName, HeaderValue)>,
    api_key: Option<String>,
    bearer: Option<HeaderValue>,
    oauth2: Option<OAuth2>,
    schemes: std::collections::BTreeMap<String, Scheme>,
    /// The entry's header values, key, bearer token and client secret (what is redacted
    /// besides the OAuth 2 tokens).
    fixed: Vec<String>,
    /// The last OAuth 2 access tokens obtained (redacted too, even once replaced).
    tokens: std::sync::Mutex<Vec<String>>,
    redactor: std::sync::RwLock<Arc<Redactor>>,
    /// `baseUrl`: a token URL taken from the spec must be on its host.
    base: reqwest::Url,
}

/// How many past OAuth 2 tokens stay redacted.
const TOKENS_KEPT: usize = 4;

struct OAuth2 {
    client_id: String,
    client_secret: String,
    token_url: Option<String>,
    scopes: Vec<String>,
    token: tokio::sync::Mutex<Option<Token>>,
}

fn expanded(template: &str, place: &str) -> Result<String, OpenApiError> {
    expand(template, place, host_var).map_err(|e| OpenApiError::Config(e.to_string()))
}

fn sensitive(value: &str, place: &str) -> Result<HeaderValue, OpenApiError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        OpenApiError::Config(format!(
            "the value of {place} (after ${{VAR}} expansion) is not a valid HTTP header value"
        ))
    })?;
    v.set_sensitive(true);
    Ok(v)
}

impl Credentials {
    /// The entry's credentials, expanded now; the spec's `securitySchemes` say where they go.
    pub fn new(
        config: &ServerConfig,
        resolver: &super::resolver::Resolver,
        base: &reqwest::Url,
    ) -> Result<Credentials, OpenApiError> {
        let doc = resolver.doc;
        let mut headers = Vec::new();
        for (key, template) in &config.headers {
            let value = expanded(template, &format!("headers.{key}"))?;
            let name = HeaderName::from_bytes(key.as_bytes()).map_err(|_| {
                OpenApiError::Config(format!("{key:?} is not a valid HTTP header name"))
            })?;
            headers.push((name, sensitive(&value, &format!("header {key}"))?));
        }
        let auth = config.auth.clone().unwrap_or_default();
        let ApiAuth {
            api_key,
            bearer,
            oauth2,
        } = auth;
        let api_key = api_key.map(|t| expanded(&t, "auth.apiKey")).transpose()?;
        let bearer = bearer
            .map(|t| {
                let v = expanded(&t, "auth.bearer")?;
                sensitive(&format!("Bearer {v}"), "auth.bearer")
            })
            .transpose()?;
        let oauth2 = oauth2
            .map(|o| -> Result<OAuth2, OpenApiError> {
                Ok(OAuth2 {
                    client_id: expanded(&o.client_id, "auth.oauth2.clientId")?,
                    client_secret: expanded(&o.client_secret, "auth.oauth2.clientSecret")?,
                    token_url: o.token_url,
                    scopes: o.scopes,
                    token: tokio::sync::Mutex::new(None),
                })
            })
            .transpose()?;
        let mut schemes = std::collections::BTreeMap::new();
        let declared = doc
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object);
        for (name, s) in declared.into_iter().flatten() {
            let s = resolver.resolve(s, &format!("securityScheme {name}"))?;
            let kind = s.get("type").and_then(Value::as_str).unwrap_or("");
            let scheme = match kind {
                "apiKey" => {
                    let key_name = s.get("name").and_then(Value::as_str).unwrap_or("");
                    match s.get("in").and_then(Value::as_str) {
                        Some("header") => match HeaderName::from_bytes(key_name.as_bytes()) {
                            Ok(h) => Scheme::ApiKeyHeader(h),
                            Err(_) => continue,
                        },
                        Some("query") if !key_name.is_empty() => {
                            Scheme::ApiKeyQuery(key_name.to_string())
                        }
                        _ => continue,
                    }
                }
                "http"
                    if s.get("scheme")
                        .and_then(Value::as_str)
                        .is_some_and(|x| x.eq_ignore_ascii_case("bearer")) =>
                {
                    Scheme::Bearer
                }
                "oauth2" => Scheme::OAuth2 {
                    token_url: s
                        .pointer("/flows/clientCredentials/tokenUrl")
                        .and_then(Value::as_str)
                        .map(String::from),
                },
                _ => continue,
            };
            schemes.insert(name.clone(), scheme);
        }
        // The header values taken from the environment (`${VAR}`): a value written in the
        // config file itself is not a secret, and redacting it would cut ordinary words.
        let mut fixed: Vec<String> = headers
            .iter()
            .zip(config.headers.values())
            .filter(|(_, template)| template.contains("${"))
            .filter_map(|((_, v), _)| v.to_str().ok().map(String::from))
            .collect();
        fixed.extend(api_key.clone());
        if let Some(b) = bearer.as_ref().and_then(|b| b.to_str().ok()) {
            // The bare token too, without its "Bearer " prefix.
            fixed.push(b.to_string());
            fixed.extend(b.strip_prefix("Bearer ").map(String::from));
        }
        if let Some(o) = &oauth2 {
            fixed.push(o.client_secret.clone());
            // As HTTP Basic sends it (RFC 6749 §2.3.1: form-encoded first).
            fixed.push(url_encode(&o.client_secret));
        }
        let redactor = Redactor::new(fixed.iter().map(String::as_str));
        Ok(Credentials {
            headers,
            api_key,
            bearer,
            oauth2,
            schemes,
            fixed,
            tokens: std::sync::Mutex::new(Vec::new()),
            redactor: std::sync::RwLock::new(Arc::new(redactor)),
            base: base.clone(),
        })
    }

    /// What replaces every credential this server holds (its entry's values and the OAuth 2
    /// tokens it obtained) by `[redacted]`, in every spelling (see `redact`).
    pub fn redactor(&self) -> Arc<Redactor> {
        match self.redactor.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// `text` redacted (an API's error page may echo what it was sent).
    pub fn redact(&self, text: &str) -> String {
        self.redactor().text(text)
    }

    /// Adds a newly obtained OAuth 2 token to what is redacted.
    fn remember_token(&self, token: &HeaderValue) {
        let Ok(t) = token.to_str() else { return };
        let bare = t.strip_prefix("Bearer ").unwrap_or(t).to_string();
        let mut held = match self.tokens.lock() {
            Ok(h) => h,
            Err(poisoned) => poisoned.into_inner(),
        };
        if held.contains(&bare) {
            return;
        }
        held.push(bare);
        if held.len() > TOKENS_KEPT {
            held.remove(0);
        }
        let all = self.fixed.iter().chain(held.iter()).map(String::as_str);
        let fresh = Arc::new(Redactor::new(all));
        match self.redactor.write() {
            Ok(mut r) => *r = fresh,
            Err(poisoned) => *poisoned.into_inner() = fresh,
        }
    }

    /// Whether a configured credential can satisfy `scheme`.
    fn can(&self, scheme: &str) -> bool {
        match self.schemes.get(scheme) {
            Some(Scheme::ApiKeyHeader(_) | Scheme::ApiKeyQuery(_)) => self.api_key.is_some(),
            Some(Scheme::Bearer) => self.bearer.is_some(),
            Some(Scheme::OAuth2 { .. }) => self.oauth2.is_some(),
            None => false,
        }
    }

    /// The names of the query parameters that carry credentials (a script's own value for one
    /// is refused by the caller: it could not replace the key anyway).
    pub fn query_names(&self) -> Vec<&str> {
        self.schemes
            .values()
            .filter_map(|s| match s {
                Scheme::ApiKeyQuery(n) => Some(n.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Adds the credentials `security` asks for (the first alternative the config can
    /// satisfy), and the entry's headers, to a request.
    pub async fn apply(
        &self,
        client: &reqwest::Client,
        security: &[Vec<String>],
        url: &mut reqwest::Url,
        headers: &mut reqwest::header::HeaderMap,
    ) -> Result<(), String> {
        for (k, v) in &self.headers {
            headers.insert(k.clone(), v.clone());
        }
        let Some(chosen) = security
            .iter()
            .find(|alt| !alt.is_empty() && alt.iter().all(|s| self.can(s)))
        else {
            return Ok(());
        };
        for name in chosen {
            match self.schemes.get(name) {
                Some(Scheme::ApiKeyHeader(h)) => {
                    if let Some(k) = &self.api_key {
                        headers.insert(
                            h.clone(),
                            sensitive(k, "auth.apiKey").map_err(|e| e.to_string())?,
                        );
                    }
                }
                Some(Scheme::ApiKeyQuery(q)) => {
                    if let Some(k) = &self.api_key {
                        url.query_pairs_mut().append_pair(q, k);
                    }
                }
                Some(Scheme::Bearer) => {
                    if let Some(b) = &self.bearer {
                        headers.insert(reqwest::header::AUTHORIZATION, b.clone());
                    }
                }
                Some(Scheme::OAuth2 { token_url }) => {
                    if let Some(o) = &self.oauth2 {
                        let token = o
                            .token(client, token_url.as_deref(), &self.base, &self.redactor())
                            .await?;
                        self.remember_token(&token);
                        headers.insert(reqwest::header::AUTHORIZATION, token);
                    }
                }
                None => {}
            }
        }
        Ok(())
    }
}

impl OAuth2 {
    /// The current token, fetched again when it is (almost) expired. One fetch at a time.
    /// The token URL is the entry's `tokenUrl`, else the spec's, which must then be on
    /// `base`'s host (the client secret goes only where the operator said); `redactor` cleans
    /// what the endpoint answers.
    async fn token(
        &self,
        client: &reqwest::Client,
        spec_url: Option<&str>,
        base: &reqwest::Url,
        redactor: &Redactor,
    ) -> Result<HeaderValue, String> {
        let mut held = self.token.lock().await;
        if let Some(t) = held.as_ref() {
            if Instant::now() < t.refresh_at {
                return Ok(t.value.clone());
            }
        }
        let parsed = match (self.token_url.as_deref(), spec_url) {
            (Some(url), _) => {
                reqwest::Url::parse(url).map_err(|e| format!("the token URL is not valid: {e}"))?
            }
            (None, Some(url)) => spec_token_url(url, base)?,
            (None, None) => return Err("the spec's oauth2 scheme has no clientCredentials tokenUrl: set auth.oauth2.tokenUrl".into()),
        };
        if !allowed_url(&parsed) {
            return Err(
                "the token URL must be https:// (plain http only to 127.0.0.1 or localhost)".into(),
            );
        }
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "client_credentials");
            if !self.scopes.is_empty() {
                form.append_pair("scope", &self.scopes.join(" "));
            }
            form.finish()
        };
        let fail = |m: String| {
            redactor.text(&format!(
                "the OAuth 2 token request to {} failed: {m}",
                parsed.as_str()
            ))
        };
        let send = client
            .post(parsed.clone())
            .basic_auth(
                url_encode(&self.client_id),
                Some(url_encode(&self.client_secret)),
            )
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(form)
            .timeout(TOKEN_TIMEOUT)
            .send();
        let mut resp = send
            .await
            .map_err(|e| fail(crate::tools::catalog::error_chain(&e.without_url())))?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| fail(crate::tools::catalog::error_chain(&e.without_url())))?
        {
            if body.len() + chunk.len() > MAX_TOKEN_ANSWER {
                return Err(fail(format!(
                    "its answer is larger than {MAX_TOKEN_ANSWER} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            // The endpoint's error code (`invalid_client`…) only: its answer is not echoed.
            let code = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| {
                    v.get("error")
                        .and_then(Value::as_str)
                        .map(|s| crate::term::clip(&redactor.text(s), 60))
                })
                .unwrap_or_default();
            return Err(fail(format!(
                "HTTP {status} {code}; check auth.oauth2 (client id and secret, scopes)"
            )));
        }
        let answer: Value =
            serde_json::from_slice(&body).map_err(|_| fail("its answer is not JSON".into()))?;
        let access = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| fail("its answer has no access_token".into()))?;
        let value = sensitive(&format!("Bearer {access}"), "the OAuth 2 token")
            .map_err(|e| e.to_string())?;
        let life = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(Duration::from_secs)
            .unwrap_or(Duration::from_secs(3600));
        let margin = REFRESH_MARGIN.min(life / 2);
        *held = Some(Token {
            value: value.clone(),
            refresh_at: Instant::now() + life - margin,
        });
        Ok(value)
    }
}

/// A token URL taken from the spec (relative ones resolved against `base`, as OpenAPI says):
/// only on `base`'s scheme, host and port, or the entry must name it.
fn spec_token_url(url: &str, base: &reqwest::Url) -> Result<reqwest::Url, String> {
    let parsed = base
        .join(url)
        .map_err(|e| format!("the spec's tokenUrl is not valid: {e}"))?;
    let same = parsed.scheme() == base.scheme()
        && parsed.host_str() == base.host_str()
        && parsed.port_or_known_default() == base.port_or_known_default();
    if !same {
        return Err(format!(
            "the spec's clientCredentials tokenUrl {} is not on baseUrl's host ({}): the client secret is not sent there; set auth.oauth2.tokenUrl in the entry if that endpoint is the right one",
            crate::term::clip(parsed.as_str(), 200),
            base.host_str().unwrap_or_default()
        ));
    }
    Ok(parsed)
}

/// RFC 6749 §2.3.1: the client id and secret are form-encoded before HTTP Basic.
fn url_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
