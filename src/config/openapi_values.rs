//! The value types of an OpenAPI server entry's keys (`auth`, `specBudget`), below both the
//! entry ([`crate::config::server_config`]) and its checks ([`crate::config::openapi_entry`],
//! which re-exports them).

use serde::Deserialize;

/// `auth` of an OpenAPI entry: the values the spec's security schemes ask for. Each value may
/// hold `${VAR}` (taken from the host's environment at start).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiAuth {
    /// The key of the spec's `apiKey` schemes (sent in the header or query they name).
    #[serde(default, rename = "apiKey")]
    pub api_key: Option<String>,
    /// The token of the spec's `http` `bearer` schemes.
    #[serde(default)]
    pub bearer: Option<String>,
    /// OAuth 2 client credentials for the spec's `oauth2` schemes.
    #[serde(default)]
    pub oauth2: Option<OAuth2ClientCredentials>,
}

/// OAuth 2 client credentials (RFC 6749 §4.4): the host fetches and refreshes the token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2ClientCredentials {
    #[serde(rename = "clientId")]
    pub client_id: String,
    #[serde(rename = "clientSecret")]
    pub client_secret: String,
    /// The token endpoint; default: the spec's `clientCredentials.tokenUrl`.
    #[serde(default, rename = "tokenUrl")]
    pub token_url: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// Default budget of a spec's parsed document (YAML aliases count at each use), bytes as
/// `tools::openapi::budget` counts them.
pub const DEFAULT_SPEC_PARSED_BYTES: u64 = 512 * 1024 * 1024;
/// Default budget of the resolved schemas of a spec's tools (local `$ref`s copied in).
pub const DEFAULT_SPEC_RESOLVED_BYTES: u64 = 512 * 1024 * 1024;
/// Default deepest nesting of a spec's document.
pub const DEFAULT_SPEC_DEPTH: usize = 256;
/// The most `specBudget.depth` may be raised to (a document is dropped recursively).
pub const MAX_SPEC_DEPTH: usize = 2048;

/// `specBudget` of an OpenAPI entry: how much loading its spec may take; past it the server
/// is unavailable with `CONFIG_OPENAPI_SPEC` naming the budget and the spec's part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpecBudget {
    /// The parsed document's size (what YAML aliases expand to counts at each use).
    #[serde(rename = "parsedBytes")]
    pub parsed_bytes: u64,
    /// The size of the tools' schemas with their `$ref`s resolved.
    #[serde(rename = "resolvedBytes")]
    pub resolved_bytes: u64,
    /// The deepest nesting of the document.
    pub depth: usize,
}

impl Default for SpecBudget {
    fn default() -> SpecBudget {
        SpecBudget {
            parsed_bytes: DEFAULT_SPEC_PARSED_BYTES,
            resolved_bytes: DEFAULT_SPEC_RESOLVED_BYTES,
            depth: DEFAULT_SPEC_DEPTH,
        }
    }
}
