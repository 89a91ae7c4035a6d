//! `mcp-sandbox serve`: this sandbox as an MCP server (rmcp), over stdio or streamable HTTP.
//!
//! Seven tools: `execute_code` runs a script against the configured MCP servers and answers with
//! the outcome (`structuredContent`) and a readable summary (text), cut together to the output
//! budget (`exec::output_budget`, `max_output_bytes`); `search_tools` answers with
//! TypeScript declarations of the matching tools (tools that past executions used together with
//! the matches rank higher); `save_capability` / `list_capabilities` manage capabilities in the
//! state store (code callable as `mcp.namespace.action(args)` from execute_code); `list_state`
//! lists what this session's scripts kept with `store()`; `wait_execution` / `cancel_execution`
//! read or stop an execution that execute_code left running after `yield_after_ms`
//! (`executions`, `yielding`). A failing script is a tool result with
//! `isError: true`, never a protocol error. Servers that failed to start are reported by both.

pub mod admission;
mod approvals_sync;
pub mod auth;
pub mod auth_failure;
mod call_setup;
mod capabilities;
pub mod elicit;
pub(crate) mod execute_code;
pub mod handles;
pub mod health;
pub mod held;
pub mod http;
pub mod input_required;
pub mod jsonrpc;
pub mod jwks;
pub mod jwt;
mod list_state;
pub mod metrics;
pub mod passthrough;
pub mod rate;
mod request_of;
pub mod responses;
mod search_tools;
pub mod sessions;
pub mod stdio;
pub mod stdio_fd;
mod summary;
pub mod tasks;
pub mod tls;
mod tool_list;
mod wait_execution;
pub mod web_approval;

use crate::context::limits::Limits;
use crate::context::policy::Policy;
use crate::context::principal::Principal;
use crate::context::{Client, McpTransport};
use crate::sandbox::Sandbox;
use handles::NamedSession;
use request_of::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::Arc;
use tool_list::tools;

/// What every session of the server shares.
pub struct Gateway {
    pub sandbox: Sandbox,
    pub policy: Policy,
    /// The config's limits; `execute_code {timeout_ms, limits}` may only lower them.
    pub limits: Limits,
    /// Sizes checked when an `execute_code` request arrives, and the bytes admitted requests hold.
    pub admission: admission::Admission,
    /// Room for answers not yet written to their clients.
    pub responses: responses::ResponseBudget,
    /// HTTP sessions' cancellation tokens (a DELETE cancels the session's executions).
    pub sessions: sessions::SessionCancels,
    pub require_layers: Vec<String>,
    /// The state store (`--state`): capabilities and the tool graph. `None` when it could not be
    /// opened; `save_capability`/`list_capabilities` then say so.
    pub store: Option<crate::store::Store>,
    /// Bounds of save_capability: code size, versions kept per name, total size.
    pub capability_quota: crate::store::CapabilityQuota,
    /// `--approve`: calls that need approval and are approved without asking.
    pub pre_approved: crate::context::policy::PreApproved,
    /// `--approval-timeout-ms`.
    pub approval_timeout: std::time::Duration,
    /// `sandbox.policies`: what each principal's policies narrow.
    pub policies: std::collections::BTreeMap<String, crate::config::gateway::PrincipalPolicy>,
    /// Per-principal rate limits (HTTP).
    pub rate: Arc<rate::RateLimiter>,
    /// `sandbox.session`: how long a session's state and unread outcomes live, and its bounds.
    pub session: crate::context::session::SessionOptions,
    /// Executions left running by `execute_code {yield_after_ms}` and their unread outcomes.
    pub executions: held::registry::Executions,
    /// Questions waiting for an answer on the web view (`/ui/api/approvals`).
    pub pending: Arc<crate::gate::pending::PendingApprovals>,
    /// Whether questions of HTTP clients are put on the web view: `serve --http` with the view
    /// mounted (a state store), and someone can answer there (no authentication, or a policy with
    /// `"approve": true` or `"operator": true`).
    pub web_approvals: bool,
    /// This gateway's id, random per process: which gateway runs a yielded execution (`remote`).
    pub gateway_id: String,
    /// On PostgreSQL: the liveness lock other gateways see this one alive by.
    pub liveness: Option<crate::store::pg::liveness::Liveness>,
    /// Other gateways seen without their liveness lock, and since when.
    pub suspects: held::remote::Suspects,
    /// Session handles this gateway resumed lately (`handles`).
    pub handles: handles::Resumed,
    /// Seals and opens the `requestState` of approvals asked through `input_required` (and
    /// task ids).
    pub request_states: input_required::state::StateCodec,
    /// Finished `execute_code` tasks (`tasks/get` may repeat).
    pub tasks: tasks::Tasks,
    /// `sandbox.fair_share`: each principal's and tenant's share of the execution queue.
    pub fair_share: crate::config::gateway::FairShareConfig,
}

