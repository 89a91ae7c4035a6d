//! Allow/deny rules for tool calls, checked by the host before a call is forwarded.
//!
//! A rule is a pattern over the qualified name `server:tool`, with `*` (any run of characters,
//! also empty) and `?` (one character) as the only wildcards (matched with `wildmatch`). A
//! pattern without `:` names a whole server (`memory` is `memory:*`).
//!
//! A [`Rules`] set decides: a deny match refuses (deny wins); otherwise, when it has an allow list,
//! the call must match one allow pattern; with no allow list everything not denied is allowed.
//!
//! A [`Policy`] is a stack of rule sets (the config's `sandbox` section, then `--allow`/`--deny`
//! from the command line). A call must pass **every** set, so a later layer can only narrow what
//! an earlier one allows — a command-line flag never widens the config.

use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

/// A malformed pattern.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("policy pattern {0:?} is not valid: use server:tool with * and ? wildcards, like \"filesystem:read_*\"")]
    BadPattern(String),
}

/// One pattern, kept in source form for messages.
#[derive(Debug, Clone)]
struct Pattern {
    source: String,
    matcher: WildMatch,
}

impl Pattern {
    fn parse(source: &str) -> Result<Pattern, PolicyError> {
        let s = source.trim();
        let valid = !s.is_empty()
            && s.matches(':').count() <= 1
            && !s.starts_with(':')
            && s.chars().all(|c| !c.is_control() && !c.is_whitespace());
        if !valid {
            return Err(PolicyError::BadPattern(source.to_string()));
        }
        let full = if s.contains(':') {
            if s.ends_with(':') {
                return Err(PolicyError::BadPattern(source.to_string()));
            }
            s.to_string()
        } else {
            format!("{s}:*")
        };
        Ok(Pattern {
            matcher: WildMatch::new(&full),
            source: s.to_string(),
        })
    }

    fn matches(&self, qualified: &str) -> bool {
        self.matcher.matches(qualified)
    }
}

/// The `allow`/`deny` lists as written in the config (`"sandbox": {"allow": [...], "deny": [...]}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleLists {
    /// When present (even empty), only matching tools may be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// One compiled rule set with a name for messages ("config", "--allow/--deny").
#[derive(Debug, Clone)]
pub struct Rules {
    origin: String,
    allow: Option<Vec<Pattern>>,
    deny: Vec<Pattern>,
}

impl Rules {
    pub fn new(
        origin: impl Into<String>,
        allow: Option<&[String]>,
        deny: &[String],
    ) -> Result<Rules, PolicyError> {
        let compile = |list: &[String]| -> Result<Vec<Pattern>, PolicyError> {
            list.iter().map(|p| Pattern::parse(p)).collect()
        };
        Ok(Rules {
            origin: origin.into(),
            allow: allow.map(compile).transpose()?,
            deny: compile(deny)?,
        })
    }

    /// A rule set that allows nothing.
    pub fn deny_all(origin: impl Into<String>) -> Rules {
        Rules {
            origin: origin.into(),
            allow: Some(Vec::new()),
            deny: Vec::new(),
        }
    }

    pub fn from_lists(origin: impl Into<String>, lists: &RuleLists) -> Result<Rules, PolicyError> {
        Rules::new(origin, lists.allow.as_deref(), &lists.deny)
    }

