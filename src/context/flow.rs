//! Data-flow labels: which kinds of data an execution has read, and the flow rules that refuse
//! (or ask for) a later call because of them.
//!
//! The config labels tools by glob (`"labels": {"crm:*": ["private"]}`); a call whose answer
//! reached the script adds its tool's labels to the execution's [`Taint`] (shared with every
//! capability it calls, and — with `flow_scope: "session"` — carried from one execution of a
//! session to the next). A flow rule (`{"after": ["private"], "deny": ["egress"]}`) refuses a
//! call to a tool carrying one of its `deny` labels once every label of `after` has been read.
//! Labels work at execution granularity: the host never needs to know which value went where, so
//! no transformation inside the script (encoding, splitting, arithmetic) evades them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use wildmatch::WildMatch;

/// The most labels one tool may carry, and the most distinct labels an execution (or a session,
/// or a stored value) records. Past it, [`ALL_LABELS`] is recorded instead: fail closed.
pub const MAX_LABELS: usize = 64;

/// The label that stands for every label: recorded in place of the first label past
/// [`MAX_LABELS`]. Once it is read, every flow rule applies as if all its `after` labels were
/// read. Not a label name a config can use (`*` is not allowed in one).
pub const ALL_LABELS: &str = "*";

/// Adds `source` to `held` unless its label is there; past [`MAX_LABELS`] distinct labels,
/// [`ALL_LABELS`] joins instead (once). `true` when something joined.
pub fn join(held: &mut Vec<LabelSource>, source: LabelSource) -> bool {
    if held.iter().any(|s| s.label == source.label) {
        return false;
    }
    let tracked = held.iter().filter(|s| s.label != ALL_LABELS).count();
    if source.label != ALL_LABELS && tracked >= MAX_LABELS {
        if held.iter().any(|s| s.label == ALL_LABELS) {
            return false;
        }
        held.push(LabelSource {
            label: ALL_LABELS.to_string(),
            ..source
        });
        return true;
    }
    held.push(source);
    true
}

/// A flow rule as the config writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRuleConfig {
    /// Labels that must all have been read for the rule to apply.
    pub after: Vec<String>,
    /// Labels of the called tool that the rule refuses (`PERMISSION_DENIED`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// Labels of the called tool whose calls then wait for a person's approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    /// The rule's name in messages, traces and the audit log (derived when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// How long what an execution read counts: for the execution alone, or for the whole client
/// session (the model saw the outcome and may copy it into its next script).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowScope {
    /// Every session of the principal over HTTP — legacy `Mcp-Session-Id` sessions and MCP
    /// 2026-07-28 requests (whatever handle they pass) alike — shares the principal's labels,
    /// so what one era read constrains the other; stdio keeps its connection.
    #[default]
    Principal,
    /// The protocol session; for a request without one (MCP 2026-07-28), the principal: a model
    /// cannot shed labels by dropping or swapping its session handle.
    Session,
    /// The protocol session; for a request without one, its session handle (weaker: a model
    /// that omits the handle starts clean).
    Handle,
    Execution,
}

/// Why labels or flow rules were refused at load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    #[error("{origin} labels: {label:?} is not a label name (1-64 of a-z, 0-9, '_', '-')")]
    BadLabel { origin: String, label: String },
    #[error("{origin} labels: {glob:?} carries {count} labels; at most {MAX_LABELS}")]
    TooManyLabels {
        origin: String,
        glob: String,
        count: usize,
    },
    #[error("{rule}: \"after\" must name at least one label")]
    EmptyAfter { rule: String },
    #[error("{rule}: give \"deny\" or \"ask\" (the labels of the tools it stops)")]
    NoEffect { rule: String },
    #[error("{rule}: {name:?} is not a rule name (1-64 of A-Z, a-z, 0-9, '_', '-', '.')")]
    BadName { rule: String, name: String },
}

