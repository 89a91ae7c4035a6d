//! Connecting to a remote (`url`) MCP server: the streamable HTTP transport (with OAuth when
//! the entry says so), the session's initialization and the first tool list.

use super::*;

/// Connects to a remote (`url`) server over streamable HTTP, initializes the session and lists
/// its tools. Errors give the reason (refused, DNS, TLS, HTTP status, timeout), never a header.
pub(super) async fn connect_remote(
    name: &str,
    config: &ServerConfig,
    base_dir: &std::path::Path,
    watcher: ListWatcher,
) -> Result<(Conn, Vec<ToolInfo>), String> {
    use crate::tools::catalog::http_transport::{http_client, transport, transport_config};
    let client = http_client(config, base_dir)?;
    let settings = transport_config(name, config)?;
    let order = watcher.order.clone();
    use rmcp::service::ClientServiceExt;
    let lifecycle = crate::tools::catalog::http_transport::lifecycle();
    let started = if config.oauth.is_some() {
        let client = crate::tools::catalog::oauth::client(name, config, client).await?;
        let counted = Counted::new(transport(client, settings), order.clone());
        watcher.serve_with_lifecycle(counted, lifecycle).await
    } else {
        let counted = Counted::new(transport(client, settings), order.clone());
        watcher.serve_with_lifecycle(counted, lifecycle).await
    };
    let service = started.map_err(|e| {
        let reason = crate::tools::catalog::error_chain(&e);
        if config.oauth.is_some() && reason.contains("HTTP 401") {
            crate::tools::catalog::oauth::needs_login(name, crate::tools::catalog::oauth::REFUSED)
        } else {
            format!("initialize failed: {reason}")
        }
    })?;
    let tools =
        match crate::tools::catalog::tool_list::list_tools(service.peer(), name, config).await {
            Ok(t) => t,
            Err(e) => {
                let _ = service.cancel().await;
                return Err(match e {
                    ListError::Service(e) => format!(
                        "tools/list failed: {}",
                        crate::tools::catalog::error_chain(&e)
                    ),
                    ListError::Bound(why) => why,
                });
            }
        };
    Ok((
        Conn {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            stderr_tail: Arc::new(Mutex::new(StderrExcerpt::default())),
            group: None,
            oversize: None,
            broken: Default::default(),
            order,
        },
        tools,
    ))
}
