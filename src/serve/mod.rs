//! `seamcut serve`: chunking and embedding over HTTP, batched across requests.
//!
//! What it owns: the HTTP surface (routes, JSON shapes, limits, the API key, metrics) and
//! the queues that gather many clients' requests into one model pass. What it does not own:
//! any chunking or embedding decision. Chunkers come from [`ChunkerSpec::build`], vectors
//! from [`crate::embed`], chunks and their vectors from the library's batch path
//! ([`crate::pipeline::chunk_texts`]).
//!
//! ```text
//! client ─▶ hyper (header timeout) ─▶ metrics ─▶ API key ─▶ admission (429) ─▶ deadline (503)
//!   /v1/embeddings, /embed: body (413, 408) ─▶ tokenize ─▶ embed queue ─┐ batches of
//!   /v1/chunk: body ─▶ spec + overrides ─▶ lane (chunker + its queue) ─┤ ≤ --max-batch-tokens,
//!                                                                     └ on a blocking thread
//! ```
//!
//! Why this stack: axum on hyper and tokio is what text-embeddings-inference serves with, the
//! most used and best kept Rust HTTP stack; hyper-util's connection builder is used directly
//! (not `axum::serve`) for the two things `axum::serve` does not expose, the header read
//! timeout and a graceful shutdown that waits for requests in flight. tokio is built with
//! `rt-multi-thread`, `net`, `signal`, `sync` and `time` only; timeouts and limits are a few
//! lines each over tokio and http-body-util, so tower-http is not needed. The model runs on
//! blocking threads (through rayon), never on tokio's workers. `prometheus-client` (the
//! Prometheus project's own crate) writes `/metrics`; `subtle` compares keys in constant
//! time; `lru` bounds the chunker cache. All of it sits behind the `serve` cargo feature
//! (on by default; the Python wheel builds without it).

mod chunking;
mod config;
mod embedding;
mod error;
mod limits;
mod metrics;
mod queue;
mod routes;

use crate::embed::tuned::PromptChoice;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

pub use config::{Limits, ServeConfig};

use crate::embed::{EmbedOptions, Embedder};
use crate::{Error, Result};
use chunking::Lanes;
use embedding::{EmbedJob, EmbedOut};
use metrics::Metrics;
use queue::Queue;

/// The routes, as metrics label them (anything else is `other`).
pub(crate) const ROUTES: [&str; 9] = [
    "/health",
    "/info",
    "/metrics",
    "/v1/models",
    "/v1/embeddings",
    "/embed",
    "/embed_all",
    "/tokenize",
    "/v1/chunk",
];

/// What every handler shares.
pub(crate) struct AppState {
    pub config: ServeConfig,
    pub model: Arc<dyn Embedder>,
    pub chunker_description: String,
    pub embed_queue: Queue<EmbedJob, Result<EmbedOut>>,
    pub lanes: Lanes,
    pub metrics: Arc<Metrics>,
    pub admission: Arc<Semaphore>,
    pub key_digest: Option<[u8; 32]>,
    /// When the server started (Unix seconds): `/v1/models`' `created`.
    pub started: u64,
}

impl AppState {
    /// The name answers carry: the first served name, else the model as the spec names it.
    pub fn model_name(&self) -> &str {
        self.config.served_model_names.first().map_or(self.config.spec.model.as_str(), String::as_str)
    }

    /// What `GET /v1/models` lists: the served names, else the one [`Self::model_name`].
    pub fn model_names(&self) -> Vec<&str> {
        match self.config.served_model_names.as_slice() {
            [] => vec![self.config.spec.model.as_str()],
            names => names.iter().map(String::as_str).collect(),
        }
    }

    /// Whether a request's `model` names this server's model: one of the served names, or,
    /// where none was given, the model as the spec names it or its directory's name. Empty
    /// or absent means the served model.
    pub fn serves(&self, asked: &str) -> bool {
        if asked.is_empty() {
            return true;
        }
        let names = &self.config.served_model_names;
        if !names.is_empty() {
            return names.iter().any(|n| n == asked);
        }
        let served = self.config.spec.model.as_str();
        let base = std::path::Path::new(served.trim_end_matches('/')).file_name().and_then(|n| n.to_str());
        asked == served || Some(asked) == base
    }
}

/// Serve until SIGTERM or Ctrl-C, then stop accepting, finish the requests in flight and
/// return. The model and the server's chunker are loaded before the port is opened; the
/// address is printed on stderr (`seamcut: serving ... on http://ADDR`).
///
/// # Errors
/// A bad spec or model, an address that cannot be bound, an empty API key.
pub fn run(config: ServeConfig) -> Result<()> {
    if config.api_key.as_deref().is_some_and(str::is_empty) {
        return Err(Error::Config("the API key is empty".into()));
    }
    // The embedding routes' model, without a prompt or a cut: each request's (or the spec's)
    // are applied per request (routes.rs); the chunking lanes build theirs from the spec.
    let model = crate::models::ModelSpec {
        prompt: PromptChoice::Text(String::new()),
        dims: None,
        ..config.spec.model_spec()?
    }
    .load_for(crate::embed::tuned::Role::Plain)?;
    // Blocking threads run the tokenizing of requests and the batches' passes (whose heavy
    // work runs on rayon's pool): more of them than this would only add thread stacks and
    // allocator heaps under load (tokio's default allows 512).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(16)
        .thread_name("seamcut-serve")
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the runtime: {e}")))?;
    let result = rt.block_on(serve(config, model.embedder.clone()));
    // Work left running belongs to requests already answered (timed out, or their client
    // gone): it is not waited for long.
    rt.shutdown_timeout(Duration::from_secs(2));
    result
}

