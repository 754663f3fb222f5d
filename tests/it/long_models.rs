//! Parity of the long-context architectures with transformers and sentence-transformers, on the
//! random-weight fixtures of `tests/fixtures/gen_long_models.py` (`tests/fixtures/models/ARCH`):
//! the ids of each text (special tokens, truncation at the window), the last hidden states of the
//! short texts' tokens computed in one flat batch with a 4,000-token text and one truncated at the
//! 4,608-token window, and the pooled vectors of every text (sentence-transformers pads the
//! short ones and the 4,000-token one into one batch).
//!
//! The fixtures' weights are random: these tests check the arithmetic, not any model's quality.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};

use seamcut::device::Compute;
use seamcut::embed::{embed_texts, EmbedOptions, FlatBatch};
use seamcut::models::load_dir;

fn dir(arch: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models").join(arch)
}

struct Expected {
    texts: Vec<String>,
    ids: Vec<Vec<u32>>,
    /// The texts whose token states `tokens.npy` holds, in order.
    states_of: Vec<usize>,
}

fn expected(arch: &str) -> Expected {
    let text = std::fs::read_to_string(dir(arch).join("expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["random_weights"], true);
    let texts = v["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
    let ids = v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect())
        .collect();
    let states_of = v["states_of"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as usize).collect();
    Expected { texts, ids, states_of }
}

fn cos(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// The worst cosine between the rows of two `rows × cols` matrices, and its row.
fn worst(a: &[f32], b: &[f32], cols: usize) -> (f64, usize) {
    assert_eq!(a.len(), b.len());
    a.chunks(cols)
        .zip(b.chunks(cols))
        .map(|(x, y)| cos(x, y))
        .enumerate()
        .fold((1.0f64, 0usize), |w, (i, c)| if c < w.0 { (c, i) } else { w })
}

/// Ids, token states and pooled vectors of `arch`'s fixture against the references; returns the
/// worst cosines (token states, pooled vectors).
fn check(arch: &str) -> (f64, f64) {
    check_dir(arch, &dir(arch), true)
}

/// [`check_with`] in f32 on the CPU, cosine ≥ 0.9999.
fn check_dir(arch: &str, model_dir: &Path, long: bool) -> (f64, f64) {
    check_with(arch, model_dir, long, &Compute::cpu(), 0.9999)
}

/// [`check`] with the model loaded from `model_dir` (a copy of `arch`'s fixture, say) onto
/// `compute`, every cosine at least `min_cos`; with `long` false, of the texts whose token
/// states the reference holds only (a few hundred tokens at most: the long ones cost most of a
/// debug build's time).
fn check_with(arch: &str, model_dir: &Path, long: bool, compute: &Compute, min_cos: f64) -> (f64, f64) {
    let model = load_dir(model_dir, compute).unwrap();
    let mut e = expected(arch);
    assert!(e.ids.iter().any(|s| s.len() > 4000), "{arch}: no text over 4,000 tokens");
    let (want_pooled, _, dim) = seamcut::npy::read_f32(&dir(arch).join("pooled.npy")).unwrap();
    let mut want_pooled: Vec<&[f32]> = want_pooled.chunks(dim).collect();
    if !long {
        let keep = |i: usize| e.states_of.contains(&i);
        e.texts = e.texts.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, t)| t.clone()).collect();
        e.ids = e.ids.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, t)| t.clone()).collect();
        want_pooled = want_pooled.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, v)| *v).collect();
        e.states_of = (0..e.texts.len()).collect();
    }

    // Ids: the tokenizer's content ids, truncated on the right to the window, inside the special
    // tokens, as sentence-transformers tokenizes.
    let (pre, post) = model.special_ids();
    let window = model.max_tokens().unwrap() - pre.len() - post.len();
    for (t, want) in e.texts.iter().zip(&e.ids) {
        let mut ids = model.content_ids(t);
        ids.truncate(window);
        let got: Vec<u32> = pre.iter().chain(&ids).chain(post).copied().collect();
        assert_eq!(&got, want, "{arch}: ids of {t:?}");
    }

    // Token states of the texts in one flat batch (mixed lengths: the 4,000-token text among
    // them, not the one cut at the window), against each text run alone; the reference holds
    // those of the texts up to a few hundred tokens.
    let mut batch = FlatBatch::default();
    for s in &e.ids[..e.ids.len() - usize::from(long)] {
        batch.push(s);
    }
    let states = model.token_states(&batch).unwrap();
    let (n, h) = states.dims2().unwrap();
    assert_eq!((n, h), (batch.ids.len(), model.dim()));
    let all =
        states.to_dtype(candle_core::DType::F32).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let got: Vec<f32> = e
        .states_of
        .iter()
        .flat_map(|&i| &all[batch.cu_seqlens[i] * h..batch.cu_seqlens[i + 1] * h])
        .copied()
        .collect();
    let (want, rows, cols) = seamcut::npy::read_f32(&dir(arch).join("tokens.npy")).unwrap();
    assert_eq!((rows, cols), (got.len() / h, h));
    let (tok_cos, at) = worst(&got, &want, h);
    assert!(tok_cos >= min_cos, "{arch}: token {at}: cosine {tok_cos}");

    // Pooled vectors through the embedding driver, against sentence-transformers' one padded batch.
    let refs: Vec<&str> = e.texts.iter().map(String::as_str).collect();
    let (emb, _) = embed_texts(model.as_ref(), &refs, EmbedOptions::default()).unwrap();
    let (rows, cols) = (want_pooled.len(), dim);
    assert_eq!((rows, cols), (e.texts.len(), model.dim()));
    let (pool_cos, at) = worst(&emb.data, &want_pooled.concat(), cols);
    assert!(pool_cos >= min_cos, "{arch}: text {at} {:?}: cosine {pool_cos}", e.texts[at]);
    eprintln!(
        "{arch}: worst cosine 1 - {:.1e} over {} token states, 1 - {:.1e} over {rows} pooled vectors (longest {} tokens)",
        1.0 - tok_cos,
        got.len() / h,
        1.0 - pool_cos,
        batch.max_len()
    );
    (tok_cos, pool_cos)
}

