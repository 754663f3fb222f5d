//! The server's Prometheus metrics (`GET /metrics`, OpenMetrics text): requests by route and
//! status, latency by route, requests admitted and not yet answered, jobs waiting per queue, batch sizes in requests, sequences and
//! tokens, jobs dropped because their client left, and the tokens embedded with the seconds
//! the model took (their ratio is tokens per second; the last batch's rate is a gauge).
//!
//! Mean requests per embedding batch: `seamcut_batch_requests_sum{queue="embed"} /
//! seamcut_batch_requests_count{queue="embed"}`.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::queue::QueueMetrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteStatus {
    pub route: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteLabel {
    pub route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct QueueLabel {
    pub queue: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every metric, registered once.
pub(crate) struct Metrics {
    registry: Registry,
    pub requests: Family<RouteStatus, Counter>,
    pub latency: Histograms<RouteLabel>,
    depth: Family<QueueLabel, Gauge>,
    batch_requests: Histograms<QueueLabel>,
    pub batch_sequences: Histograms<QueueLabel>,
    pub batch_tokens: Histograms<QueueLabel>,
    dropped: Family<QueueLabel, Counter>,
    /// Requests admitted and not yet answered (waiting, batched or running).
    pub in_flight: Gauge,
    pub tokens: Counter,
    pub model_seconds: Counter<f64, AtomicU64>,
    pub tokens_per_second: Gauge<f64, AtomicU64>,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("seamcut");
        let requests = Family::<RouteStatus, Counter>::default();
        // 1 ms to about 65 s.
        let latency: Histograms<RouteLabel> =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.001, 2.0, 17)));
        let depth = Family::<QueueLabel, Gauge>::default();
        let counts = || Histogram::new(exponential_buckets(1.0, 2.0, 12)); // 1 .. 2048
        let batch_requests: Histograms<QueueLabel> = Family::new_with_constructor(counts);
        let batch_sequences: Histograms<QueueLabel> = Family::new_with_constructor(counts);
        let batch_tokens: Histograms<QueueLabel> =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(16.0, 2.0, 16)));
        let dropped = Family::<QueueLabel, Counter>::default();
        let in_flight = Gauge::default();
        let tokens = Counter::default();
        let model_seconds = Counter::<f64, AtomicU64>::default();
        let tokens_per_second = Gauge::<f64, AtomicU64>::default();
        registry.register("requests", "HTTP requests by route and status", requests.clone());
        registry.register("request_duration_seconds", "Time to answer, by route", latency.clone());
        registry.register("requests_in_flight", "Requests admitted and not yet answered", in_flight.clone());
        registry.register("queue_depth", "Jobs waiting for a batch", depth.clone());
        registry.register("batch_requests", "Requests per batch", batch_requests.clone());
        registry.register("batch_sequences", "Texts per embedding batch", batch_sequences.clone());
        registry.register("batch_tokens", "Tokens per embedding batch", batch_tokens.clone());
        registry.register("dropped_jobs", "Jobs dropped unrun because their client left", dropped.clone());
        registry.register("embedded_tokens", "Tokens embedded (special tokens included)", tokens.clone());
        registry.register("model_seconds", "Seconds spent in embedding batches", model_seconds.clone());
        registry.register(
            "tokens_per_second",
            "Tokens per second of the last embedding batch",
            tokens_per_second.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            depth,
            batch_requests,
            batch_sequences,
            batch_tokens,
            dropped,
            in_flight,
            tokens,
            model_seconds,
            tokens_per_second,
        }
    }

    /// The handles a queue reports through.
    pub fn queue(&self, queue: &'static str) -> QueueMetrics {
        let l = QueueLabel { queue };
        QueueMetrics {
            depth: self.depth.get_or_create_owned(&l),
            batch_requests: self.batch_requests.get_or_create_owned(&l),
            dropped: self.dropped.get_or_create_owned(&l),
        }
    }

    /// One embedding pass: sequences, tokens and seconds.
    pub fn embedded(&self, queue: &'static str, sequences: usize, tokens: usize, seconds: f64) {
        let l = QueueLabel { queue };
        self.batch_sequences.get_or_create(&l).observe(sequences as f64);
        self.batch_tokens.get_or_create(&l).observe(tokens as f64);
        self.tokens.inc_by(tokens as u64);
        self.model_seconds.inc_by(seconds);
        if seconds > 0.0 {
            self.tokens_per_second.set(tokens as f64 / seconds);
        }
    }

    /// The OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
