//! Late pooling ("late chunking", Günther et al. 2024): each span of a document (a chunker's
//! units or chunks) gets the mean of its tokens' final hidden states from an encoder run over
//! the whole document, so its vector carries what the rest of the document says.
//!
//! In: documents ([`LateDoc`]: a text and byte spans, ascending and not overlapping, usually
//! the contiguous covering spans of a chunker) and [`LateOptions`]. Out: per span, the sum of
//! its tokens' states and their count ([`LateVectors`]), from which a span's vector, or the
//! vector of a run of spans (a chunk made of units), is the L2-normalised mean
//! ([`LateVectors::aggregate`]) without another encoder pass.
//!
//! Split like [`super::prepare`] / [`super::run`]:
//! - [`prepare`] (CPU): tokenize each document whole with byte offsets; cut its content tokens
//!   (no special tokens) into windows of `window` tokens every `stride` tokens, the last window
//!   being the first that reaches the end; give each window the model's special tokens; give
//!   each token to the window where it sits most centrally (smallest distance to the window's
//!   centre, the earlier window on a tie) and to the span that holds its first byte
//!   ([`crate::wordpiece::TextTokenizer::ids_and_starts`]); plan the windows of all documents
//!   into token-budget batches ([`super::batch::plan`]).
//! - [`run_tensor`] (device): per batch, [`Embedder::token_states_rows`] of the rows it pools, then
//!   [`crate::kernels::pool_spans`] sums each run of tokens a window gives one span; then the
//!   runs of each span, in document order. Token states never leave the model's device; the
//!   span sums stay there too ([`LateTensor`]) until [`LateTensor::to_host`] ([`run`]).
//!
//! Rules: special tokens are never pooled, nor a prompt's tokens ([`Embedder::prompt`]: they
//! are in the first window, as context). A token whose first byte lies in no span (a gap
//! between spans) is not pooled. A span with no tokens (whitespace only) gets a zero vector.
//! Every model is mean-pooled here, CLS-pooled ones included, as jina's late chunking does: a
//! span has no CLS token of its own, and the state of the window's `[CLS]` describes the window,
//! not the span. A static model's token states are its rows, so its late vectors are its
//! ordinary vectors of each span's tokens.
//!
//! A span's vector does not depend on the other documents, the batch budget or the thread
//! count beyond float rounding: each token's state is taken from one window chosen by position
//! alone, and sums are formed per (window, span) run, then per span in document order.

use std::ops::Range;

use candle_core::{DType, Tensor};
use rayon::prelude::*;

use super::{batch, normalize, EmbedStats, Embedder, Embeddings, FlatBatch};
use crate::span::Span;
use crate::{Error, Result};

/// Content tokens per window when neither the catalog nor the model says otherwise (with
/// the special tokens, a 256-token sequence), every half window: issue 22's probe found
/// all-MiniLM-L6-v2 helped by 256-token windows and hurt by 510-token ones, as models degrade
/// past the length they were trained on. On the 24-text benchmark's dev split (MiniLM, cap
/// 256), windows without overlap (each token encoded once, twice as fast) cost 2.3 points of
/// DCG@10 against 254/127, a stride of 222 cost 2.0, and 190 cost 0.3 and 1.9 of span recall
/// (`benches/RESULTS.md`, "What the late windows' overlap buys").
pub const FALLBACK_WINDOW: usize = 254;

/// A model whose window holds at least this many tokens was trained for long inputs
/// (ModernBERT, NomicBERT, GTE v1.5, Qwen3-Embedding: 8,192 and more): its late pass reads
/// macro windows of up to [`LONG_WINDOW`] tokens, [`LONG_OVERLAP`] apart from the next, as
/// the late-chunking paper's code does (`_embed_with_overlap`, `long_late_chunking_embed_size`
/// 8,192 and `_overlap_size` 256). These are the paper's values, not measured here: no such
/// model's real weights could be run (benches/RESULTS.md).
pub const LONG_CONTEXT: usize = 2048;
/// A long-context model's late window, special tokens included.
pub const LONG_WINDOW: usize = 8192;
/// Tokens consecutive late windows of a long-context model share.
pub const LONG_OVERLAP: usize = 256;

