"""A stand-in for ``python -m llama_cpp.server`` in the tests of `agentnb.local_model`'s start
and stop: it reads ``--port`` and does what ``FAKE_LLAMA`` says: ``serve`` (answer every GET
with 200), ``exit`` (print an error and exit with status 3), ``hang`` (never answer)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        body = b'{"object": "list", "data": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--host")
    args, _ = parser.parse_known_args()
    what = os.environ.get("FAKE_LLAMA", "serve")
    if what == "exit":
        print("error loading model: this is not a GGUF file", flush=True)
        sys.exit(3)
    if what == "hang":
        time.sleep(3600)
    print(f"serving on {args.host}:{args.port}", flush=True)
    HTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
