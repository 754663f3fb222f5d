"""Chonkie's PgvectorHandshake and ChromaHandshake on the chunks seamcut's job made, with the
same static model; run by benches/db_load.sh beside seamcut's own runs (one JSON line each).

    python benches/db_vs_chonkie.py CHUNKS.parquet CORPUS_DIR MODEL_DIR PG_URL CHROMA_HTTP_URL

For each database, three timings:
  write    handshake.write(chunks) on seamcut's chunks: Chonkie embeds each chunk again (its
           handshakes take no vectors), then upserts;
  embed    the same embedding alone, as each handshake calls it (pgvector: embed() per chunk;
           Chroma: its embedding function, embed_batch() per request), so that write - embed
           is the database's part;
  e2e      Chonkie's whole job: read the corpus, RecursiveChunker with the model's tokenizer and
           seamcut's cap (256 tokens), then write.
Chroma refuses a request over its max_batch_size (5,461 rows here) and Chonkie's write sends
one request; it is called on slices of that size, and the whole call's failure is reported.

Needs: chonkie 1.7 with vecs, chromadb 1.5.9, model2vec, pyarrow (not in CI).
"""

import glob
import json
import sys
import time

import pyarrow.parquet as pq


def out(**kw):
    print(json.dumps(kw), flush=True)


def chonkie_chunks(table):
    from chonkie.types import Chunk

    cols = table.to_pydict()
    return [
        Chunk(text=t, start_index=s, end_index=e, token_count=n)
        for t, s, e, n in zip(cols["text"], cols["start"], cols["end"], cols["tokens"])
    ]


def corpus_texts(folder):
    texts = []
    for path in sorted(glob.glob(f"{folder}/*.jsonl")):
        with open(path, encoding="utf-8") as f:
            texts.extend(json.loads(line)["text"] for line in f if line.strip())
    return texts


def drop(delete, *names):
    """Delete these collections where they exist (a fresh start for each run)."""
    for name in names:
        try:
            delete(name)
        except Exception:
            pass


def main():
    parquet, corpus, model, pg_url, chroma_url = sys.argv[1:6]
    from chonkie import ChromaHandshake, Model2VecEmbeddings, PgvectorHandshake, RecursiveChunker
    from tokenizers import Tokenizer

    emb = Model2VecEmbeddings(model)
    chunks = chonkie_chunks(pq.read_table(parquet))
    rows = len(chunks)

    t0 = time.perf_counter()
    for c in chunks:
        emb.embed(c.text)
    embed_s = time.perf_counter() - t0
    out(run="chonkie-embed", seconds=embed_s, rows=rows, calls="embed per chunk")

    def chonkie_job(write):
        t0 = time.perf_counter()
        chunker = RecursiveChunker(tokenizer=Tokenizer.from_file(f"{model}/tokenizer.json"), chunk_size=256)
        made = [c for text in corpus_texts(corpus) for c in chunker.chunk(text)]
        write(made)
        return time.perf_counter() - t0, len(made)

    # pgvector, through vecs, into a fresh collection.
    import vecs

    # vecs is SQLAlchemy's: psycopg2 is the driver it installs.
    client = vecs.create_client("postgresql+psycopg2://" + pg_url.split("://", 1)[1])
    drop(client.delete_collection, "chonkie_bench", "chonkie_bench_e2e")
    hs = PgvectorHandshake(client=client, collection_name="chonkie_bench", embedding_model=emb)
    t0 = time.perf_counter()
    hs.write(chunks)
    s = time.perf_counter() - t0
    out(run="chonkie-pg-write", seconds=s, database_seconds=s - embed_s, rows=rows)
    hs = PgvectorHandshake(client=client, collection_name="chonkie_bench_e2e", embedding_model=emb)
    s, n = chonkie_job(hs.write)
    out(run="chonkie-pg-e2e", seconds=s, rows=n)

    # Chroma, over HTTP, into a fresh collection.
    import chromadb

    host, port = chroma_url.split("://", 1)[1].rsplit(":", 1)
    cc = chromadb.HttpClient(host=host, port=int(port))
    drop(cc.delete_collection, "chonkie_bench", "chonkie_bench_e2e")
    hs = ChromaHandshake(client=cc, collection_name="chonkie_bench", embedding_model=emb)
    try:
        hs.write(chunks)
        whole = "ok"
    except Exception as e:  # Chroma's max batch size
        whole = f"{type(e).__name__}: {str(e)[:160]}"
    out(run="chonkie-chroma-one-write", result=whole, rows=rows)
    limit = cc.get_max_batch_size()
    t0 = time.perf_counter()
    for i in range(0, rows, limit):
        emb.embed_batch([c.text for c in chunks[i : i + limit]])
    batch_embed_s = time.perf_counter() - t0
    out(run="chonkie-embed-batch", seconds=batch_embed_s, rows=rows, calls=f"embed_batch per {limit}")

    def sliced(cs):
        for i in range(0, len(cs), limit):
            hs.write(cs[i : i + limit])

    cc.delete_collection("chonkie_bench")
    hs = ChromaHandshake(client=cc, collection_name="chonkie_bench", embedding_model=emb)
    t0 = time.perf_counter()
    sliced(chunks)
    s = time.perf_counter() - t0
    out(run="chonkie-chroma-write", seconds=s, database_seconds=s - batch_embed_s, rows=rows, batch=limit)
    hs = ChromaHandshake(client=cc, collection_name="chonkie_bench_e2e", embedding_model=emb)
    s, n = chonkie_job(sliced)
    out(run="chonkie-chroma-e2e", seconds=s, rows=n)


if __name__ == "__main__":
    main()
