//! Tools from OpenAPI descriptions: an `mcpServers` entry with `"openapi"` makes each
//! operation of the spec a tool of that server, called host-side over HTTP. The gate does not
//! know the difference: policy, schema validation, approvals, flow labels, traces (with
//! `"transport": "openapi"`) and audit treat it as any MCP server.
//!
//! One job per file: `spec` (reading, parsing, local `$ref`s), `operations` (operation →
//! tool), `request` (the URL, confined to `baseUrl`), `credentials` (headers, apiKey, bearer,
//! OAuth 2 client credentials), `caller` (the HTTP exchange and its bounds).
//! May import `config`, `error`, `term` and the catalog's provider types.

mod budget;
mod caller;
mod credentials;
mod operations;
mod redact;
mod request;
mod resolver;
mod schema3;
mod spec;

use crate::config::openapi_entry::{bounds, CONFIG_OPENAPI};
use crate::config::ServerConfig;
use crate::error::{ErrorCode, ExecError};
use crate::tools::catalog::{CallContext, ToolInfo, ToolProvider};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Why an OpenAPI server could not start (its message is the server's "unavailable" reason).
#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    #[error("{CONFIG_OPENAPI}_SPEC: {0}")]
    Spec(String),
    #[error("{CONFIG_OPENAPI}: {0}")]
    Config(String),
}

/// One OpenAPI server: its operations as tools, and what calling them needs.
pub struct OpenApiServer {
    name: String,
    base: reqwest::Url,
    tools: Vec<ToolInfo>,
    operations: BTreeMap<String, Arc<operations::Operation>>,
    caller: Arc<caller::Caller>,
}

impl OpenApiServer {
    /// Reads the spec of `config` (a path relative to `base_dir`, or a URL fetched once) and
    /// makes its operations tools.
    pub async fn start(
        name: &str,
        config: &ServerConfig,
        base_dir: &Path,
    ) -> Result<OpenApiServer, String> {
        Self::start_inner(name, config, base_dir)
            .await
            .map_err(|e| e.to_string())
    }

    async fn start_inner(
        name: &str,
        config: &ServerConfig,
        base_dir: &Path,
    ) -> Result<OpenApiServer, OpenApiError> {
        let Some(location) = &config.openapi else {
            return Err(OpenApiError::Config("the entry has no \"openapi\"".into()));
        };
        let client = crate::tools::catalog::http_transport::http_client(config, base_dir)
            .map_err(OpenApiError::Config)?;
        let started = std::time::Instant::now();
        let source = spec::locate(location, base_dir, &client).await?;
        let base_text = config.base_url.as_deref().unwrap_or_default();
        let base = reqwest::Url::parse(base_text)
            .map_err(|e| OpenApiError::Config(format!("baseUrl is not a valid URL: {e}")))?;
        // Reading (a file), parsing, resolving and describing run on a blocking thread, within the
        // spec's budget; abandoned (it stops at its next check) when this start is dropped at
        // the server's startupTimeoutMs.
        let cancelled = Arc::new(AtomicBool::new(false));
        let _abandon = AbandonOnDrop(cancelled.clone());
        let (server, entry, at) = (name.to_string(), config.clone(), base.clone());
        let (ops, tools, credentials) = tokio::task::spawn_blocking(move || {
            let text = source.text()?;
            load(&server, &entry, &at, &text, cancelled)
        })
        .await
        .map_err(|e| OpenApiError::Spec(format!("loading the spec failed: {e}")))??;
        let (timeout, max_bytes, concurrency) = bounds(config);
        tracing::debug!(
            server = %name,
            operations = ops.len(),
            ms = started.elapsed().as_millis() as u64,
            "OpenAPI server loaded"
        );
        Ok(OpenApiServer {
            name: name.to_string(),
            base,
            tools,
            operations: ops
                .into_iter()
                .map(|o| (o.name.clone(), Arc::new(o)))
                .collect(),
            caller: Arc::new(caller::Caller {
                server: name.to_string(),
                client,
                credentials,
                permits: tokio::sync::Semaphore::new(concurrency),
                timeout,
                max_bytes,
            }),
        })
    }
}

