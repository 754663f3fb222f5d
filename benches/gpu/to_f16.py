#!/usr/bin/env python3
"""Copy a sentence-transformers model directory with its safetensors weights cast to float16
(numpy only; no torch). Usage: to_f16.py SRC DST"""
import json
import os
import shutil
import struct
import sys

import numpy as np

src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors", "*.bin", "*.onnx", "onnx", "openvino", "README.md"))
with open(os.path.join(src, "model.safetensors"), "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
out, blobs, at = {}, [], 0
for name, t in header.items():
    if name == "__metadata__":
        out[name] = t
        continue
    a, b = t["data_offsets"]
    raw = data[a:b]
    if t["dtype"] == "F32":
        raw = np.frombuffer(raw, dtype="<f4").astype("<f2").tobytes()
        dtype = "F16"
    else:
        dtype = t["dtype"]
    out[name] = {"dtype": dtype, "shape": t["shape"], "data_offsets": [at, at + len(raw)]}
    blobs.append(raw)
    at += len(raw)
h = json.dumps(out, separators=(",", ":")).encode()
h += b" " * ((8 - len(h) % 8) % 8)
with open(os.path.join(dst, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for blob in blobs:
        f.write(blob)
