//! LLM chunking: LumberChunker (Duarte et al., EMNLP 2024 Findings) and seamcut's
//! embedding-guided variant.
//!
//! **`lumber`, the paper's loop.** The document's paragraphs (seamcut's paragraph units: a
//! paragraph over the cap becomes its sentences) are numbered; from the current paragraph a
//! group is filled up to θ tokens, the LLM is asked with the paper's prompt ([`SYSTEM_PROMPT`],
//! verbatim, as the system message and again at the top of the user message, as the official
//! code sends it to ChatGPT) which paragraph first changes content, the document is cut
//! there, and the next group starts at that paragraph. Deliberate fixes to the official code
//! (`Code/LumberChunker-Segmentation.py`), each kept small:
//!
//! 1. Tokens are the chunker's real counts (its sizer), not 1.2 × words, and the budget is
//!    the group's paragraphs only (the official count includes the `ID k:` prefixes).
//! 2. The group is the longest run of paragraphs within θ, as the official "add until ≥ θ,
//!    then drop the last" gives, but also within the hard cap: a chunk never exceeds it.
//! 3. The next group starts **at** the returned paragraph (the official code starts one past
//!    it, so that paragraph is never the first of a group the LLM sees).
//! 4. Every paragraph is covered: the official loop stops five paragraphs before the end and
//!    never asks about them; here the last group is asked like any other.
//! 5. An answer that does not parse, names a paragraph outside the group, or names its first
//!    paragraph is asked again (`attempts` in all; the official code moves on silently);
//!    after that the group is kept whole. Parsing accepts the paper's `Answer: ID k` and
//!    also `ID k` without the `Answer:` (weak models drop it).
//! 6. A one-paragraph group is kept without asking.
//!
//! **`lumber-guided`.** The embedding band proposes the seams and the LLM only judges them:
//! each request covers `groups` × θ tokens, the band's `candidates` weakest seams per θ
//! tokens (lowest neighbour similarity) are shown as short excerpts (`context_words` on each
//! side), and the LLM answers which of them are real content shifts, or none. Chunks still
//! over θ are then cut at their weakest seam ([`crate::rules::sizing`]). Far fewer requests
//! (one per `groups` × θ tokens instead of one per chunk) and far shorter prompts (excerpts
//! instead of whole paragraphs); `benches/RESULTS.md` has the figures.
//!
//! Whatever the LLM answers, chunks are contiguous, cover the document and stay within the
//! cap (tests/it/lumber.rs checks this against arbitrary answers).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::batch::{ChunkVectors, DocChunks, Pending, UnitBatch};
use super::semantic::{exact_chunks, unit_cap, unit_texts, ModelErrorPolicy};
use super::units::{paragraph_units, Units};
use super::{ChunkOptions, Chunker, ChunkerKind};
use crate::cap::Cap;
use crate::chunk::ChunkSpan;
use crate::device::Compute;
use crate::embed::{EmbedOptions, Embedder};
use crate::llm::{LlmClient, LlmCost, Message};
use crate::rules::sizing;
use crate::segment::Segmenter;
use crate::similarity;
use crate::sizer::Sizer;
use crate::Result;

/// The LumberChunker prompt, verbatim from the official code.
pub const SYSTEM_PROMPT: &str = "You will receive as input an english document with paragraphs identified by 'ID XXXX: <text>'.

Task: Find the first paragraph (not the first one) where the content clearly changes compared to the previous paragraphs.

Output: Return the ID of the paragraph with the content shift as in the exemplified format: 'Answer: ID XXXX'.

Additional Considerations: Avoid very long groups of paragraphs. Aim for a good balance between identifying content shifts and keeping groups manageable.";

/// The guided mode's prompt: candidates instead of whole paragraphs.
pub const GUIDED_PROMPT: &str = "You will receive excerpts of an english document around candidate boundaries identified by 'SEAM XX', each showing the end of the text before the boundary and the start of the text after it.

Task: Find the boundaries where the content clearly changes compared to the text before them.