/// Sets its flag when dropped: the blocking load it shares stops at its next check.
struct AbandonOnDrop(Arc<AtomicBool>);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What loading a spec makes: its operations, their tools, its credentials.
type Loaded = (
    Vec<operations::Operation>,
    Vec<ToolInfo>,
    credentials::Credentials,
);

/// Parses `text` and makes its operations tools (see [`OpenApiServer::start`]), within the
/// entry's `specBudget`, its `maxTools` and `maxToolListBytes`.
fn load(
    name: &str,
    config: &ServerConfig,
    base: &reqwest::Url,
    text: &str,
    cancelled: Arc<AtomicBool>,
) -> Result<Loaded, OpenApiError> {
    let meter = budget::Meter::new(config.spec_budget.unwrap_or_default(), cancelled);
    let doc = spec::parse(text, &meter)?;
    let resolver = resolver::Resolver::new(&doc, &meter);
    let (max_tools, max_list_bytes, _) = config.tool_list_bounds();
    let filter = operations::Filter {
        operations: &config.operations,
        tags: &config.tags,
        max_tools,
    };
    let mut ops = operations::operations(name, &resolver, &filter)?;
    let credentials = credentials::Credentials::new(config, &resolver, base)?;
    let mut list_bytes: u64 = 0;
    let mut tools = Vec::with_capacity(ops.len());
    for op in &mut ops {
        // The tool holds the schema (the request builder does not read it).
        let tool = ToolInfo {
            server: name.to_string(),
            name: op.name.clone(),
            description: op.description.clone(),
            input_schema: std::mem::take(&mut op.input_schema),
            output_schema: Some(serde_json::json!({
                "type": "object",
                "properties": {
                    "status": {"type": "integer", "description": "the HTTP status (2xx)"},
                    "body": {"description": "the answer: parsed JSON, else its text, null when empty"}
                },
                "required": ["status", "body"]
            })),
        };
        // The same bound as an MCP server's list (each tool as JSON, summed).
        list_bytes = list_bytes.saturating_add(
            [Some(&tool.input_schema), tool.output_schema.as_ref()]
                .into_iter()
                .flatten()
                .map(|v| serde_json::to_vec(v).map_or(0, |b| b.len() as u64))
                .sum::<u64>()
                + (tool.name.len() + tool.description.as_deref().map_or(0, str::len)) as u64,
        );
        if list_bytes > max_list_bytes {
            return Err(OpenApiError::Spec(format!(
                "the spec's tools take more than {max_list_bytes} bytes in all (the server's bound \"maxToolListBytes\"): keep fewer with \"operations\" or \"tags\", or raise maxToolListBytes"
            )));
        }
        tools.push(tool);
    }
    Ok((ops, tools, credentials))
}

impl ToolProvider for OpenApiServer {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.tools.clone()
    }

    fn has_tool(&self, tool: &str) -> bool {
        self.operations.contains_key(tool)
    }

    fn tool(&self, tool: &str) -> Option<ToolInfo> {
        self.tools.iter().find(|t| t.name == tool).cloned()
    }

    fn transport(&self) -> Option<&'static str> {
        Some("openapi")
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>> {
        let op = self.operations.get(tool).cloned();
        let caller = self.caller.clone();
        let base = self.base.clone();
        let server = self.name.clone();
        let tool = tool.to_string();
        let left = ctx
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        Box::pin(async move {
            let Some(op) = op else {
                return Err(ExecError::new(
                    ErrorCode::ToolNotFound,
                    format!("server '{server}' has no operation {tool}"),
                )
                .with_tool(tool));
            };
            let built = request::build(&base, &op, &args)?;
            let timeout = caller.timeout.min(left);
            // Whatever leaves the caller (its answer, any error) is redacted of every
            // credential, in every spelling: the script, traces and audit see what it returns.
            let result = caller.call(&op, built, timeout).await;
            let redactor = caller.credentials.redactor();
            result.map_err(|mut e| {
                e.message = redactor.text(&e.message);
                e
            })
        })
    }
}
