//! Guards for parsing untrusted scripts on the host: oxc's parser, its semantic analysis, the
//! TypeScript transform, the code generator and our own AST visitor all recurse once per level
//! of syntactic nesting, with no limit of their own. A 3 KB script of 1,500 nested parentheses
//! used to overflow a tokio worker's stack and abort the whole host.
//!
//! Two layers:
//! - [`check`]: a cheap, non-recursive scan that refuses a script whose brackets (`(`, `[`, `{`
//!   and template `${`) nest deeper than [`MAX_NESTING`], with `LIMIT_EXCEEDED` naming the
//!   depth and where. It skips strings, comments, template text and regular expression
//!   literals; a `/` after `)`/`]`/a name/a number is taken as division, elsewhere as the start
//!   of a regular expression. Where that guess is wrong the count can only be off for the
//!   brackets of that one literal: a correct program is refused only if it really nests deeper
//!   than the limit (a bracket inside a misread literal may over-count, never crash).
//! - [`on_parser_stack`]: every parse runs on a stack that grows with the source
//!   ([`STACK_PER_SOURCE_BYTE`] per byte). Measured in a debug build, the deepest cost per
//!   nesting level is ~3 KB (unclosed `(`, one byte per level; TypeScript generics `A<` ~3.5 KB
//!   for three bytes), so any nesting a source of up to 2 MiB can hold fits, whatever the scan
//!   missed (left-deep chains such as `1+1+…` or `a.b.c…`, unary runs, `else if` chains are not
//!   brackets). Only the pages actually used are committed. A source of at most
//!   [`INLINE_PARSE_MAX_BYTES`] (what agents send) is parsed on the calling thread: on its own
//!   stack when enough of it is left, else on a stack segment of the needed size that the
//!   `stacker` crate maps and switches to — no thread, no hand-off of the tokio worker (the
//!   thread per parse cost ~0.3 ms of every `execute_code` through `serve`). Larger sources run
//!   on a dedicated thread with a stack of at least [`MIN_PARSER_STACK`] and at most
//!   [`MAX_PARSER_STACK`], at most one per core at once.

use crate::error::{ErrorCode, ExecError};

/// Deepest bracket nesting a script may have.
pub const MAX_NESTING: usize = 1_000;
/// Smallest stack of a parser thread.
pub const MIN_PARSER_STACK: usize = 64 * 1024 * 1024;
/// Stack reserved per byte of source.
pub const STACK_PER_SOURCE_BYTE: usize = 4 * 1024;
/// Largest stack of a parser thread (reserved address space; committed only as used).
pub const MAX_PARSER_STACK: usize = 8 * 1024 * 1024 * 1024;
/// Largest source parsed on the calling thread (its stack, or a segment switched to); a few
/// hundred microseconds of parsing at most, so a tokio worker is not held up for long.
pub const INLINE_PARSE_MAX_BYTES: usize = 16 * 1024;
/// Stack the parser needs besides the per-byte bound (its fixed frames, the visitor's).
const PARSER_BASE_STACK: usize = 256 * 1024;

/// Refuses a script whose brackets nest deeper than [`MAX_NESTING`].
pub fn check(source: &str) -> Result<(), ExecError> {
    match deepest_over(source.as_bytes(), MAX_NESTING) {
        None => Ok(()),
        Some(offset) => {
            let (line, col) = line_col(source, offset);
            Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "line {line}, column {col}: the script nests brackets more than {MAX_NESTING} levels deep (parentheses, brackets, braces and template substitutions count); the limit is {MAX_NESTING}: flatten the expression or build the value in steps"
                ),
            ))
        }
    }
}

/// Runs `f` (a parse of `source_len` bytes) on a stack large enough for any nesting that many
/// bytes can hold: up to [`INLINE_PARSE_MAX_BYTES`] on the calling thread (at most one parse
/// per thread at once, so as many as there are threads calling), beyond it on a thread of its
/// own. A thread that cannot be started is `LIMIT_EXCEEDED`.
///
/// At most as many large parses run at once as the machine has cores: parsing is CPU-bound, and a
/// legal but deep chain such as `1+1+…` filling a 1 MiB script (~500,000 levels at the ~1.2 KB
/// per level measured in a debug build) uses hundreds of MB of its stack while it is parsed. A
/// caller waits for a slot. Called from a worker of tokio's multi-threaded runtime (every
/// front is), the wait for a slot and for the parse is announced with `block_in_place`, so the
/// worker's other tasks (other executions' runner I/O) move to another thread instead of
/// stalling behind the parse.
pub fn on_parser_stack<T: Send>(
    source_len: usize,
    f: impl FnOnce() -> T + Send,
) -> Result<T, ExecError> {
    if source_len <= INLINE_PARSE_MAX_BYTES {
        let needed = source_len
            .saturating_mul(STACK_PER_SOURCE_BYTE)
            .saturating_add(PARSER_BASE_STACK);
        // Runs `f` here when `needed` bytes of this thread's stack are left, else on a new
        // segment of `needed` bytes (mapped, switched to, unmapped after).
        return Ok(stacker::maybe_grow(needed, needed, f));
    }
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(|| parse_on_own_stack(source_len, f))
    } else {
        parse_on_own_stack(source_len, f)
    }
}

