//! Rules that name what is not there: a policy rule (`allow`/`deny`/`ask`, a principal's
//! policy, the command line's flags, `labels`, `sensitive.fields`, `sensitive.reveal_to`) is a
//! glob over `server:tool`; one naming a server that is not configured, or written `server.tool`,
//! would silently match nothing — a deny that fails open. [`check_servers`] refuses those when
//! the config is loaded (`POLICY_UNKNOWN_SERVER`, `POLICY_DOT_NAME`); [`unmatched`] finds the
//! globs that match none of the tools the servers listed (`POLICY_UNMATCHED_GLOB`). Such a
//! `deny` or `ask` rule fails open (the call it meant to stop goes through), so it refuses the
//! start unless the config says `"strict_policy": false`; the other globs (`allow`, which fails
//! closed, `labels`, `sensitive`) warn, and refuse under `--strict`.

use super::Config;
use crate::context::policy::RuleEntry;
use wildmatch::WildMatch;

/// Code of a rule naming a server that is not configured.
pub const POLICY_UNKNOWN_SERVER: &str = "POLICY_UNKNOWN_SERVER";
/// Code of a rule written `server.tool` instead of `server:tool`.
pub const POLICY_DOT_NAME: &str = "POLICY_DOT_NAME";
/// Code of a glob that matches none of the listed tools.
pub const POLICY_UNMATCHED_GLOB: &str = "POLICY_UNMATCHED_GLOB";

/// Globs found matching nothing after a server re-listed its tools (`list_changed`), since the
/// process started: read by the metrics (`policy_globs_unmatched_after_relist`).
static UNMATCHED_AFTER_RELIST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts one glob found matching nothing after a re-listing.
pub fn count_unmatched_after_relist() {
    UNMATCHED_AFTER_RELIST.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many globs were found matching nothing after re-listings.
pub fn unmatched_after_relist() -> u64 {
    UNMATCHED_AFTER_RELIST.load(std::sync::atomic::Ordering::Relaxed)
}

/// One rule's pattern and where it was written (`sandbox.deny[0]`, `--deny`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedRule {
    pub place: String,
    pub pattern: String,
    /// Whether a pattern without `:` names a whole server (allow/deny/ask); the other globs
    /// (`labels`, `fields`, `reveal_to`) are matched against `server:tool` as written.
    pub whole_server: bool,
    /// `Some("deny")` or `Some("ask")` for a rule that stops calls: matching nothing, it fails
    /// open.
    pub guard: Option<&'static str>,
}

impl NamedRule {
    fn new(place: String, pattern: &str, whole_server: bool) -> NamedRule {
        NamedRule {
            place,
            pattern: pattern.trim().to_string(),
            whole_server,
            guard: None,
        }
    }

    fn guarding(mut self, kind: Option<&'static str>) -> NamedRule {
        self.guard = kind;
        self
    }

    /// The pattern's server part and tool part, when the pattern names one tool (no wildcard).
    pub fn exact_tool(&self) -> Option<(&str, &str)> {
        let (server, tool) = self.pattern.split_once(':')?;
        (!has_wildcard(&self.pattern)).then_some((server, tool))
    }

    /// The server part (before the first `:`, or all of it).
    fn server(&self) -> &str {
        self.pattern
            .split_once(':')
            .map_or(self.pattern.as_str(), |(s, _)| s)
    }

    /// The glob over `server:tool` it is matched with.
    fn full(&self) -> String {
        if self.whole_server && !self.pattern.contains(':') {
            format!("{}:*", self.pattern)
        } else {
            self.pattern.clone()
        }
    }

    fn describe(&self) -> String {
        format!("{} {:?}", self.place, self.pattern)
    }
}

fn entry_tool(e: &RuleEntry) -> &str {
    match e {
        RuleEntry::Glob(g) => g,
        RuleEntry::Conditioned(c) => &c.tool,
    }
}

