//! The config keys of a shared gateway, in the `sandbox` section: `auth` (who may call
//! `serve --http`), `policies` (what each kind of caller may do) and `audit` (see
//! [`crate::exec::audit::AuditConfig`]).
//!
//! ```json
//! "sandbox": {
//!   "auth": {"tokens": true,
//!            "jwt": {"issuer": "https://idp.example", "audience": "mcp-sandbox",
//!                    "jwks_file": "jwks.json", "scopes": {"mcp:read": "readonly"}}},
//!   "policies": {"readonly": {"deny": ["filesystem:write_*"], "limits": {"timeout_ms": 5000},
//!                             "executions_per_minute": 60, "max_concurrent": 4}},
//!   "audit": {"code": "hash", "args": "digest", "retain_days": 90}
//! }
//! ```

use crate::context::limits::{RequestedLimits, ShareCaps};
use crate::context::policy::{PolicyError, RuleEntry, Rules};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `sandbox.auth`: present means authentication is configured (and required on every HTTP
/// request).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Accept API tokens made with `mcp-sandbox token create` (default true).
    #[serde(default = "yes")]
    pub tokens: bool,
    /// Accept JWT access tokens from an identity provider.
    #[serde(default)]
    pub jwt: Option<JwtConfig>,
    /// The public URL of the MCP endpoint (`https://gateway.example/mcp`), named in the
    /// protected-resource metadata; default: `http://<bound address>/mcp`.
    #[serde(default)]
    pub resource: Option<String>,
}

fn yes() -> bool {
    true
}

/// `sandbox.auth.jwt`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// Required `iss`.
    pub issuer: String,
    /// Required in `aud`.
    pub audience: String,
    /// A JWKS file (relative to the config's directory).
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// A JWKS URL (https; plain http only on loopback), fetched at start and cached; fetched
    /// again when a token names an unknown key id, at most once per `jwks_refetch_after_s`.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Seconds between JWKS fetches triggered by unknown key ids (default 60).
    #[serde(default)]
    pub jwks_refetch_after_s: Option<u64>,
    /// Scope → policy name (in `sandbox.policies`). A token needs at least one of these scopes
    /// (403 otherwise); each of its mapped scopes' policies applies.
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
    /// The claim naming the caller's tenant (default: none; every subject is in `default`).
    #[serde(default)]
    pub tenant_claim: Option<String>,
}

/// One entry of `sandbox.policies`: narrows the config's policy and limits for the callers it
/// applies to, and bounds their rate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrincipalPolicy {
    #[serde(default)]
    pub allow: Option<Vec<RuleEntry>>,
    #[serde(default)]
    pub deny: Vec<RuleEntry>,
    /// Calls that wait for a person's approval (added to the config's `ask`).
    #[serde(default)]
    pub ask: Vec<RuleEntry>,
    /// Each may only lower the config's limits.
    #[serde(default)]
    pub limits: Option<RequestedLimits>,
    /// Executions a principal may start in any 60 s.
    #[serde(default)]
    pub executions_per_minute: Option<u32>,
    /// Executions a principal may have running at once.
    #[serde(default)]
    pub max_concurrent: Option<u32>,
    /// Executions a principal may have running or queued at once on a gateway (its fair
    /// share: tasks, yielded runs and calls together); replaces `sandbox.fair_share`'s
    /// `per_principal` (the smallest of its policies' applies).
    #[serde(default)]
    pub max_executions: Option<u32>,
    /// Whether the principal may save capabilities (`save_capability`). Token and JWT
    /// principals may only when one of their policies says `true` and none says `false`.
    #[serde(default)]
    pub save_capabilities: Option<bool>,
    /// Whether the principal is an operator of the web view (`/ui`): it sees every tenant's
    /// executions, graph and capabilities, not only its own tenant's. Token and JWT principals
    /// are operators only when one of their policies says `true` and none says `false`.
    #[serde(default)]
    pub operator: Option<bool>,
    /// Whether the principal may answer pending approvals on the web view: of its own tenant,
    /// or of every tenant when it is also an operator. Token and JWT principals may only when
    /// one of their policies says `true` (or `"operator": true`) and none says `false`.
    #[serde(default)]
    pub approve: Option<bool>,
    /// Whether the principal may answer the questions of its own executions' calls on the web
    /// view (default: no — someone else approves). Same rule as `approve`.
    #[serde(default)]
    pub approve_own_calls: Option<bool>,
    /// Data-flow labels added to the config's (see `context::flow`).
    #[serde(default)]
    pub labels: BTreeMap<String, Vec<String>>,
    /// Data-flow rules added to the config's.
    #[serde(default)]
    pub flows: Vec<crate::context::flow::FlowRuleConfig>,
    /// Detectors, patterns and fields added to `sandbox.sensitive` (never `reveal_to`).
    #[serde(default)]
    pub sensitive: crate::context::sensitive::SensitiveConfig,
}