async fn serve(config: ServeConfig, model: Arc<dyn Embedder>) -> Result<()> {
    let metrics = Arc::new(Metrics::new());
    let lanes = Lanes::new(
        config.spec.clone(),
        config.long,
        config.max_batch_tokens,
        config.cached_chunkers,
        metrics.clone(),
    );
    // The server's own chunker, built now: a bad spec stops the server before it listens.
    let base = lanes.lane(config.spec.clone(), None).await?;
    let chunker_description = base.chunker.describe();
    let opts = EmbedOptions { batch_tokens: config.max_batch_tokens, long: config.long };
    let (m, mm) = (model.clone(), metrics.clone());
    let embed_queue = Queue::start(config.max_batch_tokens, metrics.queue("embed"), move |jobs| {
        embedding::run_batch(m.as_ref(), opts, &mm, jobs)
    });
    let listener = tokio::net::TcpListener::bind((config.host.as_str(), config.port))
        .await
        .map_err(|e| Error::Config(format!("cannot listen on {}:{}: {e}", config.host, config.port)))?;
    let addr = listener.local_addr().map_err(|e| Error::Internal(e.to_string()))?;
    let state = Arc::new(AppState {
        admission: Arc::new(Semaphore::new(config.limits.max_concurrent_requests.max(1))),
        key_digest: config.api_key.as_deref().map(limits::digest),
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        chunker_description,
        embed_queue,
        lanes,
        metrics,
        model,
        config,
    });
    if !addr.ip().is_loopback() && state.key_digest.is_none() {
        eprintln!(
            "seamcut: warning: listening on {} without an API key: anyone who can reach it can use it",
            addr.ip()
        );
    }
    eprintln!("seamcut: serving {} ({}) on http://{addr}", state.model_name(), state.chunker_description);
    accept(listener, router(state.clone()), state.config.limits.header_timeout).await;
    eprintln!("seamcut: stopped");
    Ok(())
}

/// The routes and their guards (see [`limits`]): `/health` needs no key; the work routes
/// pass admission and the deadline.
fn router(st: Arc<AppState>) -> Router {
    let work = Router::new()
        .route("/v1/embeddings", post(routes::openai_embeddings))
        .route("/embed", post(routes::tei_embed))
        .route("/embed_all", post(routes::tei_embed_all))
        .route("/tokenize", post(routes::tei_tokenize))
        .route("/v1/chunk", post(routes::chunk))
        .route_layer(from_fn_with_state(st.clone(), limits::deadline))
        .route_layer(from_fn_with_state(st.clone(), limits::admit));
    Router::new()
        .route("/info", get(routes::info))
        .route("/metrics", get(routes::metrics))
        .route("/v1/models", get(routes::models))
        .merge(work)
        .route_layer(from_fn_with_state(st.clone(), limits::auth))
        .route("/health", get(routes::health))
        .fallback(|| async { error::ApiError::not_found() })
        .method_not_allowed_fallback(|| async { error::ApiError::method_not_allowed() })
        .layer(from_fn_with_state(st.clone(), limits::record))
        .layer(axum::middleware::from_fn(error::tei_shape))
        .with_state(st)
}

/// Accept connections until a stop signal, then let each finish what it is answering.
async fn accept(listener: tokio::net::TcpListener, app: Router, header_timeout: Duration) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let mut stop = std::pin::pin!(stop_signal());
    loop {
        // The next connection or the stop signal, whichever comes first (polled by hand: tokio's
        // `select!` needs its `macros` feature and a proc-macro crate for this one race).
        let next = std::future::poll_fn(|cx| {
            if stop.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            listener.poll_accept(cx).map(Some)
        })
        .await;
        let tcp = match next {
            None => break,
            Some(Ok((tcp, _))) => tcp,
            Some(Err(e)) => {
                // Out of file descriptors, say: wait, and go on serving the others.
                eprintln!("seamcut: warning: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            let _ = conn.await; // a client's broken connection is its own business
        });
    }
    drop(listener);
    eprintln!("seamcut: stopping: no new connections; finishing the requests in flight");
    graceful.shutdown().await;
}

/// SIGTERM or Ctrl-C.
async fn stop_signal() {
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    std::future::poll_fn(|cx| {
        #[cfg(unix)]
        if let Some(t) = term.as_mut() {
            if t.poll_recv(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        ctrl_c.as_mut().poll(cx).map(|_| ())
    })
    .await;
}
