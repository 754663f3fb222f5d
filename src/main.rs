//! The `seamcut` command line: a thin layer over the library. Flags map onto library values
//! (a [`ChunkerSpec`], a [`CorpusJob`], an eval [`Plan`]); every decision about chunkers,
//! defaults and policies is made by the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use seamcut::cap::Cap;
use seamcut::chunkers::semantic::{ModelErrorPolicy, WindowMode};
use seamcut::chunkers::ChunkerKind;
use seamcut::corpus::{Documents, Input, InputFormat, ReadOptions};
use seamcut::device::{DeviceSpec, Precision};
use seamcut::embed::tuned::{PromptChoice, Role};
use seamcut::embed::LongInput;
use seamcut::eval::compare::Plan;
use seamcut::models::ModelSpec;
use seamcut::output::{JsonlWriter, OutputFormat};
use seamcut::pipeline::{segment_corpus, CorpusJob, EmbeddingMode, JobOptions, OnError, Shard, Target};
use seamcut::rules::breakpoint::ThresholdType;
use seamcut::sizer::SizerSpec;
use seamcut::spec::{ChunkerSpec, HardThr, MinTokens, TargetTokens, UnitKind};
use seamcut::wording::plural;

// Large tensors are allocated and freed every layer; glibc returns them to the kernel and
// pays page faults to get them back (8% of a MiniLM profile). mimalloc keeps them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "seamcut",
    version,
    about = "Cut text at its semantic seams: chunking for retrieval and indexing"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Chunk documents and write one record per chunk (JSONL, or Parquet with -o X.parquet).
    #[command(after_help = "\
