//! Replacing an OpenAPI server's credentials in what leaves its caller (errors, answers, 2xx
//! bodies included) by `[redacted]`, by any spelling an API may echo them in: raw,
//! percent-encoded (upper- and lower-case hex, `+` or `%20` for a space), JSON-escaped
//! (`\/`, `\"`, `\u00e9`…) and base64 (standard and URL-safe, at each of the three alignments a
//! value can have inside a longer base64 text, as in an echoed `Basic` header).
//!
//! One Aho-Corasick automaton over every spelling of every credential, leftmost-longest, so
//! the text is read once whatever the number of credentials.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine;
use serde_json::Value;

/// What replaces a credential.
pub const REDACTED: &str = "[redacted]";
/// Shorter spellings are not replaced (they would hit ordinary text, and are not secrets).
const MIN_LEN: usize = 4;
/// The shortest stretch of a credential's base64 replaced.
const MIN_BASE64: usize = 8;

/// The spellings of a set of credentials, ready to be replaced.
pub struct Redactor {
    finder: Option<AhoCorasick>,
}

impl Redactor {
    /// A redactor of `secrets` (each in every spelling of the module docs).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Redactor {
        let mut patterns: Vec<String> = Vec::new();
        for s in secrets {
            if s.len() < MIN_LEN {
                continue;
            }
            spellings(s, &mut patterns);
        }
        patterns.retain(|p| p.len() >= MIN_LEN);
        patterns.sort();
        patterns.dedup();
        let finder = if patterns.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .ok()
        };
        Redactor { finder }
    }

    /// `text` with every spelling replaced.
    pub fn text(&self, text: &str) -> String {
        match &self.finder {
            Some(f) if f.is_match(text) => f.replace_all(text, &vec![REDACTED; f.patterns_len()]),
            _ => text.to_string(),
        }
    }

    /// Every string (and object key) of `value` redacted in place.
    pub fn value(&self, value: &mut Value) {
        if self.finder.is_none() {
            return;
        }
        // An explicit stack: a deep answer cannot overflow the thread's.
        let mut stack: Vec<&mut Value> = vec![value];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) => {
                    let r = self.text(s);
                    if r != *s {
                        *s = r;
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut()),
                Value::Object(map) => {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for k in keys {
                        let r = self.text(&k);
                        if r != k {
                            if let Some(v) = map.remove(&k) {
                                map.insert(r, v);
                            }
                        }
                    }
                    stack.extend(map.values_mut());
                }
                _ => {}
            }
        }
    }
}

/// Every spelling of `s` (see the module docs), pushed to `out`.
fn spellings(s: &str, out: &mut Vec<String>) {
    out.push(s.to_string());
    // Percent-encoded: everything but unreserved characters, as a path segment or a form.
    let upper = percent(s, true);
    out.push(upper.replace("%20", "+"));
    out.push(percent(s, false));
    out.push(url::form_urlencoded::byte_serialize(s.as_bytes()).collect());
    out.push(upper);
    // Only the reserved characters encoded (what `Url` does to a query).
    let light: String = url::Url::parse(&format!("http://x/?{s}"))
        .ok()
        .and_then(|u| u.query().map(String::from))
        .unwrap_or_default();
    out.push(light);
    // JSON-escaped: as serde writes it, with `\/`, and with every non-ASCII one as `\uXXXX`.
    let json = serde_json::to_string(s).unwrap_or_default();
    let json = json[1..json.len().saturating_sub(1).max(1)].to_string();
    out.push(json.replace('/', "\\/"));
    let mut ascii = String::new();
    for c in json.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out.push(ascii.replace('/', "\\/"));
    out.push(ascii);
    out.push(json);
    // Base64 at the three alignments: only the characters that depend on `s` alone.
    for pad in 0..3usize {
        let mut data = vec![0u8; pad];
        data.extend_from_slice(s.as_bytes());
        let enc = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&data);
        let start = (8 * pad).div_ceil(6);
        let end = (8 * data.len()) / 6;
        // Shorter stretches would match unrelated base64 text.
        if end >= start + MIN_BASE64 {
            let core = &enc[start..end];
            out.push(core.to_string());
            out.push(core.replace('+', "-").replace('/', "_"));
        }
    }
}

/// `s` percent-encoded: all but ASCII letters, digits, `-`, `.`, `_`, `~`.
fn percent(s: &str, upper: bool) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else if upper {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_spelling_is_replaced() {
        let secret = "k3y/with+odd=chars é";
        let r = Redactor::new([secret]);
        let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
        let b64url = |t: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t);
        let spelled = [
            secret.to_string(),
            percent(secret, true),
            percent(secret, false),
            url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
            serde_json::to_string(secret).unwrap().replace('/', "\\/"),
            b64(secret),
            b64(&format!("id:{secret}")),
            b64(&format!("Bearer {secret}")),
            b64url(&format!("xx{secret}")),
        ];
        for s in spelled {
            let out = r.text(&format!("before {s} after"));
            assert!(
                out.contains(REDACTED) && !out.contains(&s),
                "{s:?} -> {out:?}"
            );
        }
        let mut v = json!({"a": [format!("x{secret}y")], secret: 1});
        r.value(&mut v);
        assert_eq!(v, json!({"a": ["x[redacted]y"], "[redacted]": 1}));
        assert_eq!(Redactor::new(["ab"]).text("ab"), "ab");
    }
}