Output: Return their numbers in the format 'Answer: SEAM XX, SEAM YY', or 'Answer: none' if the content clearly changes at none of them.";

/// The LLM chunkers' settings (the `lumber` part of a chunker spec).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LumberParams {
    /// Group size θ in tokens (the paper: 550).
    pub theta: usize,
    /// Asks per group (or guided request) before it is kept whole.
    pub attempts: u32,
    /// Guided: seams proposed per θ tokens.
    pub candidates: usize,
    /// Guided: θ-sized groups judged per request.
    pub groups: usize,
    /// Guided: words shown on each side of a seam.
    pub context_words: usize,
}

impl Default for LumberParams {
    fn default() -> Self {
        Self { theta: 550, attempts: 3, candidates: 2, groups: 4, context_words: 40 }
    }
}

/// The embedding side of the guided mode.
pub struct Guide {
    pub embedder: Arc<dyn Embedder>,
    pub compute: Compute,
    pub embed_opts: EmbedOptions,
}

/// LumberChunker, or its guided variant when built with a [`Guide`].
pub struct LumberChunker {
    llm: Arc<LlmClient>,
    sizer: Arc<dyn Sizer>,
    opts: ChunkOptions,
    params: LumberParams,
    guide: Option<Guide>,
    segmenter: Segmenter,
    policy: ModelErrorPolicy,
    fallbacks: AtomicU64,
    description: String,
}

impl LumberChunker {
    #[must_use]
    pub fn new(
        llm: Arc<LlmClient>,
        sizer: Arc<dyn Sizer>,
        opts: ChunkOptions,
        params: LumberParams,
        guide: Option<Guide>,
    ) -> Self {
        // θ larger than the cap is bounded by it: say so, rather than report a θ not used.
        let theta = match opts.cap.get() {
            Some(cap) if cap < params.theta => format!("θ {}, bounded by the cap to {cap}", params.theta),
            _ => format!("θ {}", params.theta),
        };
        let description = match &guide {
            None => format!("lumber ({theta}) on {}", llm.id()),
            Some(g) => format!(
                "lumber-guided ({theta}, {} seams per θ, {} groups per request) on {} with {}",
                params.candidates,
                params.groups,
                llm.id(),
                g.embedder.describe()
            ),
        };
        Self {
            llm,
            sizer,
            opts,
            params,
            guide,
            segmenter: Segmenter::default(),
            policy: ModelErrorPolicy::default(),
            fallbacks: AtomicU64::new(0),
            description,
        }
    }

    /// What a document gets when its LLM requests fail after their retries.
    #[must_use]
    pub fn with_model_error_policy(mut self, policy: ModelErrorPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The client (for its costs).
    #[must_use]
    pub fn llm(&self) -> &Arc<LlmClient> {
        &self.llm
    }

    /// The group budget: θ, within the cap.
    fn budget(&self) -> Cap {
        self.opts.cap.min(self.params.theta)
    }

    fn units(&self, text: &str) -> Units {
        let cap = match &self.guide {
            Some(g) => unit_cap(self.opts.cap, g.embedder.as_ref()),
            None => self.opts.cap,
        };
        paragraph_units(text, &self.segmenter, self.sizer.as_ref(), cap.limit())
    }

    /// Chunk one document whose units (and, guided, unit vectors) are known.
    fn chunk_units(&self, text: &str, units: &Units, vectors: Option<&[f32]>) -> Result<Vec<ChunkSpan>> {
        let n = units.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let texts = unit_texts(text, units);
        let (starts, seam) = match (&self.guide, vectors) {
            (Some(g), Some(v)) => {
                let band = similarity::band(v, g.embedder.dim(), 1, &g.compute)?;
                let seam: Vec<f32> = (0..n).map(|i| if i == 0 { 0.0 } else { band.sim(i, i - 1) }).collect();
                let chosen = guided_starts(
                    &texts,
                    &units.tokens,
                    &seam,
                    &self.params,
                    self.budget().limit(),
                    &self.llm,
                )?;
                (sizing::size(&chosen, &units.tokens, &seam, self.budget(), 0), seam)
            }
            _ => {
                let starts = paper_starts(
                    &texts,
                    &units.tokens,
                    self.budget().limit(),
                    self.params.attempts,
                    &self.llm,
                )?;
                // No band: a chunk the exact count puts over the cap is split at its middle unit.
                let seam =
                    (0..n).map(|i| if i == 0 { 0.0 } else { -((i as f32) - n as f32 / 2.0).abs() }).collect();
                (starts, seam)
            }
        };
        Ok(exact_chunks(text, units, &starts, &seam, self.sizer.as_ref(), self.opts.cap).spans)
    }
}

impl Chunker for LumberChunker {
    fn kind(&self) -> ChunkerKind {
        if self.guide.is_some() {
            ChunkerKind::LumberGuided
        } else {
            ChunkerKind::Lumber
        }
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn chunk(&self, text: &str) -> Result<Vec<ChunkSpan>> {
        self.chunk_batch(&[text]).pop().unwrap_or_else(|| Ok(Vec::new()))
    }

    fn chunk_batch(&self, texts: &[&str]) -> Vec<Result<Vec<ChunkSpan>>> {
        self.chunk_docs(texts).into_iter().map(|r| r.map(|d| d.spans)).collect()
    }

    fn prepare_batch<'c>(&'c self, texts: &[&str], vectors: ChunkVectors) -> Pending<'c> {
        let _ = vectors;
        Pending::done(self.chunk_docs(texts))
    }