Output, one JSON object per line (Parquet: the same columns):
  {\"doc_id\", \"index\", \"start\", \"end\", \"text\", \"tokens\", \"sentences\", \"context\"} + any --meta-field
  (+ \"window_start\", \"window_end\", \"window_text\" with --overlap; + vectors with --embeddings:
  Parquet's \"embedding\" column, or OUT.npy beside JSONL)
start/end are byte offsets into the document's UTF-8 text; the chunks of a document cover it
exactly (each chunk keeps the whitespace after it), so joining their texts gives it back.
context is the document's title and the headings above the chunk (Guide > Install).
With -o, output is committed batch by batch: after a crash or kill, run the same command
with --resume. Bad documents are skipped and listed beside the output (-o out.jsonl:
out.jsonl.errors.jsonl; without -o, on stderr); --on-error stop stops instead.

Examples:
  seamcut chunk book.txt
  seamcut chunk corpus/ --chunker maxmin -o chunks.parquet --embeddings mean
  seamcut chunk crawl.jsonl.zst --id-field url --meta-field lang -o out.jsonl.zst --resume
  seamcut chunk corpus/ --shard 3/16 -o part-3.parquet      # shard 3 of 0..15: the 4th of 16 machines
  cat notes.md | seamcut chunk - --chunker paragraph --min-tokens 32
  seamcut chunk book.txt --chunker maxmin --print-spec > spec.json
  seamcut chunk corpus/ --spec spec.json --max-tokens 512")]
    Chunk(Box<ChunkArgs>),
    /// Print the sentences the engine will use, one JSON object per sentence.
    #[command(after_help = "\
Output, one JSON object per line: {\"doc_id\", \"index\", \"start\", \"end\", \"text\"}
(trimmed sentences; a sentence over --max-tokens is printed as the pieces it is cut into).

Examples:
  seamcut segment book.txt
  echo 'Dr. Smith arrived. He sat down.' | seamcut segment -")]
    Segment(SegmentArgs),
    /// Embed one text per line into a float32 .npy of shape [n, dim], L2-normalised.
    #[command(after_help = "\
Examples:
  seamcut embed --lines sentences.txt -o vectors.npy
  seamcut embed --model all-MiniLM-L6-v2 --lines sentences.txt -o vectors.npy --long mean
  seamcut embed --model BAAI/bge-small-en-v1.5 --device cuda --dtype f16 --lines s.txt -o v.npy")]
    Embed(EmbedArgs),
    /// Distill a static model (model2vec format) from a BERT-family teacher.
    #[command(after_help = "\
Examples:
  seamcut distill --teacher all-MiniLM-L6-v2 --dims 240 -o my-static-model
  seamcut embed --model my-static-model --lines sentences.txt -o vectors.npy")]
    Distill(DistillArgs),
    /// Draw one document's similarity curve with each chunker's cuts, as SVG or PNG.
    #[command(after_help = "\
Example:
  seamcut plot book.txt --chunker maxmin --chunker minima --chunker recursive -o cuts.svg -o cuts.png")]
    Plot(Box<PlotArgs>),
    /// Score chunkers: topic shifts, retrieval, or chunk files against references.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Measure throughput.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Serve chunking and embeddings over HTTP, batched across requests (OpenAI's
    /// /v1/embeddings and /v1/models, text-embeddings-inference's /embed, /embed_all and
    /// /tokenize, /v1/chunk, /health, /info, /metrics).
    #[cfg(feature = "serve")]
    #[command(after_help = "\
Routes: POST /v1/chunk {\"documents\": [{\"id\", \"text\"}], \"embeddings\": \"none|mean|reembed|late|blend|auto\", \"spec\": {...}}
(chunks as `seamcut chunk` writes them: start/end are UTF-8 byte offsets; a document without an
id gets its position in the request, \"0\", \"1\", ...; chunker settings go in \"spec\",
{\"spec\": {\"max_tokens\": 128}}, never at the top level); POST /v1/embeddings (OpenAI; \"model\" is
a served model's name or absent); POST /embed, /embed_all (token states), /tokenize
(text-embeddings-inference); GET /v1/models, /health, /info, /metrics (Prometheus).
Listens on 127.0.0.1 unless --host says otherwise; SIGTERM finishes the requests in flight.

Examples:
  seamcut serve --model all-MiniLM-L6-v2 --chunker maxmin
  SEAMCUT_KEY=secret seamcut serve --model all-MiniLM-L6-v2 --host 0.0.0.0 --api-key-env SEAMCUT_KEY")]
    Serve(Box<ServeArgs>),
}

#[cfg(feature = "serve")]
#[derive(Args)]
struct ServeArgs {
    /// The chunker /v1/chunk runs (requests may override its settings). [default: sentence]
    #[arg(long, value_enum)]
    chunker: Option<ChunkerKind>,
    /// The model, for the embedding routes and the chunker: a catalog name, a model
    /// directory, or a hub id. [default: default]
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
    /// The address to listen on. Anything but loopback must be asked for (0.0.0.0: every
    /// interface; then set --api-key-env).
    #[arg(long, default_value = "127.0.0.1", help_heading = "Server")]
    host: String,
    /// The port (0: any free port; the address is printed on stderr).
    #[arg(long, default_value_t = 8080, help_heading = "Server")]
    port: u16,
    /// Require `Authorization: Bearer KEY` on every route but /health, KEY being the value of
    /// this environment variable (401 otherwise).
    #[arg(long, value_name = "NAME", help_heading = "Server")]
    api_key_env: Option<String>,
    /// Tokens per embedding pass, across requests (chunking batches: about 4 bytes a token).
    #[arg(long, default_value_t = seamcut::serve::ServeConfig::default().max_batch_tokens, help_heading = "Server")]
    max_batch_tokens: usize,
    /// Requests in the server at once, waiting or running; past it, 429 with Retry-After.
    #[arg(long, default_value_t = seamcut::serve::Limits::default().max_concurrent_requests, help_heading = "Server")]
    max_concurrent_requests: usize,
    /// Bytes of a request body; past it, 413.
    #[arg(long, default_value_t = seamcut::serve::Limits::default().max_body_bytes, help_heading = "Server")]
    max_body_bytes: usize,
    /// Inputs (embeddings) or documents (chunking) per request; past it, 413.
    #[arg(long, default_value_t = seamcut::serve::Limits::default().max_inputs, help_heading = "Server")]
    max_inputs: usize,
    /// Seconds a request may take, queue and model included; past it, 503. [default: 60]
    #[arg(long, value_parser = seconds, help_heading = "Server")]
    request_timeout: Option<std::time::Duration>,
    /// Seconds for a client to send its headers; past it, the connection is closed. [default: 10]
    #[arg(long, value_parser = seconds, help_heading = "Server")]
    header_timeout: Option<std::time::Duration>,
    /// Seconds for a client to send its body; past it, 408. [default: 30]
    #[arg(long, value_parser = seconds, help_heading = "Server")]
    body_timeout: Option<std::time::Duration>,
    /// Chunker specs (the server's and requests' overrides) kept built.
    #[arg(long, default_value_t = seamcut::serve::ServeConfig::default().cached_chunkers, help_heading = "Server")]
    cached_chunkers: usize,
    /// Embedding inputs longer than the model's window: truncate or mean.
    #[arg(long, value_enum, default_value_t = LongInput::Truncate, help_heading = "Server")]
    long: LongInput,
    /// Threads for the CPU work and the CPU encoder (0: one per core).
    #[arg(long, short = 'j', default_value_t = 0, help_heading = "Server")]
    threads: usize,
    /// A name the model is served under (repeatable or comma-separated, as in TEI and vLLM):
    /// GET /v1/models lists them, a request's "model" may give any, answers carry the first.
    /// [default: the --model as given]
    #[arg(long, value_name = "NAME", value_delimiter = ',', help_heading = "Server")]
    served_model_name: Vec<String>,
}

/// A positive number of seconds.
#[cfg(feature = "serve")]
fn seconds(s: &str) -> Result<std::time::Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|x| *x > 0.0)
        .and_then(|x| std::time::Duration::try_from_secs_f64(x).ok())
        .ok_or_else(|| format!("{s:?} is not a positive number of seconds"))
}

#[cfg(feature = "serve")]
fn serve(a: &ServeArgs) -> seamcut::Result<()> {
    use seamcut::serve::{Limits, ServeConfig};
    let api_key = match &a.api_key_env {
        None => None,
        Some(name) => match std::env::var(name) {
            Ok(k) if !k.is_empty() => Some(k),
            _ => {
                return Err(seamcut::Error::Config(format!(
                    "--api-key-env {name}: the variable is not set, empty or not UTF-8"
                )))
            }
        },
    };
    seamcut::pipeline::set_threads(a.threads)?;
    let d = Limits::default();
    seamcut::serve::run(ServeConfig {
        spec: a.spec.spec(a.chunker, a.model.as_deref())?,
        host: a.host.clone(),
        port: a.port,
        api_key,
        limits: Limits {
            max_concurrent_requests: a.max_concurrent_requests,
            max_body_bytes: a.max_body_bytes,
            max_inputs: a.max_inputs,
            request_timeout: a.request_timeout.unwrap_or(d.request_timeout),
            header_timeout: a.header_timeout.unwrap_or(d.header_timeout),
            body_timeout: a.body_timeout.unwrap_or(d.body_timeout),
        },
        max_batch_tokens: a.max_batch_tokens,
        cached_chunkers: a.cached_chunkers,
        long: a.long,
        served_model_names: served_names(&a.served_model_name)?,
    })
}

/// `--served-model-name`s, each non-empty, in order, without repeats.
#[cfg(feature = "serve")]
fn served_names(given: &[String]) -> seamcut::Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for n in given.iter().map(|n| n.trim()) {
        if n.is_empty() {
            return Err(seamcut::Error::Config("--served-model-name: a name is empty".into()));
        }
        if !names.iter().any(|m| m == n) {
            names.push(n.to_string());
        }
    }
    Ok(names)
}

#[derive(Subcommand)]
enum EvalCommand {
    /// Score chunkers on topic shifts built from source texts (Pk, WindowDiff, F1, AMI).
    ///
    /// A Choi-style topic-shift benchmark: documents of 3–11-sentence runs from different
    /// source texts (the INPUTs); Pk, WindowDiff, boundary F1 (±1 sentence) and AMI of each
    /// chunker against the true boundaries, as a table. --hard-thr-sweep calibrates Max–Min.
    #[command(after_help = "\
Example:
  benches/fetch-texts.sh /tmp/texts     # Rust book chapters as text (installed with rustup)
  seamcut eval topics /tmp/texts --chunker maxmin --chunker minima --chunker recursive --model all-MiniLM-L6-v2
  seamcut eval topics /tmp/texts --chunker maxmin --hard-thr-sweep 0.3,0.4,0.5,0.6")]
    Topics(Box<TopicsArgs>),
    /// Score chunks by retrieval: DCG@k and Recall@k on questions over their documents.
    ///
    /// DCG@k and Recall@k (k = 1, 2, 5, 10, 20) of a document's chunks on questions, by the
    /// GutenQA protocol: chunks and questions embedded with --model, chunks ranked by cosine,
    /// a hit is the first chunk containing the question's `must_contain` text.
    #[command(after_help = "\
Questions: JSONL {\"question\", \"must_contain\"}. Chunks: any JSONL with a \"text\" field (other tools'
chunks too), or --chunker NAME (repeatable) with --document to chunk and score in one go.

Examples:
  seamcut eval retrieval --questions q.jsonl --model all-MiniLM-L6-v2 --chunks chunks.jsonl
  seamcut eval retrieval --questions q.jsonl --document book.txt --chunker recursive --chunker maxmin")]
    Retrieval(Box<RetrievalArgs>),
    /// Score chunk boundaries against reference boundaries (Pk, WindowDiff, F1, AMI).
    ///
    /// Pk, WindowDiff, boundary precision/recall/F1 and AMI of chunk boundaries against
    /// reference boundaries, on the sentences of the documents (the units `seamcut segment`
    /// prints). Both files are chunk JSONL (`doc_id`, `start`; seamcut's own output works).
    #[command(after_help = "\
Example:
  seamcut chunk docs/ --chunker maxmin -o hyp.jsonl
  seamcut eval segmentation --reference ref.jsonl --hypothesis hyp.jsonl docs/")]
    Segmentation {
        #[command(flatten)]
        input: InputArgs,
        /// Reference chunks (JSONL with doc_id and start).
        #[arg(long)]
        reference: PathBuf,
        /// Chunks to score (JSONL with doc_id and start).
        #[arg(long)]
        hypothesis: PathBuf,
        /// Boundaries this many sentences apart still match (precision/recall/F1).
        #[arg(long, default_value_t = 1)]
        tolerance: usize,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Chunk a corpus end to end and report its throughput, stage by stage.
    ///
    /// Chunk a corpus (the INPUTs, or --generate MB of synthetic prose) end to end and report
    /// MB/s, documents/s, units/s, tokens/s, busy time per stage and peak RSS, as a table
    /// and (with --json) one JSON object. Output is serialised and dropped unless -o is given.
    #[command(after_help = "\
Examples:
  seamcut bench chunk --generate 200 --chunker maxmin
  seamcut bench chunk corpus/ --chunker maxmin --model all-MiniLM-L6-v2 --json")]
    Chunk(Box<BenchChunkArgs>),
    /// Time embedding the lines of a file, run after run; one JSON object per run.
    ///
    /// The lines are embedded --runs times after one warm-up run.
    Embed {
        #[command(flatten)]
        model: ModelArgs,
        /// A text file with one text per line.
        #[arg(long)]
        lines: PathBuf,
        /// Timed runs after the warm-up.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Padded tokens per batch.
        #[arg(long, default_value_t = 16_384)]
        batch_tokens: usize,
    },
    /// Time the minima rule's split search (Savitzky–Golay minima, percentile filter) on a
    /// similarity series from a .npy file; compare with chonkie_core (benches/rules_vs_chonkie.py).
    Minima {
        /// A 1-D float32 .npy series.
        #[arg(long)]
        series: PathBuf,
        /// Timed runs.
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
}

/// The spec flags every chunking command shares (the chunker and model are per command).
/// Each is optional: a flag given overrides `--spec FILE`, which overrides the defaults.
#[derive(Args, Clone, Default)]
struct SpecArgs {
    /// A chunker spec (JSON, as seamcut chunk --print-spec writes); flags given override its
    /// fields.
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Hard cap on tokens per chunk (and per unit); 0 means no cap. [default: 256]
    #[arg(long, allow_negative_numbers = true)]
    max_tokens: Option<Cap>,
    /// Merge chunks smaller than this into a neighbour when the cap allows; `auto`: a
    /// quarter of --max-tokens for the embedding chunkers, 0 for the baselines. [default: auto]
    #[arg(long)]
    min_tokens: Option<MinTokens>,
    /// Give each chunk a window reaching this many tokens into each neighbour (whole
    /// sentences where they fit): the text a chunk's own vector is then made from. The chunks
    /// themselves still tile the document. Any chunker. [default: 0]
    #[arg(long)]
    overlap: Option<usize>,
    /// What a token is: `default` (the model's tokenizer; for baselines the default model's),
    /// `chars`, `words`, or a path to a tokenizer.json or a model directory containing one.
    /// [default: default]
    #[arg(long)]
    sizer: Option<SizerSpec>,
    /// Where to compute: auto, cpu, cuda[:N], metal[:N]. [default: auto]
    #[arg(long)]
    device: Option<DeviceSpec>,
    /// Precision of weights and activations: f32, f16, bf16, int8. On the CPU, bf16 and int8
    /// run the encoder's linear products at that width (bf16 on AMX tiles or AVX-512 BF16, an
    /// error on CPUs without either; int8 on any x86-64 CPU, and the CPU only) and everything
    /// else in f32; docs/models.md has what each costs in quality and gains in speed.
    /// [default: f32]
    #[arg(long)]
    dtype: Option<Precision>,
    /// The model's prompt for the documents' texts, by name (its
    /// config_sentence_transformers.json `prompts`). Without it or --prompt: the model's document
    /// prompt where it has one (`document`, `passage`, …), else its default prompt, else none.
    #[arg(long, conflicts_with = "prompt")]
    prompt_name: Option<String>,
    /// A prompt text put in front of every text embedded ("" for none).
    #[arg(long)]
    prompt: Option<String>,
    /// Keep the first N dimensions of every vector, then normalise (Matryoshka models;
    /// sentence-transformers' truncate_dim). [default: all]
    #[arg(long, value_name = "N")]
    dims: Option<usize>,
    /// The units embedding chunkers group: whole paragraphs (sentences where a paragraph is
    /// over the cap), seamcut's sentences, or chonkie's delimiter splitter. [default: paragraphs]
    #[arg(long, value_enum, visible_alias = "splitter")]
    units: Option<UnitKind>,
    /// With --units delimiters: merge segments shorter than this many bytes. [default: 24]
    #[arg(long)]
    min_characters_per_sentence: Option<usize>,
    /// Minima and breakpoints: embed a window as the mean of its unit vectors, or by
    /// re-embedding its text (as chonkie and LangChain do; slower). [default: mean]
    #[arg(long, value_enum)]
    window: Option<WindowMode>,
    /// Embedding chunkers' unit vectors: each unit embedded on its own, or pooled from the
    /// late pass over its whole document (which then also gives late chunk vectors, from the
    /// same pass). [default: independent]
    #[arg(long, value_enum)]
    unit_vectors: Option<seamcut::spec::UnitVectors>,
    /// The late pass's window in content tokens, or `auto` (the model's measured default for
    /// the cap: all-MiniLM-L6-v2 reads 126 every 63 above --max-tokens 128). [default: auto]
    #[arg(long)]
    late_window: Option<seamcut::spec::LateTokens>,
    /// Tokens between late windows' starts, or `auto` (half the window, or the model's
    /// measured default). [default: auto]
    #[arg(long)]
    late_stride: Option<seamcut::spec::LateTokens>,
    /// Where late windows go: `grid` (every --late-stride tokens) or `centred` (each chunk, or
    /// a run of small ones, in the middle of its window). [default: grid]
    #[arg(long, value_enum)]
    late_placement: Option<seamcut::spec::LatePlacement>,
    /// A document whose model pass (an embedding model's, or an LLM's requests) fails:
    /// `auto` chunks it by sentence packing (counted and listed), except that an LLM server
    /// that cannot be reached at all stops the run; `sentence` always falls back; `fail`
    /// makes it an error (a corpus job skips the document or stops). [default: auto]
    #[arg(long, value_enum)]
    on_model_error: Option<ModelErrorPolicy>,
    /// Max–Min: hard threshold, a number or `auto`: the value calibrated for the model
    /// (models/catalog.json, matched by the weights' fingerprint; with --unit-vectors late,
    /// the value calibrated for late units where there is one), else the paper's 0.6.
    #[arg(long, help_heading = "Max–Min (Kiss et al. 2025)")]
    hard_thr: Option<HardThr>,
    /// Max–Min: c, the factor on the chunk's minimum pairwise similarity. [default: 0.9]
    #[arg(long = "c", help_heading = "Max–Min (Kiss et al. 2025)")]
    c: Option<f64>,
    /// Max–Min: init_const, the factor on a one-unit chunk's similarity. [default: 1.5]
    #[arg(long, help_heading = "Max–Min (Kiss et al. 2025)")]
    init_const: Option<f64>,
    /// Minima: percentile (0..1) of candidate minima kept as splits. [default: 0.8]
    #[arg(long, help_heading = "Minima (chonkie SemanticChunker)")]
    threshold: Option<f64>,
    /// Minima: units in the window compared with the next unit. [default: 3]
    #[arg(long, help_heading = "Minima (chonkie SemanticChunker)")]
    similarity_window: Option<usize>,
    /// Minima: minimum distance between splits, in units. [default: 1]
    #[arg(long, help_heading = "Minima (chonkie SemanticChunker)")]
    min_sentences: Option<usize>,
    /// Minima: Savitzky–Golay window, odd. [default: 5]
    #[arg(long, help_heading = "Minima (chonkie SemanticChunker)")]
    filter_window: Option<usize>,
    /// Minima: Savitzky–Golay polynomial order. [default: 3]
    #[arg(long, help_heading = "Minima (chonkie SemanticChunker)")]
    filter_polyorder: Option<usize>,
    /// Minima: tolerance on the smoothed first derivative. [default: 0.2]
    #[arg(long, help_heading = "Minima (chonkie SemanticChunker)")]
    filter_tolerance: Option<f64>,
    /// Minima: merge groups within this many groups when similar (0: off). [default: 0]
    #[arg(long, help_heading = "Minima (chonkie SemanticChunker)")]
    skip_window: Option<usize>,
    /// Breakpoints: threshold type. [default: percentile]
    #[arg(long, value_enum, help_heading = "Breakpoints (LangChain SemanticChunker)")]
    breakpoint_type: Option<ThresholdType>,
    /// Breakpoints: threshold amount (LangChain: 95 percentile, 3 std, 1.5 IQR, 95 gradient).
    #[arg(long, help_heading = "Breakpoints (LangChain SemanticChunker)")]
    breakpoint_amount: Option<f64>,
    /// Breakpoints: aim for this many chunks instead of a threshold.
    #[arg(long, help_heading = "Breakpoints (LangChain SemanticChunker)")]
    number_of_chunks: Option<usize>,
    /// Breakpoints: neighbours on each side combined with a unit. [default: 1]
    #[arg(long, help_heading = "Breakpoints (LangChain SemanticChunker)")]
    buffer_size: Option<usize>,
    /// Breakpoints: skip breakpoints closing a chunk shorter than this many characters.
    #[arg(long, help_heading = "Breakpoints (LangChain SemanticChunker)")]
    min_chunk_chars: Option<usize>,
    /// Global: the mean chunk size to aim for, tokens, or `auto` (3/4 of the cap).
    #[arg(long, help_heading = "Global (dynamic programming)")]
    target_tokens: Option<TargetTokens>,
    /// Global: weight of the size prior, each chunk paying weight·((t−T)/T)² for t tokens
    /// against the target T (0: none). [default: 0]
    #[arg(long, help_heading = "Global (dynamic programming)")]
    size_weight: Option<f64>,
    /// Global: weight of each cut's TextTiling depth score (block cosines either side of the
    /// seam against the nearest peaks; 0: none). [default: 0]
    #[arg(long, help_heading = "Global (dynamic programming)")]
    depth_weight: Option<f64>,
    /// Global: units per block on each side of a seam for its depth score. [default: 2]
    #[arg(long, help_heading = "Global (dynamic programming)")]
    block: Option<usize>,
    /// Global: weight of the structure prior, a cut before a heading-like line gaining it and
    /// a cut right after one losing it (0: none). [default: 0]
    #[arg(long, help_heading = "Global (dynamic programming)")]
    heading_weight: Option<f64>,
    /// LLM chunkers: an OpenAI-compatible API's base URL (vLLM, llama.cpp's server, Ollama's
    /// /v1, a hosted API); without it --llm-model is a GGUF file run in-process.
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    llm_url: Option<String>,
    /// LLM chunkers: the model name the server knows, or a GGUF file (without --llm-url).
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    llm_model: Option<String>,
    /// LLM chunkers: the environment variable holding the API key. [default: OPENAI_API_KEY]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    llm_key_env: Option<String>,
    /// LLM chunkers: sampling temperature. [default: 0.1, the paper's]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    llm_temperature: Option<f64>,
    /// LLM chunkers: requests in flight at once (documents run concurrently). [default: 8]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    llm_concurrency: Option<usize>,
    /// LLM chunkers: the answer cache, `auto` (~/.cache/seamcut/llm-answers.jsonl), `none`,
    /// or a file; a rerun or a resumed job replays its answers from it. [default: auto]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    llm_cache: Option<String>,
    /// LLM chunkers: seconds before a request is abandoned and retried. [default: 120]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    llm_timeout: Option<f64>,
    /// LLM chunkers: group size θ in tokens. [default: 550, the paper's]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    theta: Option<usize>,
    /// lumber-guided: seams proposed per θ tokens. [default: 2]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    seam_candidates: Option<usize>,
    /// lumber-guided: θ-sized groups judged per request. [default: 4]
    #[arg(long, help_heading = "LLM chunkers (LumberChunker)")]
    seam_groups: Option<usize>,
}

/// Every spec flag and the spec field it sets, by path: `$flag => $field`. One list, read
/// by [`SpecArgs::spec`] (flags over the file over the defaults) and [`SpecArgs::given`]
/// (which settings a user named, to say when one does nothing).
macro_rules! spec_flags {
    ($m:ident) => {
        $m!(max_tokens => max_tokens, min_tokens => min_tokens, overlap => overlap, sizer => sizer,
            device => device, dtype => dtype, units => units,
            min_characters_per_sentence => min_characters_per_sentence, window => window,
            unit_vectors => unit_vectors, late_window => late_window, late_stride => late_stride,
            late_placement => late_placement,
            on_model_error => on_model_error, hard_thr => maxmin.hard_thr, c => maxmin.c,
            init_const => maxmin.init_const, threshold => minima.threshold,
            similarity_window => minima.similarity_window, min_sentences => minima.min_sentences,
            filter_window => minima.filter_window, filter_polyorder => minima.filter_polyorder,
            filter_tolerance => minima.filter_tolerance, skip_window => minima.skip_window,
            breakpoint_type => breakpoint.kind, buffer_size => breakpoint.buffer_size,
            target_tokens => global.target_tokens, size_weight => global.size_weight,
            depth_weight => global.depth_weight, block => global.block,
            heading_weight => global.heading_weight, llm_url => llm.url, llm_model => llm.model,
            llm_key_env => llm.api_key_env, llm_temperature => llm.temperature,
            llm_concurrency => llm.concurrency, llm_cache => llm.cache, llm_timeout => llm.timeout_s,
            theta => lumber.theta, seam_candidates => lumber.candidates, seam_groups => lumber.groups;
            // Optional in the spec too: set as given.
            breakpoint_amount => breakpoint.amount, number_of_chunks => breakpoint.number_of_chunks,
            min_chunk_chars => breakpoint.min_chunk_chars, prompt_name => prompt_name,
            prompt => prompt, dims => dims)
    };
}

impl SpecArgs {
    /// The spec: `--spec FILE` (or the defaults), then every flag given, then `chunker` and
    /// `model` where the command gives them.
    fn spec(&self, chunker: Option<ChunkerKind>, model: Option<&str>) -> seamcut::Result<ChunkerSpec> {
        let mut s = match &self.spec {
            Some(p) => ChunkerSpec::from_file(p)?,
            None => ChunkerSpec::default(),
        };
        macro_rules! set {
            ($($flag:ident => $($field:ident).+),*; $($opt:ident => $($ofield:ident).+),*) => {
                $(if let Some(v) = self.$flag.clone() { s.$($field).+ = v; })*
                $(if self.$opt.is_some() { s.$($ofield).+ = self.$opt.clone(); })*
            };
        }
        spec_flags!(set);
        if let Some(c) = chunker {
            s.chunker = c;
        }
        if let Some(m) = model {
            s.model = m.to_string();
        }
        Ok(s)
    }

    /// The spec settings (field paths) given as flags.
    fn given(&self) -> Vec<String> {
        let mut out = Vec::new();
        macro_rules! given {
            ($($flag:ident => $($field:ident).+),*; $($opt:ident => $($ofield:ident).+),*) => {
                $(if self.$flag.is_some() { out.push([$(stringify!($field)),+].join(".")); })*
                $(if self.$opt.is_some() { out.push([$(stringify!($ofield)),+].join(".")); })*
            };
        }
        spec_flags!(given);
        out
    }
}

#[derive(Args)]
struct PlotArgs {
    /// The document.
    document: PathBuf,
    /// Chunkers whose cuts to mark (repeatable).
    #[arg(long, required = true, value_enum)]
    chunker: Vec<ChunkerKind>,
    /// The file to write: .svg or .png (repeat for both).
    #[arg(short, long, required = true)]
    output: Vec<PathBuf>,
    /// PNG pixels per SVG unit (the SVG is 1200 wide).
    #[arg(long, default_value_t = 1.5)]
    png_scale: f32,
    /// The model (a catalog name, a model directory, or a hub id). [default: default]
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
}

#[derive(Args)]
struct TopicsArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Documents to build.
    #[arg(long, default_value_t = 50)]
    docs: usize,
    /// Runs (topic segments) per document.
    #[arg(long, default_value_t = 8)]
    runs: usize,
    /// Seed of the documents' random runs (the same seed builds the same benchmark).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Chunkers to score (repeatable).
    #[arg(long, required = true, value_enum)]
    chunker: Vec<ChunkerKind>,
    /// Score Max–Min once per --hard-thr value in this list.
    #[arg(long, value_delimiter = ',')]
    hard_thr_sweep: Vec<f64>,
    /// Give each baseline chunker the cap at which its mean chunk size comes closest to
    /// that of the first embedding chunker listed.
    #[arg(long)]
    match_size: bool,
    /// The embedding chunkers' model. [default: default]
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
}

#[derive(Args)]
struct RetrievalArgs {
    /// Questions, JSONL with "question" and "must_contain"; with several --document, one
    /// --questions per document, in the same order.
    #[arg(long, required = true)]
    questions: Vec<PathBuf>,
    /// The retriever: `bm25` (Okapi, k1 1.5, b 0.75, lower-cased words), or a model that
    /// embeds chunks (cut at its window, as sentence-transformers does) and questions.
    #[arg(long, visible_alias = "retriever", default_value = "default")]
    model: String,
    /// Chunks to score (JSONL with a "text" field).
    #[arg(long, conflicts_with = "chunker")]
    chunks: Option<PathBuf>,
    /// Chunk each --document with these chunkers and score each (repeatable).
    #[arg(long, requires = "document", value_enum)]
    chunker: Vec<ChunkerKind>,
    /// A document to chunk (repeatable; each question ranks only its own document's chunks).
    #[arg(long)]
    document: Vec<PathBuf>,
    /// Give each baseline chunker (fixed, recursive, sentence, paragraph) the cap at which
    /// its mean chunk size comes closest to that of the first embedding chunker listed, so
    /// that they are compared at the same mean chunk size.
    #[arg(long)]
    match_size: bool,
    /// Score Max–Min once per --hard-thr value in this list.
    #[arg(long, value_delimiter = ',')]
    hard_thr_sweep: Vec<f64>,
    /// The embedding chunkers' model. [default: default]
    #[arg(long)]
    chunker_model: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
    /// One JSON object per chunker instead of a table (with each question's hit rank, null
    /// for a miss, for paired comparisons).
    #[arg(long)]
    json: bool,
    /// A dense retriever's chunk vectors: each chunk's `text` embedded on its own, or `late`,
    /// pooled from a pass over the whole document (--late-window, --late-stride).
    #[arg(long, value_enum, default_value_t = seamcut::eval::retrieval::ChunkVectorSource::Text)]
    chunk_vectors: seamcut::eval::retrieval::ChunkVectorSource,
    /// Index each chunk with its context (the document's title and the headings above it) in
    /// front of its text.
    #[arg(long)]
    context: bool,
    /// With --chunks: the chunks' vectors, a float32 .npy with a row per chunk (another tool's
    /// chunk vectors), ranked instead of embedding the chunks' texts.
    #[arg(long, requires = "chunks")]
    vectors: Option<PathBuf>,
    /// The questions' prompt, by name (the model's config_sentence_transformers.json `prompts`).
    /// Without it or --query-prompt: the model's query prompt where it has one (`query`,
    /// `search_query`), else its default prompt, else none.
    #[arg(long, conflicts_with = "query_prompt")]
    query_prompt_name: Option<String>,
    /// A prompt text put in front of every question ("" for none).
    #[arg(long)]
    query_prompt: Option<String>,
}

#[derive(Args)]
struct ModelArgs {
    /// A catalog name (models/catalog.json), a model directory, or a Hugging Face hub id.
    #[arg(long, default_value = "default")]
    model: String,
    /// Where to compute: auto, cpu, cuda[:N], metal[:N].
    #[arg(long, default_value = "auto")]
    device: DeviceSpec,
    /// Precision of weights and activations: f32, f16, bf16, int8 (on the CPU: reduced-precision
    /// linear products, see `seamcut chunk --help`).
    #[arg(long, default_value = "f32")]
    dtype: Precision,
    /// One of the model's prompts, by name (its config_sentence_transformers.json `prompts`),
    /// put in front of every text. [default: the model's default_prompt_name, if any]
    #[arg(long, conflicts_with = "prompt")]
    prompt_name: Option<String>,
    /// A prompt text put in front of every text ("" for none).
    #[arg(long)]
    prompt: Option<String>,
    /// Keep the first N dimensions of every vector, then normalise (Matryoshka models;
    /// sentence-transformers' truncate_dim). [default: all]
    #[arg(long, value_name = "N")]
    dims: Option<usize>,
}

impl ModelArgs {
    /// The model for plain texts: its default prompt unless one is named.
    fn load(&self) -> seamcut::Result<std::sync::Arc<seamcut::models::Model>> {
        ModelSpec {
            model: self.model.clone(),
            device: self.device,
            dtype: self.dtype,
            prompt: PromptChoice::from_settings(self.prompt_name.as_deref(), self.prompt.as_deref())?,
            dims: self.dims,
        }
        .load_for(Role::Plain)
    }
}

#[derive(Args)]
struct EmbedArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// A text file with one text per line (- for stdin).
    #[arg(long)]
    lines: String,
    /// The .npy file to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Padded tokens per batch.
    #[arg(long, default_value_t = 16_384)]
    batch_tokens: usize,
    /// Texts longer than the model's window: truncate (as sentence-transformers does), or
    /// mean (average the vectors of all windows).
    #[arg(long, value_enum, default_value_t = LongInput::Truncate)]
    long: LongInput,
    /// No summary line on stderr.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct DistillArgs {
    /// The teacher: a BERT-family model (catalog name, directory or hub id).
    #[arg(long)]
    teacher: String,
    /// PCA dimensions of the static vectors (the built-in default model has 240).
    #[arg(long, default_value_t = 240)]
    dims: usize,
    /// SIF coefficient for Zipf weighting (0 for none).
    #[arg(long, default_value_t = 1e-4)]
    sif: f64,
    /// Store float32 instead of float16.
    #[arg(long)]
    f32: bool,
    /// Output directory.
    #[arg(short, long)]
    output: PathBuf,
    /// No progress bar on stderr.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct InputArgs {
    /// Files, directories (walked in name order for .txt/.md, .jsonl and .parquet, also
    /// .gz/.zst compressed), or - for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    inputs: Vec<String>,
    /// How to read inputs: auto (by extension), text (a file is a document), jsonl, parquet.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    input_format: InputFormat,
    /// JSONL field / Parquet column holding the document id (missing: FILE:LINE).
    #[arg(long, default_value = "id")]
    id_field: String,
    /// JSONL field / Parquet column holding the document text.
    #[arg(long, default_value = "text")]
    text_field: String,
    /// Replace invalid UTF-8 with U+FFFD (a text file's chunk offsets stay byte offsets into
    /// the file). Without it, a file named as an input is an error and a bad file met in a
    /// directory walk (or a bad JSONL line, Parquet row) is skipped and listed.
    #[arg(long)]
    lossy: bool,
}

impl InputArgs {
    fn read_options(&self) -> ReadOptions {
        ReadOptions {
            format: self.input_format,
            id_field: self.id_field.clone(),
            text_field: self.text_field.clone(),
            meta_fields: Vec::new(),
            lossy: self.lossy,
        }
    }

    fn documents(&self) -> Documents {
        Documents::new(self.inputs.iter().map(|s| Input::parse(s)).collect(), self.read_options())
    }
}

/// How the job runs: threads, batches, errors, progress.
#[derive(Args)]
struct RunArgs {
    /// Threads for the CPU stages and the CPU encoder (0: one per core).
    #[arg(long, short = 'j', default_value_t = 0)]
    threads: usize,
    /// Bytes of documents per batch (the unit of embedding, overlap and commits).
    #[arg(long, default_value_t = seamcut::pipeline::DEFAULT_BATCH_BYTES)]
    batch_bytes: usize,
    /// Batches in flight between two stages.
    #[arg(long, default_value_t = 2)]
    channel_depth: usize,
    /// A document that cannot be read or chunked: skip it (listed in OUT.errors.jsonl beside
    /// the output, or on stderr) or stop the job.
    #[arg(long, value_enum, default_value_t = OnError::Skip)]
    on_error: OnError,
    /// Verify every document's chunk invariants while running.
    #[arg(long)]
    check: bool,
    /// No progress bar and no summary line on stderr.
    #[arg(short, long)]
    quiet: bool,
}

impl RunArgs {
    fn job_options(&self) -> JobOptions {
        use std::io::IsTerminal;
        JobOptions {
            batch_bytes: self.batch_bytes,
            channel_depth: self.channel_depth,
            check: self.check || JobOptions::default().check,
            on_error: self.on_error,
            progress: !self.quiet && std::io::stderr().is_terminal(),
            ..JobOptions::default()
        }
    }
}

#[derive(Args)]
struct ChunkArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Carry this JSONL field / Parquet column into every chunk of its document (repeatable).
    #[arg(long)]
    meta_field: Vec<String>,
    /// The chunking method. [default: sentence]
    #[arg(long, value_enum)]
    chunker: Option<ChunkerKind>,
    /// Embedding chunkers' model: a catalog name (models/catalog.json), a model directory,
    /// or a Hugging Face hub id. [default: default, the static model built into seamcut]
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
    /// Print the spec the flags make (JSON, for --spec) and exit.
    #[arg(long)]
    print_spec: bool,
    /// Write here instead of stdout: .parquet for Parquet, anything else JSONL (.jsonl.gz and
    /// .jsonl.zst compressed as named), or a database table:
    /// postgresql://USER@HOST:PORT/DB?table=NAME (pgvector; the password from $PGPASSWORD),
    /// chroma+http://HOST:PORT/COLLECTION (Chroma; a token from $CHROMA_API_KEY),
    /// milvus://HOST:PORT/COLLECTION (Milvus; a token from $MILVUS_TOKEN), or DIR/NAME.lance
    /// (a LanceDB table, in a build with the lancedb feature).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Database output: after a document's new chunks are written, delete its rows from earlier
    /// runs that this run did not write (in the same transaction).
    #[arg(long, help_heading = "Database output")]
    replace: bool,
    /// Database output: build the vector index (HNSW, cosine distance; LanceDB's IVF-HNSW-SQ)
    /// after the load (Milvus: HNSW in place of its AUTOINDEX).
    #[arg(long, help_heading = "Database output")]
    hnsw: bool,
    /// Database output: the environment variable holding the password (pgvector, when the URL
    /// has none) or token (Chroma, Milvus). [default: PGPASSWORD; CHROMA_API_KEY; MILVUS_TOKEN]
    #[arg(long, value_name = "NAME", help_heading = "Database output")]
    db_password_env: Option<String>,
    /// Continue the interrupted job that was writing -o (same command, same inputs). A finished
    /// output of the same job is left as it is; another job's is refused. Without it, a run
    /// replaces -o once the new output is whole.
    #[arg(long, requires = "output")]
    resume: bool,
    /// Take only the documents whose id hashes to shard I of N; I is 0-based, from 0 to
    /// N−1 (Slurm, with an array of 0-15: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT;
    /// with a 1-based array, $((SLURM_ARRAY_TASK_ID - 1)) as I).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Add each chunk's vector: `mean` of its unit vectors (embedding chunkers, free),
    /// `reembed` its text with --model, `late` (pooled from the token states of a pass over the
    /// whole document: a vector that knows its context; --late-window, --late-stride), or
    /// `auto` (mean if it can, else reembed). Parquet: an `embedding` column; JSONL: OUT.npy.
    #[arg(long, value_enum)]
    embeddings: Option<EmbeddingMode>,
    /// Chunks longer than the model's window under --embeddings reembed: truncate or mean.
    #[arg(long, value_enum, default_value_t = LongInput::Truncate)]
    long: LongInput,
    /// Under --embeddings reembed, embed each chunk's text with its context (the document's
    /// title and the headings above it) in front of it; under blend, the text half is the
    /// mean of the chunk embedded alone and with its context in front.
    #[arg(long)]
    context_prefix: bool,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct BenchChunkArgs {
    /// Files or directories to chunk (none: --generate).
    #[arg(value_name = "INPUT")]
    inputs: Vec<String>,
    /// Megabytes of synthetic prose to chunk when no INPUT is given.
    #[arg(long, default_value_t = 50)]
    generate: u64,
    /// The chunking method.
    #[arg(long, value_enum, default_value = "maxmin")]
    chunker: ChunkerKind,
    /// The model. [default: default]
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
    /// Also compute chunk embeddings.
    #[arg(long, value_enum)]
    embeddings: Option<EmbeddingMode>,
    /// Write the chunks here (JSONL or .parquet) instead of dropping them.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// One JSON object instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct SegmentArgs {
    #[command(flatten)]
    input: InputArgs,
    /// What a token is (as `seamcut chunk --sizer`).
    #[arg(long, default_value = "default")]
    sizer: SizerSpec,
    /// Sentences over this many tokens are cut; 0 means no cap.
    #[arg(long, allow_negative_numbers = true, default_value_t = Cap::new(seamcut::spec::DEFAULT_MAX_TOKENS))]
    max_tokens: Cap,
    /// Write here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// A document that cannot be read (a bad JSONL line or Parquet row, a bad file met in a
    /// directory walk): skip it (listed in OUT.errors.jsonl with -o, else on stderr) or stop.
    #[arg(long, value_enum, default_value_t = OnError::Skip)]
    on_error: OnError,
    /// No summary line on stderr.
    #[arg(short, long)]
    quiet: bool,
}

fn target(output: Option<&PathBuf>, resume: bool) -> seamcut::Result<Target> {
    Ok(match output {
        Some(p) => Target::File { path: p.clone(), format: OutputFormat::for_path(p)?, resume },
        None => Target::Stdout,
    })
}

fn run(cli: Cli) -> seamcut::Result<()> {
    match cli.command {
        Command::Chunk(a) => chunk(&a),
        Command::Bench(BenchCommand::Chunk(a)) => bench_chunk(&a),
        Command::Bench(BenchCommand::Embed { model, lines, runs, batch_tokens }) => {
            bench_embed(&model, &lines, runs, batch_tokens)
        }
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve(&a),
        Command::Bench(BenchCommand::Minima { series, runs }) => bench_minima(&series, runs),
        Command::Embed(a) => embed(&a),
        Command::Eval(EvalCommand::Retrieval(a)) => eval_retrieval(&a),
        Command::Eval(EvalCommand::Topics(a)) => eval_topics(&a),
        Command::Eval(EvalCommand::Segmentation { input, reference, hypothesis, tolerance }) => {
            let r = seamcut::eval::segmentation::read_starts(&reference)?;
            let h = seamcut::eval::segmentation::read_starts(&hypothesis)?;
            let (per_doc, mean) =
                seamcut::eval::segmentation::score_corpus(&r, &h, input.documents(), tolerance)?;
            for (id, n, s) in &per_doc {
                println!("{}", serde_json::json!({"doc_id": id, "sentences": n, "scores": s}));
            }
            println!("{}", serde_json::json!({"documents": per_doc.len(), "mean": mean}));
            Ok(())
        }
        Command::Plot(a) => plot(&a),
        Command::Distill(a) => {
            let dir = seamcut::models::resolve(&a.teacher)?;
            let opts = seamcut::distill::DistillOptions {
                dims: a.dims,
                sif: (a.sif > 0.0).then_some(a.sif),
                f16: !a.f32,
                progress: !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
                ..Default::default()
            };
            seamcut::distill::distill(&dir, &a.output, opts)?;
            eprintln!("seamcut: distilled {} into {}", dir.display(), a.output.display());
            Ok(())
        }
        Command::Segment(a) => segment(&a),
    }
}

fn chunk(a: &ChunkArgs) -> seamcut::Result<()> {
    let spec = a.spec.spec(a.chunker, a.model.as_deref())?;
    if a.print_spec {
        println!("{}", spec.to_json());
        return Ok(());
    }
    // A setting the chosen chunker does not read is most likely a mistake: say so.
    let mut given = a.spec.given();
    given.extend(a.model.is_some().then(|| "model".to_string()));
    for setting in given.iter().filter(|g| !spec.reads(g, a.embeddings.is_some())) {
        eprintln!(
            "seamcut: warning: {} does nothing here: the {} chunker does not read {setting}",
            flag(setting),
            spec.chunker
        );
    }
    if a.context_prefix
        && !matches!(a.embeddings, Some(EmbeddingMode::Reembed | EmbeddingMode::Auto | EmbeddingMode::Blend))
    {
        eprintln!("seamcut: warning: --context-prefix does nothing here: it applies to --embeddings reembed and blend");
    }
    seamcut::pipeline::set_threads(a.run.threads)?;
    let mut opts = a.run.job_options();
    opts.shard = a.shard.as_deref().map(Shard::parse).transpose()?;
    opts.embeddings = a.embeddings;
    opts.long = a.long;
    opts.context_prefix = a.context_prefix;
    let database = a.output.as_ref().and_then(|p| p.to_str()).and_then(seamcut::db::DbTarget::parse);
    if database.is_none() {
        for (given, name) in
            [(a.replace, "--replace"), (a.hnsw, "--hnsw"), (a.db_password_env.is_some(), "--db-password-env")]
        {
            if given {
                eprintln!("seamcut: warning: {name} does nothing here: it applies to a database output (-o postgresql://..., chroma+http://..., milvus://... or DIR/NAME.lance)");
            }
        }
    }
    let target = match database {
        Some(t) => Target::Database {
            target: t?,
            opts: seamcut::db::DbOptions {
                replace: a.replace,
                resume: a.resume,
                index: a.hnsw,
                password_env: a.db_password_env.clone(),
                model: String::new(),
                vectors: String::new(),
            },
        },
        None => target(a.output.as_ref(), a.resume)?,
    };
    let job = CorpusJob {
        spec,
        inputs: a.input.inputs.clone(),
        read: ReadOptions { meta_fields: a.meta_field.clone(), ..a.input.read_options() },
        opts,
        target,
    };
    let stats = job.run()?;
    if !a.run.quiet {
        eprintln!("{}", stats.summary("chunk"));
    }
    Ok(())
}

fn bench_chunk(a: &BenchChunkArgs) -> seamcut::Result<()> {
    let spec = a.spec.spec(Some(a.chunker), a.model.as_deref())?;
    seamcut::pipeline::set_threads(a.run.threads)?;
    let mut opts = a.run.job_options();
    opts.embeddings = a.embeddings;
    let job = CorpusJob {
        spec,
        inputs: a.inputs.clone(),
        read: ReadOptions::default(),
        opts,
        target: match &a.output {
            Some(p) => target(Some(p), false)?,
            None => Target::Discard,
        },
    };
    let stats = if a.inputs.is_empty() {
        job.run_on(seamcut::bench::synthetic_corpus(a.generate * 1_000_000, 1))?
    } else {
        job.run()?
    };
    let report = seamcut::bench::Report::new(&stats);
    if a.json {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        println!("{}", report.table());
    }
    Ok(())
}

/// The texts of a lines file (`-`: stdin): the file must be UTF-8 text, and no line empty.
fn read_lines(path: &str) -> seamcut::Result<String> {
    let (shown, bytes) = if path == "-" {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)
            .map_err(|e| seamcut::Error::Io { path: "stdin".into(), source: e })?;
        ("stdin".to_string(), b)
    } else {
        (
            path.to_string(),
            std::fs::read(path).map_err(|e| seamcut::Error::Io { path: path.into(), source: e })?,
        )
    };
    let line_of = |offset: usize| bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
    if let Some(offset) = memchr_nul(&bytes) {
        return Err(seamcut::Error::Record {
            path: shown,
            line: line_of(offset),
            message: format!("a NUL byte at byte {offset}: this looks like a binary file, not lines of text"),
        });
    }
    if let Err(e) = std::str::from_utf8(&bytes) {
        let offset = e.valid_up_to();
        return Err(seamcut::Error::Record {
            path: shown,
            line: line_of(offset),
            message: format!("invalid UTF-8 at byte {offset}: the lines must be UTF-8 text"),
        });
    }
    let text = String::from_utf8(bytes).unwrap_or_default();
    if let Some(i) = text.lines().position(|l| l.trim().is_empty()) {
        return Err(seamcut::Error::Record {
            path: shown,
            line: i + 1,
            message: "an empty line: each line is one text to embed, and an empty one has no vector".into(),
        });
    }
    Ok(text)
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == 0)
}