fn parse_on_own_stack<T: Send>(
    source_len: usize,
    f: impl FnOnce() -> T + Send,
) -> Result<T, ExecError> {
    let _slot = ParseSlot::acquire();
    let stack = source_len
        .saturating_mul(STACK_PER_SOURCE_BYTE)
        .clamp(MIN_PARSER_STACK, MAX_PARSER_STACK);
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("script-parser".into())
            .stack_size(stack)
            .spawn_scoped(scope, f)
            .map_err(|e| {
                ExecError::new(
                    ErrorCode::LimitExceeded,
                    format!("cannot start a parser thread with a {stack}-byte stack ({e}); retry, or send a smaller script"),
                )
            })?;
        handle.join().map_err(|_| {
            ExecError::new(
                ErrorCode::SyntaxError,
                "the parser failed on this script; simplify it",
            )
        })
    })
}

/// One of the bounded number of parses running at once.
struct ParseSlot;

static RUNNING: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static FREED: std::sync::Condvar = std::sync::Condvar::new();

impl ParseSlot {
    fn acquire() -> ParseSlot {
        // Read once: `available_parallelism` reads the cgroup files each time it is called.
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let max = *CORES.get_or_init(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        });
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        while *running >= max {
            running = FREED.wait(running).unwrap_or_else(|p| p.into_inner());
        }
        *running += 1;
        ParseSlot
    }
}

impl Drop for ParseSlot {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        *running = running.saturating_sub(1);
        FREED.notify_one();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Code,
    /// Inside a template literal's text.
    Template,
}