#[test]
fn modernbert_matches_transformers() {
    check("modernbert");
}

/// A causal decoder with grouped-query heads (and a head size that is not hidden / heads), its
/// vector the last token (the EOS its tokenizer appends), against sentence-transformers'
/// left-padded batch.
#[test]
fn qwen3_matches_transformers() {
    check("qwen3");
}

/// NomicBERT: post-norm layers, RoPE, SwiGLU, the fused Wqkv and the other published weight
/// names (which transformers 5 writes), mean pooling.
#[test]
fn nomic_bert_matches_transformers() {
    check("nomic_bert");
}

/// GTE: post-norm layers, RoPE with the published checkpoints' NTK scaling, GeGLU, biases on
/// the attention and the down projection, CLS pooling (sentence-transformers 6's `pooling_mode`).
#[test]
fn gte_matches_transformers() {
    check("gte");
}

/// A copy of `arch`'s fixture with its tensors renamed (and split) by `rename`.
fn renamed(arch: &str, rename: impl Fn(&str, &Tensor) -> Vec<(String, Tensor)>) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(dir(arch)).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(tmp.path().join(e.file_name())).unwrap();
            for f in std::fs::read_dir(e.path()).unwrap() {
                let f = f.unwrap();
                std::fs::copy(f.path(), tmp.path().join(e.file_name()).join(f.file_name())).unwrap();
            }
        } else if e.file_name() != "model.safetensors" {
            std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
        }
    }
    let weights = candle_core::safetensors::load(dir(arch).join("model.safetensors"), &Device::Cpu).unwrap();
    let out: HashMap<String, Tensor> = weights.iter().flat_map(|(k, v)| rename(k, v)).collect();
    candle_core::safetensors::save(&out, tmp.path().join("model.safetensors")).unwrap();
    tmp
}

/// Edit the `config.json` of a fixture copy.
fn rewrite_config(d: &tempfile::TempDir, edit: impl Fn(&mut serde_json::Map<String, serde_json::Value>)) {
    let path = d.path().join("config.json");
    let mut c: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut c);
    std::fs::write(&path, serde_json::to_string(&c).unwrap()).unwrap();
}

/// `t` split into `n` equal parts along its first dimension, named `names` with `suffix`.
fn split(t: &Tensor, names: &[String], suffix: &str) -> Vec<(String, Tensor)> {
    let rows = t.dim(0).unwrap() / names.len();
    names
        .iter()
        .enumerate()
        .map(|(i, n)| (format!("{n}{suffix}"), t.narrow(0, i * rows, rows).unwrap()))
        .collect()
}

