//! Static analysis of a script with a real JS/TS parser (oxc): every `mcp.X.Y`, `mcp["X"]["Y"]`
//! (or a mix, or a template literal without substitutions) the script references, before any
//! runner is spawned.
//!
//! The parser setup lives in [`source_type`] and [`parse_options`] only, so that TypeScript
//! stripping and this analysis parse the same way.
//!
//! Scripts run as the body of an async function (top-level `await` and `return`), so they are
//! parsed as a TypeScript module (a superset of JavaScript) that allows `return` outside
//! functions. References through other names (`const m = mcp.math; m.sum()`, `mcp[name]`) are
//! not static and are not collected: at run time such calls reach only real servers, and an
//! unknown name fails with `TOOL_NOT_FOUND` from the runner.

use oxc::allocator::Allocator;
use oxc::ast::ast::{Expression, MemberExpression};
use oxc::ast_visit::{walk, Visit};
use oxc::parser::{ParseOptions, Parser};
use oxc::span::SourceType;
use std::collections::BTreeSet;

/// How scripts are parsed: a TypeScript module (JavaScript is a subset).
pub fn source_type() -> SourceType {
    SourceType::ts().with_module(true)
}

/// Parser options for scripts: `return` is allowed at the top level (the runner compiles the
/// code as an async function body when it has one).
pub fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    }
}

/// The script does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
}

pub use super::references::{References, ToolReference};

/// Every static `mcp.X.Y` reference of `code`, and which calls certainly run.
///
/// The nesting is bounded first and the parse runs on a large stack ([`crate::script::nesting`]): no
/// script can overflow the host's stack.
pub fn references(code: &str) -> Result<References, ParseError> {
    let v = collect(code)?;
    Ok(References {
        all: v.found,
        certain_calls: v.certain_calls,
    })
}

/// [`references`] of code in `language`: Python's are read by [`crate::script::python_refs`].
pub fn references_in(
    code: &str,
    language: sandbox_runner::protocol::Language,
) -> Result<References, ParseError> {
    match language {
        sandbox_runner::protocol::Language::Javascript => references(code),
        sandbox_runner::protocol::Language::Python => {
            Ok(crate::script::python_refs::references(code))
        }
    }
}

/// Every static `mcp.X.Y` reference of `code`, sorted and deduplicated.
pub fn tool_references(code: &str) -> Result<BTreeSet<ToolReference>, ParseError> {
    Ok(collect(code)?.found)
}

fn collect(code: &str) -> Result<Collector, ParseError> {
    let guard = |e: crate::error::ExecError| ParseError { message: e.message };
    crate::script::nesting::check(code).map_err(guard)?;
    crate::script::nesting::on_parser_stack(code.len(), || parse_and_collect(code))
        .map_err(guard)?
}

fn parse_and_collect(code: &str) -> Result<Collector, ParseError> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, code, source_type())
        .with_options(parse_options())
        .parse();
    if parsed.panicked || parsed.diagnostics.has_errors() {
        let message = parsed
            .diagnostics
            .errors()
            .next()
            .map(|d| d.to_string())
            .unwrap_or_else(|| "the script does not parse".into());
        return Err(ParseError { message });
    }
    let mut v = Collector::default();
    v.visit_program(&parsed.program);
    Ok(v)
}

/// The calls `mcp.X.Y(…)` made as a statement of their own — not awaited, returned, assigned,
/// chained (`.then`, `.catch`) or passed along — in source order: each starts a call nothing
/// waits for, which the script may return before (it is then cancelled). A script in which no
/// `mcp.` starts a statement (the usual `await mcp.…`, `const x = …`) is not parsed at all;
/// one that does not parse has none (the runner reports its syntax error).
pub fn unawaited_calls(code: &str) -> Vec<ToolReference> {
    if !may_start_a_statement_with_mcp(code) {
        return Vec::new();
    }
    collect(code).map(|v| v.unawaited).unwrap_or_default()
}