    fn llm_cost(&self) -> Option<LlmCost> {
        let mut c = self.llm.cost();
        c.documents_by_sentences = self.fallbacks.load(Ordering::Relaxed);
        Some(c)
    }
}

impl LumberChunker {
    /// Units of every document (in parallel), one embedding pass over all of them (guided:
    /// the batch path's [`UnitBatch`], with its recovery when the pass fails), then the
    /// documents' LLM loops, as many at once as the backend takes requests. A document whose
    /// requests fail gets the model-error policy, with its reason kept for the errors list.
    fn chunk_docs(&self, texts: &[&str]) -> Vec<Result<DocChunks>> {
        use rayon::prelude::*;
        let (batch, units, vectors) = match &self.guide {
            Some(g) => {
                let mut b = UnitBatch::new(
                    texts,
                    |t| (self.units(t), Vec::new()),
                    Some((g.embedder.as_ref(), g.embed_opts)),
                );
                let v = b.run(g.embedder.as_ref());
                (Some(b), Vec::new(), v)
            }
            None => (None, texts.par_iter().map(|t| self.units(t)).collect(), Ok(Vec::new())),
        };
        let results: Mutex<Vec<Option<Result<DocChunks>>>> =
            Mutex::new((0..texts.len()).map(|_| None).collect());
        let next = AtomicUsize::new(0);
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= texts.len() {
                break;
            }
            let r = match (&batch, &self.guide) {
                (Some(b), Some(g)) => b
                    .vectors_of(i, &vectors, texts[i], g.embedder.as_ref(), g.embed_opts)
                    .and_then(|v| self.chunk_units(texts[i], &b.units[i], Some(&v))),
                _ => self.chunk_units(texts[i], &units[i], None),
            };
            let r = r
                .map(DocChunks::spans)
                .or_else(|e| self.policy.apply(texts[i], e, &self.sizer, self.opts, &self.fallbacks));
            if let Ok(mut res) = results.lock() {
                res[i] = Some(r);
            }
        };
        let workers = self.llm.concurrency().min(texts.len()).max(1);
        std::thread::scope(|s| {
            for _ in 1..workers {
                s.spawn(work);
            }
            work();
        });
        results
            .into_inner()
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(crate::Error::Internal("a document was not chunked".into()))))
            .collect()
    }
}

/// The paragraph text as a prompt line: its whitespace (hard line wraps) collapsed.
fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The user message for the paragraphs `a..b` (global paragraph ids, as the official code).
#[must_use]
pub fn paper_user_message(texts: &[&str], a: usize, b: usize) -> String {
    let lines: Vec<String> = (a..b).map(|k| format!("ID {k}: {}", one_line(texts[k]))).collect();
    format!("{SYSTEM_PROMPT}\nDocument:\n{}", lines.join("\n"))
}

