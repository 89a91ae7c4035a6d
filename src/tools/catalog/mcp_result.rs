//! What an MCP server's answers become for a script: a tool's description and schemas, and a
//! call's result (the design's mapping).

use super::ToolInfo;
use crate::error::{ErrorCode, ExecError};
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::Value;

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