/// The byte offset where the nesting first exceeds `max`, if it does.
fn deepest_over(src: &[u8], max: usize) -> Option<usize> {
    // Openers: b'(', b'[', b'{', and b'$' for a template's `${`. Template literals themselves
    // are b'`' entries so that `}` of a `${` returns to the template text.
    let mut stack: Vec<u8> = Vec::new();
    let mut depth = 0usize;
    let mut mode = Mode::Code;
    // The last significant byte in code, to tell a regular expression from a division.
    let mut prev: u8 = b';';
    let mut prev_word_end = false;
    let mut i = 0;
    let n = src.len();
    let push = |stack: &mut Vec<u8>, depth: &mut usize, b: u8, at: usize| -> Option<usize> {
        stack.push(b);
        if b != b'`' {
            *depth += 1;
        }
        (*depth > max).then_some(at)
    };
    while i < n {
        let c = src[i];
        if mode == Mode::Template {
            match c {
                b'\\' => i += 2,
                b'`' => {
                    stack.pop();
                    mode = Mode::Code;
                    prev = b')';
                    prev_word_end = false;
                    i += 1;
                }
                b'$' if src.get(i + 1) == Some(&b'{') => {
                    if let Some(at) = push(&mut stack, &mut depth, b'$', i) {
                        return Some(at);
                    }
                    mode = Mode::Code;
                    prev = b'{';
                    prev_word_end = false;
                    i += 2;
                }
                _ => i += 1,
            }
            continue;
        }
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'/' if src.get(i + 1) == Some(&b'/') => {
                while i < n && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if src.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < n && !(src[i] == b'*' && src.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b'/' if (!prev_word_end || ends_with_keyword(src, i))
                && !matches!(prev, b')' | b']') =>
            {
                // A regular expression literal.
                i += 1;
                let mut class = false;
                while i < n && src[i] != b'\n' {
                    match src[i] {
                        b'\\' => i += 1,
                        b'[' => class = true,
                        b']' => class = false,
                        b'/' if !class => break,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                prev = b')';
                prev_word_end = false;
            }
            b'\'' | b'"' => {
                i += 1;
                while i < n && src[i] != c && src[i] != b'\n' {
                    if src[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                prev = b')';
                prev_word_end = false;
            }
            b'`' => {
                stack.push(b'`');
                mode = Mode::Template;
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                if let Some(at) = push(&mut stack, &mut depth, c, i) {
                    return Some(at);
                }
                prev = c;
                prev_word_end = false;
                i += 1;
            }
            b')' | b']' | b'}' => {
                match stack.last() {
                    Some(b'$') if c == b'}' => {
                        stack.pop();
                        depth -= 1;
                        mode = Mode::Template;
                    }
                    Some(&open)
                        if matches!((open, c), (b'(', b')') | (b'[', b']') | (b'{', b'}')) =>
                    {
                        stack.pop();
                        depth -= 1;
                    }
                    // A stray closer: the parser reports it; never lower the count for it.
                    _ => {}
                }
                prev = c;
                prev_word_end = false;
                i += 1;
            }
            _ => {
                let word = c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
                prev = c;
                prev_word_end = word;
                i += 1;
            }
        }
    }
    None
}

/// Whether the word that ends just before `at` (skipping blanks) is a keyword after which `/`
/// starts a regular expression.
fn ends_with_keyword(src: &[u8], at: usize) -> bool {
    let mut end = at;
    while end > 0 && matches!(src[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    let mut start = end;
    while start > 0
        && (src[start - 1].is_ascii_alphanumeric() || matches!(src[start - 1], b'_' | b'$'))
    {
        start -= 1;
    }
    matches!(
        &src[start..end],
        b"return"
            | b"typeof"
            | b"instanceof"
            | b"in"
            | b"of"
            | b"new"
            | b"delete"
            | b"void"
            | b"throw"
            | b"case"
            | b"do"
            | b"else"
            | b"yield"
            | b"await"
    )
}

/// 1-based line and column (in characters) of a byte offset (also for the parser's errors).
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(code: &str, max: usize) -> bool {
        deepest_over(code.as_bytes(), max).is_none()
    }

    #[test]
    fn counts_brackets_braces_and_template_substitutions() {
        let nested = |n: usize| format!("return {}1{}", "(".repeat(n), ")".repeat(n));
        assert!(depth_ok(&nested(1000), 1000));
        assert!(!depth_ok(&nested(1001), 1000));
        assert!(!depth_ok(&"[".repeat(2000), 1000));
        assert!(depth_ok("f(a)[0]; {x: {y: 1}}", 3));
        assert!(!depth_ok("f(a)[0]; {x: {y: [[1]]}}", 3));
        assert!(!depth_ok("`${`${`${1}`}`}`", 2));
        assert!(depth_ok("`${`${`${1}`}`}`", 3));
        let e = check(&nested(1500)).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
        assert!(
            e.message.starts_with("line 1, column 1008: "),
            "{}",
            e.message
        );
        assert!(e.message.contains("1000"), "{}", e.message);
    }

    #[test]
    fn skips_strings_comments_regexes_and_template_text() {
        let parens = "(".repeat(50);
        for code in [
            format!("const s = '{parens}'; const t = \"{parens}\";"),
            format!("// {parens}\n/* {parens} */ 1"),
            format!("const r = /{parens}/; return r"),
            format!("const r = x.split(/[{parens}]/)"),
            format!("const t = `{parens}`; return t"),
            format!("if (a) return /[/]{parens}/"),
        ] {
            assert!(depth_ok(&code, 10), "{code}");
        }
        // Division after a name or `)` is not a regular expression.
        assert!(!depth_ok(&format!("a / b / {parens}"), 10));
        assert!(!depth_ok(&format!("(a) / 2 / {parens}"), 10));
        // A stray closer never lowers the count.
        assert!(!depth_ok(&format!("] {parens}"), 10));
    }

    #[test]
    fn parses_on_a_stack_that_fits_the_source() {
        let code = "!".repeat(20_000) + "1";
        let r = on_parser_stack(code.len(), || {
            crate::script::analysis::tool_references(&code).is_ok()
        });
        assert!(r.unwrap());
    }

    #[test]
    fn small_sources_parse_on_the_calling_thread_even_on_a_small_stack() {
        // The deepest chain an inline-sized source can hold, on a thread with a 256 KiB
        // stack: the parse must move to a segment of its own instead of overflowing.
        let code = "!".repeat(INLINE_PARSE_MAX_BYTES - 1) + "1";
        let here = std::thread::current().id();
        let parsed = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let caller = std::thread::current().id();
                on_parser_stack(code.len(), || {
                    (
                        std::thread::current().id() == caller,
                        crate::script::analysis::tool_references(&code).is_ok(),
                    )
                })
            })
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(parsed, (true, true));
        assert_eq!(std::thread::current().id(), here);
    }
}
