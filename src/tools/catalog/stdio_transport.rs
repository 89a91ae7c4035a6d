//! The transport of a stdio MCP server: its process, its stdin, and its stdout read through a
//! [`LineGuard`] (answers over rmcp's line limit end the connection at once, with their size,
//! instead of being dropped while the call waits for its timeout).

use super::line_guard::{LineGuard, Oversize, MAX_LINE_BYTES};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

/// How long the process may take to exit once its stdin is closed before it is killed.
const EXIT_AFTER_CLOSE: Duration = Duration::from_millis(500);

/// A spawned stdio server as an rmcp transport. The process is killed if this is dropped.
pub struct StdioChild {
    child: Child,
    /// What lives as long as the process (a confined server's egress proxy and cgroup).
    _keep: Vec<Box<dyn std::any::Any + Send + Sync>>,
    io: AsyncRwTransport<RoleClient, LineGuard<ChildStdout>, ChildStdin>,
}

/// What [`spawn`] gives back besides the transport.
pub struct Spawned {
    pub transport: StdioChild,
    pub pid: Option<u32>,
    pub stderr: Option<ChildStderr>,
    /// Filled when the server sent a line over the limit.
    pub oversize: Arc<Oversize>,
}

/// Spawns `cmd` with piped stdio; `keep` is dropped with the transport.
pub fn spawn(
    mut cmd: tokio::process::Command,
    keep: Vec<Box<dyn std::any::Any + Send + Sync>>,
) -> std::io::Result<Spawned> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // From the spawning thread: the server's PR_SET_PDEATHSIG is tied to the host process.
    let runtime = tokio::runtime::Handle::current();
    let mut child = super::spawn_thread::on_spawn_thread(move || {
        let _entered = runtime.enter();
        cmd.spawn()
    })?;
    let missing = || std::io::Error::other("the child's stdio was not piped");
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stderr = child.stderr.take();
    let oversize = Arc::new(Oversize::default());
    let guard = LineGuard::new(stdout, MAX_LINE_BYTES, oversize.clone());
    Ok(Spawned {
        pid: child.id(),
        transport: StdioChild {
            child,
            _keep: keep,
            io: AsyncRwTransport::new(guard, stdin),
        },
        stderr,
        oversize,
    })
}

impl Transport<RoleClient> for StdioChild {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.io.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.io.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin asks the server to exit; it is killed if it does not.
        let _ = self.io.close().await;
        if tokio::time::timeout(EXIT_AFTER_CLOSE, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
        Ok(())
    }
}
