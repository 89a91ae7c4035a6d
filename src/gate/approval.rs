//! Calls that a policy `ask` rule matches wait here, at the host, for a person's answer.
//!
//! The runner only waits on its promise while a question is open, so the script's CPU budget
//! does not run; the execution's wall clock does, and the approval timeout
//! (`--approval-timeout-ms`, default [`DEFAULT_APPROVAL_TIMEOUT_MS`]) ends the wait with
//! `PERMISSION_DENIED` ("not approved in time"). Who answers is an [`Approver`]: the terminal
//! for `run`, an MCP elicitation to the client for `serve`. `--approve GLOB` pre-approves.
//! Questions are asked one after another, never interleaved ([`Approvals`] holds the turn).
//!
//! Every question leaves `approval_requested` and `approval_granted` / `approval_denied` trace
//! events (with `by`) between the call's `tool_start` and `tool_end`.

use crate::context::policy::PreApproved;
use crate::error::{ErrorCode, ExecError};
use crate::trace::{now_ms, TraceError, TraceEvent, TraceKind};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a call waits for an answer by default (ms).
pub const DEFAULT_APPROVAL_TIMEOUT_MS: u64 = 120_000;
/// The arguments shown in a question are cut past this many bytes (the full size is said).
pub const QUESTION_ARGS_BYTES: usize = 2048;
/// A denial's reason is cut past this many bytes before the script's error carries it.
pub const REASON_BYTES: usize = 500;

/// What a person is asked.
#[derive(Debug, Clone)]
pub struct Question {
    pub server: String,
    pub tool: String,
    /// Pretty JSON, cut to [`QUESTION_ARGS_BYTES`].
    pub arguments: String,
    /// The size of the whole pretty JSON.
    pub arguments_bytes: usize,
    pub truncated: bool,
    /// The rule that asked (`config rule ask "filesystem:write_*"`).
    pub rule: String,
    /// The execution that made the call (shown on the web view).
    pub execution_id: Option<String>,
    /// The question's id on the web view's registry, once it is registered there
    /// (`front::mcp::web_approval`): a 2026-07-28 client's retry answers it by this id.
    pub pending_id: Option<String>,
}

impl Question {
    pub fn new(server: &str, tool: &str, args: &Value, rule: &str) -> Question {
        let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| "null".into());
        let arguments_bytes = pretty.len();
        let truncated = arguments_bytes > QUESTION_ARGS_BYTES;
        let arguments = if truncated {
            let mut end = QUESTION_ARGS_BYTES;
            while !pretty.is_char_boundary(end) {
                end -= 1;
            }
            pretty[..end].to_string()
        } else {
            pretty
        };
        Question {
            server: server.to_string(),
            tool: tool.to_string(),
            arguments,
            arguments_bytes,
            truncated,
            rule: rule.to_string(),
            execution_id: None,
            pending_id: None,
        }
    }

    /// The question of a call made by execution `id`.
    pub fn in_execution(mut self, id: &str) -> Question {
        self.execution_id = Some(id.to_string());
        self
    }

    /// The question as plain text (the caller escapes it for a terminal).
    pub fn text(&self) -> String {
        let cut = if self.truncated {
            format!(
                "\n… (cut: the arguments are {} bytes; the first {} are shown)",
                self.arguments_bytes, QUESTION_ARGS_BYTES
            )
        } else {
            String::new()
        };
        format!(
            "The script wants to call {}:{} (asked by the {}).\nArguments ({} bytes):\n{}{cut}",
            self.server, self.tool, self.rule, self.arguments_bytes, self.arguments
        )
    }
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This call only.
    Once,
    /// This call and every later call of the same tool in this execution.
    ToolForExecution,
    /// Refused, with an optional reason the script's error carries.
    Deny(Option<String>),
}

/// Who or what answered (the `by` of the trace events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Elicitation,
    Tty,
    Flag,
    Timeout,
    /// A principal on the web view (`/ui`) of `serve --http`.
    Web,
    /// A 2026-07-28 client's retry of `execute_code` carrying the answer (`input_required`).
    InputRequired,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Elicitation => "elicitation",
            By::Tty => "tty",
            By::Flag => "flag",
            By::Timeout => "timeout",
            By::Web => "web",
            By::InputRequired => "input_required",
        }
    }
}

/// Why a question could not be asked or answered.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// The way to ask failed (terminal closed, client error): the call is denied with this.
    #[error("{0}")]
    Failed(String),
}

