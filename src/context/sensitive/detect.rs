//! The detectors: built-in patterns for e-mail addresses, phone numbers, payment cards, IBANs and
//! credentials, and the operator's regexes, compiled once into one multi-pattern regex
//! (`regex-automata`'s meta regex: one leftmost-first pass over the text, each match naming the
//! pattern it belongs to, no capture groups).
//!
//! Two built-ins are checked after they match: a card number must pass the Luhn check and an
//! IBAN the ISO 13616 mod-97 check. Both are hand-written here (a few lines each, over the
//! matched digits without allocating): the crates that exist for them (`luhn`, `iban_validate`)
//! parse into owned types per call, which the 100 MB/s target cannot afford, and add nothing the
//! arithmetic needs. A candidate that fails its check is left as it is and the search goes on
//! after it (so a long digit run costs one pass, whatever it holds).

use super::SensitiveError;
use regex_automata::meta::Regex;
use regex_automata::Input;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The built-in kinds, in the order their patterns are tried at one position.
pub const BUILTINS: [&str; 5] = ["secret", "email", "phone", "iban", "card"];

/// Longest operator pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// Most operator patterns.
pub const MAX_PATTERNS: usize = 64;

/// What a match must pass besides its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    None,
    Luhn,
    Iban,
}

/// Credentials: cloud access keys, tokens with well-known prefixes, JWTs, PEM private keys and
/// the value of an `Authorization` header (`Bearer …`, `Basic …`).
const SECRET: &[&str] = &[
    r"(?-u:\b)(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}(?-u:\b)",
    r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,255}(?-u:\b)",
    r"(?-u:\b)github_pat_[A-Za-z0-9_]{22,255}(?-u:\b)",
    r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
    r"(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}",
    r"(?-u:\b)(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}(?-u:\b)",
    r"(?-u:\b)sk-[A-Za-z0-9_-]{20,}",
    r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
    r"(?-u:\b)eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",
    r"-----BEGIN[A-Z ]{0,32}PRIVATE KEY-----(?s:.)*?-----END[A-Z ]{0,32}PRIVATE KEY-----",
    r"(?-u:\b)(?:[Bb]earer|[Bb]asic) [A-Za-z0-9._~+/=-]{16,}",
];

const EMAIL: &str = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?-u:\b)";

/// International numbers (`+` and 7 to 15 digits in groups) and the common national format
/// with separators (`(415) 555-2671`, `415-555-2671`, `415.555.2671`); a bare run of digits
/// is not taken for a phone number (it is too often an id or an amount).
const PHONE: &[&str] = &[
    r"\+[1-9][0-9]{0,2}(?:[ .-]?\(?[0-9]{1,4}\)?){1,2}(?:[ .-]?[0-9]{2,4}){1,4}(?-u:\b)",
    r"(?:\([0-9]{3}\) ?|(?-u:\b)[0-9]{3}[.-])[0-9]{3}[.-][0-9]{4}(?-u:\b)",
];

/// An IBAN as printed (groups of four) or run together; checked with mod 97.
const IBAN: &str = r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?-u:\b)";

/// 13 to 19 digits, optionally in groups separated by one space or dash; checked with Luhn.
const CARD: &str = r"(?-u:\b)[0-9](?:[ -]?[0-9]){12,18}(?-u:\b)";

/// The compiled detectors of one `sensitive` config.
#[derive(Debug)]
pub struct Detectors {
    regex: Option<Regex>,
    /// Per pattern: its kind and its check.
    kinds: Vec<(Arc<str>, Check)>,
}

/// One detected value: its byte range in the text and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<'k> {
    pub start: usize,
    pub end: usize,
    pub kind: &'k str,
}

