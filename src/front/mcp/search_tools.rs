//! `search_tools {query?, server?}`: the matching tools as TypeScript declarations of the `mcp`
//! API, best match first, at most `MAX_SEARCH_RESULTS`.
//!
//! With a state store and a query, the tool graph reorders the answer: the best text matches
//! (up to [`ANCHORS`]) come first, then the tools that past executions used together with them
//! (edges either way, strongest first; whether or not their text matches the query), then the
//! other matches.

use super::{bad_args, text, Gateway};
use crate::tools::catalog::ToolInfo;
use crate::tools::discovery::{
    capability_tools, render_within, search_in, Stubs, MAX_SEARCH_RESULTS,
};
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};

pub const DESCRIPTION: &str = "Find the tools you can call from execute_code, as TypeScript \
declarations (or, with language: \"python\", Python stubs) of the `mcp` object: `mcp.<server>.<tool>(args): Promise<result>`, with argument \
types, optional (`?`) and required fields, allowed values and doc comments. `query` is a few words \
matched against tool names and descriptions (best match first); `server` limits the search to one \
server; with neither, every tool is listed. Tools marked @denied exist but the policy refuses them \
(PERMISSION_DENIED). Servers that failed to start are listed as unavailable with the reason. \
Tools that past executions used together with the best matches are listed right after them. \
Saved capabilities are listed like tools (`mcp.<namespace>.<action>(args)`). The answer ends with \
the session-state functions every script has (`store`, `load`, `keys`, `remove`). Use it before \
writing execute_code code that calls a tool you have not used yet: a wrong name fails with TOOL_NOT_FOUND and \
wrong arguments with INVALID_ARGUMENTS. At most 30 tools per answer, within your output budget \
(max_output_bytes, as for execute_code; the declarations count twice: text and structuredContent): past it \
the answer lists fewer tools, or cuts the one declaration that alone is larger, and says so (`truncated`) \
and how many are left out: search with a narrower `query` or one `server`.";

pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for in tool names and descriptions, e.g. \"read file\"."},
            "server": {"type": "string", "description": "Only tools of this server (the name after `mcp.`)."},
            "language": {"type": "string", "enum": ["typescript", "python"], "description": "The language of the answer: TypeScript declarations (default) or Python stubs, for execute_code with language: \"python\"."}
        },
        "additionalProperties": false
    })
}

/// What of the output budget is kept for the answer's other fields (names, counts, the
/// unavailable servers, the note saying it was cut).
const RESERVED_BYTES: usize = 2048;

/// How many of the best text matches the tool graph is asked about.
pub const ANCHORS: usize = 3;

