//! Capabilities callable as tools: `mcp.math.sum(args)` runs the saved capability `math:sum`
//! when no server `math` exists.
//!
//! Before any runner is spawned, [`Capabilities::prepare`] parses the script
//! ([`crate::script::analysis`]), and for every static `mcp.X.Y` reference:
//! - `X` is a server: `Y` must be one of its tools, else `TOOL_NOT_FOUND` with suggestions;
//! - `X` is configured but unavailable: left to the runner (which reports why);
//! - otherwise `X:Y` must be a saved capability (its latest version), else `TOOL_NOT_FOUND`.
//!
//! An unknown name is refused here only when the call certainly runs
//! ([`crate::script::analysis::References::certain_calls`]); otherwise it is left to the runner, whose
//! proxy throws a catchable `TOOL_NOT_FOUND` if the call runs.
//!
//! Each capability's own code is resolved the same way, recursively, so a cycle (`a → b → a`)
//! fails at once with `CAPABILITY_CYCLE` and a chain deeper than the depth limit with
//! `CAPABILITY_DEPTH` — both before spawning anything. The versions resolved then are the ones
//! that run.
//!
//! The resolved capabilities join the execution's catalog as servers (`math` with tool `sum`),
//! so the runner builds proxies for them. A call runs the capability's code in a **fresh
//! runner** (never the caller's) through [`crate::exec::session::execute`], with `args` in scope
//! (validated against its input schema; `{}` when called without arguments), limits bounded by
//! the caller's remaining time and per-call timeout, and its events stamped with the call's
//! trace id as `parent_trace_id` and merged into the caller's traces.

use crate::context::limits::Limits;
use crate::error::{ErrorCode, ExecError};
use crate::exec::capability_call::{as_call_error, wait_for};
use crate::exec::outcome::Outcome;
use crate::exec::runner::RunnerCommand;
use crate::exec::session::{execute, ExecRequest};
use crate::script::analysis::{self, ToolReference};
use crate::store::{CapabilityRecord, Store, StoreError};
use crate::tools::catalog::{CallContext, Catalog, ToolInfo, ToolProvider};
use futures::future::BoxFuture;
use sandbox_runner::protocol::is_reserved_name;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How deep capabilities may call capabilities (a script calling `a` is depth 1).
pub const DEFAULT_MAX_DEPTH: usize = 3;
/// How much sooner than its caller's bounds a capability execution must end.
const CALL_MARGIN: Duration = Duration::from_millis(50);
/// How many capability resolutions one script may need in all (diamonds count per path).
const MAX_RESOLUTIONS: usize = 256;

/// What running capabilities needs besides the catalog.
#[derive(Clone)]
pub struct Capabilities {
    pub store: Store,
    pub runner: RunnerCommand,
    /// Isolation layers required of every runner (the caller's).
    pub require_layers: Vec<String>,
    pub max_depth: usize,
    /// The config's per-principal policies: a capability's calls also obey its author's.
    pub authors: crate::exec::capability_author::AuthorPolicies,
    /// The sandbox's runner slots and pool, which nested executions take their runners
    /// through like any other (`None`: unbounded, as for a bare library caller).
    pub admission: Option<NestedAdmission>,
}

/// The runner admission a nested execution goes through (see [`crate::sandbox::Sandbox`]).
#[derive(Clone)]
pub struct NestedAdmission {
    pub slots: Arc<tokio::sync::Semaphore>,
    pub pool: Option<Arc<crate::exec::pool::RunnerPool>>,
}

/// A resolved capability and what its own code references.
struct Node {
    record: CapabilityRecord,
    /// The author of the version before this one (`None`: it is the first version).
    previous_author: Option<Option<String>>,
    validator: Option<jsonschema::Validator>,
    plan: Plan,
}

/// The capabilities one piece of code calls, by namespace then action.
#[derive(Default)]
struct Plan {
    namespaces: BTreeMap<String, BTreeMap<String, Arc<Node>>>,
}

