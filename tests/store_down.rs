//! PostgreSQL stopped mid-load and restarted (issue 31, "when the database is down"): two
//! `serve --http` gateways on one database of a real PostgreSQL server (tests/pg_support), one
//! with `sandbox.audit.required: true` (the default), one with `false`, both driven over HTTP by
//! workers that each send one execution (one tool call, so the graph learns) after another. The
//! server is stopped under that load, kept down, then restarted; the gateways are never
//! restarted. Every request must get an answer within a bound; the required gateway refuses
//! (`SANDBOX_UNAVAILABLE`, the documented messages) and reopens by itself; the lossy one answers
//! everything and queues the audit records the database cannot take, which reach it after the
//! restart, each once, none lost; both gateways' queued learning writes reach the database
//! after the restart, none lost.

use crate::common::{assert_not_hung, assert_still_waiting, ms, HANG_FACTOR};
use crate::pg_support::PgServer;
use crate::serve_support::http::{
    exchange, execute_body, open_session, post, start_http_state, HttpServed,
};
use mcp_sandbox::store::audit::AuditFilter;
use mcp_sandbox::store::Store;
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Workers per gateway, each one execution at a time.
const WORKERS: usize = 2;
/// No answer may take longer (an execution takes milliseconds; a store failure too).
const ANSWER_BOUND: Duration = Duration::from_secs(10);
/// What the gateway with `required: true` answers once an audit write failed.
const REFUSED: &str = "the execution was not started: the audit store is unreachable or failed";
/// What it answers for an execution that ran but whose record could not be written.
const WITHHELD: &str =
    "the execution ran but its audit record could not be written: the audit store is unreachable or failed";

/// One answered request: when it was sent and answered (since the test's start) and what came.
#[derive(Debug, Clone)]
struct Answered {
    sent: Duration,
    took: Duration,
    /// `OK`, or the error code.
    code: String,
    message: String,
}