/// transformers 5's own module names (q/k/v split, `post_attention_layernorm`, `gate_proj`, …),
/// the names its checkpoint conversion maps the published ones to, load too; and GTE's
/// published names under the `new.` prefix of its masked-LM checkpoints; and the published
/// checkpoints' config names; and ModernBERT's and Qwen3's language-model checkpoints
/// (`model.` prefix, a head beside).
#[test]
fn other_weight_names_load_too() {
    let suffix = |k: &str| if k.ends_with(".bias") { ".bias" } else { ".weight" };
    let nomic = renamed("nomic_bert", |k, t| {
        let k = k.replace("encoder.layers.", "layers.").replace("emb_ln", "embeddings.LayerNorm");
        if let Some(p) = k.strip_suffix(".attn.Wqkv.weight") {
            let names: Vec<String> =
                ["q", "k", "v"].iter().map(|x| format!("{p}.self_attn.{x}_proj")).collect();
            return split(t, &names, ".weight");
        }
        let k = k
            .replace("attn.out_proj", "self_attn.o_proj")
            .replace("mlp.fc11", "mlp.up_proj")
            .replace("mlp.fc12", "mlp.gate_proj")
            .replace("mlp.fc2", "mlp.down_proj")
            .replace("norm1", "post_attention_layernorm")
            .replace("norm2", "post_mlp_layernorm");
        vec![(k, t.clone())]
    });
    let gte = renamed("gte", |k, t| {
        let k = k.replace("encoder.layer.", "layers.");
        let sfx = suffix(&k);
        if let Some(p) = k.strip_suffix(&format!(".attention.qkv_proj{sfx}")) {
            let names: Vec<String> =
                ["q", "k", "v"].iter().map(|x| format!("{p}.self_attn.{x}_proj")).collect();
            return split(t, &names, sfx);
        }
        if let Some(p) = k.strip_suffix(".mlp.up_gate_proj.weight") {
            return split(t, &[format!("{p}.mlp.up_proj"), format!("{p}.mlp.gate_proj")], ".weight");
        }
        let k = k
            .replace("attention.o_proj", "self_attn.o_proj")
            .replace("attn_ln", "post_attention_layernorm")
            .replace("mlp_ln", "post_mlp_layernorm");
        vec![(k, t.clone())]
    });
    let gte_new = renamed("gte", |k, t| vec![(format!("new.{k}"), t.clone())]);
    // The published configs' names too: nomic-embed-text's (n_embd, rotary_emb_base, swiglu, ...)
    // and gte-base-en-v1.5's (model_type new, a top-level rope_theta).
    let nomic_cfg = renamed("nomic_bert", |k, t| vec![(k.to_string(), t.clone())]);
    rewrite_config(&nomic_cfg, |c| {
        for (from, to) in [
            ("hidden_size", "n_embd"),
            ("num_hidden_layers", "n_layer"),
            ("num_attention_heads", "n_head"),
            ("intermediate_size", "n_inner"),
            ("layer_norm_eps", "layer_norm_epsilon"),
            ("max_position_embeddings", "n_positions"),
        ] {
            let v = c.remove(from).unwrap();
            c.insert(to.into(), v);
        }
        c.remove("hidden_act");
        c.remove("rope_parameters");
        c.insert("activation_function".into(), "swiglu".into());
        c.insert("rotary_emb_base".into(), 1000.0.into());
        c.insert("rotary_emb_fraction".into(), 1.0.into());
        c.insert("rotary_emb_interleaved".into(), false.into());
    });
    rewrite_config(&gte_new, |c| {
        c.insert("model_type".into(), "new".into());
        c.remove("rope_parameters");
        c.insert("rope_theta".into(), 160_000.0.into());
    });
    // The masked-LM and causal-LM checkpoints: a `model.` prefix and a head beside it.
    let with_head = |k: &str, t: &Tensor, head: &str| {
        let mut v = vec![(format!("model.{k}"), t.clone())];
        if k.ends_with("embeddings.weight") || k == "embed_tokens.weight" {
            v.push((head.to_string(), t.clone()));
        }
        v
    };
    let modernbert = renamed("modernbert", |k, t| with_head(k, t, "decoder.weight"));
    let qwen3 = renamed("qwen3", |k, t| with_head(k, t, "lm_head.weight"));
    for (arch, d) in [
        ("nomic_bert", &nomic),
        ("gte", &gte),
        ("gte", &gte_new),
        ("nomic_bert", &nomic_cfg),
        ("modernbert", &modernbert),
        ("qwen3", &qwen3),
    ] {
        let names = seamcut::embed::tensor_names(&d.path().join("model.safetensors")).unwrap();
        assert!(!names.is_empty());
        let (t, p) = check_dir(arch, d.path(), false);
        assert!(t >= 0.9999 && p >= 0.9999);
    }
}

