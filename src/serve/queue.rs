//! The batching queue: requests from many clients in, one batch of work at a time out, as
//! text-embeddings-inference's router does it (`Queue::append`, `next_batch`).
//!
//! A handler [`Queue::submit`]s a job with its cost (tokens) and awaits its answer. One task
//! per queue waits for work, then takes every job waiting, in arrival order, while their
//! costs fit the budget (the first always goes, whatever its cost), and runs the batch on a
//! blocking thread (the encoder is CPU-heavy; tokio's workers keep serving). While a batch
//! runs, new jobs wait and form the next one, so under load each pass holds many requests.
//! A job whose handler is gone (the client disconnected, or its time ran out) is dropped
//! when the batcher reaches it, unrun. The channel is unbounded: the server's admission
//! limit (`max_concurrent_requests`, 429 past it) bounds what can wait in it.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::{mpsc, oneshot};

/// Where a queue reports: jobs waiting, requests per batch, jobs dropped unrun.
#[derive(Clone)]
pub(crate) struct QueueMetrics {
    pub depth: Gauge,
    pub batch_requests: Histogram,
    pub dropped: Counter,
}

struct Entry<J, R> {
    job: J,
    cost: usize,
    reply: oneshot::Sender<R>,
}

/// A queue of jobs `J` answered with `R`, batched by cost.
pub(crate) struct Queue<J, R> {
    tx: mpsc::UnboundedSender<Entry<J, R>>,
    depth: Gauge,
}

impl<J: Send + 'static, R: Send + 'static> Queue<J, R> {
    /// Start the queue's batching task on the current tokio runtime. `work` gets a batch of
    /// jobs and returns one answer per job, in order (fewer: the rest are answered as lost).
    pub fn start<F>(budget: usize, metrics: QueueMetrics, work: F) -> Self
    where
        F: Fn(Vec<J>) -> Vec<R> + Send + Sync + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        let depth = metrics.depth.clone();
        tokio::spawn(batcher(rx, budget.max(1), metrics, Arc::new(work)));
        Self { tx, depth }
    }

    /// Queue a job and wait for its answer; `None` if it was lost (the work panicked, or the
    /// queue is shutting down). Dropping the future before the answer drops the job unrun
    /// if its batch has not started.
    pub async fn submit(&self, job: J, cost: usize) -> Option<R> {
        let (reply, rx) = oneshot::channel();
        self.depth.inc();
        if self.tx.send(Entry { job, cost, reply }).is_err() {
            self.depth.dec();
            return None;
        }
        rx.await.ok()
    }
}

