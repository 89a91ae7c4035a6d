//! Progress and log messages a server sends reach the execution in the order it sent them, and
//! before the answer that follows them.
//!
//! rmcp hands each notification to the client handler on a task of its own: on a multi-threaded
//! runtime two of them can run at once (measured: a server's log lines 5 and 6 arrived as 6, 5),
//! and nothing makes them run before the caller of the answer that followed resumes. The
//! transport sees every message in order, so [`Counted`] numbers the notifications the handler
//! acts on (the number travels in the notification's extensions); the handler acts on number
//! `n` only after `n - 1` ([`NotificationOrder::in_turn`]); and a call that got its answer waits
//! until every notification that arrived before it is handled ([`NotificationOrder::caught_up`]).
//! A server that sends none costs nothing: no wait, no timer (an earlier version yielded four
//! times per call, ~20 µs of a stdio call on the benchmark machine, and did not keep the order).

use rmcp::model::{Extensions, GetExtensions, JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Longest a handler waits for the one before it, or a caller for the handlers (a notification
/// rmcp never hands over must not stall the connection).
const MAX_WAIT: Duration = Duration::from_millis(200);

/// The position of a notification in its connection's stream of counted notifications.
#[derive(Debug, Clone, Copy)]
struct Seq(u64);

/// Notifications of one connection: numbered by the transport, handled in that order.
#[derive(Debug)]
pub struct NotificationOrder {
    /// Counted notifications received so far (the next one's number).
    received: AtomicU64,
    /// Counted notifications handled so far, in order.
    handled: watch::Sender<u64>,
}

impl Default for NotificationOrder {
    fn default() -> Self {
        NotificationOrder {
            received: AtomicU64::new(0),
            handled: watch::channel(0).0,
        }
    }
}

impl NotificationOrder {
    /// Whether the client handler acts on this notification (and so takes its turn).
    fn counts(n: &ServerNotification) -> bool {
        matches!(
            n,
            ServerNotification::ProgressNotification(_)
                | ServerNotification::LoggingMessageNotification(_)
                | ServerNotification::ToolListChangedNotification(_)
        )
    }

    /// Runs `act` for the notification whose extensions are `ext` once every earlier counted
    /// notification is handled, then marks it handled. A notification without a number (not
    /// from a [`Counted`] transport) is acted on at once.
    pub async fn in_turn<T>(&self, ext: &Extensions, act: impl FnOnce() -> T) -> T {
        let Some(Seq(n)) = ext.get::<Seq>().copied() else {
            return act();
        };
        if *self.handled.borrow() < n {
            let mut rx = self.handled.subscribe();
            if tokio::time::timeout(MAX_WAIT, rx.wait_for(|h| *h >= n))
                .await
                .is_err()
            {
                tracing::debug!(n, "an earlier notification was not handled; going on");
            }
        }
        let out = act();
        self.handled.send_modify(|h| *h = (*h).max(n + 1));
        out
    }

    /// Returns once every counted notification received so far has been handled (or after
    /// [`MAX_WAIT`], when the count is moved up so one lost notification does not slow every
    /// later call).
    pub async fn caught_up(&self) {
        let target = self.received.load(Ordering::Acquire);
        if *self.handled.borrow() >= target {
            return;
        }
        let mut rx = self.handled.subscribe();
        if tokio::time::timeout(MAX_WAIT, rx.wait_for(|h| *h >= target))
            .await
            .is_err()
        {
            tracing::debug!(
                target,
                "notification handlers did not catch up; going on without them"
            );
            self.handled.send_modify(|h| *h = (*h).max(target));
        }
    }
}

/// A client transport that numbers the notifications it receives for a [`NotificationOrder`].
pub struct Counted<T> {
    inner: T,
    order: Arc<NotificationOrder>,
}

impl<T> Counted<T> {
    pub fn new(inner: T, order: Arc<NotificationOrder>) -> Self {
        Counted { inner, order }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Counted<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &mut message {
            if NotificationOrder::counts(&n.notification) {
                let seq = self.order.received.fetch_add(1, Ordering::AcqRel);
                n.notification.extensions_mut().insert(Seq(seq));
            }
        }
        message
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: u64) -> Extensions {
        let mut e = Extensions::new();
        e.insert(Seq(n));
        e
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn handlers_act_in_the_order_the_transport_numbered_them() {
        let order = Arc::new(NotificationOrder::default());
        order.received.store(3, Ordering::Release);
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        // Started last-first: each waits for the one before it.
        let tasks: Vec<_> = (0..3u64)
            .rev()
            .map(|n| {
                let (order, seen) = (order.clone(), seen.clone());
                tokio::spawn(async move {
                    order
                        .in_turn(&numbered(n), || seen.lock().unwrap().push(n))
                        .await
                })
            })
            .collect();
        order.caught_up().await;
        assert_eq!(*seen.lock().unwrap(), vec![0, 1, 2]);
        for t in tasks {
            t.await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_notification_that_is_never_handled_does_not_stall_the_connection() {
        let order = NotificationOrder::default();
        order.received.store(2, Ordering::Release);
        // Number 0 never comes: number 1 waits its bounded turn, then acts.
        let acted = order.in_turn(&numbered(1), || true).await;
        assert!(acted);
        order.caught_up().await;
        assert_eq!(*order.handled.borrow(), 2);
        // Nothing left to wait for.
        let t = std::time::Instant::now();
        order.caught_up().await;
        assert!(t.elapsed() < MAX_WAIT);
    }
}
