//! The way out for spans: the SDK's batch processor (its own thread, bounded queue) in front of
//! the OTLP/HTTP exporter, wrapped so that an execution never waits for a collector: a span that
//! finds the queue full is dropped and counted, a failed export is counted and logged at most
//! once a minute.

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a failing collector is logged at most.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// What happened to the spans handed over so far.
#[derive(Debug, Default)]
pub struct ExportStats {
    /// Spans waiting in the processor's queue or in an export under way.
    pub queued: AtomicUsize,
    pub exported: AtomicU64,
    pub failed: AtomicU64,
    pub dropped: AtomicU64,
    /// Failed exports and a full queue are logged apart, each at most once per [`LOG_EVERY`]:
    /// a full queue (the first sign of a collector that is down) must not hide why exports fail.
    export_log: Limiter,
    full_log: Limiter,
    /// Why the last export failed (a refused connection, say), for the full queue's line.
    last_error: Mutex<Option<String>>,
}

/// At most one log line per [`LOG_EVERY`], with how many spans since the last one.
#[derive(Debug, Default)]
struct Limiter {
    last: Mutex<Option<Instant>>,
    unlogged: AtomicU64,
}

impl Limiter {
    /// The spans to report when a line is due now (counting `spans`), else `None`.
    fn due(&self, spans: usize) -> Option<u64> {
        let count = self.unlogged.fetch_add(spans as u64, Ordering::Relaxed) + spans as u64;
        let mut last = self.last.lock().ok()?;
        if last.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            return None;
        }
        *last = Some(Instant::now());
        self.unlogged.store(0, Ordering::Relaxed);
        Some(count)
    }
}

impl ExportStats {
    /// An export of `spans` failed (`why`): logged at most once per [`LOG_EVERY`] (with how
    /// many failed since the last line). Returns the line when it was logged.
    fn export_failed(&self, why: &str, spans: usize) -> Option<String> {
        if let Ok(mut last) = self.last_error.lock() {
            *last = Some(why.to_string());
        }
        let count = self.export_log.due(spans)?;
        let line = format!(
            "OpenTelemetry export of {count} spans failed ({why}); spans are dropped, executions are not affected. Check sandbox.telemetry.endpoint / OTEL_EXPORTER_OTLP_ENDPOINT (logged at most once a minute)"
        );
        tracing::warn!("{line}");
        Some(line)
    }

    /// A span found the queue full: logged at most once per [`LOG_EVERY`], with why the last
    /// export failed when one did. Returns the line when it was logged.
    fn queue_full(&self) -> Option<String> {
        let count = self.full_log.due(1)?;
        let cause = match self.last_error.lock().ok().and_then(|e| e.clone()) {
            Some(e) => format!("the last export failed: {e}"),
            None => "no export has failed yet: the collector is slow or the first export is still under way".to_string(),
        };
        let line = format!(
            "OpenTelemetry export queue is full; {count} spans dropped ({cause}); executions are not affected. Check sandbox.telemetry.endpoint / OTEL_EXPORTER_OTLP_ENDPOINT (logged at most once a minute)"
        );
        tracing::warn!("{line}");
        Some(line)
    }
}

/// The exporter, counting what it sent and what failed.
#[derive(Debug)]
pub struct CountingExporter<E> {
    inner: E,
    stats: Arc<ExportStats>,
}

impl<E: SpanExporter> SpanExporter for CountingExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        self.stats.queued.fetch_sub(n, Ordering::Relaxed);
        match &result {
            Ok(()) => {
                self.stats.exported.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) => {
                self.stats.failed.fetch_add(n as u64, Ordering::Relaxed);
                self.stats.export_failed(&e.to_string(), n);
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The batch processor with its own bound checked first, so a full queue is counted here.
pub struct Counted {
    processor: BatchSpanProcessor,
    max_queue: usize,
    pub stats: Arc<ExportStats>,
}

impl Counted {
    pub fn new<E: SpanExporter + 'static>(
        exporter: E,
        resource: &Resource,
        max_queue: usize,
    ) -> Self {
        let stats = Arc::new(ExportStats::default());
        let mut exporter = CountingExporter {
            inner: exporter,
            stats: stats.clone(),
        };
        exporter.set_resource(resource);
        let config = opentelemetry_sdk::trace::BatchConfigBuilder::default()
            .with_max_queue_size(max_queue)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(config)
            .build();
        Counted {
            processor,
            max_queue,
            stats,
        }
    }

    /// Queues a span for export, or drops and counts it when the queue is full.
    pub fn offer(&self, span: SpanData) {
        let before = self.stats.queued.fetch_add(1, Ordering::Relaxed);
        if before >= self.max_queue {
            self.stats.queued.fetch_sub(1, Ordering::Relaxed);
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            self.stats.queue_full();
            return;
        }
        self.processor.on_end(span);
    }

    /// Exports what is queued (at shutdown), waiting at most the processor's export timeout.
    pub fn flush(&self) {
        let _ = self.processor.force_flush();
    }

    pub fn shutdown(&self) {
        let _ = self.processor.shutdown_with_timeout(Duration::from_secs(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full queue (logged first, as it is when the collector is down) does not keep the
    /// failed export's reason out of the log, and names it itself once known.
    #[test]
    fn a_full_queue_does_not_hide_why_exports_fail() {
        let stats = ExportStats::default();
        let first = stats.queue_full().expect("the first full queue is logged");
        assert!(first.contains("no export has failed yet"), "{first}");
        assert_eq!(stats.queue_full(), None, "once a minute");
        let refused = "connection refused (os error 111)";
        let failed = stats
            .export_failed(refused, 512)
            .expect("logged although the full queue was just logged");
        assert!(failed.contains(refused), "{failed}");
        assert_eq!(stats.export_failed(refused, 1), None, "once a minute");
        let later = ExportStats::default();
        later.export_failed(refused, 1);
        let full = later.queue_full().expect("logged");
        assert!(
            full.contains(&format!("the last export failed: {refused}")),
            "{full}"
        );
    }
}