/// Answers `search_tools` for a caller of `tenant` whose output budget is `max_output_bytes`.
pub async fn call(
    gateway: &Gateway,
    args: JsonObject,
    tenant: &str,
    max_output_bytes: u64,
) -> Result<CallToolResult, ErrorData> {
    let field = |name: &str| -> Result<Option<String>, ErrorData> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad_args(format!("search_tools: `{name}` must be a string"))),
        }
    };
    if let Some(extra) = args
        .keys()
        .find(|k| !["query", "server", "language"].contains(&k.as_str()))
    {
        return Err(bad_args(format!(
            "search_tools: unknown argument `{extra}`; use query, server and language"
        )));
    }
    let stubs = match field("language")?.as_deref() {
        None | Some("typescript") => Stubs::Typescript,
        Some("python") => Stubs::Python,
        Some(other) => {
            return Err(bad_args(format!(
                "search_tools: `language` must be \"typescript\" or \"python\", not {other:?}"
            )))
        }
    };
    let query = field("query")?;
    let server = field("server")?;
    let catalog = gateway.sandbox.catalog();
    // Saved capabilities are found like tools (`mcp.<namespace>.<action>`).
    let capabilities = match &gateway.store {
        Some(store) => {
            let store = store.for_tenant(tenant);
            match tokio::task::spawn_blocking(move || store.list_capabilities()).await {
                Ok(Ok(records)) => capability_tools(catalog, &records),
                Ok(Err(e)) => {
                    tracing::warn!("search_tools: cannot list capabilities: {e}");
                    Vec::new()
                }
                Err(e) => {
                    tracing::warn!("search_tools: the capability listing failed: {e}");
                    Vec::new()
                }
            }
        }
        None => Vec::new(),
    };
    let is_namespace = |s: &str| capabilities.iter().any(|c| c.server == s);
    if let Some(s) = &server {
        if let Some(reason) = catalog.unavailable().get(s) {
            return Ok(CallToolResult::structured_error(json!({
                "tools": [], "unavailable": [{"server": s, "reason": reason}]
            }))
            .with_text(format!("MCP server '{s}' is unavailable: {reason}")));
        }
        if catalog.provider(s).is_none() && !is_namespace(s) {
            let servers: Vec<String> = catalog
                .tools()
                .into_iter()
                .chain(capabilities.iter().cloned())
                .map(|t| t.server)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            return Ok(
                CallToolResult::structured_error(json!({"tools": [], "servers": servers}))
                    .with_text(format!(
                        "there is no server '{s}'; the servers are: {}",
                        servers.join(", ")
                    )),
            );
        }
    }
    let mut everything = catalog.tools();
    everything.extend(capabilities);
    // Scoring every tool and rendering the declarations are CPU work (a description's schemas
    // can be large): on a blocking thread, not on the workers that serve the other clients.
    let (q, sv) = (query.clone(), server.clone());
    let mut found =
        tokio::task::spawn_blocking(move || search_in(everything, q.as_deref(), sv.as_deref()))
            .await
            .map_err(|e| ErrorData::internal_error(format!("search_tools failed: {e}"), None))?;
    let mut related: Vec<Value> = Vec::new();
    if let (Some(store), Some(q)) = (&gateway.store, &query) {
        if !q.trim().is_empty() && !found.is_empty() {
            let all = catalog.tools();
            let candidates = all
                .into_iter()
                .filter(|t| server.as_deref().is_none_or(|s| t.server == s))
                .collect();
            related = with_related(&store.for_tenant(tenant), &mut found, candidates).await;
        }
    }
    let total = found.len();
    let shown: Vec<_> = found.into_iter().take(MAX_SEARCH_RESULTS).collect();
    let unavailable: Vec<Value> = catalog
        .unavailable()
        .iter()
        .map(|(s, r)| json!({"server": s, "reason": r}))
        .collect();
    let (comment, field_name) = match stubs {
        Stubs::Typescript => ("//", "typescript"),
        Stubs::Python => ("#", "python"),
    };
    // The declarations are in the text and in structuredContent: both copies together stay
    // within the caller's output budget, less room for the other fields and the note.
    let budget = usize::try_from(max_output_bytes).unwrap_or(usize::MAX);
    let max_bytes = budget.saturating_sub(RESERVED_BYTES.min(budget / 4));
    let mut shown = shown;
    let wanted = shown.len();
    let mut cut = None;
    let mut body = if shown.is_empty() {
        format!(
            "No tool matches {:?}. Call search_tools without a query to list every tool.\n",
            query.as_deref().unwrap_or("")
        )
    } else {
        let (catalog, policy, all) = (catalog.clone(), gateway.policy.clone(), server.is_none());
        let tools = shown.clone();
        let rendered = tokio::task::spawn_blocking(move || {
            render_within(&catalog, &policy, &tools, all, stubs, max_bytes)
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("search_tools failed: {e}"), None))?;
        shown.truncate(rendered.shown);
        cut = rendered.cut;
        rendered.text
    };
    let truncated = cut.is_some() || shown.len() < wanted;
    if let Some(tool) = &cut {
        body.push_str(&format!(
            "\n{comment} truncated: the declaration of {tool} is cut to fit your output budget (max_output_bytes, {budget} bytes; it is in the text and in structuredContent); call it with the arguments you know: INVALID_ARGUMENTS names what is wrong.\n"
        ));
    } else if truncated {
        body.push_str(&format!(
            "{comment} truncated: {} more tools match but their declarations do not fit your output budget (max_output_bytes, {budget} bytes); narrow the query or pass `server`.\n",
            total - shown.len()
        ));
    } else if total > shown.len() {
        body.push_str(&format!(
            "{comment} {} more tools match; narrow the query or pass `server`.\n",
            total - shown.len()
        ));
    }
    let names: Vec<String> = shown.iter().map(|t| t.qualified()).collect();
    if !related.is_empty() {
        let list: Vec<&str> = related.iter().filter_map(|r| r["tool"].as_str()).collect();
        body = format!(
            "{comment} Used together with the best matches in past executions: {}\n{body}",
            list.join(", ")
        );
    }
    Ok(CallToolResult::structured(json!({
        "tools": names,
        "total": total,
        "truncated": truncated,
        "related": related,
        "unavailable": unavailable,
        field_name: body,
    }))
    .with_text(body))
}

/// Reorders `found` (best text match first): the first [`ANCHORS`] stay first, the tools of
/// `candidates` related to them in the tool graph follow (strongest first), then the rest.
/// Returns the related tools placed, `{tool, score}`. A store error leaves `found` as it is.
async fn with_related(
    store: &crate::store::Store,
    found: &mut Vec<ToolInfo>,
    candidates: Vec<ToolInfo>,
) -> Vec<Value> {
    let anchors: Vec<String> = found.iter().take(ANCHORS).map(|t| t.qualified()).collect();
    let store = store.clone();
    let names = anchors.clone();
    let ranked = match tokio::task::spawn_blocking(move || store.related_tools(&names)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            tracing::warn!("search_tools: the tool graph is unreadable: {e}");
            return Vec::new();
        }
        Err(e) => {
            tracing::warn!("search_tools: the tool graph task failed: {e}");
            return Vec::new();
        }
    };
    let mut placed = Vec::new();
    let mut related_tools = Vec::new();
    for (name, score) in ranked {
        if let Some(t) = candidates.iter().find(|t| t.qualified() == name) {
            related_tools.push(t.clone());
            placed.push(json!({"tool": name, "score": score}));
        }
    }
    if related_tools.is_empty() {
        return placed;
    }
    let rest: Vec<ToolInfo> = std::mem::take(found)
        .into_iter()
        .enumerate()
        .filter(|(i, t)| {
            *i < ANCHORS || !related_tools.iter().any(|r| r.qualified() == t.qualified())
        })
        .map(|(_, t)| t)
        .collect();
    let split = rest.len().min(ANCHORS);
    let (head, tail) = rest.split_at(split);
    found.extend(head.iter().cloned());
    found.extend(related_tools);
    found.extend(tail.iter().cloned());
    placed
}

/// Replaces the default JSON text of a structured result with readable text.
pub(crate) trait WithText {
    fn with_text(self, text: String) -> Self;
}

impl WithText for CallToolResult {
    fn with_text(mut self, t: String) -> Self {
        self.content = vec![text(t)];
        self
    }
}