/// Whoever answers questions (the terminal, the MCP client).
pub trait Approver: Send + Sync {
    /// Who this is, for the trace.
    fn by(&self) -> By;
    /// Asks one question. Dropping the future withdraws it.
    fn ask(&self, question: Question) -> BoxFuture<'static, Result<Answer, ApprovalError>>;
    /// Asks one question and says who answered: by default [`Approver::by`], nobody named. An
    /// approver that races several ways to answer (the client and the web view) overrides it.
    fn ask_answered(
        &self,
        question: Question,
    ) -> BoxFuture<'static, Result<Answered, ApprovalError>> {
        let by = self.by();
        let asked = self.ask(question);
        Box::pin(async move {
            asked.await.map(|answer| Answered {
                answer,
                by,
                principal: None,
            })
        })
    }
}

/// An answer, with who gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub answer: Answer,
    pub by: By,
    /// The principal who answered on the web view (the trace's `approver`).
    pub principal: Option<String>,
}

/// Who granted a call: the way, and the principal when the web view named one.
type Granter = (By, Option<String>);

/// What a front offers to answer questions; shared by the executions it starts.
pub struct Approvals {
    /// `Err((by, why))` when nobody can be asked: the message names what to do instead.
    approver: Result<Arc<dyn Approver>, (By, String)>,
    pre_approved: PreApproved,
    timeout: Duration,
    /// One question at a time (shared by every execution of one terminal or client session).
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Approvals {
    pub fn new(approver: Arc<dyn Approver>, pre_approved: PreApproved, timeout: Duration) -> Self {
        Approvals {
            approver: Ok(approver),
            pre_approved,
            timeout,
            turn: Arc::default(),
        }
    }

    /// Questions wait for `turn`, shared with other executions (one client session).
    pub fn sharing_turn(mut self, turn: Arc<tokio::sync::Mutex<()>>) -> Self {
        self.turn = turn;
        self
    }

    /// Nobody can be asked: a call that needs approval and is not pre-approved is denied at
    /// once (`by` for the trace) with `why` (what to do instead; `{call}` is replaced by the
    /// call's `server:tool`).
    pub fn nobody(by: By, why: impl Into<String>, pre_approved: PreApproved) -> Self {
        Approvals {
            approver: Err((by, why.into())),
            pre_approved,
            timeout: Duration::from_millis(DEFAULT_APPROVAL_TIMEOUT_MS),
            turn: Arc::default(),
        }
    }
}

/// One execution's view: the shared [`Approvals`] and the tools approved for the rest of it.
#[derive(Clone)]
pub struct Gate {
    shared: Arc<Approvals>,
    /// `server:tool` approved for the rest of this execution, and who approved it.
    granted: Arc<Mutex<HashMap<String, Granter>>>,
}

/// Where the gate records its events, and under which ids.
pub struct Recording {
    pub trace_id: String,
    pub parent_trace_id: Option<String>,
    pub sink: crate::tools::catalog::TraceSink,
}

impl Gate {
    /// `None`: nobody was set up to answer (e.g. a nested execution), every asked call is denied.
    pub fn new(shared: Option<Arc<Approvals>>) -> Gate {
        let shared = shared.unwrap_or_else(|| {
            Arc::new(Approvals::nobody(
                By::Flag,
                "nobody can approve calls in this execution",
                PreApproved::default(),
            ))
        });
        Gate {
            shared,
            granted: Arc::default(),
        }
    }

    /// Waits for the call's approval; `Err` is the `PERMISSION_DENIED` the script gets.
    pub fn wait(
        &self,
        question: Question,
        rec: Recording,
    ) -> BoxFuture<'static, Result<(), ExecError>> {
        let gate = self.clone();
        Box::pin(async move {
            let started = Instant::now();
            let qualified = format!("{}:{}", question.server, question.tool);
            record(
                &rec,
                TraceKind::ApprovalRequested,
                &qualified,
                (None, None),
                Some(&question.rule),
                None,
                None,
            );
            let answer = gate.decide(&question).await;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            match answer {
                Ok((by, who)) => {
                    record(
                        &rec,
                        TraceKind::ApprovalGranted,
                        &qualified,
                        (Some(by), who),
                        None,
                        Some(ms),
                        None,
                    );
                    Ok(())
                }
                Err((by, who, e)) => {
                    record(
                        &rec,
                        TraceKind::ApprovalDenied,
                        &qualified,
                        (Some(by), who),
                        None,
                        Some(ms),
                        Some(&e),
                    );
                    Err(e)
                }
            }
        })
    }

