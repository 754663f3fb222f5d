//! `seamcut bench`: end-to-end throughput of a corpus job, and the synthetic corpus it can
//! run on when no input is given.

use crate::corpus::Document;
use crate::pipeline::JobStats;
use crate::Result;

/// Documents of synthetic prose, `total` bytes in all (documents of about 20 KB), the same
/// for a seed on every machine: words drawn Zipf-like from the default model's vocabulary,
/// 6–28 words a sentence, 2–7 sentences a paragraph. Realistic enough for throughput (the
/// tokenizer, the segmenter and the model see real words); use a real corpus for quality.
pub fn synthetic_corpus(total: u64, seed: u64) -> impl Iterator<Item = Result<Document>> + Send {
    let vocab: Vec<String> = {
        let t = crate::sizer::HfSizer::default_model();
        let mut words: Vec<(u32, String)> = t
            .tokenizer()
            .hf()
            .get_vocab(false)
            .into_iter()
            .filter(|(w, _)| w.len() >= 2 && w.chars().all(|c| c.is_ascii_lowercase()))
            .map(|(w, id)| (id, w))
            .collect();
        // Lower ids are, in WordPiece vocabularies, roughly the more frequent words.
        words.sort_unstable();
        words.into_iter().map(|(_, w)| w).take(8000).collect()
    };
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        // xorshift64*: the same stream on every machine.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut made = 0u64;
    let mut n = 0u64;
    std::iter::from_fn(move || {
        if made >= total {
            return None;
        }
        let mut text = String::with_capacity(21_000);
        while text.len() < 20_000 && made + (text.len() as u64) < total {
            for _ in 0..2 + next() % 6 {
                let words = 6 + next() % 23;
                for w in 0..words {
                    // Zipf-like: the square of a uniform draw favours low ranks.
                    let u = (next() % 10_000) as f64 / 10_000.0;
                    let word = &vocab[((u * u) * vocab.len() as f64) as usize];
                    if w == 0 {
                        let mut c = word.chars();
                        if let Some(f) = c.next() {
                            text.extend(f.to_uppercase());
                            text.push_str(c.as_str());
                        }
                    } else {
                        text.push(' ');
                        text.push_str(word);
                    }
                }
                text.push_str(". ");
            }
            text.pop();
            text.push_str("\n\n");
        }
        made += text.len() as u64;
        n += 1;
        Some(Ok(Document::new(format!("synthetic-{n:06}"), text)))
    })
}

/// The throughput report of one job.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub chunker: String,
    pub documents: u64,
    pub megabytes: f64,
    pub seconds: f64,
    pub mb_per_s: f64,
    pub documents_per_s: f64,
    pub units_per_s: f64,
    pub tokens_per_s: f64,
    pub chunks: u64,
    pub stages: crate::pipeline::StageSeconds,
    /// Share of the job's wall time the device stage was not busy (embedding, bands): what a
    /// GPU waits for the CPU stages.
    pub device_idle: f64,
    pub peak_rss_mb: f64,
    pub threads: usize,
}

impl Report {
    #[must_use]
    pub fn new(s: &JobStats) -> Self {
        let secs = s.seconds.max(1e-9);
        let mb = s.totals.bytes as f64 / 1e6;
        Self {
            chunker: s.chunker.clone(),
            documents: s.totals.documents,
            megabytes: mb,
            seconds: s.seconds,
            mb_per_s: mb / secs,
            documents_per_s: s.totals.documents as f64 / secs,
            units_per_s: s.units as f64 / secs,
            tokens_per_s: s.totals.tokens as f64 / secs,
            chunks: s.totals.chunks,
            stages: s.stages,
            device_idle: (1.0 - s.stages.device / secs).clamp(0.0, 1.0),
            peak_rss_mb: s.peak_rss as f64 / f64::from(1 << 20),
            threads: rayon::current_num_threads(),
        }
    }

    /// The report as a Markdown table.
    #[must_use]
    pub fn table(&self) -> String {
        let st = &self.stages;
        format!(
            "| measure | value |\n|---|---|\n| chunker | {} |\n| documents | {} |\n| MB | {:.1} |\n| seconds | {:.2} |\n| MB/s | {:.2} |\n| documents/s | {:.1} |\n| units/s | {:.0} |\n| tokens/s | {:.0} |\n| chunks | {} |\n| busy s: read / prepare / device / finish / write | {:.2} / {:.2} / {:.2} / {:.2} / {:.2} |\n| of device: bands | {:.2} |\n| device idle | {:.1}% |\n| peak RSS MB | {:.0} |\n| threads | {} |",
            self.chunker, self.documents, self.megabytes, self.seconds, self.mb_per_s, self.documents_per_s,
            self.units_per_s, self.tokens_per_s, self.chunks, st.read, st.prepare, st.device, st.finish, st.write,
            st.band, 100.0 * self.device_idle, self.peak_rss_mb, self.threads
        )
    }
}
