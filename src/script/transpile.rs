//! TypeScript input: stripped to JavaScript with oxc (parser + TypeScript transform + codegen)
//! before the script is sent to the runner. The runner then runs plain JavaScript, so QuickJS and
//! the runner's own checks stay unchanged.
//!
//! Why oxc rather than swc: it is one coherent set of crates (parser, semantic analysis,
//! transformer, codegen) with a small API, it is the faster and lighter build of the two, and its
//! parser is what the static analysis of `mcp.X.Y` references reuses ([`parse`]). Pinned exactly
//! (`=0.146.0`, the newest release whose minimum Rust is at most the 1.95 installed here) because
//! its API changes from release to release.
//!
//! The user's code is an async function body: it may `await` and `return` at the top level. It is
//! parsed as a module (which allows top-level `await`) with `allow_return_outside_function`, so
//! the source is never wrapped and every line and column in an error is the user's own. Only type
//! syntax is removed: no downlevelling (QuickJS-ng runs modern JavaScript), and `import`/`export`
//! are refused like in JavaScript scripts.

use crate::error::{ErrorCode, ExecError};
use crate::script::source_map::{PositionMap, TS_NAME};
use oxc::allocator::Allocator;
use oxc::ast::ast::Program;
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::diagnostics::{OxcDiagnostic, Severity};
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;
use oxc::transformer::{TransformOptions, Transformer};
use std::path::Path;

/// The language of a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    Javascript,
    Typescript,
    /// Run by the runner's Python engine (monty) as it is: nothing to strip.
    Python,
}

impl Language {
    /// `typescript` for `.ts`/`.mts`/`.cts` files, `python` for `.py`, else `javascript`.
    pub fn from_path(path: &Path) -> Language {
        match path.extension().and_then(|e| e.to_str()) {
            Some("ts" | "mts" | "cts") => Language::Typescript,
            Some("py") => Language::Python,
            _ => Language::Javascript,
        }
    }

    /// The engine of the runner that runs it (TypeScript runs as the JavaScript it is stripped
    /// to).
    pub fn engine(self) -> sandbox_runner::protocol::Language {
        match self {
            Language::Python => sandbox_runner::protocol::Language::Python,
            Language::Javascript | Language::Typescript => {
                sandbox_runner::protocol::Language::Javascript
            }
        }
    }

    fn source_type(self) -> SourceType {
        let base = match self {
            Language::Javascript | Language::Python => SourceType::mjs(),
            Language::Typescript => SourceType::ts(),
        };
        // A module, so top-level `await` parses.
        base.with_module(true)
    }
}

/// The parser options for sandbox scripts: top-level `return` allowed (the code is a function
/// body). Shared by [`parse`] and [`to_javascript`].
pub fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    }
}

/// Parses a sandbox script (JavaScript or TypeScript) into an AST allocated in `allocator`.
/// Errors are `SYNTAX_ERROR` with the line and column in `source`.
pub fn parse<'a>(
    allocator: &'a Allocator,
    source: &'a str,
    language: Language,
) -> Result<Program<'a>, ExecError> {
    let ret = Parser::new(allocator, source, language.source_type())
        .with_options(parse_options())
        .parse();
    if ret.panicked || has_errors(&ret.diagnostics) {
        return Err(syntax_error(source, &ret.diagnostics));
    }
    let program = ret.program;
    // Modules would allow these; scripts in the runner do not.
    for stmt in &program.body {
        if stmt.is_module_declaration() {
            let (line, col) = line_col(source, stmt_start(stmt));
            return Err(ExecError::new(
                ErrorCode::SyntaxError,
                format!(
                    "line {line}, column {col}: {MODULES_REFUSED}: a script is the body of one \
                     async function, not a module, and there are no modules to import. Call \
                     tools with `await mcp.<server>.<tool>(args)` and write helpers as functions \
                     in the script"
                ),
            ));
        }
    }
    Ok(program)
}

fn stmt_start(stmt: &oxc::ast::ast::Statement<'_>) -> u32 {
    use oxc::span::GetSpan;
    stmt.span().start
}