/// The paragraph id in an answer: `Answer: ID k` (the paper's format, any case, with
/// markdown around it), else the first `ID k`.
#[must_use]
pub fn parse_id(answer: &str) -> Option<usize> {
    let lower = answer.to_ascii_lowercase();
    let after = |from: usize| -> Option<usize> {
        let rest = lower[from..].trim_start_matches([':', '*', ' ', '`']);
        let rest = rest.strip_prefix("id")?.trim_start_matches([' ', ':', '#']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    if let Some(k) = lower.match_indices("answer").find_map(|(i, _)| after(i + "answer".len())) {
        return Some(k);
    }
    lower.match_indices("id").find_map(|(i, _)| after(i))
}

/// The paper's loop over units with `tokens`, groups within `budget`: chunk starts.
///
/// # Errors
/// When a request fails after its retries.
pub fn paper_starts(
    texts: &[&str],
    tokens: &[usize],
    budget: usize,
    attempts: u32,
    llm: &LlmClient,
) -> Result<Vec<usize>> {
    let n = tokens.len();
    let mut starts = vec![0];
    let mut a = 0;
    while a < n {
        let b = group_end(tokens, a, budget);
        let cut = if b - a < 2 { None } else { ask_paper(texts, a, b, attempts, llm)? };
        a = cut.unwrap_or(b);
        if a < n {
            starts.push(a);
        }
    }
    Ok(starts)
}

/// The end of the longest run of units from `a` within `budget` tokens (at least one unit).
fn group_end(tokens: &[usize], a: usize, budget: usize) -> usize {
    let (mut b, mut sum) = (a, 0usize);
    while b < tokens.len() && (b == a || sum + tokens[b] <= budget) {
        sum += tokens[b];
        b += 1;
    }
    b
}

fn ask_paper(texts: &[&str], a: usize, b: usize, attempts: u32, llm: &LlmClient) -> Result<Option<usize>> {
    let messages =
        vec![Message::new("system", SYSTEM_PROMPT), Message::new("user", paper_user_message(texts, a, b))];
    for attempt in 0..attempts.max(1) {
        let reply = llm.ask(messages.clone(), attempt)?;
        match parse_id(&reply.text) {
            Some(k) if k > a && k < b => return Ok(Some(k)),
            _ => llm.note_invalid(),
        }
    }
    llm.note_fallback();
    Ok(None)
}

/// The last `n` words of `t` and the first `n` words of `u`, each marked where cut short.
fn excerpts(t: &str, u: &str, n: usize) -> (String, String) {
    let before: Vec<&str> = t.split_whitespace().collect();
    let after: Vec<&str> = u.split_whitespace().collect();
    let b = if before.len() > n {
        format!("…{}", before[before.len() - n..].join(" "))
    } else {
        before.join(" ")
    };
    let a = if after.len() > n { format!("{}…", after[..n].join(" ")) } else { after.join(" ") };
    (b, a)
}

/// The guided user message for candidate seams (unit indices), numbered from 1.
#[must_use]
pub fn guided_user_message(texts: &[&str], seams: &[usize], context_words: usize) -> String {
    let mut s = format!("{GUIDED_PROMPT}\nCandidates:\n");
    for (k, &i) in seams.iter().enumerate() {
        let (before, after) = excerpts(texts[i - 1], texts[i], context_words);
        s.push_str(&format!("SEAM {}:\n  before: {before}\n  after: {after}\n", k + 1));
    }
    s
}

/// The seams chosen in a guided answer (numbers in `1..=m`), `Some(vec![])` for "none",
/// `None` when it does not parse or names a seam that was not offered.
#[must_use]
pub fn parse_seams(answer: &str, m: usize) -> Option<Vec<usize>> {
    let lower = answer.to_ascii_lowercase();
    let at = lower.rfind("answer").map_or(0, |i| i + "answer".len());
    let rest = lower[at..].trim_start_matches(|c: char| c == ':' || c == '*' || c.is_whitespace());
    // The answer's line only: models add explanations after it.
    let line = rest.lines().next().unwrap_or_default();
    if line.starts_with("none") || line.starts_with("no seam") {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for tok in line.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()) {
        let k: usize = tok.parse().ok()?;
        if k == 0 || k > m {
            return None;
        }
        out.push(k);
    }
    if out.is_empty() {
        return None;
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The guided loop: windows of `params.groups` × θ tokens; in each, the `candidates` per θ
/// weakest seams (lowest `seam[i]`, the similarity of units `i − 1` and `i`) are offered and
/// the chosen ones become chunk starts. A window whose answers are unusable keeps none (the
/// sizing pass then cuts at the band's weakest seams).
///
/// # Errors
/// When a request fails after its retries.
pub fn guided_starts(
    texts: &[&str],
    tokens: &[usize],
    seam: &[f32],
    params: &LumberParams,
    budget: usize,
    llm: &LlmClient,
) -> Result<Vec<usize>> {
    let n = tokens.len();
    let window = budget.saturating_mul(params.groups.max(1));
    let mut starts = vec![0];
    let mut a = 0;
    while a < n {
        let b = group_end(tokens, a, window);
        let sum: usize = tokens[a..b].iter().sum();
        let k = sum.div_ceil(budget).max(1) * params.candidates.max(1);
        let mut cands: Vec<usize> = (a.max(1)..b).collect();
        cands.sort_by(|&x, &y| seam[x].total_cmp(&seam[y]).then(x.cmp(&y)));
        cands.truncate(k);
        cands.sort_unstable();
        if !cands.is_empty() {
            let messages = vec![
                Message::new("system", GUIDED_PROMPT),
                Message::new("user", guided_user_message(texts, &cands, params.context_words)),
            ];
            let mut chosen = None;
            for attempt in 0..params.attempts.max(1) {
                let reply = llm.ask(messages.clone(), attempt)?;
                if let Some(c) = parse_seams(&reply.text, cands.len()) {
                    chosen = Some(c);
                    break;
                }
                llm.note_invalid();
            }
            match chosen {
                Some(c) => starts.extend(c.into_iter().map(|k| cands[k - 1])),
                None => llm.note_fallback(),
            }
        }
        a = b;
    }
    Ok(starts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_papers_format_and_common_variants() {
        assert_eq!(parse_id("Answer: ID 0012"), Some(12));
        assert_eq!(parse_id("**Answer:** ID 7\nBecause..."), Some(7));
        assert_eq!(parse_id("answer: id 3"), Some(3));
        assert_eq!(parse_id("The shift is at ID 42."), Some(42));
        assert_eq!(parse_id("Answer: paragraph five"), None);
        assert_eq!(parse_id(""), None);
        assert_eq!(parse_seams("Answer: SEAM 2, SEAM 5", 5), Some(vec![2, 5]));
        assert_eq!(parse_seams("Answer: none", 5), Some(vec![]));
        assert_eq!(parse_seams("answer: seam 3\nSEAM 3 starts a new scene", 4), Some(vec![3]));
        assert_eq!(parse_seams("Answer: SEAM 9", 4), None);
        assert_eq!(parse_seams("I think so.", 4), None);
    }

    #[test]
    fn groups_fill_to_the_budget_and_take_at_least_one_unit() {
        assert_eq!(group_end(&[3, 3, 3, 3], 0, 7), 2);
        assert_eq!(group_end(&[9, 3], 0, 7), 1);
        assert_eq!(group_end(&[3, 3], 1, 7), 2);
    }

    #[test]
    fn the_user_message_is_the_papers() {
        let m = paper_user_message(&["A b.\nC d.", "E f."], 0, 2);
        assert!(m.starts_with(SYSTEM_PROMPT));
        assert!(m.ends_with("\nDocument:\nID 0: A b. C d.\nID 1: E f."), "{m}");
    }
}