impl Capabilities {
    pub fn new(store: Store, runner: RunnerCommand) -> Self {
        Capabilities {
            store,
            runner,
            require_layers: Vec::new(),
            max_depth: DEFAULT_MAX_DEPTH,
            authors: Default::default(),
            admission: None,
        }
    }

    /// The same, seeing only `tenant`'s capabilities.
    pub fn for_tenant(&self, tenant: &str) -> Capabilities {
        Capabilities {
            store: self.store.for_tenant(tenant),
            ..self.clone()
        }
    }

    /// The catalog to run `code` with: `catalog` plus the capabilities it calls. Fails with
    /// `TOOL_NOT_FOUND`, `CAPABILITY_CYCLE`, `CAPABILITY_DEPTH` or `INVALID_ARGUMENTS` (a stored
    /// schema that does not compile) before anything runs. Code that does not parse is passed
    /// through unchanged: the runner reports its `SYNTAX_ERROR`.
    pub async fn prepare(
        &self,
        catalog: &Catalog,
        code: &str,
        language: sandbox_runner::protocol::Language,
        limits: &Limits,
    ) -> Result<Catalog, ExecError> {
        // Most scripts name only configured tools: nothing to look up in the store, so no hop
        // to a blocking thread (the parse of a small script runs here, see script::nesting).
        if needs_no_lookup(catalog, code, language) {
            return Ok(catalog.clone());
        }
        let (store, base, text, max_depth) = (
            self.store.clone(),
            catalog.clone(),
            code.to_string(),
            self.max_depth,
        );
        let plan = tokio::task::spawn_blocking(move || {
            let mut budget = MAX_RESOLUTIONS;
            resolve(
                &base,
                &store,
                (&text, language),
                &mut Vec::new(),
                max_depth,
                &mut budget,
            )
        })
        .await
        .map_err(|e| ExecError::new(ErrorCode::ToolError, format!("resolution failed: {e}")))??;
        Ok(self.catalog_for(catalog, &plan, &[], limits))
    }

    /// Resolves, runs and returns the outcome (failures before spawning included).
    pub async fn execute(&self, catalog: &Catalog, req: ExecRequest) -> Outcome {
        let started = Instant::now();
        match self
            .prepare(catalog, &req.code, req.language, &req.request.limits)
            .await
        {
            Ok(full) => execute(&full, &self.runner, req).await,
            Err(e) => {
                let mut o = Outcome::failed(e);
                o.metrics.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
                o
            }
        }
    }

    fn catalog_for(
        &self,
        base: &Catalog,
        plan: &Plan,
        chain: &[String],
        limits: &Limits,
    ) -> Catalog {
        let mut full = base.clone();
        for (namespace, actions) in &plan.namespaces {
            let server = CapabilityServer {
                namespace: namespace.clone(),
                actions: actions.clone(),
                base: base.clone(),
                env: self.clone(),
                chain: chain.to_vec(),
                limits: *limits,
            };
            if let Err(e) = full.add(Arc::new(server)) {
                // Cannot happen: namespaces were checked as server names and are not servers.
                tracing::warn!("capability namespace {namespace} not added: {e}");
            }
        }
        full
    }
}

/// Whether resolving `code` needs nothing from the store: it does not parse (the runner reports
/// that), or every `mcp.X.Y` it names is a reserved name, a server that failed to start, or a
/// tool of a configured server — exactly the cases [`resolve`] passes over without a lookup.
fn needs_no_lookup(
    catalog: &Catalog,
    code: &str,
    language: sandbox_runner::protocol::Language,
) -> bool {
    let Ok(refs) = analysis::references_in(code, language) else {
        return true;
    };
    refs.all.iter().all(|r| {
        is_reserved_name(&r.server)
            || is_reserved_name(&r.tool)
            || catalog.unavailable().contains_key(&r.server)
            || catalog
                .provider(&r.server)
                .is_some_and(|p| p.tools().iter().any(|t| t.name == r.tool))
    })
}

