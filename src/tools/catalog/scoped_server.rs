//! A server with one process per tenant or per principal (`"scope"` in its entry): what one
//! tenant leaves in a stateful server (the reference `memory` server's graph, a browser's
//! cookies) is never in the process another tenant's calls reach.
//!
//! - The process started with the host lists the tools (every process of one entry runs the
//!   same program) and serves the CLI's own caller (tenant `default`, principal `local`), so
//!   `run` and a stdio `serve` start nothing more than before.
//! - Any other tenant's (or principal's) first call starts its own process, under the entry's
//!   start-up timeout; calls made together wait for the same start.
//! - A process unused for the entry's `idleTimeoutMs` is stopped (never one with a call in
//!   flight); at `maxInstances` the least recently used idle process is stopped for a new one,
//!   and when every one is busy the call fails with `SERVER_UNAVAILABLE`.
//! - Each process's `env` gets the caller's `MCP_SANDBOX_TENANT` (and `MCP_SANDBOX_PRINCIPAL`),
//!   so a server that keeps files can be given one path per tenant.

use super::mcp_client::McpServer;
use super::{CallContext, ToolInfo, ToolProvider};
use crate::config::server_entry::for_scope;
use crate::config::{ServerConfig, ServerScope};
use crate::context::principal::DEFAULT_TENANT;
use crate::error::{ErrorCode, ExecError};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The principal of the process started with the host (the CLI's and a stdio client's).
const LISTER_PRINCIPAL: &str = "local";

/// One scoped server entry: its listing process and one process per key.
pub struct ScopedServer {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    config: ServerConfig,
    cwd: PathBuf,
    scope: ServerScope,
    start_timeout: Duration,
    /// Started with the host: lists the tools, serves the key it was started for.
    lister: Arc<McpServer>,
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    by_key: HashMap<String, Arc<Slot>>,
    stopped: bool,
}

/// One key's process, started on first use.
struct Slot {
    server: tokio::sync::OnceCell<Arc<McpServer>>,
    /// The lister's slot: never stopped for idleness or evicted.
    pinned: bool,
    in_flight: AtomicUsize,
    last_used: Mutex<Instant>,
}

impl Slot {
    fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default()
    }
}

/// Marks a call in flight on a slot; the slot counts as used when it ends.
struct InFlight(Arc<Slot>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.last_used.lock() {
            *t = Instant::now();
        }
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ScopedServer {
    /// Starts the listing process of `config` (its tenant `default`, principal `local`) and the
    /// task that stops idle processes. `config.scope()` must not be `Shared`.
    pub async fn start(
        name: &str,
        config: &ServerConfig,
        cwd: &std::path::Path,
        start_timeout: Duration,
    ) -> Result<ScopedServer, String> {
        let scope = config.scope();
        let lister_key = key_of(scope, DEFAULT_TENANT, LISTER_PRINCIPAL);
        let lister_config = instance_config(config, scope, DEFAULT_TENANT, LISTER_PRINCIPAL);
        let lister = Arc::new(McpServer::start(name, &lister_config, cwd).await?);
        lister.set_restart_timeout(start_timeout);
        let slot = Slot {
            server: tokio::sync::OnceCell::new_with(Some(lister.clone())),
            pinned: true,
            in_flight: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
        };
        let mut slots = Slots::default();
        slots.by_key.insert(lister_key, Arc::new(slot));
        let inner = Arc::new(Inner {
            name: name.to_string(),
            config: config.clone(),
            cwd: cwd.to_path_buf(),
            scope,
            start_timeout,
            lister,
            slots: Mutex::new(slots),
        });
        tokio::spawn(stop_idle(Arc::downgrade(&inner), config.idle_timeout()));
        Ok(ScopedServer { inner })
    }
}

/// The key of a caller's process.
fn key_of(scope: ServerScope, tenant: &str, principal: &str) -> String {
    match scope {
        ServerScope::Principal => format!("{tenant}/{principal}"),
        _ => tenant.to_string(),
    }
}

fn instance_config(
    config: &ServerConfig,
    scope: ServerScope,
    tenant: &str,
    principal: &str,
) -> ServerConfig {
    let principal = (scope == ServerScope::Principal).then_some(principal);
    for_scope(config, tenant, principal)
}

impl Inner {
    /// The slot of `key`, created if needed, with a call marked in flight on it (under the
    /// lock, so the idle stopper never takes a slot a call is about to use).
    fn enter(&self, key: &str) -> Result<InFlight, ExecError> {
        let mut slots = self
            .slots
            .lock()
            .map_err(|_| self.unavailable("its process table is poisoned".into()))?;
        if slots.stopped {
            // As a shared server answers after its shutdown.
            return Err(ExecError::new(
                ErrorCode::ToolError,
                format!(
                    "MCP server '{}' is unavailable: it was shut down",
                    self.name
                ),
            ));
        }
        if !slots.by_key.contains_key(key) {
            let max = self.config.max_instances();
            let started = slots.by_key.values().filter(|s| !s.pinned).count();
            if started >= max {
                let idle = slots
                    .by_key
                    .iter()
                    .filter(|(_, s)| !s.pinned && s.in_flight.load(Ordering::Acquire) == 0)
                    .max_by_key(|(_, s)| s.idle_for())
                    .map(|(k, _)| k.clone());
                let Some(evicted) = idle else {
                    return Err(self.unavailable(format!(
                        "it already runs {max} processes (one per {}), each with a call in flight; try again when one ends, or raise \"maxInstances\" in its entry",
                        self.scope_word()
                    )));
                };
                if let Some(slot) = slots.by_key.remove(&evicted) {
                    tracing::info!(server = %self.name, key = %evicted, "stopping the least recently used process for a new one");
                    stop(slot);
                }
            }
            slots.by_key.insert(
                key.to_string(),
                Arc::new(Slot {
                    server: tokio::sync::OnceCell::new(),
                    pinned: false,
                    in_flight: AtomicUsize::new(0),
                    last_used: Mutex::new(Instant::now()),
                }),
            );
        }
        let slot = slots
            .by_key
            .get(key)
            .cloned()
            .ok_or_else(|| self.unavailable("its process table lost an entry".into()))?;
        slot.in_flight.fetch_add(1, Ordering::AcqRel);
        Ok(InFlight(slot))
    }

    /// Forgets `slot` if it is still `key`'s (its start failed: the next call tries again).
    fn forget(&self, key: &str, slot: &Arc<Slot>) {
        if let Ok(mut slots) = self.slots.lock() {
            if slots.by_key.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                slots.by_key.remove(key);
            }
        }
    }

    fn scope_word(&self) -> &'static str {
        match self.scope {
            ServerScope::Principal => "principal",
            _ => "tenant",
        }
    }

    fn unavailable(&self, reason: String) -> ExecError {
        ExecError::new(
            super::unavailable_code(&reason),
            format!("MCP server '{}' is unavailable: {reason}", self.name),
        )
    }

    async fn start_instance(
        &self,
        tenant: &str,
        principal: &str,
    ) -> Result<Arc<McpServer>, String> {
        let config = instance_config(&self.config, self.scope, tenant, principal);
        tracing::info!(server = %self.name, tenant, principal, "starting the caller's own server process");
        let started = tokio::time::timeout(
            self.start_timeout,
            McpServer::start(&self.name, &config, &self.cwd),
        )
        .await
        .map_err(|_| {
            format!(
                "its process for this {} did not finish starting within {} ms",
                self.scope_word(),
                self.start_timeout.as_millis()
            )
        })??;
        started.set_restart_timeout(self.start_timeout);
        Ok(Arc::new(started))
    }
}