/// A long-context model's late pass reads macro windows up to its window (8,192 tokens at most)
/// overlapping by 256 tokens, as the late-chunking paper's code does; a 256-token model keeps
/// the short fallback, and all-MiniLM-L6-v2 the catalog's measured windows.
#[test]
fn long_context_models_get_macro_late_windows() {
    use seamcut::embed::late::{LateOptions, LONG_OVERLAP};
    for arch in ["modernbert", "qwen3"] {
        let model = load_dir(&dir(arch), &Compute::cpu()).unwrap();
        let (pre, post) = model.special_ids();
        let o = LateOptions::for_model(model.as_ref());
        assert_eq!(
            o.window,
            4608 - pre.len() - post.len(),
            "{arch}: the fixture's window, less its specials"
        );
        assert_eq!(o.window - o.stride, LONG_OVERLAP, "{arch}");
        o.validate(model.as_ref()).unwrap();
    }
    let minilm = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/all-MiniLM-L6-v2");
    if minilm.is_dir() {
        let o = LateOptions::for_model(load_dir(&minilm, &Compute::cpu()).unwrap().as_ref());
        assert_eq!((o.window, o.stride), (254, 127), "the model's own fallback");
        // The catalog's measured windows for all-MiniLM-L6-v2, matched by its weights: above a
        // cap of 128 tokens (the length it was trained on) 126 every 63, else its own; flags
        // still override them.
        let model = seamcut::models::load_shared(minilm.to_str().unwrap(), &Compute::cpu()).unwrap();
        let windows = |cap| {
            let o = model.late_options(cap);
            (o.window, o.stride)
        };
        assert_eq!([windows(Some(256)), windows(None), windows(Some(129))], [(126, 63); 3]);
        assert_eq!([windows(Some(128)), windows(Some(64))], [(254, 127); 2]);
        let mut spec = seamcut::spec::ChunkerSpec::new(seamcut::chunkers::ChunkerKind::Recursive);
        let of = |spec: &seamcut::spec::ChunkerSpec| spec.late_options(&model).map(|o| (o.window, o.stride));
        assert_eq!(of(&spec).unwrap(), (126, 63), "the default cap, 256");
        spec.max_tokens = seamcut::cap::Cap::new(128);
        assert_eq!(of(&spec).unwrap(), (254, 127));
        spec.max_tokens = seamcut::cap::Cap::new(256);
        spec.late_stride = seamcut::spec::LateTokens::Fixed(126);
        assert_eq!(of(&spec).unwrap(), (126, 126));
        spec.late_window = seamcut::spec::LateTokens::Fixed(254);
        spec.late_stride = seamcut::spec::LateTokens::Auto;
        assert_eq!(of(&spec).unwrap(), (254, 127));
        spec.late_window = seamcut::spec::LateTokens::Auto;
        spec.late_stride = seamcut::spec::LateTokens::Fixed(254);
        let e = spec.late_options(&model).unwrap_err().to_string();
        assert!(e.contains("between 1 and the window (126 tokens), not 254"), "{e}");
    }
}