fn store_err(e: StoreError) -> ExecError {
    ExecError::new(ErrorCode::ToolError, format!("state store: {e}"))
}

fn resolve(
    catalog: &Catalog,
    store: &Store,
    (code, language): (&str, sandbox_runner::protocol::Language),
    chain: &mut Vec<String>,
    max_depth: usize,
    budget: &mut usize,
) -> Result<Plan, ExecError> {
    let refs = match analysis::references_in(code, language) {
        Ok(r) => r,
        Err(_) if chain.is_empty() => return Ok(Plan::default()),
        Err(e) => {
            return Err(ExecError::new(
                ErrorCode::SyntaxError,
                format!(
                    "capability {} does not parse: {}; save a fixed version",
                    chain.last().map(String::as_str).unwrap_or(""),
                    e.message
                ),
            ))
        }
    };
    let mut plan = Plan::default();
    // An unknown name is refused here only where the call certainly runs; elsewhere it may be
    // dead code, feature-detected or caught, and the runner's proxy rejects it if it runs.
    let certain = refs.certain_calls;
    for r in refs.all {
        if is_reserved_name(&r.server) || is_reserved_name(&r.tool) {
            continue;
        }
        if catalog.unavailable().contains_key(&r.server) {
            continue;
        }
        if let Some(p) = catalog.provider(&r.server) {
            if p.tools().iter().any(|t| t.name == r.tool) || !certain.contains(&r) {
                continue;
            }
            return Err(not_found(catalog, store, &r));
        }
        let name = r.qualified();
        let record = if crate::store::capability_id(&name, "").is_ok() {
            store.resolve_capability(&name).map_err(store_err)?
        } else {
            None
        };
        let Some(record) = record else {
            if !certain.contains(&r) {
                continue;
            }
            return Err(not_found(catalog, store, &r));
        };
        if chain.contains(&name) {
            let mut cycle = chain.clone();
            cycle.push(name.clone());
            return Err(ExecError::new(
                ErrorCode::CapabilityCycle,
                format!(
                    "capability cycle: {}; a capability cannot call itself, directly or through others",
                    cycle.join(" → ")
                ),
            )
            .with_tool(name));
        }
        if chain.len() + 1 > max_depth {
            let mut path = chain.clone();
            path.push(name.clone());
            return Err(ExecError::new(
                ErrorCode::CapabilityDepth,
                format!(
                    "capabilities nest {} deep ({}); the limit is {max_depth}",
                    path.len(),
                    path.join(" → ")
                ),
            )
            .with_tool(name));
        }
        if *budget == 0 {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!("resolving capabilities needed more than {MAX_RESOLUTIONS} steps"),
            ));
        }
        *budget -= 1;
        let validator = match &record.input_schema {
            Some(schema) => Some(jsonschema::validator_for(schema).map_err(|e| {
                ExecError::new(
                    ErrorCode::InvalidArguments,
                    format!("capability {name} has an invalid input schema: {e}; save it again with a valid --schema"),
                )
            })?),
            None => None,
        };
        let previous_author = store
            .previous_author(&name, record.version)
            .map_err(store_err)?;
        chain.push(name);
        let sub = resolve(
            catalog,
            store,
            (&record.code, record.language),
            chain,
            max_depth,
            budget,
        );
        chain.pop();
        let node = Node {
            validator,
            previous_author,
            plan: sub?,
            record,
        };
        plan.namespaces
            .entry(r.server.clone())
            .or_default()
            .insert(r.tool.clone(), Arc::new(node));
    }
    Ok(plan)
}

/// Named in a `TOOL_NOT_FOUND` when no server is configured at all.
pub const NO_SERVERS: &str = "NO_SERVERS";

