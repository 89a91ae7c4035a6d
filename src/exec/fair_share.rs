//! Fair admission to the sandbox's runner slots across principals and tenants.
//!
//! Two rules, both on by default in `serve` (a library caller's share is unbounded unless it
//! sets one):
//! - **a share per caller**: a principal may have at most `per_principal` executions admitted
//!   (running or queued: tasks, yielded runs and plain calls together), its tenant at most
//!   `per_tenant` ([`ShareCaps`], from `sandbox.fair_share` and the principal's policies); past
//!   either the execution is refused at once with `LIMIT_EXCEEDED`, naming the cap and who may
//!   raise it;
//! - **served in turn**: executions waiting for a runner slot queue per principal, and a free
//!   slot goes to the principals in turn (round robin), each principal's own executions in the
//!   order they came. One principal's flood then delays another's execution by at most one
//!   execution per slot, however many it queued.
//!
//! A free slot is handed out when it frees, not promised ahead: one dispatcher task per sandbox
//! waits on the slots' semaphore while anyone waits and gives each permit to the waiter whose
//! turn it is at that moment (a principal that starts waiting just before a slot frees gets it
//! if its turn comes first). A capability's nested execution takes its slot from the same
//! semaphore directly (it belongs to an execution already running).

use crate::context::limits::ShareCaps;
use crate::error::{ErrorCode, ExecError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Who an admission counts for: (tenant, principal).
type Key = Arc<(String, String)>;

/// A waiter: its ticket, and where its permit goes.
type Waiter = (u64, oneshot::Sender<OwnedSemaphorePermit>);

#[derive(Default)]
struct State {
    /// Admitted executions per (tenant, principal) and per tenant.
    principals: HashMap<Key, u32>,
    tenants: HashMap<String, u32>,
    /// Waiting for a slot: each principal's waiters in arrival order.
    queues: HashMap<Key, VecDeque<Waiter>>,
    /// Turns each admitted principal has had (start-time fair queuing): the waiting principal
    /// with the fewest goes next, so one that just had its turn waits behind every other.
    passes: HashMap<Key, u64>,
    /// The pass of the last turn given: a principal that starts waiting starts from it, so it
    /// neither jumps ahead of everyone nor waits behind turns it never asked for.
    floor: u64,
    next: u64,
}

impl State {
    /// Takes the waiter whose turn it is: the first of the waiting principal with the fewest
    /// turns (the earliest ticket among equals).
    fn next_turn(&mut self) -> Option<Waiter> {
        let floor = self.floor;
        let (_, _, key) = self
            .queues
            .iter()
            .filter_map(|(key, q)| {
                let (id, _) = q.front()?;
                let pass = self.passes.get(key).copied().unwrap_or(floor).max(floor);
                Some((pass, *id, key.clone()))
            })
            .min_by_key(|(pass, id, _)| (*pass, *id))?;
        let queue = self.queues.get_mut(&key)?;
        let waiter = queue.pop_front();
        if queue.is_empty() {
            self.queues.remove(&key);
        }
        self.took_turn(&key);
        waiter
    }

    /// `key` had a turn: its pass moves on past the current floor.
    fn took_turn(&mut self, key: &Key) {
        let pass = self
            .passes
            .get(key)
            .copied()
            .unwrap_or(self.floor)
            .max(self.floor);
        self.floor = pass;
        self.passes.insert(key.clone(), pass + 1);
    }

    fn waiting(&self) -> usize {
        self.queues.values().map(VecDeque::len).sum()
    }
}

/// What the dispatcher shares with the sandbox.
struct Inner {
    state: Mutex<State>,
    slots: Arc<Semaphore>,
    /// Someone started waiting (or the sandbox is gone).
    work: Notify,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Hands each freed slot to the waiter whose turn it is, while anyone waits; ends when the
/// slots are closed (every waiter then gets [`NoSlot::Closed`]) or the sandbox is gone.
async fn dispatch(inner: Arc<Inner>) {
    loop {
        loop {
            let work = inner.work.notified();
            if inner.lock().waiting() > 0 {
                break;
            }
            if Arc::strong_count(&inner) == 1 {
                return;
            }
            work.await;
        }
        let Ok(permit) = inner.slots.clone().acquire_owned().await else {
            // Shut down: dropping the waiters' senders tells them.
            inner.lock().queues.clear();
            return;
        };
        let mut permit = Some(permit);
        while let Some(p) = permit.take() {
            let Some((_, to)) = inner.lock().next_turn() else {
                break; // nobody waits any more: the slot goes back
            };
            // A waiter that left meanwhile gives the permit back for the next.
            permit = to.send(p).err();
        }
    }
}

/// The fair queue in front of the runner slots (one per sandbox).
pub struct FairShare {
    inner: Arc<Inner>,
    dispatcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for FairShare {
    fn drop(&mut self) {
        // The dispatcher sees it is alone and ends.
        self.inner.work.notify_one();
    }
}

impl std::fmt::Debug for FairShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FairShare").finish_non_exhaustive()
    }
}

/// One admitted execution of a caller, counted in its share until dropped.
pub struct Admitted {
    share: Arc<FairShare>,
    key: Key,
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitted")
            .field("tenant", &self.key.0)
            .field("principal", &self.key.1)
            .finish()
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut s = self.share.inner.lock();
        if let Some(n) = s.principals.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.principals.remove(&self.key);
                s.passes.remove(&self.key);
            }
        }
        if let Some(n) = s.tenants.get_mut(&self.key.0) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.tenants.remove(&self.key.0);
            }
        }
    }
}