/// The script as JavaScript: unchanged for JavaScript, types stripped for TypeScript.
///
/// Both languages are refused with `LIMIT_EXCEEDED` when their brackets nest deeper than
/// [`crate::script::nesting::MAX_NESTING`]; the strip runs on a stack sized for the source.
pub fn to_javascript(source: &str, language: Language) -> Result<String, ExecError> {
    to_javascript_mapped(source, language).map(|(js, _)| js)
}

/// [`to_javascript`], with the map from the JavaScript's positions back to the TypeScript's
/// (`None` for JavaScript, which runs as written).
pub fn to_javascript_mapped(
    source: &str,
    language: Language,
) -> Result<(String, Option<PositionMap>), ExecError> {
    crate::script::nesting::check(source)?;
    if matches!(language, Language::Javascript | Language::Python) {
        return Ok((source.to_string(), None));
    }
    // The transform asserts its own invariants with panics; user input must never take the host
    // down, so a panic becomes a SYNTAX_ERROR.
    crate::script::nesting::on_parser_stack(source.len(), || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| strip_types(source, language)))
            .unwrap_or_else(|_| {
                Err(ExecError::new(
                    ErrorCode::SyntaxError,
                    "the TypeScript transform failed on this script; simplify the type syntax or send JavaScript",
                ))
            })
    })?
}

/// Why a JavaScript script that QuickJS refused to compile does not compile, when a parser can
/// say it better than QuickJS: `import`/`export` (the sandbox runs scripts, not modules), or
/// TypeScript syntax sent as JavaScript. `None` when there is nothing better to say. Only
/// called after a `SYNTAX_ERROR`, so it costs nothing on the way to a working script.
pub fn explain_javascript_error(source: &str) -> Option<String> {
    if crate::script::nesting::check(source).is_err() {
        return None;
    }
    crate::script::nesting::on_parser_stack(source.len(), || {
        std::panic::catch_unwind(|| {
            let allocator = Allocator::default();
            match parse(&allocator, source, Language::Javascript) {
                Ok(_) => None,
                Err(e) if e.message.contains(MODULES_REFUSED) => Some(e.message),
                Err(_) => {
                    let allocator = Allocator::default();
                    parse(&allocator, source, Language::Typescript)
                        .ok()
                        .map(|_| TYPESCRIPT_AS_JAVASCRIPT.to_string())
                }
            }
        })
        .ok()
        .flatten()
    })
    .ok()
    .flatten()
}

/// What a JavaScript script with TypeScript syntax is told.
pub const TYPESCRIPT_AS_JAVASCRIPT: &str = "the script uses TypeScript syntax (type annotations, \
    interfaces, `as`, generics) but was sent as JavaScript: send it with language: \"typescript\" \
    (execute_code's `language`), or as a .ts file or with --language typescript (`run`)";

/// The start of the message for `import`/`export` in a script.
const MODULES_REFUSED: &str = "import/export is not available in the sandbox";

fn strip_types(
    source: &str,
    language: Language,
) -> Result<(String, Option<PositionMap>), ExecError> {
    let allocator = Allocator::default();
    let mut program = parse(&allocator, source, language)?;
    refuse_decorators(source, &program)?;
    let scoping = SemanticBuilder::new()
        .with_excess_capacity(2.0)
        .with_enum_eval(true)
        .build(&program)
        .semantic
        .into_scoping();
    let options = TransformOptions::default();
    let ret = Transformer::new(&allocator, Path::new("script.ts"), &options)
        .build_with_scoping(scoping, &mut program);
    if has_errors(&ret.diagnostics) {
        return Err(syntax_error(source, &ret.diagnostics));
    }
    let options = CodegenOptions {
        source_map_path: Some(std::path::PathBuf::from(TS_NAME)),
        ..CodegenOptions::default()
    };
    let ret = Codegen::new().with_options(options).build(&program);
    let positions = ret.map.map(|map| {
        PositionMap::from_tokens(map.get_tokens().map(|t| {
            (
                t.get_dst_line(),
                t.get_dst_col(),
                t.get_src_line(),
                t.get_src_col(),
            )
        }))
    });
    Ok((strip_module_marker(ret.code), positions))
}

