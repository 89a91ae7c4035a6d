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

/// One static reference `mcp.server.tool`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolReference {
    pub server: String,
    pub tool: String,
}

impl ToolReference {
    /// `server:tool`
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.server, self.tool)
    }
}

/// The script does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
}

/// Every static `mcp.X.Y` reference of `code`, sorted and deduplicated.
///
/// The nesting is bounded first and the parse runs on a large stack ([`crate::nesting`]): no
/// script can overflow the host's stack.
pub fn tool_references(code: &str) -> Result<BTreeSet<ToolReference>, ParseError> {
    let guard = |e: crate::error::ExecError| ParseError { message: e.message };
    crate::nesting::check(code).map_err(guard)?;
    crate::nesting::on_parser_stack(code.len(), || parse_references(code)).map_err(guard)?
}

fn parse_references(code: &str) -> Result<BTreeSet<ToolReference>, ParseError> {
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
    Ok(v.found)
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
    if crate::nesting::check(code).is_err() {
        return Reach::All;
    }
    let collected = crate::nesting::on_parser_stack(code.len(), || {
        let allocator = Allocator::default();
        let parsed = Parser::new(&allocator, code, source_type())
            .with_options(parse_options())
            .parse();
        if parsed.panicked || parsed.diagnostics.has_errors() {
            return None;
        }
        let mut v = Collector::default();
        v.visit_program(&parsed.program);
        Some(v)
    });
    match collected {
        Ok(Some(v)) if v.mcp_uses == v.static_server_uses => Reach::Servers(v.servers),
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
    fn reach_is_static_servers_or_all() {
        let only = |names: &[&str]| {
            Reach::Servers(names.iter().map(|s| s.to_string()).collect())
        };
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

