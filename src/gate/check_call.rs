//! The host's check of every call the runner asks for, before anything is forwarded: the server
//! is available, the tool exists (else `TOOL_NOT_FOUND` with the closest names), the policy allows
//! it (else `PERMISSION_DENIED`) and the arguments match the tool's `inputSchema` (else
//! `INVALID_ARGUMENTS` listing each violation with its JSON path), then the rules' conditions
//! on the arguments. The runner checks names too, but it is not trusted to have done so. The
//! session gives it the arguments with their placeholders resolved (the bytes the server would
//! get), and evaluates the conditions again when the call is sent.

use crate::context::RequestContext;
use crate::error::{ErrorCode, ExecError};
use crate::tools::catalog::Catalog;
use serde_json::Value;

/// How many alternatives a `TOOL_NOT_FOUND` names at most.
pub const MAX_ALTERNATIVES: usize = 3;

/// Whether `server.tool(args)` may go to its server, for this request (its policy decides).
pub fn check_call(
    catalog: &Catalog,
    request: &RequestContext,
    server: &str,
    tool: &str,
    args: &Value,
) -> Result<(), ExecError> {
    let qualified = format!("{server}:{tool}");
    if let Some(reason) = catalog.unavailable().get(server) {
        return Err(ExecError::new(
            crate::tools::catalog::unavailable_code(reason),
            format!("MCP server '{server}' is unavailable: {reason}"),
        )
        .with_tool(qualified));
    }
    let Some(info) = catalog.tool(server, tool) else {
        let alternatives = closest(catalog, server, tool);
        let hint = if alternatives.is_empty() {
            "; list the tools with Object.keys(mcp) and Object.keys(mcp.<server>)".to_string()
        } else {
            format!("; did you mean {}?", alternatives.join(", "))
        };
        let mut e = ExecError::new(
            ErrorCode::ToolNotFound,
            format!(
                "unknown tool '{}'{hint}",
                crate::gate::suggest::shown(server, tool)
            ),
        )
        .with_tool(qualified);
        e.alternatives = Some(alternatives);
        return Err(e);
    };
    if let Err(reason) = request.policy.check(server, tool) {
        return Err(ExecError::new(
            ErrorCode::PermissionDenied,
            format!("{reason}; the call was not forwarded"),
        )
        .with_tool(qualified));
    }
    if let Err(violations) = catalog
        .validators()
        .check(&qualified, &info.input_schema, args)
    {
        return Err(ExecError::new(
            ErrorCode::InvalidArguments,
            format!(
                "arguments of {server}:{tool} do not match its inputSchema: {}",
                violations.join("; ")
            ),
        )
        .with_tool(qualified));
    }
    // Conditions on the arguments, once they are known to match the schema.
    check_conditions(request, server, tool, args)
}

/// The conditions of the policy's allow, deny and ask rules on `args`: the arguments with
/// their placeholders resolved, the bytes the server is sent. Evaluated when the call is
/// admitted and again right before it is sent (`exec/session/send_time.rs`).
pub fn check_conditions(
    request: &RequestContext,
    server: &str,
    tool: &str,
    args: &Value,
) -> Result<(), ExecError> {
    if let Err(reason) = request.policy.check_call(server, tool, args) {
        return Err(ExecError::new(
            ErrorCode::PermissionDenied,
            format!("{reason}; the call was not forwarded"),
        )
        .with_tool(format!("{server}:{tool}")));
    }
    Ok(())
}

/// The known tools closest to `server.tool` by edit distance, best first, as `server.tool`
/// (bounded work: see [`crate::gate::suggest`]).
pub fn closest(catalog: &Catalog, server: &str, tool: &str) -> Vec<String> {
    let tools = catalog.tools();
    crate::gate::suggest::closest(
        server,
        tool,
        tools.iter().map(|t| (t.server.as_str(), t.name.as_str())),
    )
}
