//! Progress and log messages a server sends before an answer reach the execution before it.
//!
//! rmcp hands each notification to the client handler on a task of its own, spawned before
//! the answer that follows it is delivered; nothing makes those tasks run before the caller
//! resumes. The transport sees every message in order, so it counts the notifications the
//! handler acts on ([`Counted`]), the handler counts those it has acted on, and a call that got
//! its answer waits ([`NotificationOrder::caught_up`]) until every notification that arrived
//! before it is handled. A server that sends none costs nothing: no yield, no timer (an earlier
//! version yielded four times per call, ~20 µs of a stdio call on the benchmark machine).

use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Most yields a caller spends waiting for handlers before it goes on (a handler that never
/// runs must not stall calls).
const MAX_YIELDS: u32 = 64;

/// Notifications of one connection: received by the transport vs acted on by the handler.
#[derive(Debug, Default)]
pub struct NotificationOrder {
    received: AtomicU64,
    handled: AtomicU64,
}

impl NotificationOrder {
    /// Whether the client handler acts on this notification (and so counts it as handled).
    fn counts(n: &ServerNotification) -> bool {
        matches!(
            n,
            ServerNotification::ProgressNotification(_)
                | ServerNotification::LoggingMessageNotification(_)
                | ServerNotification::ToolListChangedNotification(_)
        )
    }

    /// Called by the handler once it has acted on a counted notification.
    pub fn handled(&self) {
        self.handled.fetch_add(1, Ordering::AcqRel);
    }

    /// Returns once every counted notification received so far has been handled (or after
    /// [`MAX_YIELDS`] yields, when the counts are made equal so one lost notification does not
    /// slow every later call).
    pub async fn caught_up(&self) {
        let target = self.received.load(Ordering::Acquire);
        let mut yields = 0;
        while self.handled.load(Ordering::Acquire) < target {
            if yields == MAX_YIELDS {
                tracing::debug!(
                    target,
                    "notification handlers did not catch up; going on without them"
                );
                self.handled.fetch_max(target, Ordering::AcqRel);
                return;
            }
            yields += 1;
            tokio::task::yield_now().await;
        }
    }
}

/// A client transport that counts the notifications it receives in a [`NotificationOrder`].
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
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &message {
            if NotificationOrder::counts(&n.notification) {
                self.order.received.fetch_add(1, Ordering::AcqRel);
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

    #[tokio::test]
    async fn waits_for_handlers_of_notifications_received_before() {
        let order = Arc::new(NotificationOrder::default());
        order.received.store(2, Ordering::Release);
        let o = order.clone();
        let handler = tokio::spawn(async move {
            o.handled();
            tokio::task::yield_now().await;
            o.handled();
        });
        order.caught_up().await;
        assert_eq!(order.handled.load(Ordering::Acquire), 2);
        handler.await.unwrap();
    }

    #[tokio::test]
    async fn a_handler_that_never_runs_does_not_stall_calls() {
        let order = NotificationOrder::default();
        order.received.store(1, Ordering::Release);
        order.caught_up().await;
        // Resynchronised: the next call does not wait again.
        assert_eq!(order.handled.load(Ordering::Acquire), 1);
    }
}