fn push_entries(out: &mut Vec<NamedRule>, place: &str, list: &[RuleEntry]) {
    let kind = [".deny", ".ask"]
        .into_iter()
        .find(|k| place.ends_with(k))
        .map(|k| &k[1..]);
    for (i, e) in list.iter().enumerate() {
        out.push(NamedRule::new(format!("{place}[{i}]"), entry_tool(e), true).guarding(kind));
    }
}

fn push_sensitive(
    out: &mut Vec<NamedRule>,
    place: &str,
    s: &crate::context::sensitive::SensitiveConfig,
) {
    for glob in s.fields.keys() {
        out.push(NamedRule::new(format!("{place}.fields"), glob, false));
    }
    for (kind, globs) in &s.reveal_to {
        for (i, glob) in globs.iter().enumerate() {
            out.push(NamedRule::new(
                format!("{place}.reveal_to.{kind}[{i}]"),
                glob,
                false,
            ));
        }
    }
}

/// Every rule of the config (its `sandbox` section and each of `sandbox.policies`) and of the
/// command line (`flags`: `("--deny", patterns)`).
pub fn rules_of(config: &Config, flags: &[(&str, &[String])]) -> Vec<NamedRule> {
    let mut out = Vec::new();
    let s = &config.sandbox;
    push_entries(&mut out, "sandbox.allow", s.allow.as_deref().unwrap_or(&[]));
    push_entries(&mut out, "sandbox.deny", &s.deny);
    push_entries(&mut out, "sandbox.ask", &s.ask);
    for glob in s.labels.keys() {
        out.push(NamedRule::new("sandbox.labels".into(), glob, false));
    }
    push_sensitive(&mut out, "sandbox.sensitive", &s.sensitive);
    for (name, p) in &s.policies {
        let place = format!("sandbox.policies.{name}");
        push_entries(
            &mut out,
            &format!("{place}.allow"),
            p.allow.as_deref().unwrap_or(&[]),
        );
        push_entries(&mut out, &format!("{place}.deny"), &p.deny);
        push_entries(&mut out, &format!("{place}.ask"), &p.ask);
        for glob in p.labels.keys() {
            out.push(NamedRule::new(format!("{place}.labels"), glob, false));
        }
        push_sensitive(&mut out, &format!("{place}.sensitive"), &p.sensitive);
    }
    for (flag, patterns) in flags {
        for p in patterns.iter() {
            let kind = match *flag {
                "--deny" => Some("deny"),
                "--ask" => Some("ask"),
                _ => None,
            };
            out.push(NamedRule::new(flag.to_string(), p, true).guarding(kind));
        }
    }
    out
}

/// The `server:tool` spelling of a `server.tool` name.
fn colon_form(pattern: &str) -> String {
    pattern.replacen('.', ":", 1)
}

/// The hint for a pattern written with a dot: `None` when it is not one.
pub fn dot_form_hint(pattern: &str) -> Option<String> {
    let server = pattern.split_once(':').map_or(pattern, |(s, _)| s);
    if !server.contains('.') {
        return None;
    }
    Some(format!(
        "{POLICY_DOT_NAME}: {pattern:?} is written server.tool; tool names are written server:tool everywhere — write {:?}",
        colon_form(pattern)
    ))
}

fn has_wildcard(s: &str) -> bool {
    s.contains('*') || s.contains('?')
}

/// Refuses a rule that names a server not in `servers` (by name, without wildcards), or is
/// written `server.tool`.
pub fn check_servers<'a>(
    rules: &[NamedRule],
    servers: impl Iterator<Item = &'a str> + Clone,
) -> Result<(), String> {
    for rule in rules {
        if let Some(hint) = dot_form_hint(&rule.pattern) {
            return Err(format!("{}: {hint}", rule.place));
        }
        let server = rule.server();
        if server.is_empty() || has_wildcard(server) || servers.clone().any(|s| s == server) {
            continue;
        }
        let configured: Vec<&str> = servers.clone().collect();
        let configured = if configured.is_empty() {
            "no server is configured (pass --config with an mcpServers section)".to_string()
        } else {
            format!("the configured servers are {}", configured.join(", "))
        };
        return Err(format!(
            "{POLICY_UNKNOWN_SERVER}: the rule {} names the server '{server}', which is not configured, so it would match nothing; {configured}. Fix the rule's server name, or add the server to mcpServers",
            rule.describe()
        ));
    }
    Ok(())
}

