//! Human-facing output: untrusted strings escaped before they reach a terminal, and writes to
//! stdout/stderr that never panic when the reader has gone (`… | head`).
//!
//! Escaping follows OpenSSH's rule for strings a server sends: every control character (C0,
//! DEL, C1) is shown as a visible escape (`\n`, `\t`, `\r`, `\e`, `\xHH`, `\u{HHHH}`), so a tool
//! name, a log line or an error message can neither move the cursor, set the terminal's title,
//! nor forge a line of the host's own output. Characters that are not controls but still move
//! or reorder text on screen are escaped too: the Unicode line and paragraph separators
//! (U+2028, U+2029) and the bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E,
//! U+2066–U+2069), which could make a field read backwards or spill into its neighbour.
//! Fields of a one-line table are [`field`]s: quoted when they hold a separator, so a name with
//! spaces cannot shift the columns. JSON output is never escaped this way.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether `c` is shown as an escape: a control character, a line or paragraph separator, or a
/// bidirectional control.
pub fn hazardous(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with every control character replaced by a visible escape; borrowed when clean.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hazardous) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// Like [`escape`], but keeps line breaks and tabs: for multi-line text the host itself lays
/// out (a stack trace, the `tools` listing, a capability's code).
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    let kept = |c: char| c == '\n' || c == '\t';
    if !s.chars().any(|c| hazardous(c) && !kept(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if kept(c) {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// JSON text (as serde_json writes it) safe for a terminal and still valid JSON: every
/// hazardous character, which can only be inside a string there, as `\uXXXX` (C1 controls and
/// the separators and bidirectional controls serde_json writes as they are).
pub fn json_safe(s: &str) -> Cow<'_, str> {
    let kept = |c: char| c == '\n' || c == '\t' || c == '\r';
    if !s.chars().any(|c| hazardous(c) && !kept(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hazardous(c) && !kept(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x1b' => out.push_str("\\e"),
        c if c.is_control() && (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if hazardous(c) => {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// One field of a space-separated line: as is when it is plain, else in double quotes with
/// `"` and `\\` escaped (and controls, as [`escape`] does). Plain means non-empty and free of
/// whitespace, controls and the table's separators (`,` `=` `[` `]` `(` `)` `"` `#` `\\`).
pub fn field(s: &str) -> Cow<'_, str> {
    let special = |c: char| c.is_whitespace() || hazardous(c) || ",=[]()\"#\\".contains(c);
    if !s.is_empty() && !s.chars().any(special) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => push_escaped(&mut out, c),
        }
    }
    out.push('"');
    Cow::Owned(out)
}

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Exit status of a command whose output pipe closed (128 + SIGPIPE, as a shell reports).
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// Writes `text` to stdout. When the reader has gone the text is dropped and [`exit_status`]
/// later reports it; nothing panics.
pub fn out(text: &str) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        STDOUT_GONE.store(true, Ordering::Relaxed);
    }
}

/// `out` with a newline.
pub fn outln(text: &str) {
    out(&format!("{text}\n"));
}

/// Writes `text` to stderr; a closed stderr is ignored (there is nowhere left to say so).
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
}

/// `err` with a newline.
pub fn errln(text: &str) {
    err(&format!("{text}\n"));
}

/// The status to exit with: [`EXIT_BROKEN_PIPE`] when stdout's reader went away, else `status`.
pub fn exit_status(status: i32) -> i32 {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        EXIT_BROKEN_PIPE
    } else {
        status
    }
}

/// `message` cut to at most `max` bytes (at a character boundary), noting the full size.
pub fn clip(message: &str, max: usize) -> String {
    if message.len() <= max {
        return message.to_string();
    }
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [cut: {} bytes in all]",
        message.get(..end).unwrap_or(""),
        message.len()
    )
}

/// A size for people: `1 MiB`, `256 KiB`, `900 bytes` (binary units); a size that is not a
/// whole number of its unit keeps its exact count too: `19.5 KiB (20000 bytes)`.
pub fn bytes_text(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{:.1} {unit} ({n} bytes)", n as f64 / size as f64)
            };
        }
    }
    format!("{n} byte{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes_text(1_048_576), "1 MiB");
        assert_eq!(bytes_text(64 * 1024 * 1024), "64 MiB");
        assert_eq!(bytes_text(16 * 1024), "16 KiB");
        assert_eq!(bytes_text(1_500_000), "1.4 MiB (1500000 bytes)");
        assert_eq!(bytes_text(20_000), "19.5 KiB (20000 bytes)");
        assert_eq!(bytes_text(1000), "1000 bytes");
        assert_eq!(bytes_text(1), "1 byte");
        assert_eq!(bytes_text(3 << 30), "3 GiB");
    }

    #[test]
    fn control_characters_become_visible() {
        assert_eq!(escape("plain: ok"), "plain: ok");
        assert_eq!(
            escape("\x1b]0;TITLE\x07x\n[error] y\r\u{9b}"),
            "\\e]0;TITLE\\x07x\\n[error] y\\r\\x9b"
        );
        assert_eq!(escape_lines("a\x1b[2K\n\tb"), "a\\e[2K\n\tb");
        assert!(matches!(escape("héllo ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn separators_and_bidi_controls_become_visible() {
        assert_eq!(
            escape("a\u{2028}b\u{2029}c\u{202e}d\u{2066}e\u{2069}"),
            "a\\u{2028}b\\u{2029}c\\u{202e}d\\u{2066}e\\u{2069}"
        );
        assert_eq!(escape_lines("x\n\u{202a}"), "x\n\\u{202a}");
        // JSON stays JSON (a description holding a C1 control broke `tools --json`).
        let json =
            serde_json::to_string_pretty(&serde_json::json!({"d": "a\u{80}b\u{202e}c\u{1b}"}))
                .unwrap();
        let safe = json_safe(&json);
        assert!(!safe.chars().any(|c| hazardous(c) && c != '\n'), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["d"], "a\u{80}b\u{202e}c\u{1b}");
    }

    #[test]
    fn fields_with_separators_are_quoted() {
        assert!(matches!(field("token:ci"), Cow::Borrowed("token:ci")));
        assert_eq!(field("a b"), "\"a b\"");
        assert_eq!(field(""), "\"\"");
        assert_eq!(field("x=\"y\"\\"), "\"x=\\\"y\\\"\\\\\"");
        assert_eq!(field("c\u{2028}d"), "\"c\\u{2028}d\"");
    }
}