fn embed(a: &EmbedArgs) -> seamcut::Result<()> {
    let model = a.model.load()?;
    let raw = read_lines(&a.lines)?;
    let texts: Vec<&str> = raw.lines().collect();
    let opts = seamcut::embed::EmbedOptions { batch_tokens: a.batch_tokens, long: a.long };
    let m = model.embedder.as_ref();
    let t0 = std::time::Instant::now();
    let (emb, stats) = seamcut::embed::embed_texts(m, &texts, opts)?;
    let secs = t0.elapsed().as_secs_f64();
    seamcut::npy::write_f32(&a.output, &emb.data, texts.len(), m.dim())?;
    if !a.quiet {
        eprintln!(
            "seamcut: {}, {} in {:.2} s ({:.0} texts/s, {:.0} tokens/s), {}, padding +{:.1}%, {} over the window ({}); model {}",
            plural(stats.texts as u64, "text"),
            plural(stats.tokens as u64, "token"),
            secs,
            stats.texts as f64 / secs.max(1e-9),
            stats.tokens as f64 / secs.max(1e-9),
            plural(stats.batches as u64, "batch"),
            100.0 * stats.padding_overhead(),
            stats.long_texts,
            if a.long == LongInput::Truncate { "truncated" } else { "averaged over windows" },
            m.describe()
        );
    }
    Ok(())
}

