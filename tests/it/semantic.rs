//! The embedding chunkers end to end on the default model: invariants on arbitrary text,
//! and Max–Min with the paper's values and no cap reproducing the reference rule on the
//! sentences `seamcut segment` prints.

use std::sync::Arc;

use proptest::prelude::*;
use seamcut::band::Band;
use seamcut::chunk::verify;
use seamcut::chunkers::semantic::{Rule, SemanticChunker, WindowMode};
use seamcut::chunkers::{ChunkOptions, Chunker};
use seamcut::device::Compute;
use seamcut::embed::{embed_texts, EmbedOptions, Embedder};
use seamcut::rules::breakpoint::BreakpointParams;
use seamcut::rules::maxmin::{maxmin, MaxMinParams};
use seamcut::rules::minima::MinimaParams;
use seamcut::sizer::{HfSizer, Sizer};

fn model() -> Arc<dyn Embedder> {
    static M: std::sync::OnceLock<Arc<dyn Embedder>> = std::sync::OnceLock::new();
    M.get_or_init(|| {
        seamcut::models::load_dir(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/default"),
            &Compute::cpu(),
        )
        .unwrap()
        .into()
    })
    .clone()
}

fn chunker(rule: Rule, opts: ChunkOptions) -> SemanticChunker {
    let m = model();
    let sizer: Arc<dyn Sizer> = Arc::new(HfSizer::new(m.tokenizer().hf().clone(), "model"));
    SemanticChunker::new(m, sizer, Compute::cpu(), rule, opts)
}

fn rules() -> Vec<Rule> {
    vec![
        Rule::MaxMin(MaxMinParams::default()),
        Rule::Global(seamcut::rules::global::GlobalParams {
            target_tokens: 40,
            penalty: 0.0,
            ..Default::default()
        }),
        Rule::Global(seamcut::rules::global::GlobalParams {
            target_tokens: 40,
            penalty: 0.0,
            depth_weight: 2.0,
            block: 2,
            heading_weight: 1.0,
            ..Default::default()
        }),
        Rule::Minima(MinimaParams::default(), WindowMode::Mean),
        Rule::Minima(MinimaParams { skip_window: 1, ..MinimaParams::default() }, WindowMode::Concat),
        Rule::Breakpoint { params: BreakpointParams::default(), buffer: 1, window: WindowMode::Mean },
        Rule::Breakpoint { params: BreakpointParams::default(), buffer: 1, window: WindowMode::Concat },
    ]
}

const PROSE: &str = "The river rose in the night. Boats strained at their ropes and the bridge groaned. \
By morning the water had reached the bank of the old mill.\n\nThe concert began at eight. The pianist \
played a slow melody, then the band joined with a rhythm that filled the hall. People sang along.\n\n\
In the garden the soil was dark and wet. Seeds had sprouted overnight; the roots held the earth.";

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn semantic_chunkers_hold_invariants(words in prop::collection::vec("[a-zA-Z]{1,10}|[.!?]|\n\n|你好。|naïve|Größe|[a-z]{30,90}", 0..300), cap in 4usize..80, min in 0usize..10) {
        let text = words.join(" ");
        for (k, rule) in rules().into_iter().enumerate() {
            let mut c = chunker(rule, ChunkOptions::new(cap).with_min_tokens(min.min(cap)));
            c = c.with_splitter(match k % 3 {
                0 => seamcut::chunkers::semantic::Splitter::Segmenter,
                1 => seamcut::chunkers::semantic::Splitter::Delimiters { min_bytes: 24 },
                _ => seamcut::chunkers::semantic::Splitter::Paragraphs,
            });
            let chunks = c.chunk(&text).unwrap();
            if let Err(e) = verify(&text, &chunks) {
                return Err(TestCaseError::fail(format!("{rule:?}: {e}")));
            }
            let sizer = HfSizer::new(model().tokenizer().hf().clone(), "model");
            for ch in &chunks {
                // Counts are exact, whether summed over units or counted again.
                prop_assert_eq!(ch.tokens, sizer.count(&text[ch.start..ch.end]), "{:?}", rule);
                prop_assert!(ch.tokens <= cap || text[ch.start..ch.end].chars().nth(1).is_none(), "{:?}: {} > {}", rule, ch.tokens, cap);
            }
        }
    }
}

#[test]
fn maxmin_without_cap_is_the_reference_rule_on_segment_sentences() {
    let text = PROSE.repeat(3);
    // The sentences `seamcut segment` prints (uncapped), embedded by the default model.
    let sentences: Vec<&str> =
        seamcut::segment::Segmenter::default().sentences(&text).iter().map(|s| s.text(&text)).collect();
    let (emb, _) = embed_texts(model().as_ref(), &sentences, EmbedOptions::default()).unwrap();
    let n = sentences.len();
    let band = Band::from_vectors(&emb.data, emb.dim, n);
    for p in [MaxMinParams::default(), MaxMinParams { hard_thr: 0.75, ..MaxMinParams::default() }] {
        let want = maxmin(&band, &vec![0; n], seamcut::cap::Cap::NONE, &p);
        let c = chunker(Rule::MaxMin(p), ChunkOptions::new(0))
            .with_splitter(seamcut::chunkers::semantic::Splitter::Segmenter);
        let chunks = c.chunk(&text).unwrap();
        let got: Vec<usize> = chunks
            .iter()
            .map(|ch| {
                sentences
                    .iter()
                    .position(|s| s.as_ptr() as usize - text.as_ptr() as usize >= ch.start)
                    .unwrap()
            })
            .collect();
        assert_eq!(got, want, "{p:?}");
        assert!(want.len() > 1 && want.len() < n, "the rule should make some cuts, not all: {want:?}");
    }
}

#[test]
fn paragraph_units_never_cut_a_paragraph_that_fits() {
    let text = PROSE.repeat(4);
    let paragraphs = seamcut::segment::Segmenter::default().paragraphs(&text);
    for rule in rules() {
        // The default splitter: whole paragraphs (each well under 100 tokens; the cap forces
        // cuts, which must fall between paragraphs).
        let chunks = chunker(rule, ChunkOptions::new(100)).chunk(&text).unwrap();
        verify(&text, &chunks).unwrap();
        for ch in &chunks[1..] {
            assert!(
                paragraphs.iter().any(|p| p.start == ch.start),
                "{rule:?}: a chunk starts inside a paragraph at byte {}",
                ch.start
            );
        }
        assert!(chunks.len() > 1, "{rule:?}: some cuts between paragraphs");
    }
}

#[test]
fn every_rule_covers_prose() {
    let text = PROSE;
    for rule in rules() {
        let chunks = chunker(rule, ChunkOptions::new(512)).chunk(text).unwrap();
        verify(text, &chunks).unwrap();
        assert!(!chunks.is_empty(), "{rule:?}");
    }
}

#[test]
fn batching_documents_together_changes_nothing() {
    let docs = [PROSE, "", "One short document. With two sentences.", &PROSE.repeat(2), "   "];
    for rule in rules() {
        let c = chunker(rule, ChunkOptions::new(64).with_min_tokens(4));
        let one_by_one: Vec<_> = docs.iter().map(|d| c.chunk(d).unwrap()).collect();
        let together: Vec<_> = c.chunk_batch(&docs).into_iter().map(Result::unwrap).collect();
        assert_eq!(together, one_by_one, "{rule:?}");
    }
}