/// Decorators are refused: the transform would leave them in the JavaScript (QuickJS cannot
/// run them) or turn them into calls of helpers imported from a module the sandbox does not
/// have. The refusal names the decorator's TypeScript position.
fn refuse_decorators(source: &str, program: &Program<'_>) -> Result<(), ExecError> {
    use oxc::ast_visit::Visit;
    struct First(Option<u32>);
    impl<'a> Visit<'a> for First {
        fn visit_decorator(&mut self, d: &oxc::ast::ast::Decorator<'a>) {
            if self.0.is_none() {
                self.0 = Some(d.span.start);
            }
        }
    }
    let mut first = First(None);
    first.visit_program(program);
    match first.0 {
        None => Ok(()),
        Some(at) => {
            let (line, col) = line_col(source, at);
            Err(ExecError::new(
                ErrorCode::SyntaxError,
                format!(
                    "line {line}, column {col}: decorators (`@name` before a class or member) are \
                     not supported in the sandbox: they cannot be turned into plain JavaScript \
                     here. Call the decorating function yourself (`const C = decorate(class {{ … }})`)"
                ),
            ))
        }
    }
}

/// The transform marks a module whose imports were all type-only with `export {};`; the runner
/// runs scripts, where that line would be a syntax error.
fn strip_module_marker(code: String) -> String {
    let trimmed = code.trim_end();
    match trimmed.strip_suffix("export {};") {
        Some(rest) => rest.to_string(),
        None => code,
    }
}

fn has_errors(diagnostics: &[OxcDiagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}

fn syntax_error(source: &str, diagnostics: &[OxcDiagnostic]) -> ExecError {
    let mut parts = Vec::new();
    let errors = diagnostics.iter().filter(|d| d.severity == Severity::Error);
    for e in errors.take(5) {
        let at = e.labels.first().map(|l| line_col(source, l.offset()));
        parts.push(match at {
            Some((line, col)) => format!("line {line}, column {col}: {}", e.message),
            None => e.message.to_string(),
        });
    }
    if parts.is_empty() {
        parts.push("the parser gave up on this script".into());
    }
    ExecError::new(ErrorCode::SyntaxError, parts.join("; "))
}

/// 1-based line and column (in characters) of an oxc span offset.
fn line_col(source: &str, offset: u32) -> (usize, usize) {
    crate::script::nesting::line_col(source, offset as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_types_and_keeps_top_level_await_and_return() {
        let ts = "interface P { path: string }\ntype R = { content: string };\nconst p: P = { path: 'x' };\nconst r = await mcp.fs.read(p) as R;\nfunction f<T>(x: T): T { return x }\nenum Color { Red }\nreturn f<string>(r.content) + Color.Red;\n";
        let js = to_javascript(ts, Language::Typescript).unwrap();
        assert!(!js.contains("interface") && !js.contains(": P"), "{js}");
        assert!(js.contains("await mcp.fs.read(p)"), "{js}");
        assert!(js.contains("return f(r.content) + Color.Red;"), "{js}");
        assert!(!js.contains("export"), "{js}");
    }

    #[test]
    fn syntax_errors_have_the_users_line_and_column() {
        let e =
            to_javascript("const a = 1;\nconst b: number = ;\n", Language::Typescript).unwrap_err();
        assert_eq!(e.code, ErrorCode::SyntaxError);
        assert!(
            e.message.starts_with("line 2, column 19: "),
            "{}",
            e.message
        );
        let e = to_javascript("import x from 'y';\nx", Language::Typescript).unwrap_err();
        assert!(
            e.message.starts_with("line 1, column 1: import/export"),
            "{}",
            e.message
        );
    }

    #[test]
    fn javascript_parses_with_the_same_options() {
        let alloc = Allocator::default();
        let p = parse(
            &alloc,
            "const x = await mcp.a.b({});\nreturn x",
            Language::Javascript,
        )
        .unwrap();
        assert_eq!(p.body.len(), 2);
        assert_eq!(
            to_javascript("return 1 +", Language::Javascript).unwrap(),
            "return 1 +"
        );
        assert_eq!(
            Language::from_path(Path::new("a/b.ts")),
            Language::Typescript
        );
        assert_eq!(
            Language::from_path(Path::new("a/b.js")),
            Language::Javascript
        );
    }
}