fn bench_embed(
    model: &ModelArgs,
    lines: &std::path::Path,
    runs: usize,
    batch_tokens: usize,
) -> seamcut::Result<()> {
    let model = model.load()?;
    let m = model.embedder.as_ref();
    let raw = read_lines(&lines.to_string_lossy())?;
    let texts: Vec<&str> = raw.lines().collect();
    let opts = seamcut::embed::EmbedOptions { batch_tokens, ..Default::default() };
    seamcut::embed::embed_texts(m, &texts, opts)?; // warm-up
    for run in 0..runs {
        let t0 = std::time::Instant::now();
        let (_, st) = seamcut::embed::embed_texts(m, &texts, opts)?;
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "{}",
            serde_json::json!({
                "run": run, "texts": st.texts, "tokens": st.tokens, "seconds": secs,
                "texts_per_s": st.texts as f64 / secs, "tokens_per_s": st.tokens as f64 / secs,
                "padding_overhead": st.padding_overhead(), "batches": st.batches,
                "threads": rayon::current_num_threads(), "model": m.describe(),
            })
        );
    }
    Ok(())
}

fn bench_minima(series: &std::path::Path, runs: usize) -> seamcut::Result<()> {
    let (data, rows, cols) = seamcut::npy::read_f32(series)?;
    let sims: Vec<f64> = data.iter().map(|&x| f64::from(x)).collect();
    let p = seamcut::rules::minima::MinimaParams::default();
    let n = rows * cols + p.similarity_window;
    for run in 0..runs {
        let t0 = std::time::Instant::now();
        let starts = seamcut::rules::minima::split_starts(n, &sims, &p);
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "{}",
            serde_json::json!({"run": run, "points": sims.len(), "splits": starts.len() - 1, "seconds": secs})
        );
    }
    Ok(())
}