    /// `None` when allowed; the reason when refused.
    fn refusal(&self, qualified: &str) -> Option<String> {
        if let Some(p) = self.deny.iter().find(|p| p.matches(qualified)) {
            return Some(format!(
                "{qualified} is denied by the {} rule deny \"{}\"",
                self.origin, p.source
            ));
        }
        match &self.allow {
            Some(allow) if !allow.iter().any(|p| p.matches(qualified)) => Some(format!(
                "{qualified} is not in the {} allow list ({})",
                self.origin,
                if allow.is_empty() {
                    "empty".to_string()
                } else {
                    allow
                        .iter()
                        .map(|p| format!("\"{}\"", p.source))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
            _ => None,
        }
    }
}

/// Every rule set a call must pass, and the `ask` rules: a call that passes every set but
/// matches an ask pattern waits for a person's approval (deny > ask > allow). The default policy
/// allows everything and asks nothing.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    layers: Vec<Rules>,
    /// `(origin, pattern)`: "config" or "--ask".
    ask: Vec<(String, Pattern)>,
}

impl Policy {
    pub fn allow_all() -> Self {
        Policy::default()
    }

    /// Adds a rule set; it can only narrow what the policy allows.
    pub fn with(mut self, rules: Rules) -> Self {
        self.layers.push(rules);
        self
    }

    pub fn is_allow_all(&self) -> bool {
        self.layers
            .iter()
            .all(|l| l.allow.is_none() && l.deny.is_empty())
    }

    /// `Ok` when `server:tool` may be called; else why not (for `PERMISSION_DENIED`).
    pub fn check(&self, server: &str, tool: &str) -> Result<(), String> {
        let qualified = format!("{server}:{tool}");
        match self.layers.iter().find_map(|l| l.refusal(&qualified)) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    pub fn allows(&self, server: &str, tool: &str) -> bool {
        self.check(server, tool).is_ok()
    }

    /// Adds `ask` patterns (from `origin`, for messages): matching calls wait for approval.
    pub fn with_ask(mut self, origin: &str, patterns: &[String]) -> Result<Self, PolicyError> {
        for p in patterns {
            self.ask.push((origin.to_string(), Pattern::parse(p)?));
        }
        Ok(self)
    }

    /// The rule that makes `server:tool` wait for approval, as a person reads it
    /// (`config rule ask "filesystem:write_*"`), or `None`. Only meaningful for a call that
    /// [`Policy::check`] allowed: deny wins over ask.
    pub fn asks(&self, server: &str, tool: &str) -> Option<String> {
        let qualified = format!("{server}:{tool}");
        self.ask
            .iter()
            .find(|(_, p)| p.matches(&qualified))
            .map(|(origin, p)| format!("{origin} rule ask \"{}\"", p.source))
    }
}

/// Patterns a call is pre-approved by (`--approve`): compiled like the policy's.
#[derive(Debug, Clone, Default)]
pub struct PreApproved(Vec<Pattern>);

impl PreApproved {
    pub fn new(patterns: &[String]) -> Result<Self, PolicyError> {
        patterns
            .iter()
            .map(|p| Pattern::parse(p))
            .collect::<Result<Vec<_>, _>>()
            .map(PreApproved)
    }

    /// The `--approve` pattern that matches `server:tool`, if any.
    pub fn matching(&self, server: &str, tool: &str) -> Option<&str> {
        let qualified = format!("{server}:{tool}");
        self.0
            .iter()
            .find(|p| p.matches(&qualified))
            .map(|p| p.source.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(allow: Option<&[&str]>, deny: &[&str]) -> RuleLists {
        RuleLists {
            allow: allow.map(|a| a.iter().map(|s| s.to_string()).collect()),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn deny_wins_and_allow_list_restricts() {
        let p = Policy::allow_all().with(
            Rules::from_lists(
                "config",
                &lists(
                    Some(&["filesystem:read_*", "memory"]),
                    &["filesystem:read_media_file"],
                ),
            )
            .unwrap(),
        );
        assert!(p.allows("filesystem", "read_text_file"));
        assert!(p.allows("memory", "create_entities"));
        assert!(!p.allows("filesystem", "write_file"));
        assert!(!p.allows("everything", "echo"));
        let why = p.check("filesystem", "read_media_file").unwrap_err();
        assert_eq!(
            why,
            "filesystem:read_media_file is denied by the config rule deny \"filesystem:read_media_file\""
        );
        let why = p.check("filesystem", "write_file").unwrap_err();
        assert_eq!(
            why,
            "filesystem:write_file is not in the config allow list (\"filesystem:read_*\", \"memory\")"
        );
    }

    #[test]
    fn layers_only_narrow() {
        let config = Rules::from_lists("config", &lists(None, &["fs:write_file"])).unwrap();
        let cli = Rules::from_lists("--allow/--deny", &lists(Some(&["fs:*"]), &[])).unwrap();
        let p = Policy::allow_all().with(config).with(cli);
        assert!(p.allows("fs", "read"));
        assert!(!p.allows("fs", "write_file"));
        assert!(!p.allows("other", "x"));
        assert!(Policy::allow_all().allows("any", "thing"));
        assert!(Policy::allow_all().is_allow_all());
    }

    #[test]
    fn empty_allow_list_denies_everything() {
        let p = Policy::allow_all().with(Rules::new("config", Some(&[]), &[]).unwrap());
        assert!(!p.allows("a", "b"));
    }

    #[test]
    fn wildcards_do_not_cross_the_colon_by_accident() {
        let p = Policy::allow_all()
            .with(Rules::from_lists("config", &lists(Some(&["mem?ry:read_*"]), &[])).unwrap());
        assert!(p.allows("memory", "read_graph"));
        assert!(!p.allows("memory", "create_entities"));
        // "*" alone is every tool of every server.
        let all = Policy::allow_all().with(Rules::new("c", Some(&["*".into()]), &[]).unwrap());
        assert!(all.allows("x", "y"));
    }

    #[test]
    fn deny_wins_over_ask_and_ask_over_allow() {
        let p = Policy::allow_all()
            .with(Rules::from_lists("config", &lists(Some(&["fs"]), &["fs:delete_*"])).unwrap())
            .with_ask("config", &["fs:write_*".into(), "fs:delete_*".into()])
            .unwrap();
        assert!(p.check("fs", "delete_file").is_err());
        assert!(p.check("fs", "write_file").is_ok());
        assert_eq!(
            p.asks("fs", "write_file").as_deref(),
            Some("config rule ask \"fs:write_*\"")
        );
        assert_eq!(p.asks("fs", "read_file"), None);
        assert!(Policy::allow_all()
            .with_ask("--ask", &["a:b:c".into()])
            .is_err());
        let pre = PreApproved::new(&["fs:write_*".into()]).unwrap();
        assert_eq!(pre.matching("fs", "write_file"), Some("fs:write_*"));
        assert_eq!(pre.matching("fs", "read_file"), None);
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in ["", ":x", "a:b:c", "fs:", "a b:c"] {
            assert!(
                Rules::new("c", None, &[bad.to_string()]).is_err(),
                "{bad:?} accepted"
            );
        }
    }
}
