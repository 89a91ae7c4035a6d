//! Positions in the JavaScript the runner ran, mapped back to the TypeScript the agent wrote.
//!
//! Stripping types moves code: a throw on TypeScript line 7 may run on JavaScript line 2. The
//! TypeScript transform's code generator emits a source map ([`PositionMap::from_tokens`]);
//! after the execution, every `script.js:L:C` in an error's message and stack and every
//! `(line L, column C)` of a runner's syntax error is rewritten to the TypeScript position
//! (`script.ts:L:C`). A position with no mapping (code the transform made up) is left as it
//! was, still named `script.js`.

/// `(js line, js column, ts line, ts column)`, 0-based, sorted by the JavaScript position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PositionMap {
    tokens: Vec<(u32, u32, u32, u32)>,
}

/// How the runner names the script in stacks (`sandbox_runner::engine::SCRIPT_NAME`).
const JS_NAME: &str = "script.js";
/// How a TypeScript script is named once its positions are mapped back.
pub const TS_NAME: &str = "script.ts";

impl PositionMap {
    /// From `(js line, js column, ts line, ts column)` tokens (0-based), in any order.
    pub fn from_tokens(tokens: impl IntoIterator<Item = (u32, u32, u32, u32)>) -> Self {
        let mut tokens: Vec<_> = tokens.into_iter().collect();
        tokens.sort_unstable();
        tokens.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        PositionMap { tokens }
    }

    /// The TypeScript position (1-based line and column) of a JavaScript one: the closest
    /// mapped token at or before it on the same line, moved by the same distance.
    pub fn lookup(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        let (l, c) = (line.checked_sub(1)?, column.checked_sub(1)?);
        let at = self.tokens.partition_point(|t| (t.0, t.1) <= (l, c));
        let t = self.tokens[..at].last().filter(|t| t.0 == l)?;
        Some((t.2 + 1, t.3 + (c - t.1) + 1))
    }

    /// `text` with every `script.js:L:C` and `(line L, column C)` mapped to TypeScript.
    pub fn rewrite(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        loop {
            let stack_at = rest.find(JS_NAME);
            let syntax_at = rest.find("(line ");
            let next = match (stack_at, syntax_at) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            out.push_str(&rest[..next]);
            rest = &rest[next..];
            if let Some(after) = rest.strip_prefix(JS_NAME) {
                if let Some((line, column, used)) = numbers(after, ':', ':') {
                    if let Some((l, c)) = self.lookup(line, column) {
                        out.push_str(&format!("{TS_NAME}:{l}:{c}"));
                        rest = &after[used..];
                        continue;
                    }
                }
                out.push_str(JS_NAME);
                rest = after;
            } else {
                let after = &rest["(line ".len()..];
                if let Some((line, column, used)) = numbers_syntax(after) {
                    if let Some((l, c)) = self.lookup(line, column) {
                        out.push_str(&format!("(line {l}, column {c})"));
                        rest = &after[used..];
                        continue;
                    }
                }
                out.push_str("(line ");
                rest = after;
            }
        }
        out.push_str(rest);
        out
    }
}

/// `<sep1>L<sep2>C` at the start of `s`: the two numbers and the bytes they took.
fn numbers(s: &str, sep1: char, sep2: char) -> Option<(u32, u32, usize)> {
    let s1 = s.strip_prefix(sep1)?;
    let n1 = s1.bytes().take_while(u8::is_ascii_digit).count();
    let line = s1[..n1].parse().ok()?;
    let s2 = s1[n1..].strip_prefix(sep2)?;
    let n2 = s2.bytes().take_while(u8::is_ascii_digit).count();
    let column = s2[..n2].parse().ok()?;
    Some((line, column, sep1.len_utf8() + n1 + sep2.len_utf8() + n2))
}

/// `L, column C)` at the start of `s`.
fn numbers_syntax(s: &str) -> Option<(u32, u32, usize)> {
    let n1 = s.bytes().take_while(u8::is_ascii_digit).count();
    let line = s[..n1].parse().ok()?;
    let s2 = s[n1..].strip_prefix(", column ")?;
    let n2 = s2.bytes().take_while(u8::is_ascii_digit).count();
    let column = s2[..n2].parse().ok()?;
    s2[n2..].strip_prefix(')')?;
    Some((line, column, n1 + ", column ".len() + n2 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_stack_and_syntax_positions() {
        // JS line 2 col 3 (0-based 1,2) came from TS line 7 col 5 (0-based 6,4).
        let m = PositionMap::from_tokens([(1, 2, 6, 4), (0, 0, 0, 0)]);
        assert_eq!(m.lookup(2, 3), Some((7, 5)));
        assert_eq!(m.lookup(2, 9), Some((7, 11)));
        assert_eq!(m.lookup(3, 1), None);
        assert_eq!(
            m.rewrite("Error: x\n    at f (script.js:2:9)\n    at script.js:5:1"),
            "Error: x\n    at f (script.ts:7:11)\n    at script.js:5:1"
        );
        assert_eq!(
            m.rewrite("bad (line 2, column 3)"),
            "bad (line 7, column 5)"
        );
        assert_eq!(m.rewrite("script.js:x (line 9"), "script.js:x (line 9");
    }
}
