//! `mcp-sandbox ui`: the web view (`front::ui`) of a state store, without a gateway — the
//! executions its audit log holds, the tool graph and the capabilities. There is no
//! authentication here, so it listens on a loopback address only and answers only requests
//! that name a loopback host.

use super::team::TeamStoreArgs;
use super::UsageError;
use clap::Args;
use std::net::SocketAddr;

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Where to listen: a loopback address (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub http: SocketAddr,
    #[command(flatten)]
    pub store: TeamStoreArgs,
}

pub async fn command(args: UiArgs) -> Result<i32, UsageError> {
    if !args.http.ip().is_loopback() {
        return Err(UsageError(format!(
            "ui --http {}: the web view has no authentication of its own, so it listens on a loopback address only (127.0.0.1, [::1]); to share it, run `serve --http` with sandbox.auth",
            args.http
        )));
    }
    let (store, _) = args.store.open()?;
    let (page, api) = crate::front::ui::router(store, crate::front::ui::UiAccess::Local)
        .map_err(|e| UsageError(format!("the web view cannot open its read connection: {e}")))?;
    let listener = tokio::net::TcpListener::bind(args.http)
        .await
        .map_err(|e| UsageError(format!("cannot listen on {}: {e}", args.http)))?;
    let bound = listener.local_addr().unwrap_or(args.http);
    // Scripts and tests read this line to find the port when ADDR ends in :0.
    eprintln!("mcp-sandbox: web view at http://{bound}/ui");
    axum::serve(listener, page.merge(api))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| UsageError(format!("the web view stopped: {e}")))?;
    Ok(0)
}