async fn batcher<J, R, F>(
    mut rx: mpsc::UnboundedReceiver<Entry<J, R>>,
    budget: usize,
    m: QueueMetrics,
    work: Arc<F>,
) where
    J: Send + 'static,
    R: Send + 'static,
    F: Fn(Vec<J>) -> Vec<R> + Send + Sync + 'static,
{
    // A job that did not fit the last batch: the head of the next one.
    let mut next: Option<Entry<J, R>> = None;
    loop {
        let head = match next.take() {
            Some(e) => e,
            None => match rx.recv().await {
                Some(e) => e,
                None => return, // every sender is gone: the server is done with this queue
            },
        };
        let mut batch: Vec<Entry<J, R>> = Vec::new();
        let mut cost = 0usize;
        let mut candidate = Some(head);
        while let Some(e) = candidate.take().or_else(|| rx.try_recv().ok()) {
            if e.reply.is_closed() {
                m.depth.dec();
                m.dropped.inc();
                continue;
            }
            if !batch.is_empty() && cost.saturating_add(e.cost) > budget {
                next = Some(e);
                break;
            }
            m.depth.dec();
            cost = cost.saturating_add(e.cost);
            batch.push(e);
            if cost >= budget {
                break;
            }
        }
        if batch.is_empty() {
            continue;
        }
        m.batch_requests.observe(batch.len() as f64);
        let (jobs, replies): (Vec<J>, Vec<oneshot::Sender<R>>) =
            batch.into_iter().map(|e| (e.job, e.reply)).unzip();
        let w = work.clone();
        // A panic in `work` drops the replies: each handler answers 500, the queue goes on.
        if let Ok(answers) = tokio::task::spawn_blocking(move || w(jobs)).await {
            for (answer, reply) in answers.into_iter().zip(replies) {
                let _ = reply.send(answer); // a client gone meanwhile: nobody to tell
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc as std_mpsc;
    use std::sync::Mutex;

    use super::*;

    fn metrics() -> QueueMetrics {
        QueueMetrics {
            depth: Gauge::default(),
            batch_requests: Histogram::new([1.0, 2.0, 4.0]),
            dropped: Counter::default(),
        }
    }

    /// A queue, the batches its work saw, the work's "started" signal, and the go it waits
    /// for in its first batch.
    struct Gated {
        q: Queue<u32, u32>,
        seen: Arc<Mutex<Vec<Vec<u32>>>>,
        started: std_mpsc::Receiver<()>,
        go: std_mpsc::Sender<()>,
    }

    /// A queue whose work records each batch and, for the first batch only, waits for a go.
    fn gated(budget: usize, m: QueueMetrics) -> Gated {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (started_tx, started) = std_mpsc::channel();
        let (go, go_rx) = std_mpsc::channel::<()>();
        let go_rx = Mutex::new(Some(go_rx));
        let s = seen.clone();
        let q = Queue::start(budget, m, move |jobs: Vec<u32>| {
            if let Some(rx) = go_rx.lock().unwrap().take() {
                started_tx.send(()).unwrap();
                rx.recv().unwrap();
            }
            s.lock().unwrap().push(jobs.clone());
            jobs.iter().map(|j| j * 10).collect()
        });
        Gated { q, seen, started, go }
    }

    async fn until(cond: impl Fn() -> bool) {
        while !cond() {
            tokio::task::yield_now().await;
        }
    }

    #[test]
    fn jobs_waiting_during_a_batch_form_the_next_batches_within_the_budget() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        rt.block_on(async {
            let m = metrics();
            let Gated { q, seen, started, go } = gated(2, m.clone());
            let q = Arc::new(q);
            let first = tokio::spawn({
                let q = q.clone();
                async move { q.submit(1, 1).await }
            });
            tokio::task::spawn_blocking(move || started.recv().unwrap()).await.unwrap();
            let mut rest = Vec::new();
            for j in 2..=4u32 {
                let q = q.clone();
                rest.push(tokio::spawn(async move { q.submit(j, 1).await }));
                // Arrival order is submission order.
                until(|| m.depth.get() == i64::from(j) - 1).await;
            }
            go.send(()).unwrap();
            assert_eq!(first.await.unwrap(), Some(10));
            let answers: Vec<Option<u32>> = futures_join(rest).await;
            assert_eq!(answers, vec![Some(20), Some(30), Some(40)]);
            assert_eq!(*seen.lock().unwrap(), vec![vec![1], vec![2, 3], vec![4]]);
            assert_eq!(m.depth.get(), 0);
        });
    }

    #[test]
    fn a_job_whose_client_left_is_dropped_unrun_and_an_oversized_job_runs_alone() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        rt.block_on(async {
            let m = metrics();
            let Gated { q, seen, started, go } = gated(4, m.clone());
            let q = Arc::new(q);
            let first = tokio::spawn({
                let q = q.clone();
                async move { q.submit(1, 1).await }
            });
            tokio::task::spawn_blocking(move || started.recv().unwrap()).await.unwrap();
            let gone = tokio::spawn({
                let q = q.clone();
                async move { q.submit(2, 1).await }
            });
            until(|| m.depth.get() == 1).await;
            gone.abort(); // the client disconnects while its job waits
            let _ = gone.await;
            let big = tokio::spawn({
                let q = q.clone();
                async move { q.submit(3, 100).await }
            });
            until(|| m.depth.get() == 2).await;
            go.send(()).unwrap();
            assert_eq!(first.await.unwrap(), Some(10));
            assert_eq!(big.await.unwrap(), Some(30));
            assert_eq!(*seen.lock().unwrap(), vec![vec![1], vec![3]]);
            assert_eq!(m.dropped.get(), 1);
            assert_eq!(m.depth.get(), 0);
        });
    }

    #[test]
    fn a_panicking_batch_loses_its_jobs_and_the_queue_goes_on() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        rt.block_on(async {
            let q = Queue::start(8, metrics(), |jobs: Vec<u32>| {
                assert!(!jobs.contains(&13), "unlucky");
                jobs
            });
            assert_eq!(q.submit(13, 1).await, None);
            assert_eq!(q.submit(7, 1).await, Some(7));
        });
    }

    async fn futures_join<T: Send + 'static>(hs: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
        let mut out = Vec::new();
        for h in hs {
            out.push(h.await.unwrap());
        }
        out
    }
}
