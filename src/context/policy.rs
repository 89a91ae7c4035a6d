//! Allow/deny rules for tool calls, checked by the host before a call is forwarded.
//!
//! A rule is a pattern over the qualified name `server:tool`, with `*` (any run of characters,
//! also empty) and `?` (one character) as the only wildcards (matched with `wildmatch`). A
//! pattern without `:` names a whole server (`memory` is `memory:*`).
//!
//! A [`Rules`] set decides: a deny match refuses (deny wins); otherwise, when it has an allow list,
//! the call must match one allow pattern; with no allow list everything not denied is allowed.
//!
//! A rule may carry a condition on the call's arguments ([`RuleEntry::Conditioned`], CEL over
//! `args`, see [`super::condition`]): it applies only when the condition holds. A condition that
//! cannot be evaluated refuses the call (fail closed), whichever list the rule is in. Checked
//! without arguments ([`Policy::check`], for listings), a conditioned allow rule counts as
//! allowing and a conditioned deny rule as not denying: the call is decided when it is made.
//!
//! A [`Policy`] is a stack of rule sets (the config's `sandbox` section, then `--allow`/`--deny`
//! from the command line). A call must pass **every** set, so a later layer can only narrow what
//! an earlier one allows — a command-line flag never widens the config.

use super::condition::{CallArgs, Condition};
use super::flow::{FlowError, FlowPolicy, FlowRuleConfig, FlowScope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wildmatch::WildMatch;

/// A malformed pattern.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("policy pattern {0:?} is not valid: use server:tool with * and ? wildcards, like \"filesystem:read_*\"")]
    BadPattern(String),
    #[error("rule {rule}: the condition `if` is not valid CEL over `args`: {message}")]
    BadCondition { rule: String, message: String },
    #[error("rule name {0:?} is not valid: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadName(String),
    /// `memory.delete_entities`: a server name never holds a dot, so the rule would match
    /// nothing.
    #[error("POLICY_DOT_NAME: {0:?} is written server.tool; tool names are written server:tool everywhere — write {1:?}")]
    DotName(String, String),
}

/// One entry of an `allow`, `deny` or `ask` list: a glob, or a glob with a condition on the
/// arguments and an optional name (`{"tool": "payments:refund", "if": "args.amount > 100",
/// "name": "big-refunds"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RuleEntry {
    Glob(String),
    Conditioned(ConditionedRule),
}

/// The object form of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionedRule {
    pub tool: String,
    #[serde(rename = "if", default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl From<String> for RuleEntry {
    fn from(s: String) -> Self {
        RuleEntry::Glob(s)
    }
}

/// Rule names: what denials, traces and the audit name.
fn valid_rule_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// One pattern, kept in source form for messages.
#[derive(Debug, Clone)]
struct Pattern {
    source: String,
    matcher: WildMatch,
    /// Given in the config, or derived (`tool if condition`); `None` for a plain glob, which
    /// messages name by its source.
    name: Option<String>,
    condition: Option<Condition>,
}