impl Gateway {
    /// The tightest rate bounds of a principal's policies.
    pub fn rate_of(&self, principal: &crate::context::principal::Principal) -> rate::Rate {
        auth::policies_of(principal, &self.policies)
            .into_iter()
            .fold(rate::Rate::default(), |acc, (_, p)| {
                acc.min(rate::Rate {
                    per_minute: p.executions_per_minute,
                    concurrent: p.max_concurrent,
                })
            })
    }

    /// The config's policy and limits, narrowed by a principal's policies.
    pub fn narrowed_for(
        &self,
        principal: &crate::context::principal::Principal,
    ) -> (Policy, Limits) {
        let mut policy = self.policy.clone();
        let mut limits = self.limits;
        for (name, p) in auth::policies_of(principal, &self.policies) {
            policy = p.narrow(name, policy);
            if let Some(l) = &p.limits {
                limits = limits.narrow(l).0;
            }
        }
        (policy, limits)
    }
}

/// One MCP session's handler (cheap to clone; HTTP makes one per session).
#[derive(Clone)]
pub struct GatewayServer {
    gateway: Arc<Gateway>,
    /// Approval questions to this session's client are asked one after another.
    approval_turn: Arc<tokio::sync::Mutex<()>>,
    /// This connection's own id: the session of a stdio client (HTTP sessions are named by
    /// their `Mcp-Session-Id`).
    connection: Arc<str>,
    /// Cancelled when the last clone of this handler is dropped (rmcp drops it when the
    /// connection ends): the end of a stdio session, for its yielded executions.
    connection_gone: tokio_util::sync::CancellationToken,
    _closer: Arc<tokio_util::sync::DropGuard>,
}

impl GatewayServer {
    pub fn new(gateway: Arc<Gateway>) -> Self {
        let connection_gone = tokio_util::sync::CancellationToken::new();
        GatewayServer {
            gateway,
            approval_turn: Arc::default(),
            connection: Arc::from(uuid::Uuid::new_v4().to_string()),
            _closer: Arc::new(connection_gone.clone().drop_guard()),
            connection_gone,
        }
    }

    /// Cancelled when the session of a request ends (HTTP: `DELETE` or expiry; stdio: the
    /// connection closes).
    fn session_gone(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> tokio_util::sync::CancellationToken {
        match session_header(context) {
            Some(id) => self.gateway.sessions.token(id),
            None => self.connection_gone.clone(),
        }
    }

    /// The context of one request from this session's client: the operator's limits and policy
    /// (the request may narrow the limits later), and the client as it named itself.
    fn request_context(
        &self,
        context: &RequestContext<RoleServer>,
        over_http: bool,
        principal: &Principal,
    ) -> crate::context::RequestContext {
        let (name, version) = client_identity(context);
        let caller = caller_of(context, over_http, principal);
        // The principal's policies narrow the operator's policy and limits; what the request
        // asks for may only lower them further (`RequestContext::narrowed`).
        let (policy, limits) = self.gateway.narrowed_for(principal);
        let client = Client::Mcp {
            transport: if over_http {
                McpTransport::Http
            } else {
                McpTransport::Stdio
            },
            name,
            version,
        };
        // W3C trace context: the request's `_meta.traceparent`, else the HTTP header.
        let traceparent = context
            .meta
            .0
            .get("traceparent")
            .and_then(|v| v.as_str())
            .or_else(|| {
                context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|p| p.headers.get("traceparent"))
                    .and_then(|v| v.to_str().ok())
            });
        let mut request = crate::context::RequestContext::new(client, limits, policy);
        request.share = self
            .gateway
            .fair_share
            .caps_of(principal, &self.gateway.policies);
        request
            .with_caller(caller)
            .with_session(self.session_scope(context, principal))
            .with_traceparent(traceparent)
    }