/// Windowing and batching of the late pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LateOptions {
    /// Content tokens per window (special tokens not counted).
    pub window: usize,
    /// Tokens from one window's start to the next (`1 ..= window`; `window` for no overlap).
    pub stride: usize,
    /// Padded tokens per batch (sequences × longest sequence), as [`super::EmbedOptions`].
    pub batch_tokens: usize,
    /// Where windows are placed: on a fixed grid, or around each span.
    pub placement: Placement,
}

/// Where the late pass's windows are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Windows `stride` tokens apart from the document's start; each token pooled from the
    /// window where it sits most centrally ([`central_windows`]). A span near a window's edge
    /// may get context from one side only.
    #[default]
    Grid,
    /// Windows placed around the spans ([`centred_windows`]): consecutive spans that fit in
    /// half a window together share one window centred on them, so each has at least a
    /// quarter window of context on each side where the document has it; a span longer than
    /// half the window gets a window centred on itself; one longer than the window keeps the
    /// grid.
    Centred,
}

/// How a summary line names the windows: "126 tokens every 63", or where they are centred on
/// the spans, "126 tokens centred on the spans (every 63 across longer ones)".
impl std::fmt::Display for LateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.placement {
            Placement::Grid => write!(f, "{} tokens every {}", self.window, self.stride),
            Placement::Centred => write!(
                f,
                "{} tokens centred on the spans (every {} across longer ones)",
                self.window, self.stride
            ),
        }
    }
}

impl LateOptions {
    /// The model's own defaults ([`Embedder::late_window`]); for a long-context model
    /// ([`LONG_CONTEXT`]) windows of up to [`LONG_WINDOW`] tokens overlapping by
    /// [`LONG_OVERLAP`]; else a window of [`FALLBACK_WINDOW`] tokens (less where the model takes
    /// fewer) every half window. The catalog's measured values, where it has them, come
    /// through [`crate::models::Model::late_options`].
    #[must_use]
    pub fn for_model(model: &dyn Embedder) -> Self {
        let (window, stride) = model.late_window().unwrap_or_else(|| match content_limit(model) {
            Some(m) if model.max_tokens().is_some_and(|t| t >= LONG_CONTEXT) => {
                let (pre, post) = model.special_ids();
                let w = m.min(LONG_WINDOW - pre.len() - post.len());
                (w, w - LONG_OVERLAP)
            }
            limit => {
                let w = limit.map_or(FALLBACK_WINDOW, |m| m.min(FALLBACK_WINDOW));
                (w, w.div_ceil(2))
            }
        });
        Self {
            window,
            stride,
            batch_tokens: super::EmbedOptions::default().batch_tokens,
            placement: Placement::default(),
        }
    }

    /// This, with windows placed as `placement` says.
    #[must_use]
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// This, with `window` content tokens per window.
    #[must_use]
    pub fn with_window(mut self, window: usize) -> Self {
        self.window = window;
        self
    }

    /// This, with windows `stride` tokens apart.
    #[must_use]
    pub fn with_stride(mut self, stride: usize) -> Self {
        self.stride = stride;
        self
    }

    /// This, with a budget of `batch_tokens` padded tokens per batch.
    #[must_use]
    pub fn with_batch_tokens(mut self, batch_tokens: usize) -> Self {
        self.batch_tokens = batch_tokens;
        self
    }

    /// Check the options against `model`.
    ///
    /// # Errors
    /// One line: a window of 0 tokens, a stride of 0 or longer than the window, a window longer
    /// than the model takes (its maximum less its special tokens), a batch budget of 0.
    pub fn validate(&self, model: &dyn Embedder) -> Result<()> {
        if self.window == 0 {
            return Err(Error::setting("late_window", "must be at least 1 token"));
        }
        if self.stride == 0 || self.stride > self.window {
            return Err(Error::setting(
                "late_stride",
                format!("must be between 1 and the window ({} tokens), not {}", self.window, self.stride),
            ));
        }
        if let Some(max) = content_limit(model) {
            if self.window > max {
                let (pre, post) = model.special_ids();
                return Err(Error::setting(
                    "late_window",
                    format!(
                        "{} tokens is longer than the model takes: {max} ({} less {} special tokens)",
                        self.window,
                        max + pre.len() + post.len(),
                        pre.len() + post.len()
                    ),
                ));
            }
        }
        if self.batch_tokens == 0 {
            return Err(Error::Config("the late pass's batch budget must be at least 1 token".into()));
        }
        Ok(())
    }
}

