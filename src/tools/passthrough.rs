//! What a downstream MCP server says *while* a call runs, routed back to the execution that made
//! the call: progress notifications (matched by the call's progress token), log messages
//! (`notifications/message`) and elicitation and sampling requests. A log message or request
//! goes to the execution whose call's progress token it carries in `_meta.progressToken`;
//! without one, to the one execution with calls open to that server connection. One that cannot
//! be attributed to exactly one execution (none open, or several: a server shared by several
//! executions, perhaps of different tenants) is dropped — counted ([`Routes::dropped`]) and
//! logged at the host — never delivered to another execution.
//!
//! A [`Feedback`] receives them for one execution; [`Routes`] maps each open call's progress
//! token to its execution's feedback for one server connection. Everything a server sends here
//! is bounded before it is kept: messages are cut to [`MAX_MESSAGE_BYTES`].
//!
//! MCP logging is deprecated by SEP-2577 (rmcp marks its types so), but servers on earlier
//! protocol versions still send `notifications/message`: they are passed on.
#![allow(deprecated)]

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolResponse, ClientRequest, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, RequestId,
    ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{ErrorData, Peer, RoleClient};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A downstream progress message or log line is cut to this many bytes.
pub const MAX_MESSAGE_BYTES: usize = 2048;

/// How long a finished call stays routed: rmcp handles each notification on a task of its own,
/// so one the server sent just before its answer may be handled just after it.
pub const LINGER: std::time::Duration = std::time::Duration::from_millis(500);

/// One execution's receiver of its calls' progress and of its servers' log lines.
pub trait Feedback: Send + Sync {
    /// `server` reported progress on a call of this execution.
    fn progress(&self, server: &str, progress: f64, total: Option<f64>, message: Option<String>);
    /// `server` sent a log message while this execution had a call open to it.
    fn log(&self, server: &str, level: &str, message: String);
    /// Who the execution runs for (tenant and principal): a message that names no call goes
    /// only to executions of one owner.
    fn owner(&self) -> &str {
        ""
    }
    /// `server` sent an elicitation or sampling request during this execution's call: the
    /// answer (the result's JSON) from whoever can give it, or why not.
    fn forward(&self, server: &str, request: Forward) -> BoxFuture<'static, Result<Value, String>> {
        let _ = (server, request);
        Box::pin(async { Err("not supported here".to_string()) })
    }
}

/// A downstream server's request for the upstream client, with its params as JSON.
#[derive(Debug, Clone)]
pub enum Forward {
    /// `elicitation/create`
    Elicit(Value),
    /// `sampling/createMessage`
    Sample(Value),
}

/// A [`Feedback`] in a [`crate::tools::catalog::CallContext`] (a newtype for `Debug`).
#[derive(Clone)]
pub struct FeedbackRef(pub Arc<dyn Feedback>);

impl std::fmt::Debug for FeedbackRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feedback")
    }
}

/// The open calls of one server connection, by progress token.
pub struct Routes {
    open: Mutex<HashMap<ProgressToken, Arc<dyn Feedback>>>,
    /// Calls sent (or being sent) whose route is not in `open` yet: rmcp gives a call's
    /// progress token only once the request is on its way, and a quick server may already
    /// have answered with progress or a log line. Handlers wait for this to be 0.
    opening: tokio::sync::watch::Sender<u32>,
    /// Log messages and requests that could not be attributed to exactly one execution.
    dropped: AtomicU64,
    /// Executions whose calls to this server ended within [`RECENT`]: a message without a
    /// progress token may still be about one of them (a server that logs or asks after it
    /// answered), so while another one is recent, such a message is nobody's.
    recent: Mutex<Vec<(String, std::time::Instant)>>,
}

/// How long an execution whose call ended still counts as a possible owner of a message that
/// names no call (see [`Routes::attribute`]).
pub const RECENT: std::time::Duration = std::time::Duration::from_secs(10);
/// Recent executions remembered per server connection (more: every such message is dropped).
const MAX_RECENT: usize = 64;

impl Default for Routes {
    fn default() -> Self {
        Routes {
            open: Mutex::default(),
            opening: tokio::sync::watch::channel(0).0,
            dropped: AtomicU64::new(0),
            recent: Mutex::default(),
        }
    }
}

/// The progress token in a message's `_meta` (as JSON), if it has one.
pub fn token_in_meta(meta: &Value) -> Option<ProgressToken> {
    meta.get("progressToken")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
}