    /// The session of a call to one of the session's tools: its protocol session (HTTP with an
    /// `Mcp-Session-Id`, stdio), else the session handle it passes (or a new one).
    async fn named_session(
        &self,
        context: &RequestContext<RoleServer>,
        principal: &Principal,
        tool: &str,
        args: &mut JsonObject,
    ) -> Result<NamedSession, ErrorData> {
        let over_http = context
            .extensions
            .get::<axum::http::request::Parts>()
            .is_some();
        let protocol = (!over_http || session_header(context).is_some())
            .then(|| self.session_scope(context, principal));
        let scope = self.gateway.policy.flow().scope;
        let mut named =
            handles::name(&self.gateway, principal, tool, args, protocol, scope).await?;
        // By default a legacy HTTP session keeps its labels with the principal too, where its
        // 2026-07-28 requests keep theirs: one principal's eras share them.
        if over_http
            && named.handle.is_none()
            && scope == crate::context::flow::FlowScope::Principal
        {
            named.labels = Some(handles::principal_labels(principal));
        }
        Ok(named)
    }

    /// The session a request belongs to: its `Mcp-Session-Id` over HTTP, this connection over
    /// stdio; owned by the principal and its tenant.
    fn session_scope(
        &self,
        context: &RequestContext<RoleServer>,
        principal: &Principal,
    ) -> crate::context::session::SessionScope {
        crate::context::session::SessionScope::new(
            principal.tenant.clone(),
            principal.id.clone(),
            session_header(context).unwrap_or(&self.connection),
        )
    }
}

pub(crate) fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// How long a client may treat this gateway's tool list as fresh.
pub const TOOLS_TTL_MS: u64 = 60_000;

const INSTRUCTIONS: &str = "Run JavaScript or TypeScript that calls MCP tools, with execute_code; \
find the tools and their TypeScript signatures with search_tools first. Prefer one execute_code \
call that does a whole task (loops, filtering, several tool calls) over many single tool calls, \
and return only what you need: an answer is cut to an output budget (see execute_code). \
To work on data across turns, keep it in the session with `await store(key, value)` and read it \
back in a later execute_code with `await load(key)` (list_state shows what is kept). \
Code that worked can be saved with save_capability and called later as mcp.<namespace>.<action>(args); \
list_capabilities shows what is saved. A long script can answer early with execute_code's \
yield_after_ms; then read its outcome with wait_execution (or stop it with cancel_execution). \
If your client has no MCP session (protocol 2026-07-28), each execute_code answer names a `session` \
handle: pass it back as the `session` argument of the next execute_code, wait_execution, \
cancel_execution or list_state, or the state, placeholders and running executions of the earlier \
calls are out of reach (the server keeps nothing per connection for such clients).";

