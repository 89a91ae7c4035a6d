//! One session's placeholders: each sensitive value seen gets a number, stable for the session
//! (`⟪email:3⟫` is the same address every time), and a placeholder passed back in a tool
//! call's arguments turns back into its value. Bounded in count and bytes: past the bounds a
//! value is still masked, as `⟪kind⟫` without a number, which nothing can resolve.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Opening and closing marks of a placeholder (U+27EA, U+27EB: rare in real text).
pub const OPEN: char = '\u{27EA}';
pub const CLOSE: char = '\u{27EB}';

/// Most values one session's map holds.
pub const MAX_VALUES: usize = 4096;
/// Most bytes of values one session's map holds.
pub const MAX_BYTES: usize = 1 << 20;
/// Longest value that gets a resolvable placeholder (a longer one is masked as `⟪kind⟫`).
pub const MAX_VALUE_BYTES: usize = 16 << 10;

/// The text of placeholder `n` of `kind`.
pub fn text(kind: &str, n: u64) -> String {
    format!("{OPEN}{kind}:{n}{CLOSE}")
}

/// The mask of a value that got no number (the map is full, or the value too long).
pub fn mask(kind: &str) -> String {
    format!("{OPEN}{kind}{CLOSE}")
}

/// A placeholder found in a string: its byte range, kind and number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention<'a> {
    pub start: usize,
    pub end: usize,
    pub kind: &'a str,
    pub n: u64,
}

/// Every well-formed `⟪kind:n⟫` in `s`.
pub fn mentions(s: &str) -> Vec<Mention<'_>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = s[from..].find(OPEN) {
        let start = from + i;
        let body_at = start + OPEN.len_utf8();
        from = body_at;
        let Some(close) = s[body_at..].find(CLOSE) else {
            break;
        };
        let body = &s[body_at..body_at + close];
        let Some((kind, num)) = body.split_once(':') else {
            continue;
        };
        if !super::detect::valid_kind(kind)
            || num.is_empty()
            || num.len() > 19
            || !num.bytes().all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(n) = num.parse::<u64>() else { continue };
        let end = body_at + close + CLOSE.len_utf8();
        out.push(Mention {
            start,
            end,
            kind,
            n,
        });
        from = end;
    }
    out
}

/// One session's map, value → number and number → (kind, value).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Placeholders {
    /// The next number to give.
    next: u64,
    /// Numbers below it came from a map that could not be opened (another key): never resolved.
    #[serde(default)]
    floor: u64,
    /// number → (kind, value).
    values: BTreeMap<u64, (String, String)>,
    /// Numbers of values a tool's answer marked sensitive (`fields`): the detectors may not
    /// match them, so they are matched literally.
    #[serde(default)]
    fields: std::collections::BTreeSet<u64>,
    #[serde(skip)]
    by_value: HashMap<String, u64>,
    #[serde(skip)]
    bytes: usize,
    /// Whether a value found no room (the caller says so once).
    #[serde(skip)]
    pub overflowed: bool,
    /// Whether anything was added since it was read (it needs saving).
    #[serde(skip)]
    pub changed: bool,
}

impl Placeholders {
    /// An empty map whose numbers start at `next` (a map that replaces an unreadable one keeps
    /// counting from where that one was, so an old placeholder never names a new value).
    pub fn starting_at(next: u64) -> Self {
        Placeholders {
            next: next.max(1),
            floor: next,
            ..Default::default()
        }
    }

    /// Rebuilds the indexes after deserializing.
    pub fn reindexed(mut self) -> Self {
        self.next = self.next.max(1);
        self.by_value = self
            .values
            .iter()
            .map(|(n, (_, v))| (v.clone(), *n))
            .collect();
        self.bytes = self.values.values().map(|(_, v)| v.len()).sum();
        self
    }