/// Content tokens a sequence of `model` can hold: its maximum less its special tokens.
fn content_limit(model: &dyn Embedder) -> Option<usize> {
    let (pre, post) = model.special_ids();
    model.max_tokens().map(|m| m.saturating_sub(pre.len() + post.len()).max(1))
}

/// One document of the late pass: its text and the byte spans to pool (ascending, not
/// overlapping, within the text; usually contiguous and covering it).
#[derive(Debug, Clone, Copy)]
pub struct LateDoc<'a> {
    pub text: &'a str,
    pub spans: &'a [Span],
}

/// Where in a window a run of tokens of one span lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    /// Positions in the window's sequence (special tokens included).
    from: u32,
    to: u32,
    /// The run's number; runs are numbered in document order, so each span's runs are
    /// consecutive numbers.
    seg: u32,
}

/// Documents tokenized, windowed and planned: the CPU half of the late pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatePrepared {
    /// Windows that give at least one token, special tokens added.
    seqs: Vec<Vec<u32>>,
    /// Per window, the runs of tokens it gives.
    runs: Vec<Vec<Run>>,
    /// Batches of window indices, from [`batch::plan`].
    plan: Vec<Vec<usize>>,
    /// Span `i`'s runs are numbers `span_runs[i]..span_runs[i + 1]`.
    span_runs: Vec<u32>,
    /// Tokens pooled per span.
    counts: Vec<u32>,
    /// Document `d`'s spans are `doc_spans[d]..doc_spans[d + 1]`.
    doc_spans: Vec<usize>,
    stats: EmbedStats,
}

impl LatePrepared {
    /// Documents prepared.
    #[must_use]
    pub fn len(&self) -> usize {
        self.doc_spans.len().saturating_sub(1)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Spans of all documents.
    #[must_use]
    pub fn spans(&self) -> usize {
        self.counts.len()
    }

    /// Windows the device will run.
    #[must_use]
    pub fn windows(&self) -> usize {
        self.seqs.len()
    }

    /// Real tokens (special tokens and window overlap included) the device will see.
    #[must_use]
    pub fn tokens(&self) -> usize {
        self.seqs.iter().map(Vec::len).sum()
    }

    /// Tokens pooled into each span.
    #[must_use]
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }
}

/// What one document contributes to a [`LatePrepared`], with document-local numbers.
#[derive(Default)]
struct DocPlan {
    seqs: Vec<Vec<u32>>,
    runs: Vec<Vec<Run>>,
    /// The span of each run (local index).
    run_span: Vec<usize>,
    counts: Vec<u32>,
    windows: usize,
}

/// Window starts over `n` content tokens: `0, stride, 2·stride, …`, up to the first window
/// that reaches the end (one window when `n ≤ window`; none when `n = 0`).
#[must_use]
pub fn window_starts(n: usize, window: usize, stride: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(n.div_ceil(stride.max(1)));
    if n == 0 {
        return out;
    }
    let mut a = 0;
    loop {
        out.push(a);
        if a + window >= n {
            return out;
        }
        a += stride.max(1);
    }
}

/// For each of `n` content tokens, the index (into `starts`) of the window where it sits most
/// centrally: the least distance from the token to the window's centre (its own length taken
/// into account, the last window may be shorter), the earlier window on a tie.
#[must_use]
pub fn central_windows(n: usize, starts: &[usize], window: usize, stride: usize) -> Vec<usize> {
    let stride = stride.max(1);
    let last = starts.len().saturating_sub(1);
    (0..n)
        .map(|p| {
            // Windows k·stride ≤ p < k·stride + window.
            let hi = (p / stride).min(last);
            let lo = if p >= window { (p - window) / stride + 1 } else { 0 };
            let mut best = (usize::MAX, hi);
            for (k, &a) in starts.iter().enumerate().take(hi + 1).skip(lo) {
                let len = window.min(n - a);
                // Twice the distance to the centre a + (len − 1)/2, in integers.
                let d = (2 * p).abs_diff(2 * a + len - 1);
                if d < best.0 {
                    best = (d, k);
                }
            }
            best.1
        })
        .collect()
}