impl ServerHandler for GatewayServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(
            "mcp-sandbox",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // execute_code's description states the budget of this caller (its policies may lower it).
        let budget = self
            .gateway
            .narrowed_for(&principal_of(&context))
            .1
            .max_output_bytes;
        // Caching hints (SEP-2549): the seven tools never change while the gateway runs and it
        // sends no `list_changed`; their descriptions name the servers (and the caller's budget,
        // hence private), which a cached minute may lag.
        Ok(
            ListToolsResult::with_all_items(tools(&self.gateway, budget))
                .with_ttl_ms(TOOLS_TTL_MS)
                .with_cache_scope(rmcp::model::CacheScope::Private),
        )
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let principal = principal_of(&context);
        tasks::get(
            &self.gateway,
            &principal,
            &request.task_id,
            answer_key(&context),
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = principal_of(&context);
        tasks::cancel(
            &self.gateway,
            &principal,
            &request.task_id,
            answer_key(&context),
        )
        .await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = principal_of(&context);
        let (id, responses) = (request.task_id, request.input_responses);
        tasks::update(&self.gateway, &principal, &id, responses).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut args = request.arguments.unwrap_or_default();
        let principal = principal_of(&context);
        let tenant = principal.tenant.as_str();
        // A 2026-07-28 client's retry after `input_required`: its `requestState` names the
        // execution and its session.
        if request.name == "execute_code"
            && (request.request_state.is_some() || request.input_responses.is_some())
        {
            let retry = (request.input_responses, request.request_state);
            let (ct, answer) = (context.ct.clone(), answer_key(&context));
            let (response, handle) =
                held::respond::resume(&self.gateway, &principal, retry, &args, ct, answer).await?;
            return Ok(named_in(response, handle.as_deref()));
        }
        // An execution is checked and admitted before anything is kept for it (a session
        // handle, a task, a place in the queue): bad arguments and a caller past its fair
        // share are refused here.
        let admitted = match request.name.as_ref() {
            "execute_code" => match self.admit_execution(&context, &principal, &args).await? {
                Ok(admitted) => Some(admitted),
                Err(refused) => return Ok(refused.into()),
            },
            _ => None,
        };
        // The session this call belongs to: the protocol session, or a session handle.
        let named = if handles::takes_session(request.name.as_ref()) {
            self.named_session(&context, &principal, request.name.as_ref(), &mut args)
                .await?
        } else {
            NamedSession::protocol(self.session_scope(&context, &principal))
        };
        let owner = named.scope.clone();
        // Any request keeps the session's unread outcomes alive (`executions`).
        let idle = self
            .gateway
            .executions
            .touch(&owner, self.gateway.session.ttl());
        let result: CallToolResult = match request.name.as_ref() {
            // rmcp cancels `context.ct` on `notifications/cancelled` for this request and when
            // the session ends.
            "execute_code" => {
                // Over HTTP, a DELETE of the session also cancels (see `sessions`).
                let parts = context.extensions.get::<axum::http::request::Parts>();
                // The principal's `max_concurrent` slot is held until the execution ends, even
                // when the client's connection is gone before.
                let _permit = parts
                    .and_then(|p| p.extensions.get::<rate::ExecutionPermit>())
                    .cloned();
                let session = session_header(&context);
                let answer = answer_key(&context);
                let request = self
                    .request_context(&context, parts.is_some(), &principal)
                    .with_session(owner.clone())
                    .with_handle(named.handle.clone(), named.labels.clone());
                // Calls an `ask` rule matches are asked to this client (elicitation) and, over
                // HTTP, put on the web view; the first answer wins.
                // A 2026-07-28 client that can answer is asked through `input_required`: an
                // approval when it declared elicitation, a server's question as it declared.
                let caps = context.client_capabilities();
                let questions = (speaks_2026(&context)
                    && caps
                        .as_ref()
                        .is_some_and(|c| c.elicitation.is_some() || c.sampling.is_some()))
                .then(input_required::QuestionSlot::new);
                // With `"approve_own_calls": false` its own client never answers an approval
                // (no question through `input_required`, the retry or `tasks/update`).
                let own = !crate::config::gateway::refuses_own_approvals(
                    &principal,
                    &self.gateway.policies,
                );
                let approver = questions
                    .clone()
                    .filter(|_| own && declares_elicitation(&context));
                let approvals = Arc::new(
                    self.approvals(&context, parts.is_some(), &principal, approver)
                        .sharing_turn(self.approval_turn.clone()),
                );
                // Downstream progress becomes progress of this request (if it has a token);
                // downstream elicitation and sampling requests are asked to this client.
                let (progress, notes) = passthrough::upstream_with_notes(
                    &context.peer,
                    context.meta.get_progress_token(),
                    self.approval_turn.clone(),
                    (caps, questions.clone(), speaks_2026(&context)),
                );
                let approvals = (approvals, Some(progress));
                // A client that declared tasks gets one: the execution runs as a yielded one
                // and the call answers at once (`tasks`).
                let as_task = speaks_2026(&context)
                    && context
                        .client_capabilities()
                        .is_some_and(|c| c.supports_tasks());
                // What an execution that outlives its request (`yield_after_ms`) keeps.
                let yielding = held::start::Yielding {
                    permit: _permit.clone(),
                    session_gone: match &named.handle {
                        // Nothing ends a handle's session but its TTL: the execution ends by
                        // itself, by cancel_execution, or by its own limits.
                        Some(_) => tokio_util::sync::CancellationToken::new(),
                        None => self.session_gone(&context),
                    },
                    notes,
                    questions,
                    principal: principal.clone(),
                    handle: named.handle.clone(),
                    as_task,
                    admitted,
                };
                let gateway = &self.gateway;
                if as_task {
                    args.insert("yield_after_ms".into(), Value::from(1u64));
                    let cancel = context.ct.clone();
                    let response = execute_code::call(
                        gateway, request, args, cancel, answer, approvals, yielding,
                    )
                    .await?;
                    let handle = named.handle.as_deref();
                    return Ok(match response {
                        CallToolResponse::Complete(r) => named_in(
                            tasks::created(gateway, &principal, (&owner, handle), r),
                            handle,
                        ),
                        other => other,
                    });
                }
                match session {
                    None => {
                        let cancel = context.ct.clone();
                        let response = execute_code::call(
                            gateway, request, args, cancel, answer, approvals, yielding,
                        )
                        .await?;
                        let max = self.gateway.session.max_handles;
                        let response = handles::closed_in(response, named.closed, max);
                        return Ok(named_in(response, named.handle.as_deref()));
                    }
                    Some(id) => {
                        let (cancel, _registered) =
                            self.gateway.sessions.request_token(id, &context.ct);
                        let response = execute_code::call(
                            gateway, request, args, cancel, answer, approvals, yielding,
                        )
                        .await?;
                        return Ok(named_in(response, named.handle.as_deref()));
                    }
                }
            }
            "wait_execution" => {
                let notes = passthrough::notes(&context.peer, context.meta.get_progress_token());
                let (ct, answer) = (context.ct.clone(), answer_key(&context));
                let asker = (&owner, idle);
                wait_execution::wait(&self.gateway, asker, args, ct, answer, notes).await?
            }
            "cancel_execution" => {
                let answer = answer_key(&context);
                wait_execution::cancel(&self.gateway, (&owner, idle), args, answer).await?
            }
            "search_tools" => {
                let budget = self
                    .gateway
                    .narrowed_for(&principal_of(&context))
                    .1
                    .max_output_bytes;
                search_tools::call(&self.gateway, args, tenant, budget).await?
            }
            "save_capability" => {
                let over_http = context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .is_some();
                let caller = caller_of(&context, over_http, &principal);
                capabilities::save(&self.gateway, args, &principal, caller).await?
            }
            "list_capabilities" => capabilities::list(&self.gateway, args, tenant).await?,
            "list_state" => {
                let sensitive = self.gateway.narrowed_for(&principal).0.sensitive().cloned();
                list_state::call(&self.gateway, args, owner.clone(), sensitive).await?
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool {other:?}; this server has execute_code, wait_execution, cancel_execution, search_tools, save_capability, list_capabilities and list_state"
                    ),
                    None,
                ))
            }
        };
        Ok(handles::name_in(result, named.handle.as_deref()).into())
    }
}

/// An `invalid_params` protocol error for malformed tool arguments (a wrong call, not a failed
/// script).
pub(crate) fn bad_args(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

pub(crate) fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::text(s.into())
}

pub mod run;
pub use run::{serve, ServeArgs};
