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
    last_log: Mutex<Option<Instant>>,
    unlogged: AtomicU64,
}

impl ExportStats {
    /// Logs a failure, at most once per [`LOG_EVERY`] (with how many failed since the last log).
    fn failure(&self, what: &str, spans: usize) {
        let count = self.unlogged.fetch_add(spans as u64, Ordering::Relaxed) + spans as u64;
        let Ok(mut last) = self.last_log.lock() else {
            return;
        };
        if last.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            return;
        }
        *last = Some(Instant::now());
        self.unlogged.store(0, Ordering::Relaxed);
        tracing::warn!(
            spans = count,
            "OpenTelemetry export failed ({what}); spans are dropped, executions are not affected. Check sandbox.telemetry.endpoint / OTEL_EXPORTER_OTLP_ENDPOINT (logged at most once a minute)"
        );
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
                self.stats.failure(&e.to_string(), n);
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
            let dropped = self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            if dropped == 0 {
                self.stats.failure("the export queue is full", 1);
            }
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