/// Longest a notification's handler waits for calls being opened (bounded: a call stuck in
/// sending must not hold up the server's other messages).
const OPENING_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// A call being opened: counted in [`Routes::opening`] until dropped.
struct Opening<'a>(&'a Routes);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.0.opening.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Routes {
    fn open_call(&self) -> Opening<'_> {
        self.opening.send_modify(|n| *n += 1);
        Opening(self)
    }

    /// Waits until every call sent so far is routed, so a notification about it (which can
    /// only follow its request) finds it.
    pub async fn routed(&self) {
        if *self.opening.borrow() == 0 {
            return;
        }
        let mut rx = self.opening.subscribe();
        let _ = tokio::time::timeout(OPENING_WAIT, rx.wait_for(|n| *n == 0)).await;
    }

    /// A progress notification from `server`: to the execution whose call has its token.
    pub fn on_progress(&self, server: &str, p: ProgressNotificationParam) {
        let target = self
            .open
            .lock()
            .ok()
            .and_then(|open| open.get(&p.progress_token).cloned());
        if let Some(f) = target {
            let message = p.message.map(|m| clip(&m));
            f.progress(server, p.progress, p.total, message);
        }
    }

    /// The executions a message from the server belongs to: the one whose call has `token`;
    /// else those with calls open, if they all run for one owner and no other owner's call to
    /// this server ended within [`RECENT`] (and, when `single`, there is only one). `Err` says
    /// why there is none.
    fn attribute(
        &self,
        token: Option<&ProgressToken>,
        single: bool,
    ) -> Result<Vec<Arc<dyn Feedback>>, String> {
        let open = self.open.lock().map_err(|_| "internal error".to_string())?;
        if let Some(f) = token.and_then(|t| open.get(t)) {
            return Ok(vec![f.clone()]);
        }
        let mut seen: Vec<Arc<dyn Feedback>> = Vec::new();
        for f in open.values() {
            if !seen.iter().any(|s| Arc::ptr_eq(s, f)) {
                seen.push(f.clone());
            }
        }
        drop(open);
        let Some(owner) = seen.first().map(|f| f.owner().to_string()) else {
            return Err("no execution has a call open to this server".into());
        };
        if seen.iter().any(|f| f.owner() != owner) {
            return Err("executions of several callers have calls open to this server and the message names none of their calls (no _meta.progressToken)".into());
        }
        if single && seen.len() > 1 {
            // `open` keeps a call routed for LINGER after it ends: these are executions with
            // a call open now or ended within it, not necessarily open.
            return Err(format!(
                "{} executions have had calls to this server open within the last {} ms (open now, or just ended) and the request names none of their calls (no _meta.progressToken), so it cannot be given to one of them. The server should send it with the progress token of the call it belongs to (_meta.progressToken), or the client should run one execution at a time against this server",
                seen.len(),
                LINGER.as_millis()
            ));
        }
        let mut recent = self
            .recent
            .lock()
            .map_err(|_| "internal error".to_string())?;
        recent.retain(|(_, at)| at.elapsed() < RECENT);
        if recent.len() >= MAX_RECENT || recent.iter().any(|(o, _)| *o != owner) {
            return Err(format!(
                "it names no call (no _meta.progressToken) and another caller's call to this server ended less than {} s ago, so it may be about that call",
                RECENT.as_secs()
            ));
        }
        Ok(seen)
    }

    /// Messages and requests dropped because they could not be attributed.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn drop_one(&self, server: &str, what: &str, why: &str) {
        let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(
            server = %crate::term::escape(server),
            dropped = n,
            "{what} from the server dropped: {why}"
        );
    }

    /// A log message from `server` (`token`: the progress token in its `_meta`): to the one
    /// execution it belongs to, or dropped.
    pub fn on_log(
        &self,
        server: &str,
        p: LoggingMessageNotificationParam,
        token: Option<&ProgressToken>,
    ) {
        let targets = match self.attribute(token, false) {
            Ok(f) => f,
            Err(why) => return self.drop_one(server, "a log message", &why),
        };
        let text = match &p.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text = match &p.logger {
            Some(logger) => format!("{}: {text}", clip(logger)),
            None => text,
        };
        let text = clip(&text);
        for f in targets {
            f.log(server, level(p.level), text.clone());
        }
    }

    /// A downstream request (elicitation, sampling) for the one execution it belongs to (see
    /// [`Routes::attribute`]); refused (and counted as dropped) when it cannot be attributed.
    pub async fn forward<T: serde::de::DeserializeOwned>(
        &self,
        server: &str,
        request: Forward,
        token: Option<&ProgressToken>,
    ) -> Result<T, ErrorData> {
        let what = match &request {
            Forward::Elicit(_) => "elicitation",
            Forward::Sample(_) => "sampling",
        };
        let refuse = |why: String| {
            ErrorData::invalid_request(format!("{what} is not supported: {why}"), None)
        };
        let target = match self.attribute(token, true).map(|mut v| v.pop()) {
            Ok(Some(f)) => f,
            Ok(None) => return Err(refuse("internal error".into())),
            Err(why) => {
                self.drop_one(server, &format!("an {what} request"), &why);
                return Err(refuse(why));
            }
        };
        let answer = target.forward(server, request).await.map_err(refuse)?;
        serde_json::from_value(answer)
            .map_err(|e| refuse(format!("the upstream client's answer is not valid: {e}")))
    }

    fn insert(&self, token: ProgressToken, f: Arc<dyn Feedback>) {
        if let Ok(mut open) = self.open.lock() {
            open.insert(token, f);
        }
    }

    fn remove(&self, token: &ProgressToken) {
        let gone = match self.open.lock() {
            Ok(mut open) => open.remove(token),
            Err(_) => None,
        };
        if let (Some(f), Ok(mut recent)) = (gone, self.recent.lock()) {
            let owner = f.owner();
            recent.retain(|(o, at)| at.elapsed() < RECENT && o != owner);
            if recent.len() < MAX_RECENT {
                recent.push((owner.to_string(), std::time::Instant::now()));
            }
        }
    }
}