/// Windows placed around spans ([`Placement::Centred`]) over `n` content tokens, `span_of[p]`
/// being the span that pools token `p`: the windows' starts (ascending, distinct) and, for
/// each token, the index of the window it is pooled from (tokens in no span: 0, never read).
///
/// Spans are taken in order and grouped while a group's tokens stay within half a window;
/// each group gets the window centred on it, moved inside the document where the document is
/// shorter on one side (and the whole document when it is shorter than a window). A span of
/// more than half a window is a group of its own; a span longer than the window keeps the
/// grid ([`window_starts`] every `stride`, [`central_windows`]). Groups of half a window make
/// about as many windows as a grid of stride half a window, so the device sees about as many
/// tokens; smaller spans that do not fill a group together cost more (benches/RESULTS.md).
#[must_use]
pub fn centred_windows(
    n: usize,
    span_of: &[Option<usize>],
    window: usize,
    stride: usize,
) -> (Vec<usize>, Vec<usize>) {
    let window = window.max(1);
    let half = (window / 2).max(1);
    let last_start = n.saturating_sub(window);
    // (span, first token, end) for each span that pools tokens; a span's tokens are consecutive.
    let mut ranges: Vec<(usize, usize, usize)> = Vec::new();
    for (p, s) in span_of.iter().enumerate().take(n) {
        let Some(s) = *s else { continue };
        match ranges.last_mut() {
            Some(r) if r.0 == s => r.2 = p + 1,
            _ => ranges.push((s, p, p + 1)),
        }
    }
    let mut starts = std::collections::BTreeMap::<usize, usize>::new();
    let mut assign: Vec<(usize, usize, usize)> = Vec::new(); // (first token, end, window start)
    let mut grid: Option<(Vec<usize>, Vec<usize>)> = None;
    let mut group: Option<(usize, usize)> = None;
    let centred = |a: usize, b: usize| ((a + b).saturating_sub(window) / 2).min(last_start);
    let flush = |group: &mut Option<(usize, usize)>, assign: &mut Vec<(usize, usize, usize)>| {
        if let Some((a, b)) = group.take() {
            assign.push((a, b, centred(a, b)));
        }
    };
    for &(_, a, b) in &ranges {
        if b - a > window {
            flush(&mut group, &mut assign);
            let (gs, owner) = grid.get_or_insert_with(|| {
                let gs = window_starts(n, window, stride);
                let owner = central_windows(n, &gs, window, stride);
                (gs, owner)
            });
            for p in a..b {
                assign.push((p, p + 1, gs[owner[p]]));
            }
        } else if b - a > half {
            flush(&mut group, &mut assign);
            assign.push((a, b, centred(a, b)));
        } else {
            match group {
                Some((g0, _)) if b - g0 <= half => group = Some((g0, b)),
                _ => {
                    flush(&mut group, &mut assign);
                    group = Some((a, b));
                }
            }
        }
    }
    flush(&mut group, &mut assign);
    for &(_, _, w) in &assign {
        starts.insert(w, 0);
    }
    for (i, v) in starts.values_mut().enumerate() {
        *v = i;
    }
    let mut owner = vec![0; n];
    for (a, b, w) in assign {
        owner[a..b].fill(starts[&w]);
    }
    (starts.into_keys().collect(), owner)
}