    async fn decide(&self, q: &Question) -> Result<Granter, (By, Option<String>, ExecError)> {
        let qualified = format!("{}:{}", q.server, q.tool);
        let denied_by = |by: By, who: Option<String>, message: String| {
            (
                by,
                who,
                ExecError::new(ErrorCode::PermissionDenied, message).with_tool(&qualified),
            )
        };
        let denied = |by: By, message: String| denied_by(by, None, message);
        if self
            .shared
            .pre_approved
            .matching(&q.server, &q.tool)
            .is_some()
        {
            return Ok((By::Flag, None));
        }
        if let Some(granter) = self.granted_by(&qualified) {
            return Ok(granter);
        }
        let approver = match &self.shared.approver {
            Ok(a) => a.clone(),
            Err((by, why)) => {
                return Err(denied(
                    *by,
                    format!(
                        "{qualified} needs approval (the {}) and {}; the call was not forwarded",
                        q.rule,
                        why.replace("{call}", &qualified)
                    ),
                ))
            }
        };
        let timeout = self.shared.timeout;
        let asked = async {
            let _turn = self.shared.turn.lock().await;
            // Approved for the execution while this call waited its turn.
            if let Some(granter) = self.granted_by(&qualified) {
                return Ok(Ok(granter));
            }
            let answered = approver.ask_answered(q.clone()).await?;
            let granter = (answered.by, answered.principal);
            Ok(match answered.answer {
                Answer::Once => Ok(granter),
                Answer::ToolForExecution => {
                    if let Ok(mut g) = self.granted.lock() {
                        g.insert(qualified.clone(), granter.clone());
                    }
                    Ok(granter)
                }
                Answer::Deny(reason) => Err((granter, reason)),
            })
        };
        type Replied = Result<Result<Granter, (Granter, Option<String>)>, ApprovalError>;
        let replied: Result<Replied, _> = tokio::time::timeout(timeout, asked).await;
        match replied {
            Err(_) => Err(denied(
                By::Timeout,
                format!(
                    "{qualified} was not approved in time: nobody answered within {} ms (--approval-timeout-ms); the call was not forwarded",
                    timeout.as_millis()
                ),
            )),
            Ok(Err(ApprovalError::Failed(why))) => Err(denied(
                approver.by(),
                format!(
                    "{qualified} needs approval (the {}) but the question failed: {why}; the call was not forwarded",
                    q.rule
                ),
            )),
            Ok(Ok(Ok(granter))) => Ok(granter),
            Ok(Ok(Err(((by, who), reason)))) => {
                let reason = match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                    Some(r) => format!(": {}", clip(r, REASON_BYTES)),
                    None => String::new(),
                };
                let asked = match &who {
                    Some(p) => format!("{}, {p}", by.as_str()),
                    None => by.as_str().to_string(),
                };
                Err(denied_by(
                    by,
                    who,
                    format!(
                        "{qualified} was denied by the person asked ({asked}){reason}; the call was not forwarded"
                    ),
                ))
            }
        }
    }

    fn granted_by(&self, qualified: &str) -> Option<Granter> {
        self.granted
            .lock()
            .ok()
            .and_then(|g| g.get(qualified).cloned())
    }
}

fn record(
    rec: &Recording,
    kind: TraceKind,
    tool: &str,
    (by, approver): (Option<By>, Option<String>),
    rule: Option<&str>,
    duration_ms: Option<f64>,
    error: Option<&ExecError>,
) {
    let event = TraceEvent {
        kind,
        tool: tool.to_string(),
        trace_id: rec.trace_id.clone(),
        parent_trace_id: rec.parent_trace_id.clone(),
        ts: now_ms(),
        success: None,
        duration_ms,
        error: error.map(TraceError::from),
        by: by.map(|b| b.as_str().to_string()),
        approver,
        rule: rule.map(str::to_string),
        transport: None,
        key: None,
        bytes: None,
        label: None,
        decision: None,
    };
    if let Ok(mut sink) = rec.sink.lock() {
        sink.push(event);
    }
}

/// `s` cut to at most `max` bytes at a character boundary, control characters replaced.
fn clip(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end]
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