fn segment(a: &SegmentArgs) -> seamcut::Result<()> {
    let sizer = a.sizer.build()?;
    let sink: Box<dyn std::io::Write + Send> = match &a.output {
        Some(p) => {
            Box::new(std::fs::File::create(p).map_err(|e| seamcut::Error::Io { path: p.clone(), source: e })?)
        }
        None => Box::new(std::io::stdout()),
    };
    let mut w = JsonlWriter::new(sink);
    let mut errors = match &a.output {
        Some(p) => {
            let path = seamcut::pipeline::commit::errors_path(p);
            let f = std::fs::File::create(&path)
                .map_err(|e| seamcut::Error::Io { path: path.clone(), source: e })?;
            Some((path, JsonlWriter::new(Box::new(f))))
        }
        None => None,
    };
    let stats = segment_corpus(
        a.input.documents(),
        sizer.as_ref(),
        a.max_tokens,
        &mut w,
        a.on_error,
        errors.as_mut().map(|(_, w)| w),
    )?;
    // No errors file for a clean run.
    if let Some((path, _)) = errors.filter(|_| stats.totals.skipped_total() == 0) {
        let _ = std::fs::remove_file(path);
    }
    if !a.quiet {
        eprintln!("{}", stats.summary("sentence"));
    }
    Ok(())
}

