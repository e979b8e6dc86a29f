#!/usr/bin/python3
"""An OTLP/HTTP receiver for the bed's guests: accepts every POST with 200
and an empty ExportMetricsServiceResponse, counts the requests and bytes in
a JSON file after each one. Stopped by a signal, it is a receiver that went
down; started again, one that came back.

Usage: otlp_sink.py [--listen HOST:PORT] [--stats FILE]
  --listen  default 127.0.0.1:4318
  --stats   where to write {"requests": N, "bytes": B}; default none
"""
import argparse
import http.server
import json
import os
import signal
import sys
import threading

lock = threading.Lock()
stats = {"requests": 0, "bytes": 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="127.0.0.1:4318")
    ap.add_argument("--stats")
    args = ap.parse_args()
    host, _, port = args.listen.rpartition(":")

    class Receiver(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - the http.server interface
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            with lock:
                stats["requests"] += 1
                stats["bytes"] += len(body)
                if args.stats:
                    tmp = args.stats + ".tmp"
                    with open(tmp, "w") as f:
                        json.dump(stats, f)
                    os.replace(tmp, args.stats)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer((host, int(port)), Receiver)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


if __name__ == "__main__":
    main()