/// `TOOL_NOT_FOUND` for a static reference, with up to three close names (servers' tools and
/// capabilities), as `server:tool`.
fn not_found(catalog: &Catalog, store: &Store, r: &ToolReference) -> ExecError {
    let mut names: Vec<(String, String)> = catalog
        .tools()
        .into_iter()
        .map(|t| (t.server, t.name))
        .collect();
    if let Ok(caps) = store.list_capabilities() {
        for c in caps {
            let (ns, action) = c.parts();
            names.push((ns.to_string(), action.to_string()));
        }
    }
    let wanted = crate::gate::suggest::shown(&r.server, &r.tool);
    let alternatives = crate::gate::suggest::closest(
        &r.server,
        &r.tool,
        names.iter().map(|(s, t)| (s.as_str(), t.as_str())),
    );
    let hint = if !catalog.has_servers() {
        // The newcomer's case: `run` without --config, or a config whose servers are not
        // under `mcpServers`. Not a typo: say what is missing.
        format!(
            "{NO_SERVERS}: no MCP server is configured (no --config, or a config without an mcpServers section), so mcp.* reaches only saved capabilities and none has that name; pass --config FILE with {{\"mcpServers\": {{...}}}}"
        )
    } else if alternatives.is_empty() {
        "no server or saved capability has that name; see `mcp-sandbox capability list`".to_string()
    } else {
        format!("did you mean {}?", alternatives.join(", "))
    };
    let mut e = ExecError::new(
        ErrorCode::ToolNotFound,
        format!("unknown tool '{wanted}'; {hint}"),
    )
    .with_tool(r.qualified());
    e.alternatives = Some(alternatives);
    e
}

/// One capability namespace as a server.
struct CapabilityServer {
    namespace: String,
    actions: BTreeMap<String, Arc<Node>>,
    /// The real servers (capabilities of each nested level are added per call).
    base: Catalog,
    env: Capabilities,
    /// Capabilities the calling code runs inside (outermost first).
    chain: Vec<String>,
    /// The caller's limits.
    limits: Limits,
}

impl ToolProvider for CapabilityServer {
    fn name(&self) -> &str {
        &self.namespace
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.actions
            .iter()
            .map(|(action, node)| ToolInfo {
                server: self.namespace.clone(),
                name: action.clone(),
                description: node.record.description.clone(),
                input_schema: node
                    .record
                    .input_schema
                    .clone()
                    .unwrap_or_else(|| json!({"type": "object"})),
                output_schema: None,
            })
            .collect()
    }

