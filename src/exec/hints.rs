//! The last step of an outcome's error message: what to do, said for the client that asked.
//!
//! - A `SYNTAX_ERROR` QuickJS reported for a JavaScript script is explained with the host's
//!   parser when it can say more ([`explain_javascript_error`]): `import`/`export`, or
//!   TypeScript syntax sent as JavaScript. Only on the error path.
//! - Messages written for the command line tell a person to "raise --cpu-ms". A client of
//!   `serve` has no flags: its request's `limits` can only lower the operator's limits. For an
//!   MCP client the flag is replaced by what it can do (split the work, or send a larger
//!   `limits.<name>` when its own request lowered the limit), naming the maximum that applies.

use crate::context::{Client, RequestContext};
use crate::error::{ErrorCode, ExecError};
use crate::script::transpile::explain_javascript_error;

/// The flags CLI messages name, each with its `limits` field and how to read its value.
const FLAGS: &[(&str, &str)] = &[
    ("--timeout-ms", "timeout_ms"),
    ("--cpu-ms", "cpu_ms"),
    ("--memory-mb", "memory_mb"),
];

/// Improves `error` (of an execution of `code`, sent to the runner as JavaScript).
pub fn improve(
    error: &mut ExecError,
    code: &str,
    language: sandbox_runner::protocol::Language,
    request: &RequestContext,
) {
    if error.code == ErrorCode::SyntaxError && language.is_javascript() {
        if let Some(better) = explain_javascript_error(code) {
            error.message = format!("{better} (QuickJS said: {})", error.message);
        }
    }
    if matches!(request.client, Client::Mcp { .. }) {
        error.message = for_mcp_client(&error.message, request);
    }
}

/// `message` with every "raise --flag" replaced by what an MCP client can do.
pub fn for_mcp_client(message: &str, request: &RequestContext) -> String {
    let mut out = message.to_string();
    for (flag, field) in FLAGS {
        let raise = format!("raise {flag}");
        if !out.contains(&raise) {
            continue;
        }
        let value = limit_value(request, field);
        // The request's own value applied (it was below the server's limit).
        let lowered = request
            .applied_limits
            .get(*field)
            .is_some_and(|a| !a.capped);
        let advice = match (lowered, value) {
            (true, Some(v)) => format!(
                "send a larger `limits.{field}` in the execute_code request (yours made it {v}; \
                 a request can lower the server's limit, never exceed it)"
            ),
            (_, Some(v)) => format!(
                "split the work into smaller executions (`limits.{field}` is {v}, the server's \
                 maximum for you; a request can only lower it)"
            ),
            (_, None) => format!(
                "split the work into smaller executions (`limits.{field}` can only be lowered by \
                 a request)"
            ),
        };
        out = out.replace(&raise, &advice);
    }
    out
}

fn limit_value(request: &RequestContext, field: &str) -> Option<u64> {
    let l = &request.limits;
    match field {
        "timeout_ms" => Some(l.timeout_ms),
        "cpu_ms" => Some(l.cpu_ms),
        "memory_mb" => Some(l.memory_mb),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::McpTransport;

    fn mcp() -> RequestContext {
        RequestContext {
            client: Client::Mcp {
                transport: McpTransport::Http,
                name: "t".into(),
                version: "1".into(),
            },
            ..RequestContext::default()
        }
    }

    #[test]
    fn mcp_clients_are_not_told_about_flags() {
        let r = mcp();
        let m = for_mcp_client("used too much; look for a loop or raise --cpu-ms", &r);
        assert!(!m.contains("--cpu-ms"), "{m}");
        assert!(
            m.contains(&format!("`limits.cpu_ms` is {}", r.limits.cpu_ms)),
            "{m}"
        );
    }
}
