//! The `seamcut` command line: a thin layer over the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use seamcut::chunkers::{build, ChunkOptions, ChunkerKind};
use seamcut::corpus::{Documents, Input, InputFormat, ReadOptions};
use seamcut::output::JsonlWriter;
use seamcut::pipeline::{chunk_corpus, segment_corpus, JobOptions};
use seamcut::sizer::SizerSpec;

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
    /// Chunk documents and write one JSON object per chunk.
    #[command(after_help = "\
Output, one JSON object per line:
  {\"doc_id\", \"index\", \"start\", \"end\", \"text\", \"tokens\", \"sentences\"}
start/end are byte offsets into the document's UTF-8 text; the chunks of a document cover it
exactly (each chunk keeps the whitespace after it), so joining their texts gives it back.

Examples:
  seamcut chunk book.txt
  seamcut chunk corpus/ --chunker recursive --max-tokens 256 -o chunks.jsonl
  seamcut chunk data.jsonl --input-format jsonl --id-field doc --text-field body
  cat notes.md | seamcut chunk - --chunker paragraph --min-tokens 32
  seamcut chunk book.txt --chunker fixed --max-tokens 128 --overlap 16 --sizer words")]
    Chunk(ChunkArgs),
    /// Print the sentences the engine will use, one JSON object per sentence.
    #[command(after_help = "\
Output, one JSON object per line: {\"doc_id\", \"index\", \"start\", \"end\", \"text\"}
(trimmed sentences; a sentence over --max-tokens is printed as the pieces it is cut into).

Examples:
  seamcut segment book.txt
  echo 'Dr. Smith arrived. He sat down.' | seamcut segment -")]
    Segment(SegmentArgs),
}

#[derive(Args)]
struct InputArgs {
    /// Files, directories (walked for .txt/.md, or .jsonl with --input-format jsonl), or - for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    inputs: Vec<String>,
    /// How to read inputs.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    input_format: Format,
    /// JSONL field holding the document id (missing: FILE:LINE).
    #[arg(long, default_value = "id")]
    id_field: String,
    /// JSONL field holding the document text.
    #[arg(long, default_value = "text")]
    text_field: String,
    /// Replace invalid UTF-8 with U+FFFD instead of stopping with an error.
    #[arg(long)]
    lossy: bool,
    /// What a token is: `default` (the default model's tokenizer), `chars`, `words`, or a
    /// path to a tokenizer.json or a model directory containing one.
    #[arg(long, default_value = "default")]
    sizer: String,
    /// Hard cap on tokens per chunk (and per sentence); 0 means no cap.
    #[arg(long, default_value_t = 512)]
    max_tokens: usize,
    /// Write here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// No summary line on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// Verify every document's chunk invariants while running.
    #[arg(long)]
    check: bool,
}

#[derive(Args)]
struct ChunkArgs {
    #[command(flatten)]
    input: InputArgs,
    /// The chunking method.
    #[arg(long, value_enum, default_value_t = ChunkerName::Sentence)]
    chunker: ChunkerName,
    /// Merge chunks smaller than this into a neighbour when the cap allows.
    #[arg(long, default_value_t = 0)]
    min_tokens: usize,
    /// Tokens shared by consecutive chunks (fixed chunker only).
    #[arg(long, default_value_t = 0)]
    overlap: usize,
}

#[derive(Args)]
struct SegmentArgs {
    #[command(flatten)]
    input: InputArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Jsonl,
}

#[derive(Clone, Copy, ValueEnum)]
enum ChunkerName {
    /// Fixed token windows (with optional --overlap).
    Fixed,
    /// Recursive separators: paragraph, line, sentence, word, token.
    Recursive,
    /// Sentences packed up to --max-tokens.
    Sentence,
    /// One chunk per paragraph, split by sentences when over the cap.
    Paragraph,
}

impl From<ChunkerName> for ChunkerKind {
    fn from(c: ChunkerName) -> Self {
        match c {
            ChunkerName::Fixed => Self::Fixed,
            ChunkerName::Recursive => Self::Recursive,
            ChunkerName::Sentence => Self::Sentence,
            ChunkerName::Paragraph => Self::Paragraph,
        }
    }
}

impl InputArgs {
    fn documents(&self) -> Documents {
        let opts = ReadOptions {
            format: match self.input_format {
                Format::Text => InputFormat::Text,
                Format::Jsonl => InputFormat::Jsonl,
            },
            id_field: self.id_field.clone(),
            text_field: self.text_field.clone(),
            lossy: self.lossy,
        };
        Documents::new(self.inputs.iter().map(|s| Input::parse(s)).collect(), opts)
    }

    fn writer(&self) -> seamcut::Result<JsonlWriter> {
        let sink: Box<dyn Write + Send> = match &self.output {
            Some(p) => Box::new(
                std::fs::File::create(p).map_err(|e| seamcut::Error::Io { path: p.clone(), source: e })?,
            ),
            None => Box::new(std::io::stdout()),
        };
        Ok(JsonlWriter::new(sink))
    }

    fn job(&self) -> JobOptions {
        JobOptions { check: self.check || JobOptions::default().check, ..JobOptions::default() }
    }

    fn cap(&self) -> usize {
        if self.max_tokens == 0 {
            usize::MAX
        } else {
            self.max_tokens
        }
    }
}

fn run(cli: Cli) -> seamcut::Result<()> {
    match cli.command {
        Command::Chunk(a) => {
            let sizer = SizerSpec::parse(&a.input.sizer).build()?;
            let opts =
                ChunkOptions::new(a.input.max_tokens).with_min_tokens(a.min_tokens).with_overlap(a.overlap);
            let chunker = build(a.chunker.into(), sizer, opts)?;
            let mut w = a.input.writer()?;
            let stats =
                chunk_corpus(a.input.documents(), chunker.as_ref(), a.input.cap(), &mut w, a.input.job())?;
            if !a.input.quiet {
                eprintln!("{}", stats.summary("chunks"));
            }
        }
        Command::Segment(a) => {
            let sizer = SizerSpec::parse(&a.input.sizer).build()?;
            let mut w = a.input.writer()?;
            let stats =
                segment_corpus(a.input.documents(), sizer.as_ref(), a.input.cap(), &mut w, a.input.job())?;
            if !a.input.quiet {
                eprintln!("{}", stats.summary("sentences"));
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse(); // usage errors exit with 2
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(seamcut::Error::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seamcut: error: {e}");
            match e {
                seamcut::Error::Config(_) => ExitCode::from(2),
                _ => ExitCode::from(1),
            }
        }
    }
}