/// Whether some `mcp.` follows the start, `;`, `{`, `}` or `)` (whitespace aside): a cheap
/// filter in front of the parse.
fn may_start_a_statement_with_mcp(code: &str) -> bool {
    code.match_indices("mcp.").any(|(at, _)| {
        let before = code[..at].trim_end();
        before.is_empty() || before.ends_with([';', '{', '}', ')'])
    })
}

/// Which configured servers a script can reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The script uses `mcp` other than as `mcp.X` / `mcp["X"]` (`mcp[name]`, `Object.keys(mcp)`,
    /// `"x" in mcp`, passing `mcp` along), or does not parse: any server may be called.
    All,
    /// Only these names follow `mcp.` (servers or capability namespaces).
    Servers(BTreeSet<String>),
}

/// The servers `code` can reach, for starting only those (see [`Reach`]).
pub fn servers_reached(code: &str) -> Reach {
    match collect(code) {
        Ok(v) if v.mcp_uses == v.static_server_uses => Reach::Servers(v.servers),
        _ => Reach::All,
    }
}

#[derive(Default)]
struct Collector {
    found: BTreeSet<ToolReference>,
    /// Every `X` of a static `mcp.X`.
    servers: BTreeSet<String>,
    /// References to the identifier `mcp`.
    mcp_uses: usize,
    /// Of those, the ones that are the object of a static `mcp.X`.
    static_server_uses: usize,
    /// See [`References::certain_calls`].
    certain_calls: BTreeSet<ToolReference>,
    /// How many constructs that may skip their code enclose the current node.
    uncertain: u32,
    /// See [`unawaited_calls`].
    unawaited: Vec<ToolReference>,
}

impl Collector {
    fn uncertainly(&mut self, f: impl FnOnce(&mut Self)) {
        self.uncertain += 1;
        f(self);
        self.uncertain -= 1;
    }
}

/// Whether a statement may `return` (outside nested functions).
#[derive(Default)]
struct ReturnFinder(bool);

impl<'a> Visit<'a> for ReturnFinder {
    fn visit_return_statement(&mut self, _: &oxc::ast::ast::ReturnStatement<'a>) {
        self.0 = true;
    }
    fn visit_function(
        &mut self,
        _: &oxc::ast::ast::Function<'a>,
        _: oxc::syntax::scope::ScopeFlags,
    ) {
    }
    fn visit_arrow_function_expression(&mut self, _: &oxc::ast::ast::ArrowFunctionExpression<'a>) {}
}

/// `X` when `e` is `mcp.X` / `mcp["X"]`.
fn server_of<'a>(e: &'a Expression<'a>) -> Option<&'a str> {
    let m = e.without_parentheses().as_member_expression()?;
    if !m.object().without_parentheses().is_specific_id("mcp") {
        return None;
    }
    m.static_property_name()
}

impl<'a> Visit<'a> for Collector {
    fn visit_program(&mut self, it: &oxc::ast::ast::Program<'a>) {
        use oxc::ast::ast::Statement;
        let mut may_have_returned = false;
        for stmt in &it.body {
            let simple = matches!(
                stmt,
                Statement::ExpressionStatement(_)
                    | Statement::VariableDeclaration(_)
                    | Statement::ReturnStatement(_)
            );
            if simple && !may_have_returned {
                self.visit_statement(stmt);
            } else {
                self.uncertainly(|v| v.visit_statement(stmt));
            }
            if !may_have_returned {
                let mut finder = ReturnFinder::default();
                finder.visit_statement(stmt);
                may_have_returned = finder.0;
            }
        }
    }