impl PrincipalPolicy {
    /// `policy` narrowed by this principal policy (its allow/deny rules, then its ask rules).
    /// A rule the config's validation would refuse denies everything (fail closed).
    pub fn narrow(
        &self,
        name: &str,
        policy: crate::context::policy::Policy,
    ) -> crate::context::policy::Policy {
        let origin = format!("policy '{name}'");
        match self.rules(name) {
            Ok(rules) => policy
                .with(rules)
                .with_ask_entries(&origin, &self.ask)
                .ok()
                .and_then(|p| p.with_flow(&origin, &self.labels, &self.flows).ok())
                .and_then(|p| p.with_sensitive(&origin, &self.sensitive, false).ok())
                .unwrap_or_else(|| {
                    crate::context::policy::Policy::allow_all().with(Rules::deny_all(origin))
                }),
            Err(_) => policy.with(Rules::deny_all(origin)),
        }
    }

    pub fn rules(&self, name: &str) -> Result<Rules, PolicyError> {
        Rules::from_entries(
            format!("policy '{name}'"),
            self.allow.as_deref(),
            &self.deny,
        )
    }
}

/// `sandbox.fair_share`: how many executions (running or queued: tasks, yielded runs and calls
/// together) one principal and one tenant may have on a gateway at once. Unset keys keep the
/// defaults ([`ShareCaps::GATEWAY`]); `tenants.<name>` sets them for one tenant; a principal's
/// policy may set its own `max_executions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FairShareConfig {
    #[serde(default)]
    pub per_principal: Option<u32>,
    #[serde(default)]
    pub per_tenant: Option<u32>,
    #[serde(default)]
    pub tenants: BTreeMap<String, TenantShare>,
}

/// `sandbox.fair_share.tenants.<name>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantShare {
    #[serde(default)]
    pub per_principal: Option<u32>,
    #[serde(default)]
    pub per_tenant: Option<u32>,
}

impl FairShareConfig {
    /// The caps of `principal`: the defaults, then this section's keys, then its tenant's,
    /// then the smallest `max_executions` of its policies.
    pub fn caps_of(
        &self,
        principal: &crate::context::principal::Principal,
        all: &BTreeMap<String, PrincipalPolicy>,
    ) -> ShareCaps {
        let mut caps = ShareCaps::GATEWAY;
        let tenant = self
            .tenants
            .get(&principal.tenant)
            .copied()
            .unwrap_or_default();
        for (p, t) in [
            (self.per_principal, self.per_tenant),
            (tenant.per_principal, tenant.per_tenant),
        ] {
            caps.per_principal = p.unwrap_or(caps.per_principal);
            caps.per_tenant = t.unwrap_or(caps.per_tenant);
        }
        let own = principal
            .policies
            .iter()
            .filter_map(|n| all.get(n))
            .filter_map(|p| p.max_executions)
            .min();
        caps.per_principal = own.unwrap_or(caps.per_principal);
        caps
    }

    fn validate(&self) -> Result<(), String> {
        let zero = |v: Option<u32>| v == Some(0);
        if zero(self.per_principal) || zero(self.per_tenant) {
            return Err(
                "sandbox.fair_share: per_principal and per_tenant must be at least 1".into(),
            );
        }
        for (name, t) in &self.tenants {
            if zero(t.per_principal) || zero(t.per_tenant) {
                return Err(format!(
                    "sandbox.fair_share.tenants.{name}: per_principal and per_tenant must be at least 1"
                ));
            }
        }
        Ok(())
    }
}

/// Whether `principal` may save capabilities, or why not. The local principal (CLI, stdio) and
/// `anonymous` (HTTP without authentication, loopback only: the operator) may; a token or JWT
/// principal only when one of its policies has `"save_capabilities": true` and none `false`.
pub fn may_save_capabilities(
    principal: &crate::context::principal::Principal,
    all: &BTreeMap<String, PrincipalPolicy>,
) -> Result<(), String> {
    let mine: Vec<(&String, &PrincipalPolicy)> = principal
        .policies
        .iter()
        .filter_map(|n| all.get_key_value(n))
        .collect();
    if let Some((name, _)) = mine
        .iter()
        .find(|(_, p)| p.save_capabilities == Some(false))
    {
        return Err(format!(
            "{} may not save capabilities: its policy '{name}' says \"save_capabilities\": false",
            principal.name
        ));
    }
    let team = principal.name.starts_with("token:") || principal.name.starts_with("jwt:");
    if !team || mine.iter().any(|(_, p)| p.save_capabilities == Some(true)) {
        return Ok(());
    }
    Err(format!(
        "{} may not save capabilities: a token or JWT principal needs a policy with \"save_capabilities\": true (its policies: {}); ask the operator",
        principal.name,
        if principal.policies.is_empty() {
            "none".to_string()
        } else {
            principal.policies.join(", ")
        }
    ))
}

