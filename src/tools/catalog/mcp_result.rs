//! What an MCP server's answers become for a script: a tool's description and schemas, and a
//! call's result (the design's mapping).

use super::ToolInfo;
use crate::error::{ErrorCode, ExecError};
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::Value;

/// The tools of a `tools/list` answer the catalog keeps: every one but those whose name a
/// script could never call (empty, over [`super::MAX_NAME_BYTES`], or holding a control
/// character: the host refuses such a name in a call frame). Each refused one is logged once per
/// listing, its name escaped.
pub fn listed_tools(server: &str, tools: &[Tool]) -> Vec<ToolInfo> {
    tools
        .iter()
        .filter(|t| {
            let name: &str = &t.name;
            let bad = if name.is_empty() {
                Some("it is empty")
            } else if name.len() > super::MAX_NAME_BYTES {
                Some("it is longer than 128 bytes")
            } else if name.chars().any(char::is_control) {
                Some("it holds a control character")
            } else {
                None
            };
            if let Some(why) = bad {
                tracing::warn!(
                    server = %crate::term::escape(server),
                    "the server lists a tool named \"{}\"; it is left out of the catalog because {why} (scripts could not call it)",
                    crate::term::escape(&crate::term::clip(name, 256))
                );
            }
            bad.is_none()
        })
        .map(|t| tool_info(server, t))
        .collect()
}

/// A tool as the server lists it, as the catalog keeps it.
pub fn tool_info(server: &str, t: &Tool) -> ToolInfo {
    ToolInfo {
        server: server.to_string(),
        name: t.name.to_string(),
        description: t.description.as_ref().map(|d| d.to_string()),
        input_schema: Value::Object((*t.input_schema).clone()),
        output_schema: t
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone())),
    }
}

/// The design's result mapping: `structuredContent` when present; else a single text item as a
/// string; else the content array. `isError` becomes `TOOL_ERROR` with the server's text.
pub fn map_result(tool: &str, result: CallToolResult) -> Result<Value, ExecError> {
    if result.is_error == Some(true) {
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        let message = if text.is_empty() {
            "the tool reported an error without a message".to_string()
        } else {
            text.join("\n")
        };
        return Err(ExecError::new(ErrorCode::ToolError, message).with_tool(tool));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    if let [one] = result.content.as_slice() {
        if let Some(t) = one.as_text() {
            return Ok(Value::String(t.text.clone()));
        }
    }
    Ok(serde_json::to_value::<&Vec<ContentBlock>>(&result.content).unwrap_or(Value::Null))
}