    fn visit_call_expression(&mut self, it: &oxc::ast::ast::CallExpression<'a>) {
        if self.uncertain == 0 && !it.optional {
            if let Some(m) = it.callee.without_parentheses().as_member_expression() {
                if let (Some(server), Some(tool)) =
                    (server_of(m.object()), m.static_property_name())
                {
                    self.certain_calls.insert(ToolReference {
                        server: server.to_string(),
                        tool: tool.to_string(),
                    });
                }
            }
        }
        walk::walk_call_expression(self, it);
    }

    fn visit_logical_expression(&mut self, it: &oxc::ast::ast::LogicalExpression<'a>) {
        self.visit_expression(&it.left);
        self.uncertainly(|v| v.visit_expression(&it.right));
    }

    fn visit_conditional_expression(&mut self, it: &oxc::ast::ast::ConditionalExpression<'a>) {
        self.visit_expression(&it.test);
        self.uncertainly(|v| {
            v.visit_expression(&it.consequent);
            v.visit_expression(&it.alternate);
        });
    }

    fn visit_assignment_expression(&mut self, it: &oxc::ast::ast::AssignmentExpression<'a>) {
        if it.operator.is_logical() {
            self.uncertainly(|v| walk::walk_assignment_expression(v, it));
        } else {
            walk::walk_assignment_expression(self, it);
        }
    }

    fn visit_chain_expression(&mut self, it: &oxc::ast::ast::ChainExpression<'a>) {
        self.uncertainly(|v| walk::walk_chain_expression(v, it));
    }

    fn visit_assignment_pattern(&mut self, it: &oxc::ast::ast::AssignmentPattern<'a>) {
        self.uncertainly(|v| walk::walk_assignment_pattern(v, it));
    }

    fn visit_function(
        &mut self,
        it: &oxc::ast::ast::Function<'a>,
        flags: oxc::syntax::scope::ScopeFlags,
    ) {
        self.uncertainly(|v| walk::walk_function(v, it, flags));
    }

    fn visit_arrow_function_expression(&mut self, it: &oxc::ast::ast::ArrowFunctionExpression<'a>) {
        self.uncertainly(|v| walk::walk_arrow_function_expression(v, it));
    }

    fn visit_expression_statement(&mut self, it: &oxc::ast::ast::ExpressionStatement<'a>) {
        // (An arrow's expression body is an expression here, not a statement: it is returned.)
        if let Expression::CallExpression(call) = it.expression.without_parentheses() {
            if let Some(m) = call.callee.without_parentheses().as_member_expression() {
                if let (Some(server), Some(tool)) =
                    (server_of(m.object()), m.static_property_name())
                {
                    self.unawaited.push(ToolReference {
                        server: server.to_string(),
                        tool: tool.to_string(),
                    });
                }
            }
        }
        walk::walk_expression_statement(self, it);
    }

    fn visit_class(&mut self, it: &oxc::ast::ast::Class<'a>) {
        self.uncertainly(|v| walk::walk_class(v, it));
    }

    fn visit_identifier_reference(&mut self, it: &oxc::ast::ast::IdentifierReference<'a>) {
        if it.name == "mcp" {
            self.mcp_uses += 1;
        }
    }

