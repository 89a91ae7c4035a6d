//! A bound on how deeply a Python source nests, checked before monty's parser sees it.
//!
//! ruff's parser (which monty uses) reads a left-deep chain such as `1+1+…+1`, `a.b.c…` or
//! `f()()()…` in a loop but builds a tree one level deeper per operator, and that tree is then
//! walked and dropped recursively: a 230 KB chain of 115,000 terms overflowed the runner's stack,
//! and the abort that follows is a system call the seccomp filter kills (`RUNNER_CRASHED`,
//! SIGSYS). monty refuses anything nested more than 200 levels anyway, so this cheap,
//! non-recursive scan refuses a source whose expressions nest deeper than [`MAX_NESTING`] with
//! `LIMIT_EXCEEDED` naming the line, before any parse.
//!
//! What counts, per expression: each open bracket (`(`, `[`, `{`, an f-string's `{`), and each
//! operator or chaining keyword since the last `,`, `:`, `;`, `=` or end of statement at the same
//! bracket level (`+`, `.`, `not`, `await`, `lambda`, `if`…; a call or subscript's bracket also
//! counts on the level it follows). The sum along the open brackets is the depth. It
//! over-counts (a comparison chain or `and`/`or` is flat in the tree), never under-counts a chain,
//! so a script is refused only when it nests far beyond what monty accepts. Strings are skipped
//! as ruff's lexer reads them (prefixes, triple quotes, escapes, f-strings with nested
//! replacement fields and format specs), so no chain can hide in what the scan takes for text.

/// Deepest nesting a Python source may have (monty itself refuses more than 200 levels).
pub const MAX_NESTING: usize = 1_000;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Root,
    Bracket,
    /// Inside an f-string's text, waiting for its closing quote.
    FString {
        quote: u8,
        triple: bool,
    },
    /// A replacement field's expression (`{` … `}` in an f-string).
    Field,
    /// A replacement field's format spec (after its top-level `:`).
    Spec,
}

struct Frame {
    kind: Kind,
    chain: usize,
}