fn plan_doc(model: &dyn Embedder, doc: &LateDoc<'_>, opts: &LateOptions) -> DocPlan {
    let (pre, post) = model.special_ids();
    let (ids, starts) = model.content_ids_with_starts(doc.text);
    let n = ids.len().min(starts.len());
    let mut plan = DocPlan { counts: vec![0; doc.spans.len()], ..DocPlan::default() };
    // Starts count from a prompt's first byte; the prompt's own tokens are in no span.
    let prompt = model.prompt().map_or(0, str::len);
    // The span holding each token's first byte (spans ascending, starts non-decreasing).
    let mut span_of = Vec::with_capacity(n);
    let mut j = 0;
    for &s in &starts[..n] {
        let Some(s) = s.checked_sub(prompt) else {
            span_of.push(None);
            continue;
        };
        while j < doc.spans.len() && doc.spans[j].end <= s {
            j += 1;
        }
        span_of.push((j < doc.spans.len() && doc.spans[j].start <= s).then_some(j));
    }
    let (wins, owner) = match opts.placement {
        Placement::Grid => {
            let wins = window_starts(n, opts.window, opts.stride);
            let owner = central_windows(n, &wins, opts.window, opts.stride);
            (wins, owner)
        }
        Placement::Centred => centred_windows(n, &span_of, opts.window, opts.stride),
    };
    plan.windows = wins.len();
    // Runs: consecutive tokens of one span that one window gives, in document order.
    let mut local_runs: Vec<Vec<Run>> = vec![Vec::new(); wins.len()];
    let mut last: Option<(usize, usize, u32)> = None; // (window, span, position after the run)
    for p in 0..n {
        let Some(sp) = span_of[p] else {
            last = None;
            continue;
        };
        let k = owner[p];
        let pos = (pre.len() + p - wins[k]) as u32;
        plan.counts[sp] += 1;
        match (last, local_runs[k].last_mut()) {
            (Some((lk, ls, at)), Some(run)) if lk == k && ls == sp && at == pos => run.to = pos + 1,
            _ => {
                local_runs[k].push(Run { from: pos, to: pos + 1, seg: plan.run_span.len() as u32 });
                plan.run_span.push(sp);
            }
        }
        last = Some((k, sp, pos + 1));
    }
    for (k, runs) in local_runs.into_iter().enumerate() {
        if runs.is_empty() {
            continue; // a window that gives no token (a small stride) is not run
        }
        let (a, b) = (wins[k], (wins[k] + opts.window).min(n));
        let mut seq = Vec::with_capacity(b - a + pre.len() + post.len());
        seq.extend_from_slice(pre);
        seq.extend_from_slice(&ids[a..b]);
        seq.extend_from_slice(post);
        plan.seqs.push(seq);
        plan.runs.push(runs);
    }
    plan
}

/// Check that a document's spans are ascending, not overlapping and within its text.
fn check_spans(d: usize, doc: &LateDoc<'_>) -> Result<()> {
    let mut end = 0;
    for (i, s) in doc.spans.iter().enumerate() {
        let what = if s.start > s.end {
            "is reversed"
        } else if s.start < end {
            "overlaps the span before it"
        } else if s.end > doc.text.len() {
            "ends past the text"
        } else {
            end = s.end;
            continue;
        };
        return Err(Error::Config(format!(
            "late pooling: document {d}, span {i} ({}..{}) {what} ({} bytes)",
            s.start,
            s.end,
            doc.text.len()
        )));
    }
    Ok(())
}