/// The flag that sets a spec or job setting named in a library error
/// ([`seamcut::Error::Setting`]): the library names settings, the CLI names its flags.
fn flag(setting: &str) -> String {
    let named = match setting {
        "meta_fields" => "--meta-field",
        "lumber" => "--theta, --seam-candidates or --seam-groups",
        "lumber.candidates" => "--seam-candidates",
        "lumber.groups" => "--seam-groups",
        "llm" => "--llm-temperature or --llm-timeout",
        "llm.api_key_env" => "--llm-key-env",
        "llm.timeout_s" => "--llm-timeout",
        "breakpoint.kind" | "breakpoint.type" => "--breakpoint-type",
        "breakpoint.amount" => "--breakpoint-amount",
        "breakpoint.min_chunk_chars" => "--min-chunk-chars",
        "questions" => "--questions",
        "output" => "-o",
        _ => "",
    };
    if !named.is_empty() {
        return named.to_string();
    }
    let (group, field) = setting.split_once('.').unwrap_or(("", setting));
    let prefix = if group == "llm" { "llm-" } else { "" };
    format!("--{prefix}{}", field.replace('_', "-"))
}

/// Transparent huge pages off for this process, unless `MIMALLOC_ALLOW_THP` says otherwise
/// (what the variable does for mimalloc itself, which reads it before `main`). mimalloc asks
/// for huge pages on its arenas, and where the machine's memory is fragmented (right after
/// another large process exits, or on a busy host) a huge-page fault can stall in direct
/// compaction. Measured on 2 cores (benches/RESULTS.md): a 20 MB corpus 0.91–0.99 → 0.74–0.78 s,
/// MiniLM on 150 kB 7.9–8.0 → 7.6–7.95 s, the 3.67 MB novel right after a Chonkie run
/// 0.21–0.28 → 0.16–0.17 s; peak RSS lower in each.
fn huge_pages_off() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: prctl with PR_SET_THP_DISABLE takes integer arguments only and changes no
        // memory; a failure (an old kernel) leaves the default, which is harmless.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}

