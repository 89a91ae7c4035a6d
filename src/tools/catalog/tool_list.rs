//! A server's tool list, read within the bounds of its entry (`maxTools`, `maxToolListBytes`,
//! `maxToolListPages`), and re-read on `notifications/tools/list_changed` at most one listing
//! at a time per connection, with one more queued for every notification that came meanwhile.
//!
//! A server that pages for ever, lists more tools or bytes than its bounds, or floods
//! `list_changed`, cannot make the gateway hold more than the bound: reading stops at the bound
//! (nothing past it is kept) and the listing fails with an error naming the server and the
//! bound. At start-up that is the server's start failure; on a re-read, the previous list stays.

use super::ToolInfo;
use crate::config::ServerConfig;
use rmcp::model::PaginatedRequestParams;
use rmcp::service::{Peer, ServiceError};
use rmcp::RoleClient;
use std::sync::Mutex;

/// Why a listing failed.
#[derive(Debug)]
pub(super) enum ListError {
    /// `tools/list` itself failed.
    Service(ServiceError),
    /// The list went past one of the server's bounds (the message names the server and it).
    Bound(String),
}

/// Reads every page of `server`'s tool list, within the bounds of its entry.
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    config: &ServerConfig,
) -> Result<Vec<ToolInfo>, ListError> {
    let (max_tools, max_bytes, max_pages) = config.tool_list_bounds();
    let mut tools: Vec<ToolInfo> = Vec::new();
    let mut bytes: u64 = 0;
    let mut cursor: Option<String> = None;
    for page in 1..=max_pages {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let result = peer
            .list_tools(Some(params))
            .await
            .map_err(ListError::Service)?;
        for t in &result.tools {
            if tools.len() >= max_tools {
                return Err(ListError::Bound(format!(
                    "server '{server}' lists more than {max_tools} tools (its bound \"maxTools\"); its list was refused: raise \"maxTools\" in its entry if it really has that many"
                )));
            }
            let size = serde_json::to_vec(t).map_or(0, |v| v.len() as u64);
            bytes = bytes.saturating_add(size);
            if bytes > max_bytes {
                return Err(ListError::Bound(format!(
                    "server '{server}' lists tools of more than {max_bytes} bytes in all (its bound \"maxToolListBytes\"); its list was refused: raise \"maxToolListBytes\" in its entry if it really needs that much"
                )));
            }
            // Names a script could never call are left out (and logged) as they are read.
            tools.extend(super::mcp_result::listed_tools(
                server,
                std::slice::from_ref(t),
            ));
        }
        match result.next_cursor {
            Some(next) if page < max_pages => cursor = Some(next),
            Some(_) => {
                return Err(ListError::Bound(format!(
                    "server '{server}' did not finish its tool list within {max_pages} pages of tools/list (its bound \"maxToolListPages\"); its list was refused: raise \"maxToolListPages\" in its entry if it really needs more pages"
                )))
            }
            None => break,
        }
    }
    Ok(tools)
}

/// The re-reads of one connection's tool list: at most one in flight, one more queued.
#[derive(Debug, Default)]
pub(super) struct Relist {
    state: Mutex<RelistState>,
}

#[derive(Debug, Default)]
struct RelistState {
    running: bool,
    /// Notifications that came while a listing ran (served by one more listing).
    waiting: u32,
}

impl Relist {
    /// A notification came: `Some(1)` when the caller must run the listing now (it covers this
    /// notification), `None` when a listing runs already (the next one will cover it).
    pub(super) fn arrive(&self) -> Option<u32> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.running {
            s.waiting = s.waiting.saturating_add(1);
            None
        } else {
            s.running = true;
            Some(1)
        }
    }

    /// The listing ended: `Some(n)` when `n` notifications came meanwhile (run one more
    /// listing, covering them all), `None` when none did (nothing runs any more).
    pub(super) fn done(&self) -> Option<u32> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.waiting > 0 {
            Some(std::mem::take(&mut s.waiting))
        } else {
            s.running = false;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Relist;

    #[test]
    fn notifications_during_a_listing_are_served_by_one_more() {
        let r = Relist::default();
        assert_eq!(r.arrive(), Some(1));
        for _ in 0..1000 {
            assert_eq!(r.arrive(), None);
        }
        assert_eq!(r.done(), Some(1000));
        assert_eq!(r.done(), None);
        assert_eq!(r.arrive(), Some(1));
        assert_eq!(r.done(), None);
    }
}
