//! Sensitive values: what the operator's detectors find in what the gateway returns is replaced
//! by placeholders (`⟪email:3⟫`), and a placeholder in a later tool call's arguments is
//! replaced by its value just before the call, for the tools `reveal_to` allows.
//!
//! - [`SensitiveConfig`] is `sandbox.sensitive` (and a principal policy's, which can only add
//!   detectors, patterns and fields);
//! - [`Sensitive`] is one config compiled (cached: compiled once per distinct config);
//! - [`detect`]: the detectors; [`placeholders`]: one session's map.
//!
//! The redaction itself ([`Redactor`]) and the substitution ([`Sensitive::substitute`]) work on
//! JSON values and strings; where they are applied is the execution's business
//! (`exec/placeholders.rs`).
//!
//! May import `error`, `trace`, `term` only.

pub mod detect;
pub mod placeholders;

use aho_corasick::{AhoCorasick, MatchKind};
use detect::Detectors;
use placeholders::{mentions, Placeholders};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use wildmatch::WildMatch;

/// `sandbox.sensitive` (or a principal policy's `sensitive`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SensitiveConfig {
    /// Built-in detectors: `email`, `phone`, `card`, `iban`, `secret`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detect: Vec<String>,
    /// The operator's detectors: kind → regex.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub patterns: BTreeMap<String, String>,
    /// Fields a tool's result marks sensitive: `server:tool` glob → JSON pointers. The kind of
    /// such a value is the pointer's last segment (`/contact/email` → `email`), lowercased,
    /// other characters than `a-z0-9_` dropped (`field` when nothing is left).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Vec<String>>,
    /// Which tools may receive the real value of each kind (`server:tool` globs). None by default.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reveal_to: BTreeMap<String, Vec<String>>,
    /// Keep real values in the audit log (a documented risk; the operator's config only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub audit_real_values: bool,
}

/// Why a `sensitive` config was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SensitiveError {
    #[error("unknown detector {0:?}: the built-ins are email, phone, card, iban, secret (add your own under \"patterns\")")]
    UnknownDetector(String),
    #[error("{0:?} is not a kind name: use 1-32 of a-z, 0-9, '_', starting with a letter")]
    BadKind(String),
    #[error("the pattern of {kind:?} is refused: {reason}")]
    BadPattern { kind: String, reason: String },
    #[error("{0} patterns; at most {max}", max = detect::MAX_PATTERNS)]
    TooManyPatterns(usize),
    #[error("the field {pointer:?} of {tool:?} is not a JSON pointer (it starts with '/')")]
    BadPointer { tool: String, pointer: String },
    #[error("{origin}: the pattern of {kind:?} differs from the one already configured; use another kind name")]
    Conflict { origin: String, kind: String },
    #[error("{origin}: a principal policy can only add detectors, patterns and fields; reveal_to and audit_real_values are the operator's (sandbox.sensitive)")]
    NotAddOnly { origin: String },
}

impl SensitiveConfig {
    /// Whether it turns anything on.
    pub fn is_empty(&self) -> bool {
        self.detect.is_empty() && self.patterns.is_empty() && self.fields.is_empty()
    }

    /// Adds a principal policy's config (`origin` names it): more detectors, patterns and
    /// fields only.
    pub fn add(&mut self, origin: &str, more: &SensitiveConfig) -> Result<(), SensitiveError> {
        if !more.reveal_to.is_empty() || more.audit_real_values {
            return Err(SensitiveError::NotAddOnly {
                origin: origin.into(),
            });
        }
        for d in &more.detect {
            if !self.detect.contains(d) {
                self.detect.push(d.clone());
            }
        }
        for (kind, p) in &more.patterns {
            match self.patterns.get(kind) {
                Some(old) if old != p => {
                    return Err(SensitiveError::Conflict {
                        origin: origin.into(),
                        kind: kind.clone(),
                    })
                }
                _ => {
                    self.patterns.insert(kind.clone(), p.clone());
                }
            }
        }
        for (tool, pointers) in &more.fields {
            let list = self.fields.entry(tool.clone()).or_default();
            for p in pointers {
                if !list.contains(p) {
                    list.push(p.clone());
                }
            }
        }
        Ok(())
    }
}

/// The kind of a value at `pointer`: its last segment, as a kind name.
fn pointer_kind(pointer: &str) -> String {
    let last = pointer.rsplit('/').next().unwrap_or("");
    let mut kind: String = last
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
        .take(32)
        .collect();
    if !kind.starts_with(|c: char| c.is_ascii_lowercase()) {
        kind = "field".into();
    }
    kind
}