/// Whether `name` can be a kind (it appears inside placeholders): 1-32 of `a-z`, `0-9`, `_`,
/// starting with a letter.
pub fn valid_kind(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl Detectors {
    /// The built-ins named in `detect` and the operator's `patterns` (kind → regex).
    pub fn new(
        detect: &[String],
        patterns: &BTreeMap<String, String>,
    ) -> Result<Detectors, SensitiveError> {
        let mut sources: Vec<String> = Vec::new();
        let mut kinds: Vec<(Arc<str>, Check)> = Vec::new();
        for d in detect {
            if !BUILTINS.contains(&d.as_str()) {
                return Err(SensitiveError::UnknownDetector(d.clone()));
            }
        }
        // Built-ins in a fixed order (secret first: a token may contain an `@` or digits).
        for kind in BUILTINS.iter().filter(|k| detect.iter().any(|d| d == *k)) {
            let (list, check): (&[&str], Check) = match *kind {
                "secret" => (SECRET, Check::None),
                "email" => (std::slice::from_ref(&EMAIL), Check::None),
                "phone" => (PHONE, Check::None),
                "iban" => (std::slice::from_ref(&IBAN), Check::Iban),
                _ => (std::slice::from_ref(&CARD), Check::Luhn),
            };
            let name: Arc<str> = Arc::from(*kind);
            for p in list {
                sources.push((*p).to_string());
                kinds.push((name.clone(), check));
            }
        }
        if patterns.len() > MAX_PATTERNS {
            return Err(SensitiveError::TooManyPatterns(patterns.len()));
        }
        for (kind, pattern) in patterns {
            if !valid_kind(kind) {
                return Err(SensitiveError::BadKind(kind.clone()));
            }
            if pattern.len() > MAX_PATTERN_BYTES {
                return Err(SensitiveError::BadPattern {
                    kind: kind.clone(),
                    reason: format!("it is {} bytes; at most {MAX_PATTERN_BYTES}", pattern.len()),
                });
            }
            let alone = Regex::new(pattern).map_err(|e| SensitiveError::BadPattern {
                kind: kind.clone(),
                reason: e.to_string(),
            })?;
            if alone.is_match("") {
                return Err(SensitiveError::BadPattern {
                    kind: kind.clone(),
                    reason: "it matches the empty string".into(),
                });
            }
            sources.push(pattern.clone());
            kinds.push((Arc::from(kind.as_str()), Check::None));
        }
        if sources.is_empty() {
            return Ok(Detectors { regex: None, kinds });
        }
        let regex = Regex::builder()
            .configure(
                Regex::config()
                    .nfa_size_limit(Some(64 << 20))
                    .hybrid_cache_capacity(8 << 20),
            )
            .build_many(&sources)
            .map_err(|e| SensitiveError::BadPattern {
                kind: "(all)".into(),
                reason: e.to_string(),
            })?;
        Ok(Detectors {
            regex: Some(regex),
            kinds,
        })
    }

    /// Whether any detector is on.
    pub fn is_empty(&self) -> bool {
        self.regex.is_none()
    }

    /// Every value the detectors find in `text`, left to right, not overlapping.
    pub fn find<'a>(&'a self, text: &'a str) -> impl Iterator<Item = Found<'a>> + 'a {
        let mut at = 0usize;
        std::iter::from_fn(move || {
            let regex = self.regex.as_ref()?;
            while at < text.len() {
                let m = regex.search(&Input::new(text).range(at..))?;
                at = if m.end() > m.start() {
                    m.end()
                } else {
                    m.end() + 1
                };
                let (kind, check) = &self.kinds[m.pattern().as_usize()];
                let value = &text.as_bytes()[m.start()..m.end()];
                let ok = match check {
                    Check::None => m.end() > m.start(),
                    Check::Luhn => luhn(value),
                    Check::Iban => iban(value),
                };
                if ok {
                    return Some(Found {
                        start: m.start(),
                        end: m.end(),
                        kind,
                    });
                }
            }
            None
        })
    }
}

/// The Luhn check over the digits of `text` (other bytes skipped), for 13 to 19 digits that
/// are not all the same digit.
pub fn luhn(text: &[u8]) -> bool {
    let (mut sum, mut count, mut first, mut same) = (0u32, 0usize, None, true);
    for &b in text.iter().rev().filter(|b| b.is_ascii_digit()) {
        let d = u32::from(b - b'0');
        if *first.get_or_insert(d) != d {
            same = false;
        }
        sum += if count % 2 == 1 {
            let x = d * 2;
            if x > 9 {
                x - 9
            } else {
                x
            }
        } else {
            d
        };
        count += 1;
    }
    (13..=19).contains(&count) && !same && sum % 10 == 0
}