fn main() -> ExitCode {
    huge_pages_off();
    // Usage errors exit with 2; a value that does not parse is one line, as other errors are
    // (clap adds a pointer to --help on a line of its own).
    let parsed = negatives_as_values(<Cli as clap::CommandFactory>::command())
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            eprintln!("seamcut: error: {}", value_error(&e));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(seamcut::Error::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seamcut: error: {}", e.render(&flag));
            match e {
                seamcut::Error::Config(_) | seamcut::Error::Setting { .. } => ExitCode::from(2),
                _ => ExitCode::from(1),
            }
        }
    }
}

/// Every option that takes a value takes a negative number as that value (`--overlap -3`), so
/// that the value's own check says what is wrong, rather than clap taking `-3` for an unknown
/// flag and suggesting `-- -3`, which would make it an input.
fn negatives_as_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_long().is_some() && a.get_action().takes_values() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(negatives_as_values)
}

/// A value that does not parse, on one line (clap adds a pointer to --help on a line of its
/// own); a negative number where a count is wanted says so, as `--max-tokens -5` does.
fn value_error(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match (text(ContextKind::InvalidArg), text(ContextKind::InvalidValue)) {
        (Some(arg), Some(v)) if v.starts_with('-') && v.parse::<f64>().is_ok() => {
            format!("invalid value '{v}' for '{arg}': is negative: give a number >= 0")
        }
        _ => e.to_string().lines().next().unwrap_or_default().trim_start_matches("error: ").to_string(),
    }
}

fn eval_retrieval(a: &RetrievalArgs) -> seamcut::Result<()> {
    use seamcut::eval::retrieval::{read_jsonl, Question, KS};
    let questions: Vec<Vec<Question>> = a
        .questions
        .iter()
        .map(|p| read_jsonl(p, "a question needs \"question\" and \"must_contain\""))
        .collect::<seamcut::Result<_>>()?;
    let base = a.spec.spec(None, a.chunker_model.as_deref())?;
    // The retriever's model embeds chunks with the documents' prompt (--prompt-name, or the
    // model's document prompt) and questions with the queries' (--query-prompt-name, or its
    // query prompt), cut to the same --dims.
    let dense = match a.model.as_str() {
        "bm25" => None,
        m => {
            let docs = ModelSpec { model: m.to_string(), ..base.model_spec()? };
            let queries = ModelSpec {
                prompt: PromptChoice::from_settings(
                    a.query_prompt_name.as_deref(),
                    a.query_prompt.as_deref(),
                )?,
                ..docs.clone()
            };
            Some((docs.load_for(Role::Document)?, queries.load_for(Role::Query)?))
        }
    };
    let retriever = match (&dense, a.chunk_vectors) {
        (Some((m, q)), seamcut::eval::retrieval::ChunkVectorSource::Text) => {
            seamcut::eval::retrieval::Retriever::Dense(m.embedder.as_ref(), q.embedder.as_ref())
        }
        (Some((m, q)), seamcut::eval::retrieval::ChunkVectorSource::Blend) => {
            seamcut::eval::retrieval::Retriever::DenseBlend(
                &m.embedder,
                q.embedder.as_ref(),
                base.late_options(m)?,
            )
        }
        (Some((m, q)), seamcut::eval::retrieval::ChunkVectorSource::Late) => {
            seamcut::eval::retrieval::Retriever::DenseLate(
                &m.embedder,
                q.embedder.as_ref(),
                base.late_options(m)?,
            )
        }
        (None, _) => seamcut::eval::retrieval::Retriever::Bm25,
    };
    let sizer = base.sizer.build()?;
    let runs: Vec<(String, Option<usize>, seamcut::eval::retrieval::Report)> = if let Some(p) = &a.chunks {
        let report = seamcut::eval::retrieval::evaluate_chunk_file(
            p,
            a.vectors.as_deref(),
            &questions,
            retriever,
            sizer.as_ref(),
        )?;
        vec![(p.display().to_string(), None, report)]
    } else {
        if a.document.is_empty() {
            return Err(seamcut::Error::Config("give --chunks, or --document with --chunker".into()));
        }
        let docs: Vec<String> = a
            .document
            .iter()
            .map(|d| {
                std::fs::read_to_string(d).map_err(|e| seamcut::Error::Io { path: d.clone(), source: e })
            })
            .collect::<seamcut::Result<_>>()?;
        let plan = Plan {
            base,
            chunkers: a.chunker.clone(),
            hard_thr_sweep: a.hard_thr_sweep.clone(),
            match_size: a.match_size,
        };
        seamcut::eval::compare::retrieval(&plan, &docs, &questions, retriever, sizer.as_ref(), a.context)?
            .into_iter()
            .map(|r| (r.label, Some(r.spec.max_tokens.max_tokens()), r.result))
            .collect()
    };
    if !a.json {
        let head: Vec<String> =
            KS.iter().map(|k| format!("DCG@{k}")).chain(KS.iter().map(|k| format!("R@{k}"))).collect();
        println!("retriever: {}", retriever.describe());
        println!(
            "| chunks from | cap | chunks | mean tokens | {} | span R@5 | span P@5 | span IoU@5 |",
            head.join(" | ")
        );
        println!("|---|---|---|---|{}---|---|---|", "---|".repeat(head.len()));
    }
    for (name, cap, r) in runs {
        if a.json {
            let mut o = serde_json::json!({"chunker": name, "cap": cap, "chunks": r.chunks, "mean_tokens": r.mean_tokens,
                "questions": r.questions, "ranks": r.ranks, "span@5": r.span_mean, "spans": r.spans, "retriever": retriever.describe(), "context": a.context});
            for (k, d, rec) in &r.scores {
                o[format!("DCG@{k}")] = serde_json::json!(d);
                o[format!("R@{k}")] = serde_json::json!(rec);
            }
            println!("{o}");
        } else {
            let cells: Vec<String> = r
                .scores
                .iter()
                .map(|x| format!("{:.2}", x.1))
                .chain(r.scores.iter().map(|x| format!("{:.2}", x.2)))
                .collect();
            let cap = cap.map_or("-".to_string(), |c| c.to_string());
            let span = r.span_mean.map_or("- | - | -".to_string(), |s| {
                format!("{:.1} | {:.1} | {:.1}", s.recall, s.precision, s.iou)
            });
            println!(
                "| {name} | {cap} | {} | {:.1} | {} | {span} |",
                r.chunks,
                r.mean_tokens,
                cells.join(" | ")
            );
        }
    }
    Ok(())
}