/// One `sensitive` config, compiled.
#[derive(Debug)]
pub struct Sensitive {
    config: SensitiveConfig,
    detectors: Detectors,
    /// `server:tool` glob → (pointer, kind).
    fields: Vec<(WildMatch, Vec<(String, String)>)>,
    /// kind → tools that may receive its values.
    reveal: BTreeMap<String, Vec<(String, WildMatch)>>,
}

/// Compiled configs, so a principal's policy built per request does not compile again.
static COMPILED: Mutex<Vec<Arc<Sensitive>>> = Mutex::new(Vec::new());
const MAX_COMPILED: usize = 32;

impl Sensitive {
    /// `config` compiled (or the compiled copy of an equal config).
    pub fn compile(config: &SensitiveConfig) -> Result<Arc<Sensitive>, SensitiveError> {
        {
            let cache = COMPILED.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = cache.iter().find(|s| s.config == *config) {
                return Ok(s.clone());
            }
        }
        let detectors = Detectors::new(&config.detect, &config.patterns)?;
        let mut fields = Vec::new();
        for (tool, pointers) in &config.fields {
            let mut list = Vec::new();
            for p in pointers {
                if !p.starts_with('/') {
                    return Err(SensitiveError::BadPointer {
                        tool: tool.clone(),
                        pointer: p.clone(),
                    });
                }
                list.push((p.clone(), pointer_kind(p)));
            }
            fields.push((WildMatch::new(tool), list));
        }
        let mut reveal = BTreeMap::new();
        for (kind, tools) in &config.reveal_to {
            if !detect::valid_kind(kind) {
                return Err(SensitiveError::BadKind(kind.clone()));
            }
            reveal.insert(
                kind.clone(),
                tools
                    .iter()
                    .map(|t| (t.clone(), WildMatch::new(t)))
                    .collect(),
            );
        }
        let compiled = Arc::new(Sensitive {
            config: config.clone(),
            detectors,
            fields,
            reveal,
        });
        let mut cache = COMPILED.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_COMPILED {
            cache.remove(0);
        }
        cache.push(compiled.clone());
        Ok(compiled)
    }

    pub fn config(&self) -> &SensitiveConfig {
        &self.config
    }

    pub fn detectors(&self) -> &Detectors {
        &self.detectors
    }

    /// Whether the audit log keeps real values (the operator opted in).
    pub fn audit_real_values(&self) -> bool {
        self.config.audit_real_values
    }

    /// Remembers the values at the configured pointers of `server:tool`'s answer in `map`.
    pub fn remember_fields(&self, qualified: &str, answer: &Value, map: &mut Placeholders) {
        for (glob, list) in &self.fields {
            if !glob.matches(qualified) {
                continue;
            }
            for (pointer, kind) in list {
                match answer.pointer(pointer) {
                    Some(Value::String(s)) => map.remember(kind, s),
                    Some(v @ Value::Number(_)) => map.remember(kind, &v.to_string()),
                    _ => {}
                }
            }
        }
    }

    /// Whether `server:tool` may receive values of `kind`; else the tools that may (empty: none).
    pub fn reveals(&self, kind: &str, qualified: &str) -> Result<(), Vec<String>> {
        let tools = self.reveal.get(kind);
        if tools.is_some_and(|t| t.iter().any(|(_, g)| g.matches(qualified))) {
            return Ok(());
        }
        Err(tools
            .map(|t| t.iter().map(|(s, _)| s.clone()).collect())
            .unwrap_or_default())
    }

