"""Milvus as the tests read it, through pymilvus (Milvus's own client): one JSON request a
line on stdin, one JSON answer a line on stdout, so that a test keeps one process (and one
connection a server) and polls a job's progress every few milliseconds.

    {"uri": "http://127.0.0.1:PORT", "op": "dump" | "drop" | "empty" | "index"
     | "describe" | "alter", "name": COLLECTION, "properties": {...} (alter)}
"""
import json
import sys

from pymilvus import MilvusClient

clients = {}


def client(uri):
    if uri not in clients:
        clients[uri] = MilvusClient(uri=uri, timeout=30)
    return clients[uri]


def rows(c, name):
    # A restarted milvus-lite holds its collections released: load as a reader would.
    c.load_collection(name)
    out = []
    for r in c.query(name, filter='id != ""', output_fields=["*"], limit=16384):
        r = dict(r)
        r["embedding"] = [float(x) for x in r["embedding"]]
        out.append(r)
    return out


def answer(req):
    c = client(req["uri"])
    name, op = req["name"], req["op"]
    if not c.has_collection(name):
        return None if op in ("describe", "index") else []
    if op == "dump":
        return rows(c, name)
    if op == "drop":
        c.drop_collection(name)
        return []
    if op == "empty":
        ids = [r["id"] for r in rows(c, name)]
        c.delete(name, ids=ids)
        return len(ids)
    if op == "index":
        return [c.describe_index(name, i) for i in c.list_indexes(name)]
    if op == "alter":
        c.alter_collection_properties(name, properties=req["properties"])
        return None
    if op == "describe":
        d = c.describe_collection(name)
        return {"fields": [[f["name"], int(f["type"])] for f in d["fields"]], "properties": d["properties"]}
    raise ValueError(op)


for line in sys.stdin:
    try:
        out = {"ok": answer(json.loads(line))}
    except Exception as e:  # the test shows it
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out, default=str), flush=True)