    fn visit_member_expression(&mut self, it: &MemberExpression<'a>) {
        if it.object().without_parentheses().is_specific_id("mcp") {
            if let Some(server) = it.static_property_name() {
                self.static_server_uses += 1;
                self.servers.insert(server.to_string());
            }
        }
        if let (Some(server), Some(tool)) = (server_of(it.object()), it.static_property_name()) {
            self.found.insert(ToolReference {
                server: server.to_string(),
                tool: tool.to_string(),
            });
        }
        walk::walk_member_expression(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_started_as_statements_are_unawaited() {
        let names = |code: &str| -> Vec<String> {
            unawaited_calls(code)
                .iter()
                .map(ToolReference::qualified)
                .collect()
        };
        assert_eq!(
            names("mcp.filesystem.write_file({path: 'a'}); return 'done'"),
            ["filesystem:write_file"]
        );
        assert_eq!(
            names("if (x) { mcp.a.b(); } (mcp.c.d()); function f() { mcp.e.f() }"),
            ["a:b", "c:d", "e:f"]
        );
        // Awaited, returned, assigned, chained, passed along, or an arrow's value: not flagged.
        for code in [
            "await mcp.a.b(); return 1",
            "return mcp.a.b()",
            "const p = mcp.a.b(); await p",
            "mcp.a.b().catch(() => {})",
            "await Promise.all([1].map(x => mcp.a.b({x})))",
            "void mcp.a.b()",
            "const m = 'mcp.a.b()'",
            "mcp.a.b(",
        ] {
            assert_eq!(names(code), Vec::<String>::new(), "{code}");
        }
    }

    fn refs(code: &str) -> Vec<String> {
        tool_references(code)
            .unwrap()
            .iter()
            .map(|r| r.qualified())
            .collect()
    }

    #[test]
    fn finds_every_static_form() {
        let code = r#"
            const a = await mcp.fs.read({ path: "x" });
            await mcp["memory"]["store"]({ a });
            await (mcp.math)["sum"]();
            await mcp[`t`].u?.();
            const f = () => mcp.deep.inside.call();
            return mcp.math.sum;
        "#;
        assert_eq!(
            refs(code),
            ["deep:inside", "fs:read", "math:sum", "memory:store", "t:u"]
        );
    }

    #[test]
    fn ignores_dynamic_and_other_objects() {
        let code = r#"
            const name = "x";
            await mcp[name].tool();
            await other.math.sum();
            const s = "mcp.fake.call()"; // mcp.comment.call()
            const m = mcp.math;
        "#;
        assert!(refs(code).is_empty(), "{:?}", refs(code));
    }

    #[test]
    fn only_calls_that_certainly_run_are_certain() {
        let certain = |code: &str| -> Vec<String> {
            references(code)
                .unwrap()
                .certain_calls
                .iter()
                .map(|r| r.qualified())
                .collect()
        };
        assert_eq!(
            certain("const a = await mcp.a.x(); await (mcp.b.y)({}); return mcp.c.z()"),
            ["a:x", "b:y", "c:z"]
        );
        for uncertain in [
            "if (false) { await mcp.a.x() } return 1",
            "if ('a' in mcp) await mcp.a.x()",
            "try { await mcp.a.x() } catch {}",
            "async function f() { await mcp.a.x() } return 1",
            "const f = () => mcp.a.x(); return 1",
            "ok || await mcp.a.x()",
            "const r = ok ? 1 : await mcp.a.x()",
            "for (const i of []) await mcp.a.x()",
            "mcp.a?.x()",
            "mcp.a.x?.()",
            "const {p = mcp.a.x()} = {}",
            "{ await mcp.a.x() }",
            "if (!ok) return 1; await mcp.a.x()",
            "x ??= mcp.a.x()",
            "const v = mcp.a.x; return 1",
        ] {
            assert!(
                certain(uncertain).is_empty(),
                "{uncertain}: {:?}",
                certain(uncertain)
            );
        }
    }

    #[test]
    fn reach_is_static_servers_or_all() {
        let only = |names: &[&str]| Reach::Servers(names.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            servers_reached("await mcp.fs.read({}); const m = mcp['mem']; return m.x"),
            only(&["fs", "mem"])
        );
        assert_eq!(servers_reached("return 1"), only(&[]));
        for dynamic in [
            "await mcp[name].x()",
            "return Object.keys(mcp)",
            "if ('github' in mcp) {}",
            "const m = mcp; m.fs.read()",
            "return (",
        ] {
            assert_eq!(servers_reached(dynamic), Reach::All, "{dynamic}");
        }
    }

    #[test]
    fn typescript_and_top_level_return_parse() {
        assert_eq!(
            refs("const n: number = await mcp.math.sum() as number; return n;"),
            ["math:sum"]
        );
        assert!(tool_references("return (").is_err());
    }
}