/// Tokenize, window and plan `docs` for `model`: the CPU half of the late pass.
///
/// # Errors
/// Invalid options ([`LateOptions::validate`]), or a document whose spans are reversed,
/// overlap or end past its text: one line.
pub fn prepare(model: &dyn Embedder, docs: &[LateDoc<'_>], opts: LateOptions) -> Result<LatePrepared> {
    opts.validate(model)?;
    for (d, doc) in docs.iter().enumerate() {
        check_spans(d, doc)?;
    }
    let plans: Vec<DocPlan> = docs.par_iter().map(|doc| plan_doc(model, doc, &opts)).collect();
    let mut p = LatePrepared {
        doc_spans: vec![0],
        span_runs: vec![0],
        stats: EmbedStats { texts: docs.len(), ..EmbedStats::default() },
        ..LatePrepared::default()
    };
    for plan in plans {
        let run_base = *p.span_runs.last().unwrap_or(&0);
        p.stats.long_texts += usize::from(plan.windows > 1);
        // Runs per span: the runs are in document order, so each span's are consecutive.
        let mut per_span = vec![0u32; plan.counts.len()];
        for &s in &plan.run_span {
            per_span[s] += 1;
        }
        for c in per_span {
            let last = *p.span_runs.last().unwrap_or(&0);
            p.span_runs.push(last + c);
        }
        p.counts.extend(plan.counts);
        p.doc_spans.push(p.counts.len());
        for (seq, runs) in plan.seqs.into_iter().zip(plan.runs) {
            p.seqs.push(seq);
            p.runs.push(runs.into_iter().map(|r| Run { seg: r.seg + run_base, ..r }).collect());
        }
    }
    let lengths: Vec<usize> = p.seqs.iter().map(Vec::len).collect();
    p.plan = batch::plan(&lengths, opts.batch_tokens);
    Ok(p)
}

/// Span sums on the model's device: what [`run_tensor`] gives.
#[derive(Debug, Clone)]
pub struct LateTensor {
    /// Sum of each span's token states, `[spans, dim]` f32, on the model's device (the host for
    /// a CPU model, or when there is nothing to pool).
    pub sums: Tensor,
    /// Tokens pooled per span.
    pub counts: Vec<u32>,
    /// Document `d`'s spans are rows `doc_spans[d]..doc_spans[d + 1]`.
    pub doc_spans: Vec<usize>,
}

impl LateTensor {
    /// The span sums and counts on the host.
    ///
    /// # Errors
    /// On a device failure.
    pub fn to_host(&self) -> Result<LateVectors> {
        let (_, dim) = self.sums.dims2()?;
        Ok(LateVectors {
            dim,
            sums: self.sums.flatten_all()?.to_vec1::<f32>()?,
            counts: self.counts.clone(),
            doc_spans: self.doc_spans.clone(),
        })
    }

    /// Every span's unit vector, `[spans, dim]` f32 on the sums' device (a zero row for a span
    /// with no tokens).
    ///
    /// # Errors
    /// On a device failure.
    pub fn unit_vectors(&self) -> Result<Tensor> {
        let n = self.counts.len() as u32;
        let starts: Vec<u32> = (0..n).collect();
        let ends: Vec<u32> = (1..=n).collect();
        crate::kernels::pool_spans(&self.sums, &starts, &ends, true)
    }

    /// The unit vector of each run of spans in `ranges` (span rows, e.g. a chunk's units),
    /// `[ranges, dim]` f32 on the sums' device: the mean over all their tokens, normalised, as
    /// [`LateVectors::aggregate`].
    ///
    /// # Errors
    /// If a range is reversed or past the last span, or on a device failure.
    pub fn aggregate(&self, ranges: &[Range<usize>]) -> Result<Tensor> {
        let starts: Vec<u32> = ranges.iter().map(|r| r.start as u32).collect();
        let ends: Vec<u32> = ranges.iter().map(|r| r.end as u32).collect();
        crate::kernels::pool_spans(&self.sums, &starts, &ends, true)
    }
}

/// Span sums and counts on the host: what [`run`] gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LateVectors {
    pub dim: usize,
    /// Sum of each span's token states, `spans × dim` floats, row-major.
    pub sums: Vec<f32>,
    /// Tokens pooled per span.
    pub counts: Vec<u32>,
    /// Document `d`'s spans are `doc_spans[d]..doc_spans[d + 1]`.
    pub doc_spans: Vec<usize>,
}

impl LateVectors {
    /// Spans of all documents.
    #[must_use]
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Document `d`'s spans (indices into every per-span value).
    ///
    /// # Panics
    /// If `d` is not a document of the pass.
    #[must_use]
    pub fn doc(&self, d: usize) -> Range<usize> {
        self.doc_spans[d]..self.doc_spans[d + 1]
    }

    /// Span `i`'s sum of token states.
    ///
    /// # Panics
    /// If `i` is not a span of the pass.
    #[must_use]
    pub fn sum(&self, i: usize) -> &[f32] {
        &self.sums[i * self.dim..(i + 1) * self.dim]
    }

    /// The vector of the spans in `spans` taken together (one span, or a chunk's units): the
    /// mean of all their tokens' states, L2-normalised; a zero vector when they have no token.
    ///
    /// # Panics
    /// If the range is reversed or goes past the last span.
    #[must_use]
    pub fn aggregate(&self, spans: Range<usize>) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        for i in spans {
            for (o, x) in v.iter_mut().zip(self.sum(i)) {
                *o += x;
            }
        }
        // The mean's 1/count does not survive normalisation: the sum has its direction.
        normalize(&mut v);
        v
    }

    /// Every span's unit vector ([`Self::aggregate`] of the span alone), in span order.
    #[must_use]
    pub fn unit_vectors(&self) -> Embeddings {
        let mut data = self.sums.clone();
        for row in data.chunks_mut(self.dim.max(1)) {
            normalize(row);
        }
        Embeddings { dim: self.dim, data }
    }
}