/// Whether `principal` is an operator of the web view: `local` (the `ui` subcommand) and
/// `anonymous` (HTTP without authentication, loopback only) are; a token or JWT principal only
/// when one of its policies has `"operator": true` and none `false`.
pub fn is_operator(
    principal: &crate::context::principal::Principal,
    all: &BTreeMap<String, PrincipalPolicy>,
) -> bool {
    let mine: Vec<&PrincipalPolicy> = principal
        .policies
        .iter()
        .filter_map(|n| all.get(n))
        .collect();
    if mine.iter().any(|p| p.operator == Some(false)) {
        return false;
    }
    let team = principal.name.starts_with("token:") || principal.name.starts_with("jwt:");
    !team || mine.iter().any(|p| p.operator == Some(true))
}

/// Whether one of `principal`'s policies says `true` for `flag` and none says `false`; a principal
/// that is not a token or JWT (`local`, `anonymous`: the person at this machine) unless one says
/// `false`.
fn policy_flag(
    principal: &crate::context::principal::Principal,
    all: &BTreeMap<String, PrincipalPolicy>,
    flag: impl Fn(&PrincipalPolicy) -> Option<bool>,
) -> bool {
    let mine: Vec<Option<bool>> = principal
        .policies
        .iter()
        .filter_map(|n| all.get(n))
        .map(flag)
        .collect();
    if mine.contains(&Some(false)) {
        return false;
    }
    let team = principal.name.starts_with("token:") || principal.name.starts_with("jwt:");
    !team || mine.contains(&Some(true))
}

/// Whether `principal` may answer pending approvals on the web view (its tenant's, or every
/// tenant's for an operator): `"approve": true` or `"operator": true`, and no `"approve": false`.
pub fn may_approve(
    principal: &crate::context::principal::Principal,
    all: &BTreeMap<String, PrincipalPolicy>,
) -> bool {
    let refused = principal
        .policies
        .iter()
        .filter_map(|n| all.get(n))
        .any(|p| p.approve == Some(false));
    !refused && (policy_flag(principal, all, |p| p.approve) || is_operator(principal, all))
}

/// Whether `principal` may answer the questions of its own executions (`"approve_own_calls"`).
pub fn may_approve_own(
    principal: &crate::context::principal::Principal,
    all: &BTreeMap<String, PrincipalPolicy>,
) -> bool {
    policy_flag(principal, all, |p| p.approve_own_calls)
}

/// Whether one of `principal`'s policies says `"approve_own_calls": false`: then no channel
/// takes its answer to its own executions' questions — not its client's elicitation, not an
/// `input_required` retry, not `tasks/update` (nor the web view, see [`may_approve_own`]); only
/// another approver can answer.
pub fn refuses_own_approvals(
    principal: &crate::context::principal::Principal,
    all: &BTreeMap<String, PrincipalPolicy>,
) -> bool {
    principal
        .policies
        .iter()
        .filter_map(|n| all.get(n))
        .any(|p| p.approve_own_calls == Some(false))
}

/// Whether any principal can answer on the web view: without authentication the person at this
/// machine can; with it, some policy must say `"approve": true` or `"operator": true`.
pub fn someone_may_approve(authenticated: bool, all: &BTreeMap<String, PrincipalPolicy>) -> bool {
    !authenticated
        || all
            .values()
            .any(|p| p.approve == Some(true) || p.operator == Some(true))
}

