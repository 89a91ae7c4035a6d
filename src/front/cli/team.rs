//! `mcp-sandbox token …` (API tokens of `serve --http`).

use crate::config::Config;
use crate::front::cli::learning::StateArgs;
use crate::front::cli::UsageError;
use crate::store::tokens::{valid_token_name, TokenRecord};
use crate::store::Store;
use crate::term::{escape, outln};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

/// What every API token starts with (so secret scanners and people can recognise one).
pub const TOKEN_PREFIX: &str = "mcps_";

#[derive(Debug, Args)]
pub struct TeamStoreArgs {
    #[command(flatten)]
    pub state: StateArgs,
    /// Configuration file: its sandbox.state, and its sandbox.policies to check --policy.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

impl TeamStoreArgs {
    /// The store (`--state`, else the config's `sandbox.state`, else the default: the one the
    /// gateway started with the same config writes), said on stderr with where its name came
    /// from, so an empty answer from the wrong store is not mistaken for an empty store.
    pub(super) fn open(&self) -> Result<(Store, Option<Config>), UsageError> {
        let config = match &self.config {
            Some(p) => Some(Config::load(p).map_err(|e| UsageError(e.to_string()))?),
            None => None,
        };
        let path = self
            .state
            .path(config.as_ref())
            .map_err(|e| UsageError(e.to_string()))?;
        let from = match (&self.state.state, &self.config, config.as_ref().and_then(Config::state_path)) {
            (Some(_), _, _) => "--state".to_string(),
            (None, Some(file), Some(_)) => format!("sandbox.state of {}", file.display()),
            (None, Some(file), None) => format!(
                "the default store: {} has no sandbox.state",
                file.display()
            ),
            (None, None, _) => {
                "the default store: no --state, no --config; pass --config FILE to read the gateway's".to_string()
            }
        };
        crate::term::errln(&format!(
            "mcp-sandbox: store {} ({})",
            escape(&path.display().to_string()),
            escape(&from)
        ));
        let store = Store::open(&path).map_err(|e| UsageError(e.to_string()))?;
        Ok((store, config))
    }
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token: prints it once (only its SHA-256 is stored).
    Create {
        /// A name for the token (letters, digits, -, _, .); the principal is `token:NAME`.
        name: String,
        /// A policy of the config's sandbox.policies that narrows what the token may do.
        #[arg(long, value_name = "NAME")]
        policy: Option<String>,
        /// The tenant whose capabilities and graph the token uses (default: default).
        #[arg(long, value_name = "NAME", default_value = crate::context::principal::DEFAULT_TENANT)]
        tenant: String,
        /// Lifetime, e.g. 30d, 12h, 90m (default: no expiry).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        expires: Option<Duration>,
        /// Print {name, token, expires_at} as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: TeamStoreArgs,
    },
    /// List tokens (names, policies, tenants, expiry; never the tokens).
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: TeamStoreArgs,
    },
    /// Revoke a token at once.
    Revoke {
        name: String,
        #[command(flatten)]
        store: TeamStoreArgs,
    },
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e}; use a duration such as 30d, 12h, 90m"))
}

fn now_ms() -> f64 {
    crate::trace::now_ms()
}

pub(super) fn time_text(ms: f64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(ms.max(0.0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// A new random token: the prefix and 256 bits from the OS, in hex.
pub fn new_token() -> Result<String, UsageError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| UsageError(format!("cannot get random bytes from the OS: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{TOKEN_PREFIX}{hex}"))
}

pub fn token(args: TokenArgs) -> Result<i32, UsageError> {
    match args.command {
        TokenCommand::Create {
            name,
            policy,
            tenant,
            expires,
            json,
            store,
        } => {
            if !valid_token_name(&name) {
                return Err(UsageError(format!(
                    "token name {:?} is not allowed: use letters, digits, '-', '_' or '.' (at most 64)",
                    escape(&name)
                )));
            }
            if !crate::context::principal::valid_tenant_name(&tenant) {
                return Err(UsageError(format!(
                    "tenant {:?} is not allowed: use letters, digits, '-' or '_' (at most 64)",
                    escape(&tenant)
                )));
            }
            let (store, config) = store.open()?;
            if let (Some(p), Some(c)) = (&policy, &config) {
                if !c.sandbox.policies.contains_key(p) {
                    return Err(UsageError(format!(
                        "policy '{}' is not in the config's sandbox.policies ({})",
                        escape(p),
                        c.sandbox
                            .policies
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
            let secret = new_token()?;
            let hash = crate::exec::audit::sha256_hex(secret.as_bytes());
            let now = now_ms();
            let record = TokenRecord {
                name: name.clone(),
                policy,
                tenant,
                created_at: now,
                expires_at: expires.map(|d| now + d.as_secs_f64() * 1000.0),
                revoked_at: None,
            };
            store
                .create_token(&record, &hash)
                .map_err(|e| UsageError(e.to_string()))?;
            if json {
                outln(
                    &serde_json::json!({
                        "name": name,
                        "token": secret,
                        "expires_at": record.expires_at.map(time_text),
                    })
                    .to_string(),
                );
            } else {
                outln(&secret);
                crate::term::errln(&format!(
                    "mcp-sandbox: token '{name}' created{}; it is shown only this once (send it as `Authorization: Bearer <token>`)",
                    record
                        .expires_at
                        .map(|e| format!(", expires {}", time_text(e)))
                        .unwrap_or_default()
                ));
            }
            Ok(0)
        }
        TokenCommand::List { json, store } => {
            let (store, _) = store.open()?;
            let tokens = store.list_tokens().map_err(|e| UsageError(e.to_string()))?;
            if json {
                outln(&serde_json::to_string_pretty(&tokens).unwrap_or_default());
                return Ok(0);
            }
            let now = now_ms();
            for t in tokens {
                let state = t.unusable(now).unwrap_or("active");
                outln(&format!(
                    "{}  tenant={}  policy={}  created={}  expires={}  {}",
                    escape(&t.name),
                    escape(&t.tenant),
                    escape(t.policy.as_deref().unwrap_or("-")),
                    time_text(t.created_at),
                    t.expires_at
                        .map(time_text)
                        .unwrap_or_else(|| "never".into()),
                    state
                ));
            }
            Ok(0)
        }
        TokenCommand::Revoke { name, store } => {
            let (store, _) = store.open()?;
            if store
                .revoke_token(&name, now_ms())
                .map_err(|e| UsageError(e.to_string()))?
            {
                crate::term::errln(&format!("mcp-sandbox: token '{}' revoked", escape(&name)));
                Ok(0)
            } else {
                Err(UsageError(format!(
                    "no active token named '{}' (see mcp-sandbox token list)",
                    escape(&name)
                )))
            }
        }
    }
}