fn plot(a: &PlotArgs) -> seamcut::Result<()> {
    // Check the output names before the work.
    let png: Vec<bool> = a
        .output
        .iter()
        .map(|out| match out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(false),
            Some("png") => Ok(true),
            _ => {
                Err(seamcut::Error::Config(format!("{}: the plot is written as .svg or .png", out.display())))
            }
        })
        .collect::<seamcut::Result<_>>()?;
    let text = std::fs::read_to_string(&a.document)
        .map_err(|e| seamcut::Error::Io { path: a.document.clone(), source: e })?;
    let base = a.spec.spec(None, a.model.as_deref())?;
    let specs: Vec<ChunkerSpec> =
        a.chunker.iter().map(|&c| ChunkerSpec { chunker: c, ..base.clone() }).collect();
    let (svg, cuts) = seamcut::plot::document(&a.document.display().to_string(), &text, &base, &specs)?;
    for (out, png) in a.output.iter().zip(png) {
        let bytes = if png { seamcut::plot::png(&svg, a.png_scale)? } else { svg.clone().into_bytes() };
        std::fs::write(out, bytes).map_err(|e| seamcut::Error::Io { path: out.clone(), source: e })?;
    }
    for c in &cuts {
        eprintln!("seamcut: {}: {}", c.name, plural(c.starts.len().saturating_sub(1) as u64, "cut"));
    }
    Ok(())
}

fn eval_topics(a: &TopicsArgs) -> seamcut::Result<()> {
    let sources: Vec<String> =
        a.input.documents().map(|d| d.map(|d| d.text)).collect::<seamcut::Result<_>>()?;
    let docs = seamcut::eval::topics::generate(&sources, a.docs, a.runs, a.seed);
    if docs.is_empty() {
        return Err(seamcut::Error::Config(
            "need at least two source texts with 11 or more sentences".into(),
        ));
    }
    let base = a.spec.spec(None, a.model.as_deref())?;
    let sentences: usize = docs.iter().map(|d| d.sentence_starts.len()).sum();
    println!(
        "{}, {}, {} each, from {}; model {}",
        plural(docs.len() as u64, "document"),
        plural(sentences as u64, "sentence"),
        plural(a.runs as u64, "run"),
        plural(sources.len() as u64, "source"),
        base.model
    );
    println!("| chunker | cap | chunks/doc | mean tokens | Pk | WindowDiff | F1 (±1) | AMI |");
    println!("|---|---|---|---|---|---|---|---|");
    let plan = Plan {
        base,
        chunkers: a.chunker.clone(),
        hard_thr_sweep: a.hard_thr_sweep.clone(),
        match_size: a.match_size,
    };
    for r in seamcut::eval::compare::topics(&plan, &docs)? {
        let s = r.result;
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.3} | {:.3} | {:.3} | {:.3} |",
            r.label,
            r.spec.max_tokens.max_tokens(),
            s.chunks_per_doc,
            s.mean_tokens,
            s.pk,
            s.window_diff,
            s.f1,
            s.ami
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Settings of a chunker spec that have no flag (set them with `--spec FILE`).
    const SPEC_ONLY: &[&str] = &[
        "chunker",
        "device_bands",
        "lumber.attempts",
        "lumber.context_words",
        "llm.max_tokens",
        "llm.retries",
        "llm.backoff_ms",
        "llm.seed",
    ];

    fn leaves(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v.as_object() {
            Some(o) => {
                for (k, v) in o {
                    let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    leaves(&path, v, out);
                }
            }
            None => out.push(prefix.to_string()),
        }
    }

    /// Every command and subcommand, with its path (`eval retrieval`).
    fn commands(c: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        for sub in c.get_subcommands().filter(|s| s.get_name() != "help") {
            let p = format!("{path} {}", sub.get_name()).trim().to_string();
            out.push((p.clone(), sub.clone()));
            commands(sub, &p, out);
        }
    }

    #[test]
    fn help_is_written_for_users_and_names_only_the_commands_own_flags() {
        let mut all = Vec::new();
        commands(&Cli::command(), "", &mut all);
        assert!(all.len() >= 12, "{}", all.len());
        for (path, mut c) in all {
            let help = c.render_long_help().to_string();
            // Rustdoc's link syntax and module paths are for the library's docs, not a terminal.
            for bad in ["[`", "`]", "crate::", "Self::", "super::"] {
                assert!(!help.contains(bad), "seamcut {path} --help shows {bad:?}:\n{help}");
            }
            let longs: Vec<String> = c
                .get_arguments()
                .flat_map(|a| {
                    let mut v: Vec<String> = a.get_long().into_iter().map(|l| format!("--{l}")).collect();
                    v.extend(a.get_all_aliases().unwrap_or_default().into_iter().map(|l| format!("--{l}")));
                    v
                })
                .chain(["--help".to_string(), "--version".to_string()])
                .collect();
            // Every flag the help mentions (in the text and the examples) is one of its own,
            // except where it names another command's (`seamcut chunk --print-spec`).
            for line in help.lines() {
                let t = line.trim_start();
                if t.starts_with("benches/") || t.starts_with("cat ") || t.starts_with("echo ") {
                    continue;
                }
                let mut own = String::new();
                for (i, part) in t.split("seamcut ").enumerate() {
                    if i == 0 || part.starts_with(&path) {
                        own.push_str(part);
                        own.push(' ');
                    }
                }
                for w in own.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
                    if w.starts_with("--") && w.len() > 2 && w.as_bytes()[2].is_ascii_alphabetic() {
                        assert!(
                            longs.iter().any(|l| l == w),
                            "seamcut {path} --help mentions {w}, which it does not take:\n{line}"
                        );
                    }
                }
            }
            // Every argument says what it is for.
            for a in c.get_arguments().filter(|a| !["help", "version"].contains(&a.get_id().as_str())) {
                assert!(
                    a.get_help().is_some() || a.get_long_help().is_some(),
                    "seamcut {path}: {} has no description",
                    a.get_id()
                );
            }
        }
    }

    #[test]
    fn every_spec_setting_has_the_flag_errors_name_and_the_list_sets_it() {
        let mut settings = Vec::new();
        leaves("", &serde_json::to_value(ChunkerSpec::default()).unwrap(), &mut settings);
        // The one list of flag → field covers every setting with a flag ...
        let cli = Cli::command();
        let chunk = cli.find_subcommand("chunk").unwrap();
        let longs: Vec<String> =
            chunk.get_arguments().filter_map(|a| a.get_long()).map(|l| format!("--{l}")).collect();
        let args = SpecArgs::default();
        let mut listed = args.given();
        assert!(listed.is_empty());
        macro_rules! all {
            ($($flag:ident => $($field:ident).+),*; $($opt:ident => $($ofield:ident).+),*) => {
                $(listed.push([$(stringify!($field)),+].join("."));)*
                $(listed.push([$(stringify!($ofield)),+].join("."));)*
            };
        }
        spec_flags!(all);
        for s in &settings {
            let s = s.replace("breakpoint.type", "breakpoint.kind");
            if SPEC_ONLY.contains(&s.as_str()) || s == "model" {
                continue;
            }
            assert!(listed.contains(&s), "{s} has no flag in spec_flags!");
            // ... and the flag an error about it names is a real one.
            assert!(longs.contains(&flag(&s)), "{s}: {} is not a flag of seamcut chunk", flag(&s));
        }
        assert!(longs.contains(&flag("model")) && longs.contains(&flag("meta_fields")));
    }
}
