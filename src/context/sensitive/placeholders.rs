//! One session's placeholders: each sensitive value seen gets a number, stable for the session
//! (`⟪email:kqzvb:3⟫` is the same address every time), and a placeholder passed back in a tool
//! call's arguments turns back into its value. The middle part is the session's tag (five
//! random letters, drawn when the map gives its first number): numbers start at 1 in every
//! session, so without it one session's `⟪email:1⟫` would name another session's first
//! address; with it, another session's placeholder is refused (two sessions share a tag with a
//! chance of one in 26⁵, about 12 million). Bounded in count and bytes: past the bounds a value
//! is still masked, as `⟪kind⟫` without a number, which nothing can resolve.

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
/// Letters in a session's tag.
pub const TAG_LEN: usize = 5;

/// The text of placeholder `n` of `kind` in the session tagged `tag`.
pub fn text(kind: &str, tag: &str, n: u64) -> String {
    format!("{OPEN}{kind}:{tag}:{n}{CLOSE}")
}

/// The mask of a value that got no number (the map is full, or the value too long).
pub fn mask(kind: &str) -> String {
    format!("{OPEN}{kind}{CLOSE}")
}

/// A fresh session tag: [`TAG_LEN`] random lowercase letters.
fn new_tag() -> String {
    let random = uuid::Uuid::new_v4();
    random
        .as_bytes()
        .iter()
        .take(TAG_LEN)
        .map(|b| char::from(b'a' + b % 26))
        .collect()
}

fn valid_tag(tag: &str) -> bool {
    tag.len() == TAG_LEN && tag.bytes().all(|b| b.is_ascii_lowercase())
}

/// A placeholder found in a string: its byte range, kind, session tag and number. `tag` is
/// `None` for the untagged form `⟪kind:n⟫` of earlier versions (never resolved, always
/// refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention<'a> {
    pub start: usize,
    pub end: usize,
    pub kind: &'a str,
    pub tag: Option<&'a str>,
    pub n: u64,
}

/// Every well-formed `⟪kind:tag:n⟫` (and untagged `⟪kind:n⟫`) in `s`.
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
        let Some((kind, rest)) = body.split_once(':') else {
            continue;
        };
        let (tag, num) = match rest.split_once(':') {
            Some((tag, num)) if valid_tag(tag) => (Some(tag), num),
            Some(_) => continue,
            None => (None, rest),
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
            tag,
            n,
        });
        from = end;
    }
    out
}

/// Why a placeholder does not resolve in a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// The untagged form of earlier versions.
    Untagged,
    /// Another session's tag (or this map has given no number yet).
    OtherSession,
    /// This session's tag, but a number (or kind) it never gave.
    NeverGiven,
    /// This session's, from a map that could not be opened (another key): its value is gone.
    Lost,
}

