"""sentence-transformers' side of the long-context speed check (issue 28, preliminary): one
text embedded once on 2 threads, its tokens/s printed and its vector saved for the cosine
against seamcut's. Run beside `seamcut embed --model DIR --lines TEXT -o v.npy` on the same
model directory (ModernBERT-base shapes with random weights, made with
tests/fixtures/gen_long_models.py's config at real sizes); peak RSS from /usr/bin/time -v.
   python benches/long_models_vs_st.py MODEL_DIR text.txt st.npy
"""
import sys, time, torch
from sentence_transformers import SentenceTransformer
torch.set_num_threads(2)
st = SentenceTransformer(sys.argv[1], device="cpu")
text = open(sys.argv[2]).read().strip()
n = len(st.tokenizer(text, truncation=True, max_length=st.max_seq_length)["input_ids"])
t = time.time()
with torch.inference_mode():
    v = st.encode([text], normalize_embeddings=True)
dt = time.time() - t
import numpy as np; np.save(sys.argv[3], v)
print(f"sentence-transformers: {n} tokens in {dt:.2f} s ({n/dt:.0f} tokens/s), attn {st[0].auto_model.config._attn_implementation}")