/// `Err(byte offset)` where the source first nests deeper than `max`.
pub fn deepest_over(source: &[u8], max: usize) -> Result<(), usize> {
    let mut frames = vec![Frame {
        kind: Kind::Root,
        chain: 0,
    }];
    // Sum of the chains plus the open brackets, fields and specs.
    let mut depth = 0usize;
    let mut i = 0usize;
    let n = source.len();
    macro_rules! top {
        () => {
            frames.last_mut().expect("the root frame is never popped")
        };
    }
    macro_rules! chain {
        ($by:expr, $at:expr) => {{
            top!().chain += $by;
            depth += $by;
            if depth > max {
                return Err($at);
            }
        }};
    }
    macro_rules! reset {
        () => {{
            let f = top!();
            depth -= f.chain;
            f.chain = 0;
        }};
    }
    macro_rules! push {
        ($kind:expr, $at:expr) => {{
            frames.push(Frame {
                kind: $kind,
                chain: 0,
            });
            depth += 1;
            if depth > max {
                return Err($at);
            }
        }};
    }
    macro_rules! pop {
        () => {{
            if frames.len() > 1 {
                if let Some(f) = frames.pop() {
                    depth -= f.chain + 1;
                }
            }
        }};
    }
    while i < n {
        let b = source[i];
        match top!().kind {
            Kind::FString { quote, triple } => {
                if b == b'\\' {
                    // An escape never ends the string; `\{` still opens a field.
                    i += if matches!(source.get(i + 1), Some(b'{' | b'}')) {
                        1
                    } else {
                        2
                    };
                } else if (b == b'{' || b == b'}') && source.get(i + 1) == Some(&b) {
                    i += 2;
                } else if b == b'{' {
                    push!(Kind::Field, i);
                    i += 1;
                } else if b == quote && (!triple || source[i..].starts_with(&[quote; 3])) {
                    pop!();
                    i += if triple { 3 } else { 1 };
                } else if b == b'\n' && !triple {
                    pop!(); // unterminated: the parser reports it
                    i += 1;
                } else {
                    i += 1;
                }
                continue;
            }
            Kind::Spec => {
                match b {
                    b'{' => push!(Kind::Field, i),
                    b'}' => pop!(),
                    _ => {}
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        // Code.
        match b {
            b'#' => {
                while i < n && source[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\\' => i += 2,
            b'\n' => {
                if top!().kind == Kind::Root {
                    reset!();
                }
                i += 1;
            }
            b',' | b';' => {
                reset!();
                i += 1;
            }
            b':' if source.get(i + 1) == Some(&b'=') => {
                chain!(1, i);
                i += 2;
            }
            b':' => {
                if top!().kind == Kind::Field {
                    // The field's format spec, literal text up to its `}`.
                    top!().kind = Kind::Spec;
                }
                reset!();
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                chain!(1, i);
                push!(Kind::Bracket, i);
                i += 1;
            }
            b')' | b']' => {
                if top!().kind == Kind::Bracket {
                    pop!();
                }
                i += 1;
            }
            b'}' => {
                if matches!(top!().kind, Kind::Bracket | Kind::Field) {
                    pop!();
                }
                i += 1;
            }
            b'"' | b'\'' => {
                i = string(source, i, b"", &mut frames, &mut depth, max)?;
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'@' | b'&' | b'|' | b'^' | b'~' | b'<' | b'>'
            | b'=' | b'!' | b'.' => {
                let start = i;
                while i < n && b"+-*/%@&|^~<>=!.".contains(&source[i]) {
                    i += 1;
                }
                let run = &source[start..i];
                let assignment = run.ends_with(b"=")
                    && !matches!(run, b"==" | b"<=" | b">=" | b"!=")
                    && run.len() <= 3;
                if assignment {
                    reset!();
                } else {
                    chain!(run.len(), start);
                }
            }
            b if b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 => {
                let start = i;
                let number = b.is_ascii_digit();
                while i < n
                    && (source[i].is_ascii_alphanumeric()
                        || source[i] == b'_'
                        || source[i] >= 0x80
                        || (number && source[i] == b'.'))
                {
                    i += 1;
                }
                let word = &source[start..i];
                if matches!(source.get(i), Some(b'"' | b'\'')) && is_prefix(word) {
                    i = string(source, i, word, &mut frames, &mut depth, max)?;
                } else if matches!(
                    word,
                    b"not"
                        | b"and"
                        | b"or"
                        | b"if"
                        | b"else"
                        | b"lambda"
                        | b"await"
                        | b"in"
                        | b"is"
                ) {
                    chain!(1, start);
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

fn is_prefix(word: &[u8]) -> bool {
    word.len() <= 2
        && word
            .iter()
            .all(|c| matches!(c.to_ascii_lowercase(), b'r' | b'b' | b'u' | b'f' | b't'))
}

/// Skips the string literal whose quote is at `at` (its prefix already read); an f- or t-string
/// pushes its frame instead and the scan goes on inside it. Returns where the scan resumes.
fn string(
    source: &[u8],
    at: usize,
    prefix: &[u8],
    frames: &mut Vec<Frame>,
    depth: &mut usize,
    max: usize,
) -> Result<usize, usize> {
    let quote = source[at];
    let triple = source[at..].starts_with(&[quote; 3]);
    let mut i = at + if triple { 3 } else { 1 };
    if prefix
        .iter()
        .any(|c| matches!(c.to_ascii_lowercase(), b'f' | b't'))
    {
        frames.push(Frame {
            kind: Kind::FString { quote, triple },
            chain: 0,
        });
        *depth += 1;
        if *depth > max {
            return Err(at);
        }
        return Ok(i);
    }
    while i < source.len() {
        let b = source[i];
        if b == b'\\' {
            i += 2;
        } else if b == quote && (!triple || source[i..].starts_with(&[quote; 3])) {
            return Ok(i + if triple { 3 } else { 1 });
        } else if b == b'\n' && !triple {
            return Ok(i);
        } else {
            i += 1;
        }
    }
    Ok(i)
}

/// 1-based line of a byte offset.
pub fn line_of(source: &str, offset: usize) -> usize {
    source.as_bytes()[..offset.min(source.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(src: &str) -> Option<usize> {
        deepest_over(src.as_bytes(), MAX_NESTING).err()
    }

    #[test]
    fn long_chains_are_refused_wherever_they_are() {
        let chain = format!("x = {}1", "1+".repeat(2_000));
        assert!(over(&chain).is_some());
        assert!(over(&format!("y = a{}", ".b".repeat(1_500))).is_some());
        assert!(over(&format!("y = f{}", "()".repeat(1_000))).is_some());
        assert!(over(&format!("y = {}x", "not ".repeat(1_500))).is_some());
        assert!(over(&format!("y = {}x", "-".repeat(1_500))).is_some());
        assert!(over(&format!("y = {}1{}", "(".repeat(600), ")".repeat(600))).is_some());
        // Inside an f-string's field, and after a quote in a format spec.
        assert!(over(&format!("s = f\"{{ {} }}\"", "1+".repeat(2_000))).is_some());
        assert!(over(&format!("s = f\"{{x:'}}\" + {}1", "1+".repeat(2_000))).is_some());
        assert!(over(&format!("s = f'{{x[\"k\"]}}' + {}1", "1+".repeat(2_000))).is_some());
    }

    #[test]
    fn long_flat_code_and_text_pass() {
        let list = format!("xs = [{}]", "-1, ".repeat(50_000));
        assert_eq!(over(&list), None);
        let d = format!("d = {{{}}}", "'k': a.b + 1, ".repeat(20_000));
        assert_eq!(over(&d), None);
        let text = format!("s = '{}'", "+.".repeat(50_000));
        assert_eq!(over(&text), None);
        let doc = format!("s = \"\"\"{}\"\"\"", "a + b\n".repeat(10_000));
        assert_eq!(over(&doc), None);
        let lines = "x = x + 1\n".repeat(50_000);
        assert_eq!(over(&lines), None);
        let fs = format!(
            "s = f\"{{a:>{{w}}}} {{b!r}} {{{{literal}}}}\" + '{}'",
            "+".repeat(5_000)
        );
        assert_eq!(over(&fs), None);
        assert_eq!(over("# 1+1+1+1\nx = 1 # ((((\n"), None);
    }

    #[test]
    fn the_offset_names_the_line() {
        let src = format!("a = 1\nb = 2\nc = {}1\n", "1+".repeat(2_000));
        let at = over(&src).unwrap();
        assert_eq!(line_of(&src, at), 3);
    }
}