/// One session's map, value → number and number → (kind, value).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Placeholders {
    /// The session's tag (empty until the first number is given; maps of earlier versions
    /// have none and get one then).
    #[serde(default)]
    tag: String,
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
        if !self.values.is_empty() && !valid_tag(&self.tag) {
            // A map of an earlier version: its values get tagged placeholders from now on
            // (their untagged ones are refused), and the tag is kept.
            self.tag = new_tag();
            self.changed = true;
        }
        self
    }

    /// The session's tag, drawn the first time it is needed.
    fn tag(&mut self) -> &str {
        if !valid_tag(&self.tag) {
            self.tag = new_tag();
            self.changed = true;
        }
        &self.tag
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
        if let Some(n) = self.by_value.get(value).copied() {
            let kind = self
                .values
                .get(&n)
                .map_or(kind, |(k, _)| k.as_str())
                .to_string();
            return text(&kind, self.tag(), n);
        }
        if !self.has_room(value) {
            self.overflowed = true;
            return mask(kind);
        }
        self.tag();
        let n = self.next.max(1);
        self.next = n + 1;
        self.bytes += value.len();
        self.values.insert(n, (kind.to_string(), value.to_string()));
        self.by_value.insert(value.to_string(), n);
        self.changed = true;
        text(kind, &self.tag, n)
    }

    /// Whether `value` (not yet in the map) can get a number.
    fn has_room(&self, value: &str) -> bool {
        value.len() <= MAX_VALUE_BYTES
            && self.values.len() < MAX_VALUES
            && self.bytes + value.len() <= MAX_BYTES
    }

    /// Adds `value` (a field a tool marked sensitive), so it is masked wherever it appears.
    /// `Err` when the map has no room for it (it is full, or the value is over
    /// [`MAX_VALUE_BYTES`]): such a value could not be masked, so the caller must not let it
    /// through.
    pub fn remember(&mut self, kind: &str, value: &str) -> Result<(), NoRoom> {
        if value.is_empty() {
            return Ok(());
        }
        if !self.by_value.contains_key(value) && !self.has_room(value) {
            return Err(if value.len() > MAX_VALUE_BYTES {
                NoRoom::TooLong(value.len())
            } else {
                NoRoom::Full
            });
        }
        self.placeholder(kind, value);
        if let Some(n) = self.by_value.get(value) {
            if self.fields.insert(*n) {
                self.changed = true;
            }
        }
        Ok(())
    }

    /// The value of placeholder `⟪kind:tag:n⟫` when it is this map's.
    pub fn value(&self, kind: &str, tag: Option<&str>, n: u64) -> Result<&str, Unresolved> {
        let Some(tag) = tag else {
            return Err(Unresolved::Untagged);
        };
        if self.tag.is_empty() || tag != self.tag {
            return Err(Unresolved::OtherSession);
        }
        if n < self.floor {
            return Err(Unresolved::Lost);
        }
        self.values
            .get(&n)
            .filter(|(k, _)| k == kind)
            .map(|(_, v)| v.as_str())
            .ok_or(Unresolved::NeverGiven)
    }

    /// The exact text of the placeholders this map gives, as a person reads it
    /// (`⟪kind:kqzvb:N⟫`), for messages.
    pub fn form(&self) -> String {
        if valid_tag(&self.tag) {
            format!("{OPEN}kind:{}:N{CLOSE}", self.tag)
        } else {
            format!("{OPEN}kind:tag:N{CLOSE}")
        }
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
            if let Ok(v) = self.value(m.kind, m.tag, m.n) {
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

/// Why a marked value found no room in the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoom {
    /// The map holds [`MAX_VALUES`] values or [`MAX_BYTES`] bytes.
    Full,
    /// The value is this many bytes, over [`MAX_VALUE_BYTES`].
    TooLong(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_value_same_placeholder() {
        let mut m = Placeholders::default();
        let a = m.placeholder("email", "ada@example.com");
        let b = m.placeholder("phone", "+1 415 555 2671");
        let tag = m.tag.clone();
        assert!(valid_tag(&tag), "{tag}");
        assert_eq!(a, format!("⟪email:{tag}:1⟫"));
        assert_eq!(b, format!("⟪phone:{tag}:2⟫"));
        assert_eq!(m.placeholder("email", "ada@example.com"), a);
        assert_eq!(m.value("email", Some(&tag), 1), Ok("ada@example.com"));
        assert_eq!(
            m.value("phone", Some(&tag), 1),
            Err(Unresolved::NeverGiven),
            "the kind must match"
        );
        assert_eq!(m.value("email", Some(&tag), 9), Err(Unresolved::NeverGiven));
        assert_eq!(m.value("email", None, 1), Err(Unresolved::Untagged));
        let json = serde_json::to_string(&m).unwrap();
        let back: Placeholders = serde_json::from_str::<Placeholders>(&json)
            .unwrap()
            .reindexed();
        assert_eq!(back.placeholder_of("ada@example.com"), Some(1));
        assert_eq!(back.tag, tag, "the tag is kept with the map");
    }

    #[test]
    fn another_sessions_placeholder_never_resolves() {
        let (mut mine, mut theirs) = (Placeholders::default(), Placeholders::default());
        mine.placeholder("email", "ada@example.com");
        let p = theirs.placeholder("email", "eve@evil.example");
        let m = &mentions(&p)[0];
        assert_ne!(mine.tag, theirs.tag);
        assert_eq!(
            mine.value(m.kind, m.tag, m.n),
            Err(Unresolved::OtherSession)
        );
        assert_eq!(theirs.value(m.kind, m.tag, m.n), Ok("eve@evil.example"));
        // A map without a number yet resolves nothing.
        let empty = Placeholders::default();
        assert_eq!(
            empty.value(m.kind, m.tag, m.n),
            Err(Unresolved::OtherSession)
        );
    }

    #[test]
    fn a_map_of_an_earlier_version_loads_and_gets_a_tag() {
        let old = r#"{"next": 2, "values": {"1": ["email", "ada@example.com"]}}"#;
        let mut m = serde_json::from_str::<Placeholders>(old)
            .unwrap()
            .reindexed();
        assert!(valid_tag(&m.tag) && m.changed, "a tag is drawn and saved");
        let tag = m.tag.clone();
        assert_eq!(
            m.placeholder("email", "ada@example.com"),
            format!("⟪email:{tag}:1⟫")
        );
        assert_eq!(m.value("email", None, 1), Err(Unresolved::Untagged));
    }

    #[test]
    fn a_full_map_masks_without_a_number_and_refuses_fields() {
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
        assert_eq!(m.remember("name", "Ada Lovelace"), Err(NoRoom::Full));
        assert_eq!(m.remember("email", "u7@example.com"), Ok(()), "known");
        let mut m = Placeholders::default();
        assert_eq!(
            m.remember("notes", &"x".repeat(MAX_VALUE_BYTES + 1)),
            Err(NoRoom::TooLong(MAX_VALUE_BYTES + 1))
        );
    }

    #[test]
    fn a_replacement_map_never_resolves_old_numbers() {
        let mut m = Placeholders::starting_at(7);
        assert_eq!(m.next(), 7);
        let tag = m.tag().to_string();
        assert_eq!(m.value("email", Some(&tag), 3), Err(Unresolved::Lost));
    }

    #[test]
    fn mentions_are_parsed_strictly() {
        let s = "to ⟪email:12⟫ and ⟪email⟫ and ⟪Bad:1⟫ and ⟪card:x⟫ and ⟪card:abcde:3⟫ and ⟪card:ABCDE:3⟫ and ⟪card:abc:3⟫";
        let found: Vec<(&str, Option<&str>, u64)> =
            mentions(s).iter().map(|m| (m.kind, m.tag, m.n)).collect();
        assert_eq!(found, [("email", None, 12), ("card", Some("abcde"), 3)]);
        let mut m = Placeholders::default();
        let p = m.placeholder("email", "ada@example.com");
        assert_eq!(
            m.reveal(&format!("to {p}!")).as_deref(),
            Some("to ada@example.com!")
        );
    }

    impl Placeholders {
        fn placeholder_of(&self, value: &str) -> Option<u64> {
            self.by_value.get(value).copied()
        }
    }
}
