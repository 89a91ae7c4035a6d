//! The rmcp client handler of one MCP server connection: routes the server's progress, logs,
//! elicitation and sampling to the call they belong to, and re-reads the tool list when the
//! server says it changed.

use super::notification_order::NotificationOrder;
use super::tool_list::{list_tools, ListError, Relist};
use super::ToolInfo;
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

/// Called with a server's name and its new tool list after each re-listing on `list_changed`
/// (the front's check of policy globs that match no tool; see `config::rule_names`).
pub type RelistHook = Box<dyn Fn(&str, &[ToolInfo]) + Send + Sync>;

static RELIST_HOOK: std::sync::OnceLock<RelistHook> = std::sync::OnceLock::new();

/// Sets the process's [`RelistHook`] (the first one set stays).
pub fn on_relist(hook: RelistHook) {
    let _ = RELIST_HOOK.set(hook);
}

/// How long a `tools/list` refresh after `notifications/tools/list_changed` may take.
const REFRESH_TIMEOUT: Duration = Duration::from_secs(10);

/// The rmcp client handler: re-reads the tool list when the server says it changed.
#[derive(Clone)]
pub(super) struct ListWatcher {
    pub(super) server: String,
    pub(super) tools: Arc<RwLock<Vec<ToolInfo>>>,
    pub(super) refreshing: Arc<watch::Sender<u32>>,
    pub(super) routes: Arc<crate::tools::passthrough::Routes>,
    /// This connection's (each connection has its own).
    pub(super) order: Arc<NotificationOrder>,
    /// The server's entry (the bounds of its tool list).
    pub(super) config: Arc<crate::config::ServerConfig>,
    /// This connection's re-reads of the list (one in flight, one queued).
    pub(super) relist: Arc<Relist>,
}

impl ClientHandler for ListWatcher {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // The call this progress is about may have been sent a moment ago.
        self.routes.routed().await;
        self.order
            .in_turn(&context.extensions, || {
                self.routes.on_progress(&self.server, params)
            })
            .await;
    }

    /// Declares elicitation and sampling so servers may ask; each request goes to the upstream
    /// client of the execution whose call is open (or is refused, see `passthrough::Routes`).
    #[allow(deprecated)]
    fn get_info(&self) -> rmcp::model::ClientInfo {
        let mut info = rmcp::model::ClientInfo::default();
        info.capabilities.elicitation = Some(Default::default());
        info.capabilities.sampling = Some(Default::default());
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&request)
            .map_err(|e| rmcp::ErrorData::invalid_request(e.to_string(), None))?;
        // The call it is about may have been sent a moment ago; its token (if the server
        // names one) says whose it is.
        self.routes.routed().await;
        let token = context.meta.get_progress_token();
        self.routes
            .forward(
                &self.server,
                crate::tools::passthrough::Forward::Elicit(params),
                token.as_ref(),
            )
            .await
    }

    #[allow(deprecated)] // MCP sampling (SEP-2577): older servers still ask for it.
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&params)
            .map_err(|e| rmcp::ErrorData::invalid_request(e.to_string(), None))?;
        self.routes.routed().await;
        let token = context.meta.get_progress_token();
        self.routes
            .forward(
                &self.server,
                crate::tools::passthrough::Forward::Sample(params),
                token.as_ref(),
            )
            .await
    }

    #[allow(deprecated)] // MCP logging (SEP-2577): older servers still send it.
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // A log line is for the calls open to this server: wait for those just sent.
        self.routes.routed().await;
        let token = serde_json::to_value(&context.meta)
            .ok()
            .and_then(|m| crate::tools::passthrough::token_in_meta(&m));
        self.order
            .in_turn(&context.extensions, || {
                self.routes.on_log(&self.server, params, token.as_ref())
            })
            .await;
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // Handled once the refresh is under way: a call answered after this notification then
        // waits for the new list (`settle`).
        self.order
            .in_turn(&context.extensions, || {
                self.refreshing.send_modify(|n| *n += 1)
            })
            .await;
        // A flood of notifications makes one listing at a time, plus one more for all those
        // that came meanwhile; each notification's count is released by the listing that
        // covers it.
        let Some(mut covered) = self.relist.arrive() else {
            return;
        };
        loop {
            self.relist_once(&context.peer).await;
            self.refreshing
                .send_modify(|n| *n = n.saturating_sub(covered));
            match self.relist.done() {
                Some(more) => covered = more,
                None => break,
            }
        }
    }
}

impl ListWatcher {
    /// One re-read of the list: the new list replaces the old, or the old one stays (with a
    /// warning saying why).
    async fn relist_once(&self, peer: &rmcp::service::Peer<RoleClient>) {
        let listed = list_tools(peer, &self.server, &self.config);
        match tokio::time::timeout(REFRESH_TIMEOUT, listed).await {
            Ok(Ok(tools)) => {
                tracing::info!(server = %self.server, tools = tools.len(), "tool list changed; re-read it");
                if let Some(hook) = RELIST_HOOK.get() {
                    hook(&self.server, &tools);
                }
                if let Ok(mut t) = self.tools.write() {
                    *t = tools;
                }
            }
            // The connection is closing (the server stops, the gateway shuts down): there is
            // nothing left to re-list, and nothing to warn about.
            Ok(Err(ListError::Service(rmcp::ServiceError::TransportClosed))) => {
                tracing::debug!(server = %self.server, "tool list changed as the connection closed")
            }
            Ok(Err(ListError::Service(e))) => {
                tracing::warn!(server = %self.server, "tool list changed but tools/list failed: {e}")
            }
            Ok(Err(ListError::Bound(why))) => {
                tracing::warn!(server = %self.server, "tool list changed but {why}; the previous list stays")
            }
            Err(_) => {
                tracing::warn!(server = %self.server, "tool list changed but tools/list timed out")
            }
        }
    }
}