/// The ISO 13616 check of an IBAN (spaces skipped): 15 to 34 characters, the first four moved
/// to the end, letters as 10-35, the number mod 97 is 1.
pub fn iban(text: &[u8]) -> bool {
    let chars: Vec<u8> = text.iter().copied().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&chars.len()) {
        return false;
    }
    let mut rem = 0u32;
    for &b in chars[4..].iter().chain(&chars[..4]) {
        let v = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Detectors {
        let detect: Vec<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
        let mut patterns = BTreeMap::new();
        patterns.insert("employee_id".to_string(), "EMP-[0-9]{6}".to_string());
        Detectors::new(&detect, &patterns).unwrap()
    }

    fn kinds(d: &Detectors, text: &str) -> Vec<(String, String)> {
        d.find(text)
            .map(|f| (f.kind.to_string(), text[f.start..f.end].to_string()))
            .collect()
    }

    fn one(kind: &str, value: &str) -> Vec<(String, String)> {
        vec![(kind.to_string(), value.to_string())]
    }

    #[test]
    fn true_positives_name_their_kind() {
        let d = all();
        for (kind, value) in [
            ("email", "ada.lovelace+crm@example.co.uk"),
            ("phone", "+1 415 555 2671"),
            ("phone", "+44 20 7946 0958"),
            ("phone", "(415) 555-2671"),
            ("phone", "415-555-2671"),
            ("card", "4111 1111 1111 1111"),
            ("card", "5500-0000-0000-0004"),
            ("card", "378282246310005"),
            ("iban", "DE89 3704 0044 0532 0130 00"),
            ("iban", "GB82WEST12345698765432"),
            ("secret", "AKIAIOSFODNN7EXAMPLE"),
            ("secret", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            ("secret", "sk_live_FAKEfixture0123456789abcd"),
            ("secret", "Bearer abcdefghijklmnop.qrstuv"),
            (
                "secret",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            ),
            (
                "secret",
                "-----BEGIN RSA PRIVATE KEY-----\nMIIB\nabc\n-----END RSA PRIVATE KEY-----",
            ),
            ("employee_id", "EMP-123456"),
        ] {
            let text = format!("x {value} y");
            assert_eq!(kinds(&d, &text), one(kind, value), "{text}");
        }
    }

    #[test]
    fn false_positives_are_left_alone() {
        let d = all();
        for text in [
            // Luhn fails (last digit changed).
            "order 4111 1111 1111 1112 shipped",
            // Mod-97 fails (one digit changed).
            "DE89 3704 0044 0532 0130 01",
            // A bare id, a date, an amount, a version, a UUID.
            "id 20261124 on 2026-11-24 costs 1234.56 v1.13.1",
            "3f2a9c1e-1234-4bcd-9def-0123456789ab",
            "0000 0000 0000 0000",
            "not an address: user@localhost or @example.com",
        ] {
            assert_eq!(kinds(&d, text), vec![], "{text}");
        }
    }

    #[test]
    fn values_are_found_in_order_among_text() {
        let d = all();
        let found = kinds(
            &d,
            "mail ada@example.com, call +1 415 555 2671, pay 4111111111111111.",
        );
        let names: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["email", "phone", "card"]);
    }

    #[test]
    fn bad_config_is_refused() {
        let none = BTreeMap::new();
        assert!(matches!(
            Detectors::new(&["ssn".into()], &none),
            Err(SensitiveError::UnknownDetector(_))
        ));
        let mut p = BTreeMap::new();
        p.insert("Bad Kind".to_string(), "x".to_string());
        assert!(matches!(
            Detectors::new(&[], &p),
            Err(SensitiveError::BadKind(_))
        ));
        let mut p = BTreeMap::new();
        p.insert("empty".to_string(), "a*".to_string());
        assert!(matches!(
            Detectors::new(&[], &p),
            Err(SensitiveError::BadPattern { .. })
        ));
        assert!(Detectors::new(&[], &none).unwrap().is_empty());
    }

    #[test]
    fn checks() {
        assert!(luhn(b"4111111111111111"));
        assert!(!luhn(b"4111111111111112"));
        assert!(!luhn(b"411111111111")); // too short
        assert!(iban(b"GB82 WEST 1234 5698 7654 32"));
        assert!(!iban(b"GB83 WEST 1234 5698 7654 32"));
    }
}