#[derive(Clone)]
struct FlowRule {
    /// As a person reads it: `config flow rule "no-exfiltration"` or `config flows[0]`.
    name: String,
    after: Vec<Arc<str>>,
    deny: Vec<Arc<str>>,
    ask: Vec<Arc<str>>,
}

/// The labels of tools and the flow rules of a policy (the config's, plus what principal
/// policies add: they can only add).
#[derive(Clone, Default)]
pub struct FlowPolicy {
    labels: Vec<(WildMatch, Vec<Arc<str>>)>,
    rules: Vec<FlowRule>,
    /// The operator's `flow_scope` (principal policies cannot change it).
    pub scope: FlowScope,
}

impl std::fmt::Debug for FlowPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowPolicy")
            .field("labels", &self.labels.len())
            .field("rules", &self.rules.len())
            .field("scope", &self.scope)
            .finish()
    }
}

fn label_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn rule_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn labels(origin: &str, list: &[String]) -> Result<Vec<Arc<str>>, FlowError> {
    list.iter()
        .map(|l| {
            if label_name(l) {
                Ok(Arc::from(l.as_str()))
            } else {
                Err(FlowError::BadLabel {
                    origin: origin.to_string(),
                    label: l.clone(),
                })
            }
        })
        .collect()
}

impl FlowPolicy {
    /// Whether labels are tracked at all (some tool is labelled).
    pub fn tracks(&self) -> bool {
        !self.labels.is_empty()
    }

    /// Whether any flow rule exists.
    pub fn has_rules(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Adds `origin`'s labels and flow rules (`origin`: "config" or "policy 'x'").
    pub fn add(
        &mut self,
        origin: &str,
        tool_labels: &BTreeMap<String, Vec<String>>,
        flows: &[FlowRuleConfig],
    ) -> Result<(), FlowError> {
        for (glob, list) in tool_labels {
            if list.len() > MAX_LABELS {
                return Err(FlowError::TooManyLabels {
                    origin: origin.to_string(),
                    glob: glob.clone(),
                    count: list.len(),
                });
            }
            self.labels
                .push((WildMatch::new(glob), labels(origin, list)?));
        }
        for (i, f) in flows.iter().enumerate() {
            let position = format!("{origin} flows[{i}]");
            let name = match &f.name {
                Some(n) if !rule_name(n) => {
                    return Err(FlowError::BadName {
                        rule: position,
                        name: n.clone(),
                    })
                }
                Some(n) => format!("{origin} flow rule \"{n}\""),
                None => position.clone(),
            };
            if f.after.is_empty() {
                return Err(FlowError::EmptyAfter { rule: position });
            }
            if f.deny.is_empty() && f.ask.is_empty() {
                return Err(FlowError::NoEffect { rule: position });
            }
            self.rules.push(FlowRule {
                name,
                after: labels(&position, &f.after)?,
                deny: labels(&position, &f.deny)?,
                ask: labels(&position, &f.ask)?,
            });
        }
        Ok(())
    }

    /// The labels `tool` (`server:tool`) carries, each once.
    pub fn labels_of(&self, tool: &str) -> Vec<Arc<str>> {
        let mut out: Vec<Arc<str>> = Vec::new();
        for (glob, list) in &self.labels {
            if glob.matches(tool) {
                for l in list {
                    if !out.contains(l) {
                        out.push(l.clone());
                    }
                }
            }
        }
        out
    }

    /// What the flow rules say of calling `tool` after reading what `read` holds.
    pub fn decide(&self, tool: &str, read: &[LabelSource]) -> FlowVerdict {
        if self.rules.is_empty() || read.is_empty() {
            return FlowVerdict::Allow;
        }
        // The tool's labels, once a rule's `after` is met (most calls meet none).
        let mut carried: Option<Vec<Arc<str>>> = None;
        let mut ask = None;
        // Past the cap the host no longer knows what was read: every rule applies.
        let all = read.iter().find(|s| s.label == ALL_LABELS);
        for rule in &self.rules {
            if all.is_none()
                && !rule
                    .after
                    .iter()
                    .all(|l| read.iter().any(|s| *s.label == **l))
            {
                continue;
            }
            let sources = || -> Vec<&LabelSource> {
                if let Some(all) = all {
                    return vec![all];
                }
                rule.after
                    .iter()
                    .filter_map(|l| read.iter().find(|s| *s.label == **l))
                    .collect()
            };
            let carried = carried.get_or_insert_with(|| self.labels_of(tool));
            if let Some(label) = carried.iter().find(|l| rule.deny.contains(l)) {
                return FlowVerdict::Deny {
                    rule: rule.name.clone(),
                    label: label.to_string(),
                    message: explain(tool, label, &sources(), &rule.name),
                };
            }
            if ask.is_none() {
                if let Some(label) = carried.iter().find(|l| rule.ask.contains(l)) {
                    ask = Some(FlowVerdict::Ask {
                        rule: rule.name.clone(),
                        label: label.to_string(),
                        message: explain(tool, label, &sources(), &rule.name),
                    });
                }
            }
        }
        ask.unwrap_or(FlowVerdict::Allow)
    }
}

/// "mail:send_mail is egress; this execution read private data from crm:get_customer at
/// 12.3 ms (config flows[0])".
fn explain(tool: &str, label: &str, sources: &[&LabelSource], rule: &str) -> String {
    let read: Vec<String> = sources
        .iter()
        .map(|s| match s.earlier {
            _ if s.label == ALL_LABELS => format!(
                "more than {MAX_LABELS} distinct labels, the most the host tracks (the first past it came from {}), so every flow rule applies as if all its labels were read; read fewer kinds of data in one execution or session",
                s.tool
            ),
            false => format!("{} data from {} at {:.1} ms", s.label, s.tool, s.at_ms),
            true => match &s.execution {
                // Kept for the principal (a request without a protocol session).
                Some(id) => format!(
                    "{} data from {} in an earlier execution ({id}) of the same principal",
                    s.label, s.tool
                ),
                None => format!(
                    "{} data from {} in an earlier execution of this session",
                    s.label, s.tool
                ),
            },
        })
        .collect();
    format!(
        "{tool} is {label}; this execution read {} ({rule})",
        read.join(" and ")
    )
}

/// What the flow rules decide for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowVerdict {
    Allow,
    /// The call waits for approval: the rule, the called tool's label, and why.
    Ask {
        rule: String,
        label: String,
        message: String,
    },
    /// Refused (`PERMISSION_DENIED`): the rule, the called tool's label, and why.
    Deny {
        rule: String,
        label: String,
        message: String,
    },
}