    /// A redactor for one pass with `map` (the values `fields` marked are matched literally).
    pub fn redactor(&self, map: &Placeholders) -> Redactor<'_> {
        let literals: Vec<(String, String)> = map
            .field_values()
            .filter(|(_, v)| v.len() >= 3)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let literal = if literals.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(literals.iter().map(|(_, v)| v.as_str()))
                .ok()
        };
        Redactor {
            sensitive: self,
            literal,
            kinds: literals.into_iter().map(|(k, _)| k).collect(),
        }
    }

    /// Replaces each placeholder in `args`' strings by its value, when `map` has it and
    /// `reveal_to` lets `server:tool` receive its kind. Keys are left as they are.
    pub fn substitute(
        &self,
        map: &Placeholders,
        qualified: &str,
        args: &mut Value,
    ) -> Result<bool, SubstituteError> {
        match args {
            Value::String(s) => {
                let found = mentions(s);
                if found.is_empty() {
                    return Ok(false);
                }
                let mut out = String::with_capacity(s.len());
                let mut at = 0;
                for m in &found {
                    let placeholder = s[m.start..m.end].to_string();
                    let Some(value) = map.value(m.kind, m.n) else {
                        return Err(SubstituteError::Unknown { placeholder });
                    };
                    if let Err(allowed) = self.reveals(m.kind, qualified) {
                        return Err(SubstituteError::NotRevealed {
                            placeholder,
                            kind: m.kind.to_string(),
                            tool: qualified.to_string(),
                            allowed,
                        });
                    }
                    out.push_str(&s[at..m.start]);
                    out.push_str(value);
                    at = m.end;
                }
                out.push_str(&s[at..]);
                *s = out;
                Ok(true)
            }
            Value::Array(items) => {
                let mut any = false;
                for v in items {
                    any |= self.substitute(map, qualified, v)?;
                }
                Ok(any)
            }
            Value::Object(fields) => {
                let mut any = false;
                for v in fields.values_mut() {
                    any |= self.substitute(map, qualified, v)?;
                }
                Ok(any)
            }
            _ => Ok(false),
        }
    }
}

/// Why a placeholder in a call's arguments was not replaced (`PERMISSION_DENIED`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubstituteError {
    #[error("the arguments hold {placeholder}, which is not a placeholder of this session: placeholders belong to one session of one tenant, and one from another session (or one this session never returned) is never resolved. Pass only placeholders this session's executions returned")]
    Unknown { placeholder: String },
    #[error("the arguments hold {placeholder}, a value of kind `{kind}`, and the rule sandbox.sensitive.reveal_to.{kind} does not let {tool} receive it ({}); pass it only to a tool the rule allows, or ask the operator", allowed_text(allowed))]
    NotRevealed {
        placeholder: String,
        kind: String,
        tool: String,
        allowed: Vec<String>,
    },
}

fn allowed_text(allowed: &[String]) -> String {
    if allowed.is_empty() {
        "it allows no tool".into()
    } else {
        format!("it allows {}", allowed.join(", "))
    }
}

/// One redaction pass: the values `map` already holds (matched literally), then the detectors.
pub struct Redactor<'a> {
    sensitive: &'a Sensitive,
    literal: Option<AhoCorasick>,
    kinds: Vec<String>,
}

impl Redactor<'_> {
    /// Whether `s` holds anything this pass would replace.
    pub fn finds(&self, s: &str) -> bool {
        self.literal.as_ref().is_some_and(|a| a.is_match(s))
            || self.sensitive.detectors.find(s).next().is_some()
    }

    /// `s` with every sensitive value replaced by its placeholder; `None` when nothing was found.
    pub fn redact_str(&self, s: &str, map: &mut Placeholders) -> Option<String> {
        let first = self.literal.as_ref().and_then(|re| {
            let mut out = String::new();
            let mut at = 0;
            for m in re.find_iter(s) {
                let kind = &self.kinds[m.pattern().as_usize()];
                out.push_str(&s[at..m.start()]);
                out.push_str(&map.placeholder(kind, &s[m.start()..m.end()]));
                at = m.end();
            }
            if at == 0 && out.is_empty() {
                return None;
            }
            out.push_str(&s[at..]);
            Some(out)
        });
        let text = first.as_deref().unwrap_or(s);
        let mut out = String::new();
        let mut at = 0;
        let mut any = false;
        for f in self.sensitive.detectors.find(text) {
            out.push_str(&text[at..f.start]);
            out.push_str(&map.placeholder(f.kind, &text[f.start..f.end]));
            at = f.end;
            any = true;
        }
        if !any {
            return first;
        }
        out.push_str(&text[at..]);
        Some(out)
    }

    /// Redacts every string of `value` in place, object keys included.
    pub fn redact_value(&self, value: &mut Value, map: &mut Placeholders) {
        match value {
            Value::String(s) => {
                if let Some(r) = self.redact_str(s, map) {
                    *s = r;
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.redact_value(v, map);
                }
            }
            Value::Object(fields) => {
                let renamed = fields.keys().any(|k| self.finds(k));
                if renamed {
                    let old = std::mem::take(fields);
                    for (k, mut v) in old {
                        self.redact_value(&mut v, map);
                        let k = self.redact_str(&k, map).unwrap_or(k);
                        fields.insert(k, v);
                    }
                } else {
                    for v in fields.values_mut() {
                        self.redact_value(v, map);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