    /// The next number (kept in the clear beside the sealed map).
    pub fn next(&self) -> u64 {
        self.next
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The placeholder of `value` (a new number the first time), or a mask when there is no
    /// room.
    pub fn placeholder(&mut self, kind: &str, value: &str) -> String {
        if let Some(n) = self.by_value.get(value) {
            let kind = self.values.get(n).map_or(kind, |(k, _)| k.as_str());
            return text(kind, *n);
        }
        if value.len() > MAX_VALUE_BYTES
            || self.values.len() >= MAX_VALUES
            || self.bytes + value.len() > MAX_BYTES
        {
            self.overflowed = true;
            return mask(kind);
        }
        let n = self.next.max(1);
        self.next = n + 1;
        self.bytes += value.len();
        self.values.insert(n, (kind.to_string(), value.to_string()));
        self.by_value.insert(value.to_string(), n);
        self.changed = true;
        text(kind, n)
    }

    /// Adds `value` (a field a tool marked sensitive), so it is masked wherever it appears.
    pub fn remember(&mut self, kind: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        self.placeholder(kind, value);
        if let Some(n) = self.by_value.get(value) {
            if self.fields.insert(*n) {
                self.changed = true;
            }
        }
    }

    /// The value of placeholder `n` when it is this map's and of `kind`.
    pub fn value(&self, kind: &str, n: u64) -> Option<&str> {
        if n < self.floor {
            return None;
        }
        self.values
            .get(&n)
            .filter(|(k, _)| k == kind)
            .map(|(_, v)| v.as_str())
    }

    /// Every value a tool's answer marked sensitive, with its kind (for the literal pass of
    /// redaction; the detectors find the others again).
    pub fn field_values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields
            .iter()
            .filter_map(|n| self.values.get(n))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The same text with every placeholder of this map replaced by its value (`run --reveal`).
    pub fn reveal(&self, s: &str) -> Option<String> {
        let found = mentions(s);
        let mut out = String::with_capacity(s.len());
        let mut at = 0;
        let mut any = false;
        for m in found {
            if let Some(v) = self.value(m.kind, m.n) {
                out.push_str(&s[at..m.start]);
                out.push_str(v);
                at = m.end;
                any = true;
            }
        }
        if !any {
            return None;
        }
        out.push_str(&s[at..]);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_value_same_placeholder() {
        let mut m = Placeholders::default();
        let a = m.placeholder("email", "ada@example.com");
        let b = m.placeholder("phone", "+1 415 555 2671");
        assert_eq!(a, "⟪email:1⟫");
        assert_eq!(b, "⟪phone:2⟫");
        assert_eq!(m.placeholder("email", "ada@example.com"), a);
        assert_eq!(m.value("email", 1), Some("ada@example.com"));
        assert_eq!(m.value("phone", 1), None, "the kind must match");
        assert_eq!(m.value("email", 9), None);
        let json = serde_json::to_string(&m).unwrap();
        let back: Placeholders = serde_json::from_str::<Placeholders>(&json)
            .unwrap()
            .reindexed();
        assert_eq!(back.placeholder_of("ada@example.com"), Some(1));
    }

    #[test]
    fn a_full_map_masks_without_a_number() {
        let mut m = Placeholders::default();
        for i in 0..MAX_VALUES {
            m.placeholder("email", &format!("u{i}@example.com"));
        }
        assert!(!m.overflowed);
        assert_eq!(m.placeholder("email", "late@example.com"), "⟪email⟫");
        assert!(m.overflowed);
        assert_eq!(
            m.placeholder("secret", &"x".repeat(MAX_VALUE_BYTES + 1)),
            "⟪secret⟫"
        );
    }

    #[test]
    fn a_replacement_map_never_resolves_old_numbers() {
        let m = Placeholders::starting_at(7);
        assert_eq!(m.next(), 7);
        assert_eq!(m.value("email", 3), None);
    }

    #[test]
    fn mentions_are_parsed_strictly() {
        let s = "to ⟪email:12⟫ and ⟪email⟫ and ⟪Bad:1⟫ and ⟪card:x⟫ and ⟪card:3⟫";
        let found: Vec<(&str, u64)> = mentions(s).iter().map(|m| (m.kind, m.n)).collect();
        assert_eq!(found, [("email", 12), ("card", 3)]);
        let mut m = Placeholders::default();
        m.placeholder("email", "ada@example.com");
        assert_eq!(
            m.reveal("to ⟪email:1⟫!").as_deref(),
            Some("to ada@example.com!")
        );
    }

    impl Placeholders {
        fn placeholder_of(&self, value: &str) -> Option<u64> {
            self.by_value.get(value).copied()
        }
    }
}