/// Where an execution first read a label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelSource {
    pub label: String,
    /// The tool whose answer brought it (`$state:load` for a loaded value).
    pub tool: String,
    /// Milliseconds since the execution started (0 for an earlier execution's).
    #[serde(default)]
    pub at_ms: f64,
    /// Read by an earlier execution of the session (or stored by one), not by this one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub earlier: bool,
    /// The execution that read it, once it is kept for later executions (a refusal names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<String>,
}

/// The labels one execution (with its capabilities) has read, each with where it was first
/// read. Shared through the execution's tree.
#[derive(Debug)]
pub struct Taint {
    started: Instant,
    /// What was read, and how many of those the trace has shown.
    read: Mutex<(Vec<LabelSource>, usize)>,
    /// With `flow_scope: "session"`: the labels of every execution of the session running in
    /// this process, read and written live (see [`SessionTaint`]).
    session: std::sync::OnceLock<Arc<SessionTaint>>,
    /// How many of the session's labels were taken in (it only grows).
    pulled: std::sync::atomic::AtomicUsize,
}

impl Default for Taint {
    fn default() -> Self {
        Taint {
            started: Instant::now(),
            read: Mutex::new((Vec::new(), 0)),
            session: std::sync::OnceLock::new(),
            pulled: Default::default(),
        }
    }
}

