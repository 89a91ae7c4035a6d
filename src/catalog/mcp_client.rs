//! Real MCP servers over stdio, through an rmcp client: started once per host, in parallel, each
//! with a start-up timeout; a server that fails to start is reported with the reason and leaves
//! the others usable.

use super::{CallContext, ToolInfo, ToolProvider};
use crate::config::{Config, ServerConfig};
use crate::error::{ErrorCode, ExecError};
use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::service::Peer;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// How long a server gets to exit after its stdin closes before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Lines of a server's stderr kept to explain a failure.
const STDERR_TAIL: usize = 8;

/// A connected MCP server.
pub struct McpServer {
    name: String,
    peer: Peer<RoleClient>,
    /// Held for shutdown; calls go through `peer`.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    tools: Vec<ToolInfo>,
}

impl McpServer {
    /// Spawns the server, initializes the session and lists its tools (all pages).
    pub async fn start(
        name: &str,
        config: &ServerConfig,
        cwd: &std::path::Path,
    ) -> Result<McpServer, String> {
        let mut cmd = tokio::process::Command::new(&config.command);
        cmd.args(&config.args).envs(&config.env).current_dir(cwd);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", config.command))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = stderr {
            let tail = tail.clone();
            let server = name.to_string();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(server = %server, "{line}");
                    if let Ok(mut t) = tail.lock() {
                        if t.len() == STDERR_TAIL {
                            t.pop_front();
                        }
                        t.push_back(line);
                    }
                }
            });
        }
        let explain = |what: String| {
            let lines: Vec<String> = tail
                .lock()
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default();
            if lines.is_empty() {
                what
            } else {
                format!("{what}; its stderr said: {}", lines.join(" | "))
            }
        };
        let service = match ().serve(transport).await {
            Ok(s) => s,
            Err(e) => {
                // Give the stderr reader a moment to collect the server's last words.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(explain(format!("initialize failed: {e}")));
            }
        };
        let tools = match service.peer().list_all_tools().await {
            Ok(t) => t,
            Err(e) => return Err(explain(format!("tools/list failed: {e}"))),
        };
        let tools = tools.iter().map(|t| tool_info(name, t)).collect();
        Ok(McpServer {
            name: name.to_string(),
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            tools,
        })
    }
}

fn tool_info(server: &str, t: &Tool) -> ToolInfo {
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

impl ToolProvider for McpServer {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.tools.clone()
    }

    fn has_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t.name == tool)
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        _ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>> {
        let peer = self.peer.clone();
        let qualified = format!("{}:{tool}", self.name);
        let server = self.name.clone();
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        Box::pin(async move {
            // rmcp sends `notifications/cancelled` if this future is dropped before the answer.
            match peer.call_tool_once(params).await {
                Ok(CallToolResponse::Complete(result)) => map_result(&qualified, result),
                Ok(_) => Err(ExecError::new(
                    ErrorCode::ToolError,
                    format!("{qualified} asked for interactive input or a task, which scripts cannot provide"),
                )
                .with_tool(&qualified)),
                Err(e) => Err(ExecError::new(
                    ErrorCode::ToolError,
                    format!("MCP server '{server}' failed the call: {e}"),
                )
                .with_tool(&qualified)),
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(mut service) = self.service.lock().await.take() {
                let _ = service.close_with_timeout(SHUTDOWN_GRACE).await;
            }
        })
    }
}

/// Starts every configured server in parallel, each bounded by `timeout`. Returns the servers
/// that started and, for the others, the reason.
pub async fn start_mcp_servers(
    config: &Config,
    timeout: Duration,
) -> (Vec<McpServer>, Vec<(String, String)>) {
    let starts = config.servers.iter().map(|(name, server)| {
        let cwd = config.server_cwd(server);
        async move {
            let r = tokio::time::timeout(timeout, McpServer::start(name, server, &cwd)).await;
            let r = match r {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "did not finish starting within {} ms",
                    timeout.as_millis()
                )),
            };
            (name.clone(), r)
        }
    });
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (name, r) in futures::future::join_all(starts).await {
        match r {
            Ok(s) => ok.push(s),
            Err(reason) => {
                tracing::warn!(server = %name, "MCP server unavailable: {reason}");
                failed.push((name, reason));
            }
        }
    }
    (ok, failed)
}