/// Encode the prepared windows and pool each span on the model's device: the device half of
/// the late pass. Only span sums come out of the device, and only when asked
/// ([`LateTensor::to_host`]).
///
/// # Errors
/// If the model cannot give token states ([`Embedder::token_states`]), or on a device failure.
pub fn run_tensor(model: &dyn Embedder, p: &LatePrepared) -> Result<(LateTensor, EmbedStats)> {
    let dim = model.dim();
    let mut stats = p.stats.clone();
    let n_runs = *p.span_runs.last().unwrap_or(&0) as usize;
    let mut parts = Vec::with_capacity(p.plan.len());
    // Row of the concatenated batch results where each run's sum lands.
    let mut row_of_run = vec![0u32; n_runs];
    let mut at = 0u32;
    for group in &p.plan {
        let mut fb = FlatBatch::default();
        // The batch rows each run pools (the tokens at the centre of their window), and each
        // run's place among them: only these rows' states are asked for.
        let mut rows = Vec::new();
        let (mut starts, mut ends) = (Vec::new(), Vec::new());
        let mut kept = 0u32;
        for &k in group {
            let off = fb.ids.len();
            fb.push(&p.seqs[k]);
            for r in &p.runs[k] {
                rows.push(off + r.from as usize..off + r.to as usize);
                starts.push(kept);
                kept += r.to - r.from;
                ends.push(kept);
                row_of_run[r.seg as usize] = at;
                at += 1;
            }
        }
        stats.batches += 1;
        stats.tokens += fb.ids.len();
        stats.padded_tokens += fb.max_len() * fb.len();
        let states = model.token_states_rows(&fb, &rows)?;
        if states.dims2()? != (kept as usize, dim) {
            return Err(Error::Internal(format!(
                "token states {:?} for {kept} of {} tokens of dimension {dim}",
                states.dims(),
                fb.ids.len()
            )));
        }
        parts.push(crate::kernels::pool_spans(&states, &starts, &ends, false)?);
    }
    let n_spans = p.counts.len();
    let sums = if n_runs == 0 {
        Tensor::zeros((n_spans, dim), DType::F32, &candle_core::Device::Cpu)?
    } else {
        let all = Tensor::cat(&parts, 0)?;
        let order = Tensor::from_vec(row_of_run, n_runs, all.device())?;
        let ordered = all.index_select(&order, 0)?; // runs in document order
        crate::kernels::pool_spans(&ordered, &p.span_runs[..n_spans], &p.span_runs[1..], false)?
    };
    Ok((LateTensor { sums, counts: p.counts.clone(), doc_spans: p.doc_spans.clone() }, stats))
}

/// [`run_tensor`], with the span sums brought to the host.
///
/// # Errors
/// As [`run_tensor`].
pub fn run(model: &dyn Embedder, p: &LatePrepared) -> Result<(LateVectors, EmbedStats)> {
    let (t, stats) = run_tensor(model, p)?;
    Ok((t.to_host()?, stats))
}