/// The script's log levels for MCP's syslog levels.
fn level(l: LoggingLevel) -> &'static str {
    match l {
        LoggingLevel::Debug => "debug",
        LoggingLevel::Info | LoggingLevel::Notice => "info",
        LoggingLevel::Warning => "warn",
        _ => "error",
    }
}

fn clip(s: &str) -> String {
    let mut end = s.len().min(MAX_MESSAGE_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// `tools/call` whose progress and log messages reach `feedback` while it is open. Like rmcp's
/// `call_tool_once`, dropping the future sends `notifications/cancelled` for the request.
pub async fn call_tool(
    peer: &Peer<RoleClient>,
    routes: &Arc<Routes>,
    params: rmcp::model::CallToolRequestParams,
    feedback: Arc<dyn Feedback>,
) -> Result<CallToolResponse, ServiceError> {
    let opening = routes.open_call();
    let handle = peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await?;
    let token = handle.progress_token.clone();
    routes.insert(token.clone(), feedback);
    drop(opening);
    let mut open = OpenCall {
        peer: peer.clone(),
        routes: routes.clone(),
        token,
        id: Some(handle.id.clone()),
    };
    let result = handle.await_response().await;
    open.id = None;
    // Notifications sent just before the answer are handled before the caller goes on: see
    // `catalog::notification_order` (the caller waits for them).
    match result? {
        ServerResult::CallToolResult(r) => Ok(CallToolResponse::Complete(r)),
        ServerResult::InputRequiredResult(r) => Ok(CallToolResponse::InputRequired(r)),
        ServerResult::CreateTaskResult(r) => Ok(CallToolResponse::Task(r)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Unroutes a call when it ends; cancels it at its server when it is dropped unanswered.
struct OpenCall {
    peer: Peer<RoleClient>,
    routes: Arc<Routes>,
    token: ProgressToken,
    id: Option<RequestId>,
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        let (routes, token) = (self.routes.clone(), self.token.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::time::sleep(LINGER).await;
                    routes.remove(&token);
                });
            }
            Err(_) => routes.remove(&token),
        }
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let params = serde_json::from_value::<rmcp::model::CancelledNotificationParam>(
            serde_json::json!({"requestId": id, "reason": "the execution no longer waits for this call"}),
        );
        if let (Ok(params), Ok(rt)) = (params, tokio::runtime::Handle::try_current()) {
            rt.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Quiet;
    impl Feedback for Quiet {
        fn progress(&self, _: &str, _: f64, _: Option<f64>, _: Option<String>) {}
        fn log(&self, _: &str, _: &str, _: String) {}
    }

    /// Two executions' calls, both already answered (a finished call stays routed for
    /// LINGER): the refusal says what is true — not that calls are open.
    #[tokio::test]
    async fn a_request_naming_no_call_is_refused_saying_what_is_true() {
        let routes = Routes::default();
        let (a, b): (Arc<dyn Feedback>, Arc<dyn Feedback>) = (Arc::new(Quiet), Arc::new(Quiet));
        routes.insert(ProgressToken(rmcp::model::NumberOrString::Number(1)), a);
        routes.insert(ProgressToken(rmcp::model::NumberOrString::Number(2)), b);
        let e = routes
            .forward::<Value>("srv", Forward::Elicit(Value::Null), None)
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "elicitation is not supported: 2 executions have had calls to this server open within the last 500 ms (open now, or just ended) and the request names none of their calls (no _meta.progressToken), so it cannot be given to one of them. The server should send it with the progress token of the call it belongs to (_meta.progressToken), or the client should run one execution at a time against this server"
        );
        assert_eq!(routes.dropped(), 1);
    }
}