/// Each architecture through the command line: `seamcut embed` gives the reference's vectors,
/// and `seamcut chunk --chunker maxmin --embeddings late` (seams and chunk vectors from one late
/// pass) chunks a document into contiguous chunks.
#[test]
fn command_line_runs_every_architecture() {
    let tmp = tempfile::tempdir().unwrap();
    let doc = tmp.path().join("doc.txt");
    let e = expected("modernbert");
    let prose: Vec<&str> = e.texts[..9].iter().map(String::as_str).collect();
    std::fs::write(&doc, prose.join("\n\n")).unwrap();
    for arch in ["modernbert", "nomic_bert", "gte", "qwen3"] {
        let e = expected(arch);
        let lines = tmp.path().join("lines.txt");
        std::fs::write(&lines, e.texts[..8].join("\n")).unwrap();
        let npy = tmp.path().join(format!("{arch}.npy"));
        let model = dir(arch);
        let run = |args: &[&str]| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_seamcut")).args(args).output().unwrap();
            assert!(out.status.success(), "{arch}: {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            out
        };
        let m = model.to_str().unwrap();
        run(&["embed", "--model", m, "--lines", lines.to_str().unwrap(), "-o", npy.to_str().unwrap()]);
        let (got, rows, cols) = seamcut::npy::read_f32(&npy).unwrap();
        let (want, _, _) = seamcut::npy::read_f32(&dir(arch).join("pooled.npy")).unwrap();
        assert_eq!(rows, 8);
        let (c, at) = worst(&got, &want[..8 * cols], cols);
        assert!(c >= 0.9999, "{arch}: line {at}: cosine {c}");
        let jsonl = tmp.path().join(format!("{arch}.jsonl"));
        let (d, o) = (doc.to_str().unwrap(), jsonl.to_str().unwrap());
        run(&["chunk", "--chunker", "maxmin", "--model", m, "--embeddings", "late", d, "-o", o]);
        let records: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut at = 0;
        for r in &records {
            assert_eq!(r["start"].as_u64().unwrap() as usize, at, "{arch}: chunks do not tile the document");
            at = r["end"].as_u64().unwrap() as usize;
        }
        // One unit vector per chunk beside the records.
        let (v, n, d) = seamcut::npy::read_f32(&jsonl.with_extension("npy")).unwrap();
        assert_eq!((n, d), (records.len(), cols), "{arch}");
        assert!(v.chunks(d).all(|r| (r.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4), "{arch}");
        assert_eq!(at, text.len(), "{arch}");
    }
}

/// f16 on the CPU takes the path every device but the CPU in f32 takes (candle's ops, attention
/// padded with a mask): the references within f16's rounding, for the short texts.
#[test]
fn f16_takes_the_padded_path_within_rounding() {
    let f16 = Compute::new(seamcut::device::DeviceSpec::Cpu, seamcut::device::Precision::F16).unwrap();
    for arch in ["modernbert", "nomic_bert", "gte", "qwen3"] {
        check_with(arch, &dir(arch), false, &f16, 0.999);
    }
}

/// `--dtype int8` and `bf16` run every long-context architecture (reduced-precision products
/// in every linear layer, `seamcut::embed::{int8, bf16}`): the references within their
/// rounding, for the short texts (the fixtures' weights are random, which int8 serves worse
/// than trained ones: MiniLM's floors are in `embed_parity`). bf16 where the CPU has it. int8's
/// floors are for weights on 127 levels (measured worst 0.971 over ModernBERT's token states,
/// 0.996 pooled), and lower where the CPU's best int8 path is AVX2's, whose weights take 63
/// (measured 0.907 and 0.991: a weight's rounding error is twice as large, and these random
/// weights are spread evenly, with no outliers to dominate the activations' error).
#[test]
fn reduced_precisions_run_every_long_context_architecture() {
    use seamcut::device::{DeviceSpec, Precision};
    let int8 = match seamcut::embed::int8::Isa::best().weight_levels() {
        127 => (0.97, 0.99),
        _ => (0.85, 0.98),
    };
    for (precision, tokens_floor, pooled_floor) in
        [(Precision::Int8, int8.0, int8.1), (Precision::Bf16, 0.995, 0.999)]
    {
        let compute = match Compute::new(DeviceSpec::Cpu, precision) {
            Ok(c) => c,
            Err(e) => {
                assert_eq!(precision, Precision::Bf16, "{e}");
                eprintln!("bf16 skipped: {e}");
                continue;
            }
        };
        for arch in ["modernbert", "nomic_bert", "gte", "qwen3"] {
            let (tokens, pooled) = check_with(arch, &dir(arch), false, &compute, tokens_floor);
            assert!(pooled >= pooled_floor, "{arch} {precision}: pooled cosine {pooled}");
            // The reduced-precision products ran: not the f32 path's vectors.
            assert!(tokens < 0.999_999, "{arch} {precision}: the token states are f32's");
        }
    }
}

/// A published option these models do not implement is one clear error naming it, not wrong
/// vectors.
#[test]
fn unimplemented_options_are_refused() {
    for (arch, key, value) in [
        ("nomic_bert", "prenorm", serde_json::Value::from(true)),
        ("nomic_bert", "rotary_scaling_factor", 2.0.into()),
        ("gte", "logn_attention_scale", true.into()),
        ("gte", "rope_scaling", serde_json::json!({"type": "yarn", "factor": 2.0})),
        ("modernbert", "rope_parameters", serde_json::json!({"full_attention": {"rope_type": "yarn"}})),
        ("qwen3", "use_sliding_window", true.into()),
    ] {
        let d = renamed(arch, |k, t| vec![(k.to_string(), t.clone())]);
        rewrite_config(&d, |c| {
            c.insert(key.into(), value.clone());
        });
        let err = load_dir(d.path(), &Compute::cpu())
            .err()
            .unwrap_or_else(|| panic!("{arch} {key}: loads"))
            .to_string();
        let named = key.split('_').next().unwrap();
        assert!(err.contains(named) || err.contains("yarn"), "{arch} {key}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// A sentence-transformers module seamcut does not run (a LayerNorm module, a Dense head before
/// the pooling) is refused by name, not skipped (which would give other vectors than the model's).
#[test]
fn an_unsupported_module_is_refused() {
    let d = renamed("gte", |k, t| vec![(k.to_string(), t.clone())]);
    let path = d.path().join("modules.json");
    let original: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut modules = original.clone();
    modules.push(serde_json::json!({"idx": 2, "name": "2", "path": "2_LayerNorm", "type": "sentence_transformers.models.LayerNorm"}));
    std::fs::write(&path, serde_json::to_string(&modules).unwrap()).unwrap();
    let err = load_dir(d.path(), &Compute::cpu()).err().unwrap().to_string();
    assert!(err.contains("LayerNorm"), "{err}");
    let mut modules = original;
    let dense = serde_json::json!({"idx": 1, "name": "1", "path": "2_Dense", "type": "sentence_transformers.models.Dense"});
    modules.insert(1, dense);
    std::fs::write(&path, serde_json::to_string(&modules).unwrap()).unwrap();
    let err = load_dir(d.path(), &Compute::cpu()).err().unwrap().to_string();
    assert!(err.contains("a Dense module before the Pooling"), "{err}");
}

/// nomic_bert's fixture with `dense_heads/NAME`'s heads and modules.json laid over a copy.
fn with_heads(name: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let copy = |from: &Path, to: &Path| {
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.path().is_dir() {
                std::fs::create_dir_all(to.join(e.file_name())).unwrap();
                for f in std::fs::read_dir(e.path()).unwrap() {
                    let f = f.unwrap();
                    std::fs::copy(f.path(), to.join(e.file_name()).join(f.file_name())).unwrap();
                }
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    };
    copy(&dir("nomic_bert"), d.path());
    copy(&dir("dense_heads").join(name), d.path());
    d
}

/// Dense heads after the pooling (sentence-transformers' Dense: two linear ones as EmbeddingGemma
/// has, then a Tanh one): the vectors of sentence-transformers' `encode`; the linear heads applied
/// to each token's state for the late pass (their mean is the heads' vector of the mean); a late
/// pass through a Tanh head refused in words; a head whose size does not chain refused by name.
#[test]
fn dense_heads_match_sentence_transformers() {
    let text = std::fs::read_to_string(dir("dense_heads").join("expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let texts: Vec<String> = serde_json::from_value(v["texts"].clone()).unwrap();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for name in ["identity", "tanh"] {
        let d = with_heads(name);
        let model = load_dir(d.path(), &Compute::cpu()).unwrap();
        let want: Vec<Vec<f32>> = serde_json::from_value(v[name].clone()).unwrap();
        assert_eq!(model.dim(), want[0].len(), "{name}");
        let (emb, _) = embed_texts(model.as_ref(), &refs, EmbedOptions::default()).unwrap();
        let (c, at) = worst(&emb.data, &want.concat(), model.dim());
        assert!(c >= 0.9999, "{name}: text {at}: cosine {c}");
        let mut batch = FlatBatch::default();
        let (pre, post) = model.special_ids();
        batch.push(&[pre, &model.content_ids(&texts[0])[..], post].concat());
        if name == "identity" {
            let want: Vec<Vec<f32>> = serde_json::from_value(v["identity_token_states"].clone()).unwrap();
            let got = model.token_states(&batch).unwrap().to_vec2::<f32>().unwrap();
            assert_eq!(got.len(), want.len());
            let (c, at) = worst(&got.concat(), &want.concat(), model.dim());
            assert!(c >= 0.9999, "token {at}: cosine {c}");
        } else {
            let err = model.token_states(&batch).unwrap_err().to_string();
            assert!(err.contains("Tanh"), "{err}");
        }
    }
    let d = with_heads("identity");
    let cfg = d.path().join("3_Dense/config.json");
    let edited = std::fs::read_to_string(&cfg).unwrap().replace("\"in_features\": 96", "\"in_features\": 95");
    std::fs::write(&cfg, edited).unwrap();
    let err = load_dir(d.path(), &Compute::cpu()).err().unwrap().to_string();
    assert!(err.contains("3_Dense") && err.contains("95") && err.contains("96"), "{err}");
}

/// A text's vector does not depend on which texts share its batch (ARCHITECTURE.md's rule,
/// 1e-5), for every new architecture: alone, and among the fixture's short texts under several
/// token budgets.
#[test]
fn vectors_do_not_depend_on_batch_composition() {
    let probe = "The river flows past the old mill toward the sea.";
    for arch in ["modernbert", "nomic_bert", "gte", "qwen3"] {
        let model = load_dir(&dir(arch), &Compute::cpu()).unwrap();
        let e = expected(arch);
        let (alone, _) = embed_texts(model.as_ref(), &[probe], EmbedOptions::default()).unwrap();
        for (budget, extra) in [(64, 3), (512, 6), (16_384, 9)] {
            let mut batch: Vec<&str> = e.texts.iter().take(extra).map(String::as_str).collect();
            batch.insert(extra / 2, probe);
            let opts = EmbedOptions { batch_tokens: budget, ..EmbedOptions::default() };
            let (emb, _) = embed_texts(model.as_ref(), &batch, opts).unwrap();
            let got = emb.row(extra / 2);
            let diff = got.iter().zip(alone.row(0)).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(diff <= 1e-5, "{arch}: budget {budget}, {extra} others: max abs diff {diff}");
        }
    }
}

/// Prompts and Matryoshka cuts: sentence-transformers' `encode(prompt_name=…)`, `encode(prompt=…)`
/// and `truncate_dim` on the short texts (one padded batch each, `prompted.json`), through the
/// library as every front end loads a model ([`ModelSpec::load_for`]) and through
/// `seamcut embed --prompt-name --dims`. Asymmetric models get their document prompt for
/// documents and their query prompt for queries without being told.
#[test]
fn prompts_and_dims_match_sentence_transformers() {
    use seamcut::embed::tuned::{PromptChoice, Role};
    use seamcut::models::ModelSpec;
    let tmp = tempfile::tempdir().unwrap();
    for arch in ["modernbert", "nomic_bert", "qwen3"] {
        let text = std::fs::read_to_string(dir(arch).join("prompted.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let texts: Vec<String> = serde_json::from_value(v["texts"].clone()).unwrap();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let m = dir(arch).to_str().unwrap().to_string();
        let spec =
            ModelSpec { model: m.clone(), device: seamcut::device::DeviceSpec::Cpu, ..ModelSpec::default() };
        let cases = v["cases"].as_array().unwrap();
        assert!(cases.len() >= 4, "{arch}");
        for case in cases {
            let want: Vec<Vec<f32>> = serde_json::from_value(case["vectors"].clone()).unwrap();
            let dims = case["truncate_dim"].as_u64().map(|d| d as usize);
            let prompt = match (case["prompt_name"].as_str(), case["prompt"].as_str()) {
                (Some(n), _) => PromptChoice::Name(n.into()),
                (_, Some(t)) => PromptChoice::Text(t.into()),
                _ => PromptChoice::Auto,
            };
            let model =
                ModelSpec { prompt: prompt.clone(), dims, ..spec.clone() }.load_for(Role::Plain).unwrap();
            let (emb, _) = embed_texts(model.embedder.as_ref(), &refs, EmbedOptions::default()).unwrap();
            assert_eq!(emb.dim, want[0].len(), "{arch} {case}");
            let (c, at) = worst(&emb.data, &want.concat(), emb.dim);
            assert!(c >= 0.9999, "{arch}: {:?}: text {at}: cosine {c}", prompt);
            // The CLI gives the same vectors.
            if let (PromptChoice::Name(n), Some(d)) = (&prompt, dims) {
                let lines = tmp.path().join("lines.txt");
                std::fs::write(&lines, texts.join("\n")).unwrap();
                let npy = tmp.path().join(format!("{arch}.npy"));
                let out = std::process::Command::new(env!("CARGO_BIN_EXE_seamcut"))
                    .args(["embed", "--model", &m, "--prompt-name", n, "--dims", &d.to_string()])
                    .args(["--lines", lines.to_str().unwrap(), "-o", npy.to_str().unwrap()])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                let (got, _, cols) = seamcut::npy::read_f32(&npy).unwrap();
                assert_eq!(cols, d);
                assert!(worst(&got, &emb.data, d).0 >= 0.999999, "{arch}: the CLI's vectors");
            }
            // The query role picks the query prompt by itself.
            if case["prompt_name"] == "query" && dims.is_none() {
                let q = spec.load_for(Role::Query).unwrap();
                let (e, _) = embed_texts(q.embedder.as_ref(), &refs, EmbedOptions::default()).unwrap();
                assert!(worst(&e.data, &want.concat(), e.dim).0 >= 0.9999, "{arch}: the query role");
            }
        }
        // Plain texts get no prompt (these models have no default prompt); documents, the
        // document prompt where the model has a non-empty one.
        let plain = spec.load_for(Role::Plain).unwrap();
        assert_eq!(plain.embedder.prompt(), None);
        let docs = spec.load_for(Role::Document).unwrap();
        let want = if arch == "qwen3" { None } else { Some("search_document: ") };
        assert_eq!(docs.embedder.prompt(), want, "{arch}");
    }
    // Bad settings are one line naming the setting.
    let spec = ModelSpec { model: dir("nomic_bert").to_str().unwrap().into(), ..ModelSpec::default() };
    let err = |s: ModelSpec| s.load_for(Role::Plain).err().unwrap().to_string();
    let e = err(ModelSpec { prompt: PromptChoice::Name("serch_query".into()), ..spec.clone() });
    assert!(e.contains("serch_query") && e.contains("document, query"), "{e}");
    let e = err(ModelSpec { dims: Some(65), ..spec.clone() });
    assert!(e.contains("65") && e.contains("64"), "{e}");
}

/// The late pass with a prompt: the prompt's tokens are context for the first window, never
/// pooled into a span, so each span's vector is the mean of its own tokens' states from a pass
/// over the prompted document.
#[test]
fn the_late_pass_pools_no_prompt_token() {
    use seamcut::embed::late::{late_pool, LateDoc, LateOptions};
    use seamcut::embed::tuned::{PromptChoice, Role};
    use seamcut::models::ModelSpec;
    let m = dir("nomic_bert").to_str().unwrap().to_string();
    let spec = ModelSpec { model: m, prompt: PromptChoice::Name("document".into()), ..ModelSpec::default() };
    let tuned = spec.load_for(Role::Plain).unwrap();
    let plain =
        ModelSpec { prompt: PromptChoice::Text(String::new()), ..spec }.load_for(Role::Plain).unwrap();
    let doc = "The cat sat on the mat. Retrieval needs good chunks.";
    let spans = [seamcut::span::Span::new(0, 23), seamcut::span::Span::new(24, doc.len())];
    let opts = LateOptions::for_model(tuned.embedder.as_ref());
    let (v, _) = late_pool(tuned.embedder.as_ref(), &[LateDoc { text: doc, spans: &spans }], opts).unwrap();
    // By hand: the prompted document in one sequence; each span's tokens by their offsets.
    let prompt = "search_document: ";
    let (ids, starts) = plain.embedder.content_ids_with_starts(&format!("{prompt}{doc}"));
    let (pre, post) = plain.embedder.special_ids();
    let mut batch = FlatBatch::default();
    batch.push(&[pre, &ids[..], post].concat());
    let states = plain.embedder.token_states(&batch).unwrap().to_vec2::<f32>().unwrap();
    for (k, span) in spans.iter().enumerate() {
        let rows: Vec<&Vec<f32>> = starts
            .iter()
            .enumerate()
            .filter(|(_, &s)| {
                s >= prompt.len() && span.start <= s - prompt.len() && s - prompt.len() < span.end
            })
            .map(|(i, _)| &states[pre.len() + i])
            .collect();
        assert!(!rows.is_empty());
        let mean: Vec<f32> =
            (0..rows[0].len()).map(|j| rows.iter().map(|r| r[j]).sum::<f32>() / rows.len() as f32).collect();
        let got = v.aggregate(k..k + 1);
        assert!(cos(&got, &mean) >= 0.99999, "span {k}: cosine {}", cos(&got, &mean));
    }
}

/// Byte-level BPE (ModernBERT's and Qwen3's layout), WordPiece and a SentencePiece-style Unigram
/// (NFKC, Metaspace: XLM-R's layout) tokenize as Hugging Face `tokenizers` does, ids and byte
/// offsets both (`offsets.json`): the short texts and hard ones (runs of spaces, tabs, characters
/// NFKC changes, ZWJ emoji, Arabic), each token's start the first non-space byte of its offsets.
#[test]
fn tokenizers_give_hugging_faces_ids_and_offsets() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("offsets.json")).unwrap()).unwrap();
    let texts: Vec<String> = serde_json::from_value(v["texts"].clone()).unwrap();
    let all = v["tokenizers"].as_object().unwrap();
    assert_eq!(all.len(), 4);
    for (name, rows) in all {
        let hf = seamcut::tokenizer_json::from_file(&root.join(name).join("tokenizer.json")).unwrap();
        let tok = seamcut::wordpiece::TextTokenizer::new(hf);
        for (t, row) in texts.iter().zip(rows.as_array().unwrap()) {
            let ids: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
            let starts: Vec<usize> = serde_json::from_value(row["starts"].clone()).unwrap();
            let (got_ids, got_starts) = tok.ids_and_starts(t);
            assert_eq!(got_ids, ids, "{name}: ids of {t:?}");
            assert_eq!(got_starts, starts, "{name}: starts of {t:?}");
            assert_eq!(tok.ids(t), ids, "{name}: ids() of {t:?}");
        }
    }
}