/// Checks the gateway keys of a parsed `sandbox` section.
pub fn validate(
    auth: Option<&AuthConfig>,
    policies: &BTreeMap<String, PrincipalPolicy>,
    fair_share: &FairShareConfig,
) -> Result<(), String> {
    fair_share.validate()?;
    for (name, p) in policies {
        p.rules(name)
            .map_err(|e| format!("sandbox.policies.{name}: {e}"))?;
        crate::context::policy::Policy::allow_all()
            .with_ask_entries(&format!("policy '{name}'"), &p.ask)
            .map_err(|e| format!("sandbox.policies.{name}.ask: {e}"))?;
        crate::context::policy::Policy::allow_all()
            .with_flow(&format!("policy '{name}'"), &p.labels, &p.flows)
            .map_err(|e| format!("sandbox.policies.{name}.labels/flows: {e}"))?;
        crate::context::policy::Policy::allow_all()
            .with_sensitive(&format!("policy '{name}'"), &p.sensitive, false)
            .map_err(|e| format!("sandbox.policies.{name}.sensitive: {e}"))?;
        if p.executions_per_minute == Some(0)
            || p.max_concurrent == Some(0)
            || p.max_executions == Some(0)
        {
            return Err(format!(
                "sandbox.policies.{name}: executions_per_minute, max_concurrent and max_executions must be at least 1 (leave them out for no bound, or the default share)"
            ));
        }
    }
    if let Some(jwt) = auth.and_then(|a| a.jwt.as_ref()) {
        if jwt.jwks_file.is_some() == jwt.jwks_url.is_some() {
            return Err("sandbox.auth.jwt: give exactly one of jwks_file and jwks_url".into());
        }
        if let Some(url) = &jwt.jwks_url {
            check_jwks_url(url)?;
        }
        if jwt.jwks_refetch_after_s == Some(0) {
            return Err("sandbox.auth.jwt.jwks_refetch_after_s must be at least 1".into());
        }
        for (scope, policy) in &jwt.scopes {
            if !policies.contains_key(policy) {
                return Err(format!(
                    "sandbox.auth.jwt.scopes: scope {scope:?} maps to policy {policy:?}, which is not in sandbox.policies"
                ));
            }
        }
    }
    Ok(())
}

/// `jwks_url` as the fetch will use it: parsed (WHATWG rules, as the HTTP client reads it),
/// without user info (`http://127.0.0.1@evil/` connects to `evil`), https, or plain http to a
/// loopback host: the host checked is the host that will be connected to.
pub fn check_jwks_url(url: &str) -> Result<url::Url, String> {
    let parsed = url::Url::parse(url)
        .map_err(|e| format!("sandbox.auth.jwt.jwks_url {url:?} is not a URL: {e}"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "sandbox.auth.jwt.jwks_url {url:?} must not contain user info (user@ or user:password@ before the host)"
        ));
    }
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(parsed),
        "http" if loopback => Ok(parsed),
        _ => Err(format!(
            "sandbox.auth.jwt.jwks_url {url:?} must be an https URL (plain http only on loopback): keys fetched in the clear could be replaced"
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn bad_gateway_keys_are_refused_with_a_reason() {
        let bad = [
            (
                r#"{"sandbox": {"policies": {"p": {"deny": ["a:b:c"]}}}}"#,
                "sandbox.policies.p",
            ),
            (
                r#"{"sandbox": {"policies": {"p": {"executions_per_minute": 0}}}}"#,
                "at least 1",
            ),
            (
                r#"{"sandbox": {"policies": {"p": {"limits": {"bogus": 1}}}}}"#,
                "unknown field",
            ),
            (r#"{"sandbox": {"auth": {"bogus": true}}}"#, "unknown field"),
            (
                r#"{"sandbox": {"auth": {"jwt": {"issuer": "i", "audience": "a"}}}}"#,
                "exactly one of jwks_file and jwks_url",
            ),
            (
                r#"{"sandbox": {"auth": {"jwt": {"issuer": "i", "audience": "a", "jwks_url": "http://10.0.0.1/k"}}}}"#,
                "must be an https URL",
            ),
            (
                r#"{"sandbox": {"auth": {"jwt": {"issuer": "i", "audience": "a", "jwks_url": "http://127.0.0.1:80@idp.example/k"}}}}"#,
                "must not contain user info",
            ),
            (
                r#"{"sandbox": {"auth": {"jwt": {"issuer": "i", "audience": "a", "jwks_url": "http://localhost.idp.example/k"}}}}"#,
                "must be an https URL",
            ),
            (
                r#"{"sandbox": {"auth": {"jwt": {"issuer": "i", "audience": "a", "jwks_url": "http://127.0.0.1.idp.example/k"}}}}"#,
                "must be an https URL",
            ),
            (
                r#"{"sandbox": {"auth": {"jwt": {"issuer": "i", "audience": "a", "jwks_file": "k", "scopes": {"s": "missing"}}}}}"#,
                "not in sandbox.policies",
            ),
            (
                r#"{"sandbox": {"audit": {"code": "some"}}}"#,
                "unknown variant",
            ),
        ];
        for (text, needle) in bad {
            let err = Config::parse(text, Path::new("/")).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let ok = r#"{"sandbox": {"auth": {"jwt": {"issuer": "i", "audience": "a",
            "jwks_url": "http://127.0.0.1:9/k", "scopes": {"s": "p"}}},
            "policies": {"p": {"allow": ["x:*"], "max_concurrent": 2}},
            "audit": {"code": "hash", "args": "full", "retain_days": 7}}}"#;
        let c = Config::parse(ok, Path::new("/")).unwrap();
        assert!(c.sandbox.auth.unwrap().tokens);
        assert_eq!(c.sandbox.policies["p"].max_concurrent, Some(2));
    }
}
