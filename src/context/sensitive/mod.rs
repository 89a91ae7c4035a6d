//! Sensitive values: what the operator's detectors find in what the gateway returns is replaced
//! by placeholders (`⟪email:kqzvb:3⟫`), and a placeholder in a later tool call's arguments is
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
use placeholders::{mentions, NoRoom, Placeholders, Unresolved};
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

    /// Remembers the values at the configured pointers of `server:tool`'s answer in `map`:
    /// in the answer itself (`structuredContent`), and in the JSON a text answer holds (a
    /// server answering JSON as text: one text item, or each text item of a content array).
    /// Every string and number under a pointer is remembered. `Err` when a marked value finds
    /// no room in the map: it could not be masked, so the answer must not reach the script.
    pub fn remember_fields(
        &self,
        qualified: &str,
        answer: &Value,
        map: &mut Placeholders,
    ) -> Result<(), FieldError> {
        let lists: Vec<&Vec<(String, String)>> = self
            .fields
            .iter()
            .filter(|(glob, _)| glob.matches(qualified))
            .map(|(_, list)| list)
            .collect();
        if lists.is_empty() {
            return Ok(());
        }
        let mut texts: Vec<Value> = Vec::new();
        match answer {
            Value::String(s) => texts.extend(json_text(s)),
            Value::Array(items) => {
                for item in items {
                    if item.get("type").and_then(Value::as_str) == Some("text") {
                        texts.extend(item.get("text").and_then(Value::as_str).and_then(json_text));
                    }
                }
            }
            _ => {}
        }
        for doc in std::iter::once(answer).chain(texts.iter()) {
            for (pointer, kind) in lists.iter().copied().flatten() {
                if let Some(found) = doc.pointer(pointer) {
                    remember_leaves(kind, found, map).map_err(|why| FieldError {
                        tool: qualified.to_string(),
                        pointer: pointer.clone(),
                        why,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Whether `server:tool` may receive values of `kind`; else the tools that may (`None`:
    /// `reveal_to` has no entry for the kind).
    pub fn reveals(&self, kind: &str, qualified: &str) -> Result<(), Option<Vec<String>>> {
        let tools = self.reveal.get(kind);
        if tools.is_some_and(|t| t.iter().any(|(_, g)| g.matches(qualified))) {
            return Ok(());
        }
        Err(tools.map(|t| t.iter().map(|(s, _)| s.clone()).collect()))
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
        let exact = map
            .field_values()
            .map(|(k, v)| (v.to_string(), k.to_string()))
            .collect();
        Redactor {
            sensitive: self,
            literal,
            kinds: literals.into_iter().map(|(k, _)| k).collect(),
            exact,
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
                    let value = match map.value(m.kind, m.tag, m.n) {
                        Ok(value) => value,
                        Err(why) => {
                            return Err(SubstituteError::Unknown {
                                placeholder,
                                why,
                                form: map.form(),
                            })
                        }
                    };
                    match self.reveals(m.kind, qualified) {
                        Ok(()) => {}
                        Err(None) => {
                            return Err(SubstituteError::NoRule {
                                placeholder,
                                kind: m.kind.to_string(),
                                tool: qualified.to_string(),
                            })
                        }
                        Err(Some(allowed)) => {
                            return Err(SubstituteError::NotRevealed {
                                placeholder,
                                kind: m.kind.to_string(),
                                tool: qualified.to_string(),
                                allowed,
                            })
                        }
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
    #[error("the arguments hold {placeholder}, which {}; the call was not made", unresolved_text(*why, form))]
    Unknown {
        placeholder: String,
        why: Unresolved,
        /// This session's placeholders as a person reads them (`⟪kind:kqzvb:N⟫`).
        form: String,
    },
    #[error("the arguments hold {placeholder}, but a capability's execution resolves no placeholders (only a session's executions do); the call was not made. Pass placeholders to tools from the session's own script, not through a capability")]
    NoMap { placeholder: String },
    #[error("the arguments hold {placeholder}, a value of kind `{kind}`, and the rule sandbox.sensitive.reveal_to.{kind} does not let {tool} receive it ({}); pass it only to a tool the rule allows, or ask the operator", allowed_text(allowed))]
    NotRevealed {
        placeholder: String,
        kind: String,
        tool: String,
        allowed: Vec<String>,
    },
    #[error("the arguments hold {placeholder}, a value of kind `{kind}`, and no tool may receive values of that kind: sandbox.sensitive.reveal_to has no entry for `{kind}`, so {tool} does not get it. Ask the operator to add one (\"reveal_to\": {{\"{kind}\": [\"{tool}\"]}}) if {tool} should")]
    NoRule {
        placeholder: String,
        kind: String,
        tool: String,
    },
}

fn unresolved_text(why: Unresolved, form: &str) -> String {
    match why {
        Unresolved::Untagged => format!("has no session tag: placeholders of that form come from an earlier version of mcp-sandbox and are no longer resolved. Read the value again, and pass the placeholder this session returns for it (this session's look like {form})"),
        Unresolved::OtherSession => format!("is not one of this session's placeholders (this session's look like {form}): it comes from another session, or from an earlier map of this session that this host can no longer open (sealed under another key). A placeholder is resolved only in the session that returned it: read the value again in this session and pass the placeholder it returns"),
        Unresolved::NeverGiven => "has this session's tag, but this session never returned that kind with that number. Pass placeholders exactly as this session's executions returned them".to_string(),
        Unresolved::Lost => "names a value of this session's earlier map, which this host could not open (it was sealed under another key), so its value is gone. Read the value again and pass the placeholder this session returns for it".to_string(),
    }
}

fn allowed_text(allowed: &[String]) -> String {
    if allowed.is_empty() {
        "it allows no tool".into()
    } else {
        format!("it allows {}", allowed.join(", "))
    }
}

/// A value a tool's answer marks sensitive (`fields`) that the session's map has no room for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", field_error_text(self))]
pub struct FieldError {
    pub tool: String,
    pub pointer: String,
    pub why: NoRoom,
}

fn field_error_text(e: &FieldError) -> String {
    let FieldError { tool, pointer, .. } = e;
    match e.why {
        NoRoom::Full => format!(
            "the answer of {tool} holds a value marked sensitive (sandbox.sensitive.fields, {pointer}) and this session's placeholder map is full ({} values, {} KiB at most), so the value could not be masked and the answer was withheld from the script. Start a new session to read it",
            placeholders::MAX_VALUES,
            placeholders::MAX_BYTES >> 10
        ),
        NoRoom::TooLong(bytes) => format!(
            "the answer of {tool} holds a value marked sensitive (sandbox.sensitive.fields, {pointer}) of {bytes} bytes; a marked value can be masked up to {} bytes, so the answer was withheld from the script. Ask the tool for less, or ask the operator to mark a smaller field",
            placeholders::MAX_VALUE_BYTES
        ),
    }
}

/// The first placeholder-shaped text (`⟪kind:tag:n⟫` or `⟪kind:n⟫`) among `args`' strings.
pub fn first_placeholder(args: &Value) -> Option<String> {
    match args {
        Value::String(s) => mentions(s).first().map(|m| s[m.start..m.end].to_string()),
        Value::Array(items) => items.iter().find_map(first_placeholder),
        Value::Object(fields) => fields.values().find_map(first_placeholder),
        _ => None,
    }
}

/// The JSON a text answer holds, when it is a JSON object or array.
fn json_text(s: &str) -> Option<Value> {
    let t = s.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str(t).ok()
}

/// Remembers every string and number at or under `v`.
fn remember_leaves(kind: &str, v: &Value, map: &mut Placeholders) -> Result<(), NoRoom> {
    match v {
        Value::String(s) => map.remember(kind, s),
        Value::Number(n) => map.remember(kind, &n.to_string()),
        Value::Array(items) => items.iter().try_for_each(|v| remember_leaves(kind, v, map)),
        Value::Object(fields) => fields
            .values()
            .try_for_each(|v| remember_leaves(kind, v, map)),
        _ => Ok(()),
    }
}

/// One redaction pass: the values `map` already holds (matched literally), then the detectors.
pub struct Redactor<'a> {
    sensitive: &'a Sensitive,
    literal: Option<AhoCorasick>,
    kinds: Vec<String>,
    /// Every marked value → its kind: a whole string or number equal to one is masked, however
    /// short (the literal pass skips values under 3 bytes, which would match inside any text).
    exact: std::collections::HashMap<String, String>,
}

impl Redactor<'_> {
    /// Whether `s` holds anything this pass would replace.
    pub fn finds(&self, s: &str) -> bool {
        self.literal.as_ref().is_some_and(|a| a.is_match(s))
            || self.sensitive.detectors.find(s).next().is_some()
    }

    /// `s` with every sensitive value replaced by its placeholder; `None` when nothing was found.
    pub fn redact_str(&self, s: &str, map: &mut Placeholders) -> Option<String> {
        if let Some(kind) = self.exact.get(s) {
            return Some(map.placeholder(kind, s));
        }
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
            Value::Number(n) => {
                let text = n.to_string();
                if let Some(kind) = self.exact.get(&text) {
                    *value = Value::String(map.placeholder(kind, &text));
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