/// Stops a slot's process in the background (its calls are over or it was evicted idle).
fn stop(slot: Arc<Slot>) {
    if let Some(server) = slot.server.get().cloned() {
        tokio::spawn(async move { server.shutdown().await });
    }
}

/// Every `idle / 4` (between 50 ms and 30 s), stops the processes unused for `idle`. Ends with
/// the server.
async fn stop_idle(inner: Weak<Inner>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let Ok(mut slots) = inner.slots.lock() else {
            return;
        };
        if slots.stopped {
            return;
        }
        let idle_keys: Vec<String> = slots
            .by_key
            .iter()
            .filter(|(_, s)| {
                !s.pinned
                    && s.in_flight.load(Ordering::Acquire) == 0
                    && s.server.initialized()
                    && s.idle_for() >= idle
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in idle_keys {
            if let Some(slot) = slots.by_key.remove(&key) {
                tracing::info!(server = %inner.name, key = %key, "stopping an idle server process");
                stop(slot);
            }
        }
    }
}

impl ToolProvider for ScopedServer {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn transport(&self) -> Option<&'static str> {
        self.inner.lister.transport()
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.inner.lister.tools()
    }

    fn has_tool(&self, tool: &str) -> bool {
        self.inner.lister.has_tool(tool)
    }

    fn tool(&self, tool: &str) -> Option<ToolInfo> {
        self.inner.lister.tool(tool)
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>> {
        let inner = self.inner.clone();
        let ctx = ctx.clone();
        let tool = tool.to_string();
        Box::pin(async move {
            let caller = &ctx.request.caller;
            let key = key_of(inner.scope, &caller.tenant, &caller.principal);
            let qualified = format!("{}:{tool}", inner.name);
            let in_flight = inner.enter(&key).map_err(|e| e.with_tool(&qualified))?;
            let slot = in_flight.0.clone();
            let server = slot
                .server
                .get_or_try_init(|| inner.start_instance(&caller.tenant, &caller.principal))
                .await
                .cloned();
            let server = match server {
                Ok(server) => server,
                Err(reason) => {
                    inner.forget(&key, &slot);
                    return Err(inner.unavailable(reason).with_tool(&qualified));
                }
            };
            let answer = server.call(&tool, args, &ctx).await;
            drop(in_flight);
            answer
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let slots: Vec<Arc<Slot>> = match self.inner.slots.lock() {
                Ok(mut s) => {
                    s.stopped = true;
                    s.by_key.drain().map(|(_, slot)| slot).collect()
                }
                Err(_) => Vec::new(),
            };
            let servers: Vec<Arc<McpServer>> = slots
                .iter()
                .filter(|s| !s.pinned)
                .filter_map(|s| s.server.get().cloned())
                .chain(std::iter::once(self.inner.lister.clone()))
                .collect();
            futures::future::join_all(servers.iter().map(|s| s.shutdown())).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_tenants_and_under_principal_scope_principals() {
        assert_eq!(key_of(ServerScope::Tenant, "red", "token:a"), "red");
        assert_eq!(
            key_of(ServerScope::Tenant, "red", "token:a"),
            key_of(ServerScope::Tenant, "red", "token:b")
        );
        assert_ne!(
            key_of(ServerScope::Principal, "red", "token:a"),
            key_of(ServerScope::Principal, "red", "token:b")
        );
        assert_ne!(
            key_of(ServerScope::Principal, "red", "token:a"),
            key_of(ServerScope::Principal, "blue", "token:a")
        );
    }
}