/// [`prepare`] then [`run`].
///
/// # Errors
/// As both.
pub fn late_pool(
    model: &dyn Embedder,
    docs: &[LateDoc<'_>],
    opts: LateOptions,
) -> Result<(LateVectors, EmbedStats)> {
    run(model, &prepare(model, docs, opts)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_step_by_stride_until_one_reaches_the_end() {
        assert_eq!(window_starts(0, 4, 2), Vec::<usize>::new());
        assert_eq!(window_starts(3, 4, 2), vec![0]);
        assert_eq!(window_starts(4, 4, 2), vec![0]);
        assert_eq!(window_starts(5, 4, 2), vec![0, 2]);
        assert_eq!(window_starts(10, 4, 4), vec![0, 4, 8]);
        assert_eq!(window_starts(10, 4, 3), vec![0, 3, 6]);
        assert_eq!(window_starts(7, 1, 1), (0..7).collect::<Vec<_>>());
    }

    /// Centred windows: every pooled token comes from a window that holds it; the tokens of
    /// a span up to the window's length all come from one window; a span of at most half a
    /// window has at least a quarter window of context on each side, or all the document has
    /// on that side; a longer span keeps the grid; a document within one window is one window.
    #[test]
    fn centred_windows_hold_each_span_in_the_middle() {
        // Spans of the given token lengths laid end to end, with a gap of one token (no span)
        // after every third span.
        let layout = |lens: &[usize]| {
            let mut span_of = Vec::new();
            for (i, &l) in lens.iter().enumerate() {
                span_of.extend(std::iter::repeat_n(Some(i), l));
                if i % 3 == 2 {
                    span_of.push(None);
                }
            }
            span_of
        };
        let cases: [&[usize]; 6] = [
            &[5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5],
            &[30, 2, 2, 40, 7, 80, 3, 3, 3, 60, 1, 200, 4, 4],
            &[1],
            &[10, 20],
            &[64, 64, 64, 64, 64],
            &[33, 31, 17, 90, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 129, 2],
        ];
        for lens in cases {
            let span_of = layout(lens);
            let n = span_of.len();
            for (w, stride) in [(64usize, 32usize), (16, 8), (128, 64), (10, 10)] {
                let (starts, owner) = centred_windows(n, &span_of, w, stride);
                assert!(starts.windows(2).all(|x| x[0] < x[1]), "{starts:?}");
                let len = |k: usize| w.min(n - starts[k]);
                for (sp, &l) in lens.iter().enumerate() {
                    let toks: Vec<usize> = (0..n).filter(|&p| span_of[p] == Some(sp)).collect();
                    assert_eq!(toks.len(), l);
                    for &p in &toks {
                        let k = owner[p];
                        assert!(starts[k] <= p && p < starts[k] + len(k), "n {n} w {w}: token {p}");
                    }
                    if l > w {
                        // The grid: its windows and owners.
                        let gs = window_starts(n, w, stride);
                        let go = central_windows(n, &gs, w, stride);
                        assert!(toks.iter().all(|&p| starts[owner[p]] == gs[go[p]]));
                        continue;
                    }
                    let k = owner[toks[0]];
                    assert!(toks.iter().all(|&p| owner[p] == k), "span {sp} from one window");
                    if l <= w / 2 {
                        let (a, b) = (starts[k], starts[k] + len(k));
                        let (t0, t1) = (toks[0], toks[l - 1] + 1);
                        let q = w / 4;
                        assert!(t0 - a >= q.min(t0), "w {w}, span {sp} at {t0}..{t1}: window {a}..{b}");
                        assert!(b - t1 >= q.min(n - t1), "w {w}, span {sp} at {t0}..{t1}: window {a}..{b}");
                    }
                }
                if n <= w {
                    assert_eq!(starts, vec![0]);
                }
            }
        }
    }

    #[test]
    fn each_token_goes_to_its_most_central_window() {
        // Window 4, stride 2 over 7 tokens: windows 0..4 (centre 1.5), 2..6 (3.5), 4..7 (5).
        let starts = window_starts(7, 4, 2);
        assert_eq!(starts, vec![0, 2, 4]);
        // Token 2 is 0.5 from both the first and second centres: the earlier window.
        assert_eq!(central_windows(7, &starts, 4, 2), vec![0, 0, 0, 1, 1, 2, 2]);
        // No overlap: every token in its only window.
        let starts = window_starts(10, 4, 4);
        assert_eq!(central_windows(10, &starts, 4, 4), vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2]);
        // Any window and stride: the chosen window holds the token and no window holding it is
        // nearer its centre; owners never go back.
        for n in [1usize, 2, 9, 50, 123] {
            for (w, s) in [(1, 1), (3, 1), (5, 2), (8, 3), (8, 8), (16, 12), (7, 7)] {
                let starts = window_starts(n, w, s);
                let own = central_windows(n, &starts, w, s);
                for (p, &k) in own.iter().enumerate() {
                    let len = |k: usize| w.min(n - starts[k]);
                    assert!(starts[k] <= p && p < starts[k] + len(k), "n {n} w {w} s {s} token {p}");
                    let dist = |k: usize| (2 * p).abs_diff(2 * starts[k] + len(k) - 1);
                    for (j, &a) in starts.iter().enumerate() {
                        if a <= p && p < a + len(j) {
                            assert!(dist(j) > dist(k) || (dist(j) == dist(k) && j >= k));
                        }
                    }
                }
                assert!(own.windows(2).all(|x| x[0] <= x[1]));
            }
        }
    }
}
