"""Milvus side by side: pymilvus's own bulk insert and Chonkie's MilvusHandshake on the rows
seamcut's job wrote (the same chunks, vectors and static model); run by benches/db_load.sh
beside seamcut's `-o milvus://` runs, one JSON line each.

    python benches/db_vs_milvus.py CHUNKS.parquet MODEL_DIR MILVUS_URL

  pymilvus-insert   MilvusClient.insert of seamcut's rows, with their vectors, in batches
                    of 1,000 (pymilvus's usual bulk path), into a fresh collection of seamcut's
                    fields and AUTOINDEX: the client's own write rate, no embedding;
  chonkie-embed     model2vec's embed_batch of every chunk, as MilvusHandshake calls it;
  chonkie-write     MilvusHandshake.write(chunks) (embeds again, inserts, flushes), so that
                    write - embed is the database's part.

Needs: pymilvus, chonkie 1.7 with model2vec, pyarrow (not in CI).
"""

import json
import sys
import time

import pyarrow.parquet as pq


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    parquet, model, url = sys.argv[1:4]
    from pymilvus import DataType, MilvusClient

    uri = url.replace("milvus://", "http://", 1)
    client = MilvusClient(uri=uri)
    table = pq.read_table(parquet)
    cols = table.to_pydict()
    rows = table.num_rows
    dim = len(cols["embedding"][0])

    # pymilvus's bulk insert of the same rows.
    for name in ("pymilvus_bench", "chonkie_bench"):
        if client.has_collection(name):
            client.drop_collection(name)
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=65535)
    for f in ("doc_id", "text", "context"):
        schema.add_field(f, DataType.VARCHAR, max_length=65535)
    for f in ("index", "start", "end", "tokens"):
        schema.add_field(f, DataType.INT64)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=dim)
    index = client.prepare_index_params()
    index.add_index("embedding", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection("pymilvus_bench", schema=schema, index_params=index)
    keys = ["id", "doc_id", "index", "start", "end", "text", "tokens", "context", "embedding"]
    records = [dict(zip(keys, r)) for r in zip(*(cols[k] for k in keys))]
    t0 = time.perf_counter()
    for i in range(0, rows, 1000):
        client.insert("pymilvus_bench", records[i : i + 1000])
    s = time.perf_counter() - t0
    count = client.query("pymilvus_bench", filter="", output_fields=["count(*)"])[0]["count(*)"]
    out(run="pymilvus-insert", seconds=s, rows=rows, stored=count, rows_per_s=rows / s)

    # Chonkie's MilvusHandshake on the same chunks.
    from chonkie import MilvusHandshake, Model2VecEmbeddings
    from chonkie.types import Chunk

    emb = Model2VecEmbeddings(model)
    if str(emb.embed("probe").dtype) != "float32":
        # A float16 model2vec model (as seamcut's distilled one is stored) gives float16
        # vectors, which pymilvus refuses for a FLOAT_VECTOR field: MilvusHandshake.write
        # fails with "expect=np.float32/np.float64, got=float16". Cast, so that the handshake
        # can be measured at all; the stock handshake's failure is reported first.
        try:
            MilvusHandshake(uri=uri, collection_name="chonkie_bench", embedding_model=emb).write(
                [Chunk(text="probe", start_index=0, end_index=5, token_count=1)])
            out(run="chonkie-float16", result="ok")
        except Exception as e:
            out(run="chonkie-float16", result=f"{type(e).__name__}: {str(e)[:160]}")
        client.drop_collection("chonkie_bench")

        class Float32(Model2VecEmbeddings):
            def embed(self, text):
                return super().embed(text).astype("float32")

            def embed_batch(self, texts):
                return [v.astype("float32") for v in super().embed_batch(texts)]

        emb = Float32(model)
    chunks = [
        Chunk(text=t, start_index=a, end_index=b, token_count=n)
        for t, a, b, n in zip(cols["text"], cols["start"], cols["end"], cols["tokens"])
    ]
    t0 = time.perf_counter()
    emb.embed_batch([c.text for c in chunks])
    embed_s = time.perf_counter() - t0
    out(run="chonkie-embed", seconds=embed_s, rows=rows)
    hs = MilvusHandshake(uri=uri, collection_name="chonkie_bench", embedding_model=emb)
    t0 = time.perf_counter()
    try:
        hs.write(chunks)
        result = "ok"
    except Exception as e:  # a request over the server's limit, say
        result = f"{type(e).__name__}: {str(e)[:160]}"
    s = time.perf_counter() - t0
    out(run="chonkie-write", result=result, seconds=s, database_seconds=s - embed_s, rows=rows)
    # A second write of the same chunks: Chonkie inserts, so the rows double.
    hs.write(chunks)
    count = client.query("chonkie_bench", filter="", output_fields=["count(*)"])[0]["count(*)"]
    out(run="chonkie-rewrite", rows=rows, stored_after_two_writes=count)


if __name__ == "__main__":
    main()
