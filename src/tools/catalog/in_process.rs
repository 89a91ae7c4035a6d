//! Tools implemented in Rust and served from the host process: for library users, tests and
//! benchmarks.

use super::{CallContext, ToolInfo, ToolProvider};
use crate::error::{ErrorCode, ExecError};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, ExecError>> + Send + Sync>;

/// A server whose tools are async Rust functions.
pub struct InProcessServer {
    name: String,
    tools: BTreeMap<String, (ToolInfo, Handler)>,
}

impl InProcessServer {
    pub fn new(name: impl Into<String>) -> Self {
        InProcessServer {
            name: name.into(),
            tools: BTreeMap::new(),
        }
    }

    /// Adds a tool. `input_schema` is a JSON Schema object for its arguments.
    pub fn tool<F, Fut>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        f: F,
    ) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ExecError>> + Send + 'static,
    {
        let name = name.into();
        let info = ToolInfo {
            server: self.name.clone(),
            name: name.clone(),
            description: Some(description.into()),
            input_schema,
            output_schema: None,
        };
        let handler: Handler = Arc::new(move |args| Box::pin(f(args)));
        self.tools.insert(name, (info, handler));
        self
    }
}

impl ToolProvider for InProcessServer {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.tools.values().map(|(info, _)| info.clone()).collect()
    }

    fn has_tool(&self, tool: &str) -> bool {
        self.tools.contains_key(tool)
    }

    fn tool(&self, tool: &str) -> Option<ToolInfo> {
        self.tools.get(tool).map(|(info, _)| info.clone())
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        _ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>> {
        match self.tools.get(tool) {
            Some((_, handler)) => handler(args),
            None => {
                let err = ExecError::new(
                    ErrorCode::ToolNotFound,
                    format!("server '{}' has no tool '{tool}'", self.name),
                );
                Box::pin(async move { Err(err) })
            }
        }
    }
}