/// Why no slot was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSlot {
    /// The waiter's token fired (the client withdrew the request).
    Cancelled,
    /// The slots are closed (shutdown).
    Closed,
}

/// A place in the queue, left when dropped (served, cancelled or gone).
struct Place<'a> {
    inner: &'a Inner,
    key: Key,
    id: u64,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut s = self.inner.lock();
        if let Some(queue) = s.queues.get_mut(&self.key) {
            queue.retain(|(id, _)| *id != self.id);
            if queue.is_empty() {
                s.queues.remove(&self.key);
            }
        }
    }
}

/// The config key the refusal names (the caps' section).
pub const CAP_NAME: &str = "sandbox.fair_share";

impl FairShare {
    pub fn new(slots: Arc<Semaphore>) -> Self {
        FairShare {
            inner: Arc::new(Inner {
                state: Mutex::default(),
                slots,
                work: Notify::new(),
            }),
            dispatcher: Mutex::default(),
        }
    }

    /// Counts one execution of `principal` in `tenant` against `caps`, or refuses it
    /// (`LIMIT_EXCEEDED`, naming the cap that is full and who may raise it).
    pub fn admit(
        self: &Arc<Self>,
        tenant: &str,
        principal: &str,
        caps: ShareCaps,
    ) -> Result<Admitted, ExecError> {
        let key: Key = Arc::new((tenant.to_string(), principal.to_string()));
        let mut s = self.inner.lock();
        let mine = s.principals.get(&key).copied().unwrap_or(0);
        if mine >= caps.per_principal {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "fair share: {principal} has {mine} executions running or queued on this gateway (tasks, yielded runs and calls together); its cap is {} ({CAP_NAME}.per_principal, or max_executions in one of its sandbox.policies). Wait for one to end (wait_execution, tasks/get) or cancel one, then retry; the gateway's operator may raise the cap",
                    caps.per_principal
                ),
            ));
        }
        let theirs = s.tenants.get(tenant).copied().unwrap_or(0);
        if theirs >= caps.per_tenant {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "fair share: tenant {tenant} has {theirs} executions running or queued on this gateway; its cap is {} ({CAP_NAME}.per_tenant, or {CAP_NAME}.tenants.{tenant}.per_tenant). Wait for one of the tenant's executions to end, then retry; the gateway's operator may raise the cap",
                    caps.per_tenant
                ),
            ));
        }
        *s.principals.entry(key.clone()).or_default() += 1;
        *s.tenants.entry(tenant.to_string()).or_default() += 1;
        drop(s);
        Ok(Admitted {
            share: self.clone(),
            key,
        })
    }

    /// The dispatcher runs (started on first use, again if its runtime went away).
    fn ensure_dispatcher(&self) {
        let mut d = self.dispatcher.lock().unwrap_or_else(|p| p.into_inner());
        if d.as_ref().is_none_or(|h| h.is_finished()) {
            *d = Some(tokio::spawn(dispatch(self.inner.clone())));
        }
    }

    /// A runner slot for `admitted`, in its principal's turn; `cancel` withdraws it.
    pub async fn slot(
        &self,
        admitted: &Admitted,
        cancel: &CancellationToken,
    ) -> Result<OwnedSemaphorePermit, NoSlot> {
        if self.inner.slots.is_closed() {
            return Err(NoSlot::Closed);
        }
        // Nobody waits and a slot is free: no turn to wait for (it still counts as a turn).
        {
            let mut s = self.inner.lock();
            if s.waiting() == 0 {
                if let Ok(permit) = self.inner.slots.clone().try_acquire_owned() {
                    s.took_turn(&admitted.key);
                    return Ok(permit);
                }
            }
        }
        self.ensure_dispatcher();
        let (to, from) = oneshot::channel();
        let place = {
            let mut s = self.inner.lock();
            let id = s.next;
            s.next += 1;
            s.queues
                .entry(admitted.key.clone())
                .or_default()
                .push_back((id, to));
            Place {
                inner: &self.inner,
                key: admitted.key.clone(),
                id,
            }
        };
        self.inner.work.notify_one();
        let given = tokio::select! {
            given = from => given.map_err(|_| NoSlot::Closed),
            () = cancel.cancelled() => Err(NoSlot::Cancelled),
        };
        drop(place);
        given
    }

    /// Executions waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.inner.lock().waiting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(p: u32, t: u32) -> ShareCaps {
        ShareCaps {
            per_principal: p,
            per_tenant: t,
        }
    }

    #[test]
    fn a_share_is_capped_per_principal_and_tenant_and_given_back() {
        let share = Arc::new(FairShare::new(Arc::new(Semaphore::new(1))));
        let a1 = share.admit("t", "a", caps(2, 3)).unwrap();
        let _a2 = share.admit("t", "a", caps(2, 3)).unwrap();
        let e = share.admit("t", "a", caps(2, 3)).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
        assert!(
            e.message.contains("sandbox.fair_share.per_principal"),
            "{e:?}"
        );
        assert!(e.message.contains("its cap is 2"), "{e:?}");
        let _b = share.admit("t", "b", caps(2, 3)).unwrap();
        let e = share.admit("t", "c", caps(2, 3)).unwrap_err();
        assert!(e.message.contains("tenant t"), "{e:?}");
        assert!(share.admit("u", "c", caps(2, 3)).is_ok(), "another tenant");
        drop(a1);
        assert!(share.admit("t", "a", caps(2, 3)).is_ok());
    }

    #[tokio::test]
    async fn slots_go_to_the_principals_in_turn() {
        let slots = Arc::new(Semaphore::new(1));
        let share = Arc::new(FairShare::new(slots.clone()));
        let never = CancellationToken::new();
        // The one slot is taken; a queues five, then b one.
        let first = slots.clone().acquire_owned().await.unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for who in ["a", "a", "a", "a", "a", "b"] {
            let admitted = share.admit("t", who, caps(10, 10)).unwrap();
            let (mine, tx, never) = (share.clone(), tx.clone(), never.clone());
            tasks.push(tokio::spawn(async move {
                let slot = mine.slot(&admitted, &never).await.unwrap();
                tx.send(who).unwrap();
                drop(slot);
            }));
            // Each waiter is queued before the next comes.
            while share.waiting() < tasks.len() {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        let mut order = Vec::new();
        for _ in 0..6 {
            order.push(rx.recv().await.unwrap());
        }
        // Both start with no turns: a's first came first; then b, not after a's five.
        assert_eq!(order, ["a", "b", "a", "a", "a", "a"]);
    }

    #[tokio::test]
    async fn a_waiter_that_leaves_passes_the_turn_on() {
        let slots = Arc::new(Semaphore::new(1));
        let share = Arc::new(FairShare::new(slots.clone()));
        let first = slots.clone().acquire_owned().await.unwrap();
        let gone = CancellationToken::new();
        let a = share.admit("t", "a", caps(10, 10)).unwrap();
        let b = share.admit("t", "b", caps(10, 10)).unwrap();
        let (sa, ga) = (share.clone(), gone.clone());
        let waiting_a = tokio::spawn(async move { sa.slot(&a, &ga).await.map(drop) });
        while share.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        let sb = share.clone();
        let waiting_b =
            tokio::spawn(async move { sb.slot(&b, &CancellationToken::new()).await.map(drop) });
        while share.waiting() < 2 {
            tokio::task::yield_now().await;
        }
        gone.cancel();
        assert_eq!(waiting_a.await.unwrap(), Err(NoSlot::Cancelled));
        drop(first);
        assert_eq!(waiting_b.await.unwrap(), Ok(()));
        assert_eq!(share.waiting(), 0);
    }
}