/// The rules whose glob matches none of `tools` (qualified `server:tool`), among those whose
/// server part matches one of `listed` (the servers whose tools are known): each with its
/// message.
pub fn unmatched<'r>(
    rules: &'r [NamedRule],
    listed: &[String],
    tools: &[String],
) -> Vec<(&'r NamedRule, String)> {
    let mut out = Vec::new();
    for rule in rules {
        let server = WildMatch::new(rule.server());
        if !listed.iter().any(|s| server.matches(s)) {
            continue;
        }
        let glob = WildMatch::new(&rule.full());
        if tools.iter().any(|t| glob.matches(t)) {
            continue;
        }
        out.push((
            rule,
            format!(
                "{POLICY_UNMATCHED_GLOB}: the rule {} matches none of the tools its server lists, so it has no effect; check the tool name with `mcp-sandbox tools`",
                rule.describe()
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(text: &str) -> Config {
        Config::parse(text, Path::new("/")).unwrap()
    }

    #[test]
    fn a_rule_naming_an_unknown_server_is_refused_with_the_configured_ones() {
        let c = config(
            r#"{"mcpServers": {"memory": {"command": "x"}, "fs": {"command": "y"}},
                "sandbox": {"deny": ["memory:x", "memroy:delete_*"]}}"#,
        );
        let err =
            check_servers(&rules_of(&c, &[]), c.servers.keys().map(String::as_str)).unwrap_err();
        assert_eq!(
            err,
            "POLICY_UNKNOWN_SERVER: the rule sandbox.deny[1] \"memroy:delete_*\" names the server 'memroy', which is not configured, so it would match nothing; the configured servers are fs, memory. Fix the rule's server name, or add the server to mcpServers"
        );
        let flags = ["memory.delete_entities".to_string()];
        let c = config(r#"{"mcpServers": {"memory": {"command": "x"}}}"#);
        let err = check_servers(
            &rules_of(&c, &[("--deny", &flags)]),
            c.servers.keys().map(String::as_str),
        )
        .unwrap_err();
        assert!(err.starts_with("--deny: POLICY_DOT_NAME"), "{err}");
        assert!(err.contains("write \"memory:delete_entities\""), "{err}");
        // Wildcard servers and labels of known servers pass.
        let c = config(
            r#"{"mcpServers": {"memory": {"command": "x"}},
                "sandbox": {"deny": ["*:delete_*"], "labels": {"memory:read_*": ["pii"]},
                 "policies": {"p": {"ask": ["crm:x"]}}}}"#,
        );
        let err =
            check_servers(&rules_of(&c, &[]), c.servers.keys().map(String::as_str)).unwrap_err();
        assert!(err.contains("sandbox.policies.p.ask[0] \"crm:x\""), "{err}");
    }

    #[test]
    fn globs_matching_no_listed_tool_are_reported() {
        let rules = [
            NamedRule::new("--deny".into(), "memory:delete_entitys", true),
            NamedRule::new("--deny".into(), "memory:delete_*", true),
            NamedRule::new("--deny".into(), "memory", true),
            NamedRule::new("--deny".into(), "other:x", true),
        ];
        let tools = ["memory:delete_entities".to_string()];
        let found = unmatched(&rules, &["memory".to_string()], &tools);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].1.contains("--deny \"memory:delete_entitys\""),
            "{found:?}"
        );
    }
}