/// What a rule says of one call.
enum Verdict {
    /// It does not match (another tool, or its condition is false).
    Skip,
    Applies,
    /// Its condition could not be evaluated: the call is refused.
    Failed(String),
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
        // Server names hold no dot: `memory.delete_entities` is the other spelling of a name.
        if s.split(':')
            .next()
            .is_some_and(|server| server.contains('.'))
        {
            return Err(PolicyError::DotName(s.to_string(), s.replacen('.', ":", 1)));
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
            name: None,
            condition: None,
        })
    }

    /// A list entry; `kind` (allow, deny, ask) names a derived rule.
    fn entry(entry: &RuleEntry, kind: &str) -> Result<Pattern, PolicyError> {
        match entry {
            RuleEntry::Glob(g) => Pattern::parse(g),
            RuleEntry::Conditioned(c) => {
                let mut p = Pattern::parse(&c.tool)?;
                if let Some(n) = &c.name {
                    if !valid_rule_name(n) {
                        return Err(PolicyError::BadName(n.clone()));
                    }
                }
                let shown = |cond: &str| {
                    let clipped: String = cond.chars().take(80).collect();
                    format!("{kind} {} if {clipped}", p.source)
                };
                let name = c
                    .name
                    .clone()
                    .unwrap_or_else(|| shown(c.condition.as_deref().unwrap_or("true")));
                if let Some(cond) = &c.condition {
                    p.condition = Some(Condition::compile(cond).map_err(|message| {
                        PolicyError::BadCondition {
                            rule: format!("\"{name}\""),
                            message,
                        }
                    })?);
                }
                p.name = Some(name);
                Ok(p)
            }
        }
    }

    fn matches(&self, qualified: &str) -> bool {
        self.matcher.matches(qualified)
    }

    /// How the rule reads in messages: `deny "fs:write_*"` or `rule "big-refunds" (deny
    /// payments:refund if args.amount > 100)`.
    fn describe(&self, kind: &str) -> String {
        match (&self.name, &self.condition) {
            (Some(name), Some(c)) => format!(
                "rule \"{name}\" ({kind} \"{}\" if {})",
                self.source,
                c.source()
            ),
            (Some(name), None) => format!("rule \"{name}\" ({kind} \"{}\")", self.source),
            _ => format!("rule {kind} \"{}\"", self.source),
        }
    }

    /// Whether the rule applies to a call of `qualified` with `args` (`None`: the name alone,
    /// where a condition counts as `assume`).
    fn verdict(&self, qualified: &str, args: Option<&CallArgs<'_>>, assume: bool) -> Verdict {
        if !self.matches(qualified) {
            return Verdict::Skip;
        }
        match (&self.condition, args) {
            (None, _) => Verdict::Applies,
            (Some(_), None) if assume => Verdict::Applies,
            (Some(_), None) => Verdict::Skip,
            (Some(c), Some(args)) => match c.eval(args) {
                Ok(true) => Verdict::Applies,
                Ok(false) => Verdict::Skip,
                Err(e) => Verdict::Failed(format!(
                    "{qualified} was refused: the condition of the {} could not be evaluated on its arguments ({e}); a condition that fails denies the call (fail closed)",
                    self.describe_kind()
                )),
            },
        }
    }

    fn describe_kind(&self) -> String {
        match &self.name {
            Some(name) => format!("rule \"{name}\""),
            None => format!("rule \"{}\"", self.source),
        }
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

    /// Like [`Rules::new`], from config entries (globs or conditioned rules).
    pub fn from_entries(
        origin: impl Into<String>,
        allow: Option<&[RuleEntry]>,
        deny: &[RuleEntry],
    ) -> Result<Rules, PolicyError> {
        let compile = |list: &[RuleEntry], kind: &str| -> Result<Vec<Pattern>, PolicyError> {
            list.iter().map(|p| Pattern::entry(p, kind)).collect()
        };
        Ok(Rules {
            origin: origin.into(),
            allow: allow.map(|a| compile(a, "allow")).transpose()?,
            deny: compile(deny, "deny")?,
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

    /// `None` when allowed; the reason when refused. `args`: the call's arguments (`None`: the
    /// name alone).
    fn refusal(&self, qualified: &str, args: Option<&CallArgs<'_>>) -> Option<String> {
        for p in &self.deny {
            match p.verdict(qualified, args, false) {
                Verdict::Skip => {}
                Verdict::Failed(why) => return Some(why),
                Verdict::Applies if p.name.is_none() => {
                    return Some(format!(
                        "{qualified} is denied by the {} rule deny \"{}\"",
                        self.origin, p.source
                    ))
                }
                Verdict::Applies => {
                    return Some(format!(
                        "{qualified} is denied by the {} {}",
                        self.origin,
                        p.describe("deny")
                    ))
                }
            }
        }
        let Some(allow) = &self.allow else {
            return None;
        };
        let mut failed = None;
        for p in allow {
            match p.verdict(qualified, args, true) {
                Verdict::Applies => return None,
                Verdict::Failed(why) => failed = failed.or(Some(why)),
                Verdict::Skip => {}
            }
        }
        if failed.is_some() {
            return failed;
        }
        let conditioned: Vec<String> = allow
            .iter()
            .filter(|p| p.condition.is_some() && p.matches(qualified))
            .map(|p| p.describe("allow"))
            .collect();
        if !conditioned.is_empty() {
            return Some(format!(
                "{qualified} is allowed by the {} only when its arguments satisfy {}; these do not",
                self.origin,
                conditioned.join(" or ")
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

/// `config` without what only the operator may set (to add it to another operator layer).
fn without_operator_keys(
    config: &super::sensitive::SensitiveConfig,
) -> super::sensitive::SensitiveConfig {
    super::sensitive::SensitiveConfig {
        reveal_to: Default::default(),
        audit_real_values: false,
        ..config.clone()
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
    /// Data-flow labels and rules (see `context::flow`).
    flow: std::sync::Arc<FlowPolicy>,
    /// Sensitive values and their placeholders (see `context::sensitive`): `None` when off.
    sensitive: Option<std::sync::Arc<super::sensitive::Sensitive>>,
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

    /// `Ok` when `server:tool` may be called, judged by its name alone (conditioned rules: an
    /// allow counts, a deny does not — the call is decided with its arguments by
    /// [`Policy::check_call`]); else why not.
    pub fn check(&self, server: &str, tool: &str) -> Result<(), String> {
        let qualified = format!("{server}:{tool}");
        match self.layers.iter().find_map(|l| l.refusal(&qualified, None)) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// `Ok` when this call (`server:tool` with `args`) may be made; else why not (for
    /// `PERMISSION_DENIED`). An ask rule whose condition cannot be evaluated refuses too.
    pub fn check_call(&self, server: &str, tool: &str, args: &Value) -> Result<(), String> {
        let qualified = format!("{server}:{tool}");
        let args = CallArgs::new(args);
        let args = &args;
        if let Some(reason) = self
            .layers
            .iter()
            .find_map(|l| l.refusal(&qualified, Some(args)))
        {
            return Err(reason);
        }
        for (_, p) in &self.ask {
            if let Verdict::Failed(why) = p.verdict(&qualified, Some(args), false) {
                return Err(why);
            }
        }
        Ok(())
    }

    pub fn allows(&self, server: &str, tool: &str) -> bool {
        self.check(server, tool).is_ok()
    }

    /// What the gate decides for this call (the schema check aside): refused, asked, or allowed.
    pub fn decide(&self, server: &str, tool: &str, args: &Value) -> Decision {
        if let Err(reason) = self.check_call(server, tool, args) {
            return Decision::Deny(reason);
        }
        match self.asks_call(server, tool, Some(args)) {
            Some(rule) => Decision::Ask(rule),
            None => Decision::Allow,
        }
    }

    /// Adds `origin`'s tool labels and flow rules (they can only add refusals).
    pub fn with_flow(
        mut self,
        origin: &str,
        labels: &std::collections::BTreeMap<String, Vec<String>>,
        flows: &[FlowRuleConfig],
    ) -> Result<Self, FlowError> {
        if !labels.is_empty() || !flows.is_empty() {
            std::sync::Arc::make_mut(&mut self.flow).add(origin, labels, flows)?;
        }
        Ok(self)
    }

    /// The same policy with the operator's `flow_scope`.
    pub fn with_flow_scope(mut self, scope: FlowScope) -> Self {
        std::sync::Arc::make_mut(&mut self.flow).scope = scope;
        self
    }

    /// The data-flow labels and rules.
    pub fn flow(&self) -> &FlowPolicy {
        &self.flow
    }

    /// Adds a `sensitive` config: the operator's (`operator`: the base, `reveal_to` included)
    /// or a principal policy's (`origin`), which can only add detectors, patterns and fields.
    pub fn with_sensitive(
        mut self,
        origin: &str,
        config: &super::sensitive::SensitiveConfig,
        operator: bool,
    ) -> Result<Self, super::sensitive::SensitiveError> {
        if *config == super::sensitive::SensitiveConfig::default() {
            return Ok(self);
        }
        let merged = match (&self.sensitive, operator) {
            (None, true) => config.clone(),
            (Some(base), true) => {
                let mut c = config.clone();
                c.add(origin, &without_operator_keys(base.config()))?;
                c
            }
            (base, false) => {
                let mut c = base
                    .as_ref()
                    .map(|b| b.config().clone())
                    .unwrap_or_default();
                c.add(origin, config)?;
                c
            }
        };
        self.sensitive = if merged.is_empty() {
            None
        } else {
            Some(super::sensitive::Sensitive::compile(&merged)?)
        };
        Ok(self)
    }

    /// The compiled `sensitive` config, when detection is on.
    pub fn sensitive(&self) -> Option<&std::sync::Arc<super::sensitive::Sensitive>> {
        self.sensitive.as_ref()
    }

    /// Adds `ask` patterns (from `origin`, for messages): matching calls wait for approval.
    pub fn with_ask(mut self, origin: &str, patterns: &[String]) -> Result<Self, PolicyError> {
        for p in patterns {
            self.ask.push((origin.to_string(), Pattern::parse(p)?));
        }
        Ok(self)
    }

    /// Adds `ask` entries of a config (globs or conditioned rules).
    pub fn with_ask_entries(
        mut self,
        origin: &str,
        entries: &[RuleEntry],
    ) -> Result<Self, PolicyError> {
        for e in entries {
            self.ask
                .push((origin.to_string(), Pattern::entry(e, "ask")?));
        }
        Ok(self)
    }

    /// The rule that makes `server:tool` wait for approval, as a person reads it
    /// (`config rule ask "filesystem:write_*"`), or `None`. Only meaningful for a call that
    /// [`Policy::check`] allowed: deny wins over ask.
    pub fn asks(&self, server: &str, tool: &str) -> Option<String> {
        self.asks_call(server, tool, None)
    }

    /// Like [`Policy::asks`] for a call with `args`: a conditioned ask rule asks when its
    /// condition holds (one that cannot be evaluated was refused by [`Policy::check_call`]).
    pub fn asks_call(&self, server: &str, tool: &str, args: Option<&Value>) -> Option<String> {
        let qualified = format!("{server}:{tool}");
        let args = args.map(CallArgs::new);
        let args = args.as_ref();
        self.ask
            .iter()
            .find(|(_, p)| matches!(p.verdict(&qualified, args, false), Verdict::Applies))
            .map(|(origin, p)| match &p.name {
                None => format!("{origin} rule ask \"{}\"", p.source),
                Some(_) => format!("{origin} {}", p.describe("ask")),
            })
    }
}

/// A call's fate under a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// It waits for a person's approval; the rule that asks.
    Ask(String),
    /// Refused (`PERMISSION_DENIED`); why, naming the rule.
    Deny(String),
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
#[path = "policy_tests.rs"]
mod tests;