async fn drive(
    addr: String,
    code: String,
    stop: Arc<AtomicBool>,
    t0: Instant,
    bound: Duration,
    out: Arc<Mutex<Vec<Answered>>>,
) {
    let session = open_session(&addr).await;
    let mut id = 10;
    while !stop.load(Ordering::Relaxed) {
        id += 1;
        let sent = t0.elapsed();
        let body = execute_body(id, json!({ "code": code }));
        let answer = tokio::time::timeout(bound, post(&addr, Some(&session), &body))
            .await
            .unwrap_or_else(|_| panic!("no answer within {bound:?} (sent at {sent:?})"));
        let took = t0.elapsed() - sent;
        let sc = answer.reply(id)["result"]["structuredContent"].clone();
        let (code, message) = if sc["success"] == json!(true) {
            assert_eq!(sc["result"], json!("x"), "{sc}");
            ("OK".to_string(), String::new())
        } else {
            (
                sc["error"]["code"].as_str().unwrap_or("?").to_string(),
                sc["error"]["message"].as_str().unwrap_or("").to_string(),
            )
        };
        out.lock().unwrap().push(Answered {
            sent,
            took,
            code,
            message,
        });
        // Refusals take microseconds: no need to send thousands of them.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The value of an unlabelled sample on the gateway's `/metrics`.
async fn metric(h: &HttpServed, name: &str) -> u64 {
    let req = format!(
        "GET /metrics HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        h.addr
    );
    let a = exchange(&h.addr, req.as_bytes()).await;
    assert_eq!(a.status, 200, "{a:?}");
    a.body
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{name} not on /metrics:\n{}", a.body)) as u64
}

/// (calls, successes) of `tool` in the shared graph.
fn graph_counts(store: &Store, tool: &str) -> (i64, i64) {
    let g = store.graph(None).unwrap();
    g.tools
        .iter()
        .find(|t| t.tool == tool)
        .map_or((0, 0), |t| (t.calls, t.successes))
}

/// The two gateways of these tests on database `state`: `required` (`sandbox.audit.required`
/// true, the default) and `lossy` (false).
async fn start_gateways(state: &str) -> (HttpServed, HttpServed) {
    let servers = json!({"fixture": {"command": crate::common::bin("fixture-mcp-server")}});
    let required = start_http_state(
        json!({"mcpServers": servers, "sandbox": {}}),
        Some(state),
        &[],
    )
    .await;
    let lossy = start_http_state(
        json!({"mcpServers": servers, "sandbox": {"audit": {"required": false}}}),
        Some(state),
        &[],
    )
    .await;
    (required, lossy)
}

// Each gateway's executions are told apart in the shared database: by their code in the
// audit log, by their tool in the graph.
const CODE_REQUIRED: &str = "// required\nreturn await mcp.fixture.echo({message: 'x'})";
const CODE_LOSSY: &str = "// lossy\nawait mcp.fixture.add({a: 1, b: 2}); return 'x'";

/// [`WORKERS`] workers on each gateway, until [`Load::finish`].
struct Load {
    stop: Arc<AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    /// The answers so far of the required gateway and of the lossy one.
    required: Arc<Mutex<Vec<Answered>>>,
    lossy: Arc<Mutex<Vec<Answered>>>,
}

impl Load {
    fn start(required: &HttpServed, lossy: &HttpServed, t0: Instant, bound: Duration) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = (Arc::default(), Arc::default());
        let mut workers = Vec::new();
        for (h, code, out) in [
            (required, CODE_REQUIRED, &answers.0),
            (lossy, CODE_LOSSY, &answers.1),
        ] {
            for _ in 0..WORKERS {
                workers.push(tokio::spawn(drive(
                    h.addr.clone(),
                    code.to_string(),
                    stop.clone(),
                    t0,
                    bound,
                    Arc::clone(out),
                )));
            }
        }
        Load {
            stop,
            workers,
            required: answers.0,
            lossy: answers.1,
        }
    }

    /// Waits until the answers so far (the required gateway's, the lossy one's) satisfy `done`:
    /// the phases of these tests end on what was answered, not after a time in which a fast
    /// machine answers enough. `idle` is how long it takes on an idle machine.
    async fn wait_until(
        &self,
        what: &str,
        idle: Duration,
        done: impl Fn(&[Answered], &[Answered]) -> bool,
    ) {
        let started = Instant::now();
        loop {
            let (required, lossy) = (
                self.required.lock().unwrap().clone(),
                self.lossy.lock().unwrap().clone(),
            );
            if done(&required, &lossy) {
                return assert_not_hung(started.elapsed(), idle * HANG_FACTOR, idle, what);
            }
            assert_still_waiting(started.elapsed(), idle * HANG_FACTOR, idle, what);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The answers of the required gateway and of the lossy one.
    async fn finish(self) -> (Vec<Answered>, Vec<Answered>) {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers {
            w.await.unwrap();
        }
        let take = |a: Arc<Mutex<Vec<Answered>>>| std::mem::take(&mut *a.lock().unwrap());
        (take(self.required), take(self.lossy))
    }
}

/// Before the outage: both gateways answered a few executions OK (idle: within a few 100 ms).
async fn wait_for_answers_before(load: &Load) {
    load.wait_until("answers before the outage", ms(1_500), |required, lossy| {
        count(required, &ok) >= 10 && count(lossy, &ok) >= 10
    })
    .await;
}

/// During the outage: the required gateway refused more than 10 executions at admission.
async fn wait_for_refusals(load: &Load) {
    load.wait_until("refusals during the outage", ms(1_000), |required, _| {
        count(required, &refused) > 10
    })
    .await;
}

fn count(v: &[Answered], f: &dyn Fn(&Answered) -> bool) -> usize {
    v.iter().filter(|a| f(a)).count()
}
fn ok(a: &Answered) -> bool {
    a.code == "OK"
}
fn refused(a: &Answered) -> bool {
    a.code == "SANDBOX_UNAVAILABLE" && a.message.starts_with(REFUSED)
}
fn withheld(a: &Answered) -> bool {
    a.code == "SANDBOX_UNAVAILABLE" && a.message.starts_with(WITHHELD)
}

/// Completed audit records with outcome OK whose code starts with `marker`.
fn completed(state: &str, marker: &str) -> usize {
    let store = Store::open(Path::new(state)).unwrap();
    let records = store
        .query_audit(&AuditFilter {
            limit: 100_000,
            ..Default::default()
        })
        .unwrap();
    records
        .iter()
        .filter(|r| r.code.as_deref().is_some_and(|c| c.starts_with(marker)))
        .filter(|r| r.outcome == "OK")
        .count()
}

/// The required gateway's audit log: every OK answer has its completed record. A withheld
/// execution (its completion given up after the store's bound or cut by the stop) has one too
/// when its `COMMIT` reached the database just as it stopped or hung: the client was told the
/// record could not be written, and the log holds more than the client saw, never less. So
/// the count is at least the OK answers and at most those and the withheld ones.
fn required_records_complete(state: &str, n_ok: usize, n_withheld: usize) {
    let records = completed(state, "// required");
    assert!(
        (n_ok..=n_ok + n_withheld).contains(&records),
        "{records} completed records for {n_ok} OK answers and {n_withheld} withheld"
    );
}

/// Admission of the required gateway reopens by itself: the first OK answer sent after the
/// database came back (at `up_since`) arrives within `within` of it, every execution sent
/// after it is OK, and there are more than 10 of those. Returns when it arrived.
/// The first OK answer of the required gateway sent after `up_since` (when it ended), and how
/// many of its requests were sent after that.
fn after_reopening(on_required: &[Answered], up_since: Duration) -> Option<(Duration, usize)> {
    let first_ok_after = on_required
        .iter()
        .filter(|a| a.sent > up_since && ok(a))
        .map(|a| a.sent + a.took)
        .min()?;
    Some((
        first_ok_after,
        count(on_required, &|a| a.sent > first_ok_after),
    ))
}

/// Waits (on what was answered) until the required gateway reopened after the database came
/// back at `up_since` and answered more than 10 executions since.
async fn wait_reopened(load: &Load, up_since: Duration) {
    load.wait_until("the reopening", ms(3_000), |required, _| {
        after_reopening(required, up_since).is_some_and(|(_, after)| after > 10)
    })
    .await;
}

/// The required gateway reopened by itself after `up_since`: every execution sent after its
/// first OK answer since is OK again. How long that took is bounded only as a hang (its probe
/// runs once a second: idle, the reopening comes within about 1 s).
fn reopened(on_required: &[Answered], up_since: Duration) -> Duration {
    let (first_ok_after, after) =
        after_reopening(on_required, up_since).expect("an OK answer after the restart");
    assert_not_hung(
        first_ok_after - up_since,
        ms(15_000),
        ms(1_500),
        "the reopening",
    );
    for a in on_required.iter().filter(|a| a.sent > first_ok_after) {
        assert!(ok(a), "after the reopening: {a:?}");
    }
    assert!(after > 10, "{after} executions after the reopening");
    first_ok_after
}

/// The lossy gateway's audit records: it queued the ones the database could not take and
/// wrote them all once the database was back, so every OK answer has exactly one completed
/// record (none missing, none written twice) and it lost none; the required one lost none.
async fn audit_queue_written(
    state: &str,
    required: &HttpServed,
    lossy: &HttpServed,
    on_lossy: &[Answered],
) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let queued = metric(lossy, "mcp_sandbox_audit_records_queued").await;
        if queued == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{queued} audit records still queued"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(completed(state, "// lossy"), on_lossy.len());
    for h in [required, lossy] {
        assert_eq!(
            metric(h, "mcp_sandbox_audit_records_lost_total").await,
            0,
            "{}",
            h.stderr()
        );
    }
}

/// While the database cannot take them, the lossy gateway holds its audit records in its
/// queue: some queued, none lost.
async fn audit_records_queued(lossy: &HttpServed) {
    let queued = metric(lossy, "mcp_sandbox_audit_records_queued").await;
    eprintln!("lossy: {queued} audit records queued while the database is out");
    assert!(
        queued > 0,
        "no audit record queued while the database is out"
    );
    assert_eq!(
        metric(lossy, "mcp_sandbox_audit_records_lost_total").await,
        0
    );
}

/// The graph: every execution that ran made its one call; the queued writes reached the
/// database after the restart (the queue held them all: nothing lost on either gateway).
async fn graph_complete(
    state: &str,
    required: &HttpServed,
    lossy: &HttpServed,
    ran_required: i64,
    ok_required: i64,
    ran_lossy: i64,
) {
    let store = Store::open(Path::new(state)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let echo = graph_counts(&store, "fixture:echo");
        let add = graph_counts(&store, "fixture:add");
        if (echo.0, add) == (ran_required, (ran_lossy, ran_lossy)) {
            assert!(echo.1 >= ok_required, "{echo:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "graph: echo {echo:?} of {ran_required} ran ({ok_required} OK), add {add:?} of {ran_lossy}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for h in [required, lossy] {
        assert_eq!(
            metric(h, "mcp_sandbox_learning_writes_lost_total").await,
            0,
            "{}",
            h.stderr()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_stopped_mid_load_refuses_or_counts_and_resumes() {
    let pg = PgServer::start();
    let state = pg.database();
    let (required, lossy) = start_gateways(&state).await;

    let t0 = Instant::now();
    let load = Load::start(&required, &lossy, t0, ANSWER_BOUND);
    wait_for_answers_before(&load).await;
    let down_from = t0.elapsed();
    // A fast stop keeps every commit the gateways were told of (an immediate stop of this
    // test server, which runs with synchronous_commit=off, would lose the last ones).
    pg.stop_fast();
    let down_since = t0.elapsed();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    wait_for_refusals(&load).await;
    audit_records_queued(&lossy).await;
    let up_from = t0.elapsed();
    pg.restart();
    let up_since = t0.elapsed();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    wait_reopened(&load, up_since).await;
    let (on_required, on_lossy) = load.finish().await;
    let slowest = on_required
        .iter()
        .chain(&on_lossy)
        .map(|a| a.took)
        .max()
        .unwrap();
    assert!(slowest < ANSWER_BOUND, "{slowest:?}");

    // required: true — OK, or SANDBOX_UNAVAILABLE with one of the two documented messages.
    for a in &on_required {
        assert!(ok(a) || refused(a) || withheld(a), "{a:?}");
        if a.sent + a.took < down_from {
            assert!(ok(a), "before the stop: {a:?}");
        }
        if a.sent > down_since && a.sent + a.took < up_from {
            assert!(!ok(a), "while the database is down: {a:?}");
        }
    }
    let (n_ok, n_refused, n_withheld) = (
        count(&on_required, &ok),
        count(&on_required, &refused),
        count(&on_required, &withheld),
    );
    eprintln!(
        "required: {} answers ({n_ok} OK, {n_refused} refused, {n_withheld} withheld); lossy: {} answers; slowest {slowest:?}",
        on_required.len(),
        on_lossy.len()
    );
    assert!(
        n_withheld >= 1,
        "the execution running when the store went down"
    );
    assert!(
        n_refused > 10,
        "refused at admission while down: {n_refused}"
    );
    // Admission reopens by itself: within a probe period (1 s) and the restart, every
    // execution sent after the first OK answer after the restart is OK again.
    reopened(&on_required, up_since);

    // required: false — every execution answered OK.
    for a in &on_lossy {
        assert!(ok(a), "{a:?}");
    }

    // The audit log: each OK answer of the required gateway has its completed record; so has
    // each of the lossy gateway once its queue is written.
    required_records_complete(&state, n_ok, n_withheld);
    audit_queue_written(&state, &required, &lossy, &on_lossy).await;

    // The graph: every execution that ran made its one call; the queued writes reached the
    // database after the restart (the queue held them all: nothing lost).
    let ran_required = (n_ok + n_withheld) as i64;
    graph_complete(
        &state,
        &required,
        &lossy,
        ran_required,
        n_ok as i64,
        on_lossy.len() as i64,
    )
    .await;
    logs_say_resumed(&required, &lossy, true);
}

/// The lossy gateway ran executions through the outage: it logged the queueing of its audit
/// records and their resumption, and, when the database was stopped (`learning_failed`: every
/// write fails at once), the same for its learning writes. With a hung database its learning
/// writes fail only when one was in flight when the hang began (those started later are
/// answered once it resumes, within their 5 s; and the executions, which try no write-ahead
/// record while audit records are queued, then each wait only the learning write's 250 ms):
/// when it logged the queueing, it logged the resumption too. The required one refuses at
/// admission, so a learning write of its fails only when an execution's audit record was
/// committed just before the stop and its graph write just after (a race the clean-clone CI
/// once lost: no line then); likewise.
fn logs_say_resumed(required: &HttpServed, lossy: &HttpServed, learning_failed: bool) {
    let lossy_err = lossy.stderr();
    assert!(
        lossy_err.contains("audit writes (sandbox.audit.required is false) are queued and retried")
            && lossy_err.contains("audit writes (sandbox.audit.required is false) resumed"),
        "{lossy_err}"
    );
    if learning_failed {
        assert!(
            lossy_err.contains("learning writes are queued and retried"),
            "{lossy_err}"
        );
    }
    for err in [&lossy_err, &required.stderr()] {
        if err.contains("learning writes are queued and retried") {
            assert!(err.contains("learning writes resumed"), "{err}");
        }
    }
    assert!(required
        .stderr()
        .contains("the audit store answers again; admitting executions"));
}

/// The store's bound on one operation (`store::pg::OPERATION_TIMEOUT`).
const STORE_TIMEOUT: Duration = Duration::from_secs(5);
/// What the store answers then, inside the gateways' messages.
const NO_ANSWER: &str = "the database did not answer within 5 s";

/// A hung database (every PostgreSQL process stopped with SIGSTOP: connections are accepted,
/// nothing is answered) mid-load, for longer than the store's bound, then resumed: no answer
/// waits more than that bound and a margin; the required gateway withholds the executions
/// caught in the hang and refuses new ones, the lossy one answers everything and queues the
/// records the database does not take, writing them all once it answers again; both go on
/// without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_hung_mid_load_answers_within_the_bound_and_resumes() {
    let pg = PgServer::start();
    let state = pg.database();
    let (required, lossy) = start_gateways(&state).await;
    // The store's bound and a margin (idle, busy machine: 0.4 s over it), less than a second
    // bound: an answer that waited two store bounds fails.
    let bound = STORE_TIMEOUT + Duration::from_millis(4_500);

    let t0 = Instant::now();
    let load = Load::start(&required, &lossy, t0, bound);
    wait_for_answers_before(&load).await;
    let hung_from = t0.elapsed();
    let hung = pg.hang();
    let hung_since = t0.elapsed();
    tokio::time::sleep(STORE_TIMEOUT + Duration::from_secs(2)).await;
    wait_for_refusals(&load).await;
    audit_records_queued(&lossy).await;
    let up_from = t0.elapsed();
    hung.resume();
    let up_since = t0.elapsed();
    tokio::time::sleep(Duration::from_millis(3000)).await;
    wait_reopened(&load, up_since).await;
    let (on_required, on_lossy) = load.finish().await;
    let slowest = on_required
        .iter()
        .chain(&on_lossy)
        .map(|a| a.took)
        .max()
        .unwrap();
    assert!(slowest < bound, "{slowest:?}");

    for a in &on_required {
        assert!(ok(a) || refused(a) || withheld(a), "{a:?}");
        if a.sent + a.took < hung_from {
            assert!(ok(a), "before the hang: {a:?}");
        }
        if a.sent > hung_since && a.sent + a.took < up_from {
            assert!(!ok(a), "while the database hangs: {a:?}");
        }
        if withheld(a) {
            // Caught in the hang: its write waited the store's bound, not forever.
            assert!(a.message.contains(NO_ANSWER), "{a:?}");
            assert!(
                a.took >= STORE_TIMEOUT - Duration::from_millis(100),
                "{a:?}"
            );
        }
    }
    let (n_ok, n_refused, n_withheld) = (
        count(&on_required, &ok),
        count(&on_required, &refused),
        count(&on_required, &withheld),
    );
    eprintln!(
        "hung: required: {} answers ({n_ok} OK, {n_refused} refused, {n_withheld} withheld); lossy: {} answers; slowest {slowest:?}",
        on_required.len(),
        on_lossy.len()
    );
    assert!(n_withheld >= 1, "the executions caught in the hang");
    assert!(
        n_refused > 10,
        "refused at admission while hung: {n_refused}"
    );
    // The probe that was waiting on the hung database gets its answer when it resumes.
    reopened(&on_required, up_since);

    for a in &on_lossy {
        assert!(ok(a), "{a:?}");
    }
    // Lossy answers caught in the hang waited one store bound (the write-ahead), not two.
    let slow_lossy = count(&on_lossy, &|a| {
        a.took >= STORE_TIMEOUT - Duration::from_millis(100)
    });
    assert!(slow_lossy >= 1, "no lossy execution caught in the hang");

    required_records_complete(&state, n_ok, n_withheld);
    audit_queue_written(&state, &required, &lossy, &on_lossy).await;
    graph_complete(
        &state,
        &required,
        &lossy,
        (n_ok + n_withheld) as i64,
        n_ok as i64,
        on_lossy.len() as i64,
    )
    .await;
    logs_say_resumed(&required, &lossy, false);
    for h in [&required, &lossy] {
        assert!(h.stderr().contains(NO_ANSWER), "{}", h.stderr());
    }
}
