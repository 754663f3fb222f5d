"""A deterministic OpenAI-compatible chat server for benches/same-output: it answers the
LumberChunker prompt with the middle paragraph of each group and the guided prompt with every
other seam, so two builds asked the same questions get the same answers.

    python3 benches/same-output/mock_llm.py PORT
"""
import json, re, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = body["messages"][-1]["content"]
        ids = re.findall(r"^ID (\d+):", user, re.M)
        seams = re.findall(r"SEAM (\d+)", user)
        if ids:
            ans = f"Answer: ID {ids[len(ids)//2]}"
        elif seams:
            ans = "Answer: " + ", ".join(f"SEAM {s}" for s in seams[::2])
        else:
            ans = "Answer: none"
        out = {"id": "x", "object": "chat.completion", "model": body["model"],
               "choices": [{"index": 0, "message": {"role": "assistant", "content": ans}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": len(user)//4, "completion_tokens": 4, "total_tokens": len(user)//4 + 4}}
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