/// What the executions of one session have read, shared live by every execution of it that
/// runs in this process (`flow_scope: "session"`): a label one of them reads counts for the
/// calls the others send from that moment, not only for the executions that start after it
/// ends. Bounded like one execution's labels ([`MAX_LABELS`]).
#[derive(Debug, Default)]
pub struct SessionTaint {
    read: Mutex<Vec<LabelSource>>,
}

impl SessionTaint {
    /// Adds `source` unless its label is known; `true` when it was new.
    pub fn add(&self, source: &LabelSource) -> bool {
        let mut read = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if read.len() >= MAX_LABELS || read.iter().any(|s| s.label == source.label) {
            return false;
        }
        read.push(source.clone());
        true
    }

    /// What the session has read so far.
    pub fn read(&self) -> Vec<LabelSource> {
        self.read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn len(&self) -> usize {
        self.read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

impl Taint {
    /// Records that the answer of `tool` carrying `label` reached a script; `true` when the
    /// label is new to this execution.
    pub fn add(&self, label: &str, tool: &str) -> bool {
        let at_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let source = LabelSource {
            label: label.to_string(),
            tool: tool.to_string(),
            at_ms,
            earlier: false,
            execution: None,
        };
        let new = self.push(source.clone());
        if let Some(session) = self.session.get() {
            session.add(&source);
        }
        new
    }

    /// Joins the live labels of the session this execution belongs to: what it holds counts
    /// here from now on, and what this execution reads counts there at once (what it read
    /// before joining too).
    pub fn share(&self, session: Arc<SessionTaint>) {
        for source in self.with_read(<[LabelSource]>::to_vec) {
            session.add(&source);
        }
        if self.session.set(session).is_ok() {
            self.pull();
        }
    }

    /// Takes in the labels the session's other executions read since the last look.
    fn pull(&self) {
        let Some(session) = self.session.get() else {
            return;
        };
        let seen = self.pulled.load(std::sync::atomic::Ordering::Acquire);
        if session.len() == seen {
            return;
        }
        let theirs = session.read();
        let count = theirs.len();
        let mut read = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for s in theirs {
            if read.0.len() < MAX_LABELS && !read.0.iter().any(|r| r.label == s.label) {
                read.0.push(LabelSource {
                    earlier: true,
                    at_ms: 0.0,
                    ..s
                });
            }
        }
        // Stored while the lock is held: whoever sees the count sees these labels.
        self.pulled
            .store(count, std::sync::atomic::Ordering::Release);
    }

    /// Records labels read before this execution (the session's, or a loaded value's); the
    /// ones new to it.
    pub fn inherit(&self, sources: &[LabelSource]) -> usize {
        sources
            .iter()
            .filter(|s| {
                let source = LabelSource {
                    earlier: true,
                    at_ms: 0.0,
                    ..(*s).clone()
                };
                if let Some(session) = self.session.get() {
                    session.add(&source);
                }
                self.push(source)
            })
            .count()
    }

    fn push(&self, source: LabelSource) -> bool {
        // A lock poisoned by a panic elsewhere still records: forgetting a label fails open.
        let mut read = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        join(&mut read.0, source)
    }

    /// What was read so far.
    pub fn read(&self) -> Vec<LabelSource> {
        self.with_read(<[LabelSource]>::to_vec)
    }

    /// `f` of what was read so far, without copying it (the gate asks on every call). A lock
    /// poisoned by a panic elsewhere still shows what it holds: forgetting labels would let a
    /// call through that a flow rule refuses.
    pub fn with_read<R>(&self, f: impl FnOnce(&[LabelSource]) -> R) -> R {
        self.pull();
        let read = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&read.0)
    }

    /// The labels read since the last call (for `label_added` trace events).
    pub fn untraced(&self) -> Vec<LabelSource> {
        self.pull();
        let Ok(mut read) = self.read.lock() else {
            return Vec::new();
        };
        let from = read.1.min(read.0.len());
        read.1 = read.0.len();
        read.0[from..].to_vec()
    }
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