    fn is_capability(&self) -> bool {
        true
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>> {
        let qualified = format!("{}:{tool}", self.namespace);
        let Some(node) = self.actions.get(tool).cloned() else {
            let e = ExecError::new(
                ErrorCode::ToolNotFound,
                format!("capability {qualified} was not resolved for this execution"),
            )
            .with_tool(&qualified);
            return Box::pin(async move { Err(e) });
        };
        // Defence in depth: resolution already refused these.
        let mut chain = self.chain.clone();
        if chain.contains(&qualified) {
            let e = ExecError::new(
                ErrorCode::CapabilityCycle,
                format!("capability cycle: {} → {qualified}", chain.join(" → ")),
            );
            return Box::pin(async move { Err(e) });
        }
        chain.push(qualified.clone());
        if chain.len() > self.env.max_depth {
            let e = ExecError::new(
                ErrorCode::CapabilityDepth,
                format!(
                    "capabilities nest {} deep; the limit is {}",
                    chain.len(),
                    self.env.max_depth
                ),
            );
            return Box::pin(async move { Err(e) });
        }
        let args = if args.is_null() {
            Value::Object(Map::new())
        } else {
            args
        };
        if let Some(v) = &node.validator {
            let problems: Vec<String> = v
                .iter_errors(&args)
                .take(5)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("{at}: {e}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                let e = ExecError::new(
                    ErrorCode::InvalidArguments,
                    format!(
                        "arguments of {qualified} do not match its input schema: {}",
                        problems.join("; ")
                    ),
                )
                .with_tool(&qualified);
                return Box::pin(async move { Err(e) });
            }
        }
        let tree = ctx.request.tree.clone();
        let remaining = ctx.deadline.saturating_duration_since(Instant::now());
        // A little under the caller's bounds, so the capability's own timeout ends it (with its
        // receipts) before the caller's per-call timeout cancels it.
        let budget = remaining
            .min(Duration::from_millis(self.limits.call_timeout_ms))
            .saturating_sub(CALL_MARGIN);
        let mut limits = self.limits;
        limits.timeout_ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX).max(1);
        // What is left of the tree's calls and CPU is all the nested execution may use.
        if let Some(tree) = &tree {
            limits.max_calls = limits.max_calls.min(tree.calls_left());
            let root = tree
                .root_pid()
                .and_then(crate::exec::cpu_time::used_ms)
                .unwrap_or(0);
            let left = tree
                .cpu_ms()
                .saturating_sub(tree.spent_ms())
                .saturating_sub(root);
            if left == 0 {
                tree.exhaust();
                let e = ExecError::new(
                    ErrorCode::CpuLimit,
                    format!(
                        "capability {qualified} was not started: this execution and the capabilities it called have used their {} ms of CPU time (cpu_ms)",
                        tree.cpu_ms()
                    ),
                )
                .with_tool(&qualified);
                return Box::pin(async move { Err(e) });
            }
            limits.cpu_ms = limits.cpu_ms.min(left);
        }
        // A CPU_LIMIT under a budget the tree cut means the tree's budget is spent.
        let cut_by_tree = limits.cpu_ms < self.limits.cpu_ms;
        let catalog = self
            .env
            .catalog_for(&self.base, &node.plan, &chain, &limits);
        let mut context = Map::new();
        context.insert("args".into(), args);
        // The capability's own calls obey the caller's policy and its author's, and belong to
        // the caller's trace.
        let mut request = ctx.request.nested(&ctx.trace_id, limits);
        request.policy = self
            .env
            .authors
            .narrow(request.policy, &node.record, &qualified);
        let changed = crate::exec::capability_author::author_changed(
            &node.record,
            node.previous_author.as_ref(),
            &ctx.trace_id,
            ctx.request.parent_trace_id.as_ref(),
        );
        if let Some(event) = changed {
            if let Ok(mut s) = ctx.children.lock() {
                s.push(event);
            }
        }
        let req = ExecRequest {
            code: node.record.code.clone(),
            language: node.record.language,
            context,
            request,
            require_layers: self.env.require_layers.clone(),
            // …and are audited with the caller's execution.
            audit_args: ctx.audit_args.clone(),
            ..Default::default()
        };
        let runner = self.env.runner.clone();
        let sink = ctx.children.clone();
        let admission = self.env.admission.clone();
        let deadline = tokio::time::Instant::from_std(ctx.deadline);
        Box::pin(async move {
            // A runner of the tree's bound, then a slot of the sandbox's, like any execution.
            let _tree_permit = match &tree {
                Some(t) => Some(
                    wait_for(
                        &t.runners,
                        deadline,
                        &qualified,
                        "this execution's capability runners",
                    )
                    .await?,
                ),
                None => None,
            };
            let _slot = match &admission {
                Some(a) => {
                    Some(wait_for(&a.slots, deadline, &qualified, "the sandbox's runners").await?)
                }
                None => None,
            };
            let pool = admission.as_ref().and_then(|a| a.pool.clone());
            let outcome =
                crate::exec::session::execute_pooled(&catalog, &runner, pool.as_deref(), req).await;
            if let Ok(mut s) = sink.lock() {
                s.extend(outcome.traces);
            }
            match (outcome.error, &tree) {
                (None, _) => Ok(outcome.result),
                (Some(e), Some(t)) if e.code == ErrorCode::CpuLimit && cut_by_tree => {
                    t.exhaust();
                    Err(as_call_error(&qualified, e))
                }
                (Some(e), _) => Err(as_call_error(&qualified, e)),
            }
        })
    }
}
