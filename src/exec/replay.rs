//! The catalog of a replay (`mcp-sandbox replay`): one provider per server of the recording,
//! answering each call with the recorded answer. No server is started or contacted.
//!
//! The session has already checked each call against the recorded one at its place
//! ([`super::recording::Recorder::on_call`]); a provider answers with the first recorded call of
//! the same tool and arguments not answered yet (calls may reach providers out of order when
//! they run concurrently).

use crate::error::{ErrorCode, ExecError};
use crate::store::audit_recording::Recording;
use crate::tools::catalog::{CallContext, Catalog, CatalogError, ToolInfo, ToolProvider};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One server of a recording.
struct ReplayServer {
    name: String,
    tools: Vec<String>,
    recording: Arc<Recording>,
    answered: Arc<Mutex<Vec<bool>>>,
}

/// The catalog that answers from `recording`: every server and tool the recorded script could
/// call.
pub fn catalog(recording: Arc<Recording>) -> Result<Catalog, CatalogError> {
    let mut servers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for qualified in &recording.tools {
        if let Some((server, tool)) = qualified.split_once(':') {
            servers
                .entry(server.to_string())
                .or_default()
                .push(tool.to_string());
        }
    }
    for call in &recording.calls {
        let tools = servers.entry(call.server.clone()).or_default();
        if !tools.contains(&call.tool) {
            tools.push(call.tool.clone());
        }
    }
    let answered = Arc::new(Mutex::new(vec![false; recording.calls.len()]));
    let mut catalog = Catalog::new();
    for (name, tools) in servers {
        if name == crate::exec::state::STATE_SERVER {
            continue;
        }
        catalog.add(Arc::new(ReplayServer {
            name,
            tools,
            recording: recording.clone(),
            answered: answered.clone(),
        }))?;
    }
    Ok(catalog)
}

impl ToolProvider for ReplayServer {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|t| ToolInfo {
                server: self.name.clone(),
                name: t.clone(),
                description: Some("answered from the recording".into()),
                input_schema: serde_json::json!({}),
                output_schema: None,
            })
            .collect()
    }

    fn has_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        _ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>> {
        let mut answered = self.answered.lock().unwrap_or_else(|p| p.into_inner());
        let found = self.recording.calls.iter().enumerate().find(|(i, c)| {
            !answered.get(*i).copied().unwrap_or(true)
                && c.server == self.name
                && c.tool == tool
                && c.args == args
        });
        let Some((i, call)) = found else {
            let e = ExecError::new(
                ErrorCode::ReplayDiverged,
                format!(
                    "{}.{tool} was called once more with these arguments than in the recording; the replay was stopped there",
                    self.name
                ),
            );
            return Box::pin(async move { Err(e) });
        };
        if let Some(slot) = answered.get_mut(i) {
            *slot = true;
        }
        let answer = match (&call.result, &call.error) {
            (Some(v), _) => Some(Ok(v.clone())),
            (None, Some(e)) => Some(Err(ExecError::new(
                ErrorCode::parse(&e.code).unwrap_or(ErrorCode::ToolError),
                e.message.clone(),
            ))),
            // The recorded script ended before this call was answered: it is not answered now
            // either (the execution's end or the call timeout ends it).
            (None, None) => None,
        };
        Box::pin(async move {
            match answer {
                Some(a) => a,
                None => futures::future::pending().await,
            }
        })
    }
}
