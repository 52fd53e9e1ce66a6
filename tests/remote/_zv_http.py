"""A loopback HTTP server for remote-read tests and benchmarks (stdlib only).

:class:`ZVHTTPServer` serves a folder on ``127.0.0.1`` (ephemeral port) with HTTP/1.1
keep-alive, ``Range`` requests, optional directory indexes, injected latency and
deterministic fault injection. It runs in a daemon thread, and stops by itself after
``max_lifetime`` seconds even when a test forgets to stop it.

Faults are decided per request from ``(seed, path, n)``, ``n`` counting the requests of that
path, so a run is reproducible whatever order concurrent requests arrive in:

* ``"500"``: an HTTP 500 response;
* ``"delay"``: the response is held for ``fault_delay`` seconds (longer than the client's
  request timeout in the tests), then sent;
* ``"drop"``: the connection is closed without a response;
* ``"truncate"``: the full ``Content-Length`` is announced, half the body is sent, and the
  connection is closed.

``GET /__zv_stats__`` answers ``{"requests": n}`` (``?reset`` also clears the log), for
clients that run the server in another process (``python _zv_http.py ROOT ...``).

``max_faults`` caps the faults of one path (so that retries eventually succeed);
``always_fail`` names paths (substrings) that fail every time with a 500; ``hang`` matches
paths (regular expressions) whose requests are accepted and never answered (until the
server stops); ``endless`` matches paths answered with a body that never ends (no
``Content-Length``, zeros until the client hangs up or the server stops; ``endless_sent``
counts the bytes written).
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

FAULT_KINDS = ("500", "delay", "drop", "truncate")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class _Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK add ~40 ms to every response (real servers set it too)
    disable_nagle_algorithm = True
    server: ZVHTTPServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(self.server_root), **kwargs)

    server_root: Path = Path(".")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _serve(self, head: bool) -> None:
        srv = self.server
        rel = unquote(urlsplit(self.path).path)
        if rel == "/__zv_stats__":  # request count, for clients in another process
            with srv._lock:
                body = f'{{"requests": {len(srv.requests)}}}'.encode()
                if "reset" in urlsplit(self.path).query:
                    srv.requests.clear()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        srv.record(self.command, rel, self.headers.get("Range"))
        if any(re.search(p, rel) for p in srv.hang):
            srv.stopping.wait()  # accepted, never answered
            self.close_connection = True
            return
        if any(re.search(p, rel) for p in srv.endless):
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            self.close_connection = True  # the body ends when the connection does
            block = bytes(1 << 16)
            try:
                while not srv.stopping.is_set():
                    self.wfile.write(block)
                    with srv._lock:
                        srv.endless_sent += len(block)
            except OSError:
                pass
            return
        if srv.latency:
            time.sleep(srv.latency)
        fault = srv.fault_for(rel)
        if fault == "drop":
            self.close_connection = True
            return
        if fault == "500":
            self._error(500)
            return
        if fault == "delay":
            time.sleep(srv.fault_delay)
        target = (srv.root / rel.lstrip("/")).resolve()
        if srv.root != target and srv.root not in target.parents:
            self._error(404)
            return
        if target.is_dir():
            if srv.index:
                super().do_HEAD() if head else super().do_GET()
            else:
                self._error(404)
            return
        if not target.is_file():
            self._error(404)
            return
        data = target.read_bytes()
        status, body, extra = 200, data, {}
        rng = self.headers.get("Range")
        if rng:
            match = _RANGE.match(rng.strip())
            size = len(data)
            if not match or (not match.group(1) and not match.group(2)):
                self._error(416)
                return
            if match.group(1):
                start = int(match.group(1))
                end = int(match.group(2)) if match.group(2) else size - 1
            else:  # suffix range: the last n bytes
                start, end = max(0, size - int(match.group(2))), size - 1
            end = min(end, size - 1)
            if start > end or start >= size:
                self._error(416, {"Content-Range": f"bytes */{size}"})
                return
            status, body = 206, data[start : end + 1]
            extra["Content-Range"] = f"bytes {start}-{end}/{size}"
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        if fault == "truncate" and len(body) > 1:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def _error(self, code: int, headers: dict[str, str] | None = None) -> None:
        body = f"error {code}\n".encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class ZVHTTPServer(ThreadingHTTPServer):
    """Serve ``root`` on ``127.0.0.1:<ephemeral port>``; see the module docstring.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the stdlib's 5 drops connections of concurrent clients

    def __init__(
        self,
        root: Path | str,
        *,
        index: bool = False,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        fault_kinds: Iterable[str] = FAULT_KINDS,
        fault_delay: float = 1.0,
        max_faults: int = 2,
        always_fail: Iterable[str] = (),
        hang: Iterable[str] = (),
        endless: Iterable[str] = (),
        seed: int = 0,
        max_lifetime: float = 600.0,
    ) -> None:
        self.root = Path(root).resolve()
        handler = type("Handler", (_Handler,), {"server_root": self.root})
        super().__init__(("127.0.0.1", 0), handler)
        self.index = index
        self.latency = latency
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.fault_delay = fault_delay
        self.max_faults = max_faults
        self.always_fail = tuple(always_fail)
        self.hang = tuple(hang)
        self.endless = tuple(endless)
        #: bytes of endless bodies the client took (written into the connection)
        self.endless_sent = 0
        self.stopping = threading.Event()
        self.seed = seed
        self.max_lifetime = max_lifetime
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self._faults: Counter[str] = Counter()
        self.requests: list[tuple[str, str, str | None]] = []
        self.faults: list[tuple[str, str]] = []
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ZVHTTPServer:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        self._timer = threading.Timer(self.max_lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # releases held and endless responses
        if self._timer is not None:
            self._timer.cancel()
        if self._thread is not None and self._thread.is_alive():
            self.shutdown()
            self._thread.join(timeout=5)
        self.server_close()

    def __enter__(self) -> ZVHTTPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that gave up (timeouts) leave broken pipes behind: not our concern

    # -- bookkeeping -------------------------------------------------------------------
    def record(self, method: str, path: str, byte_range: str | None) -> None:
        with self._lock:
            self.requests.append((method, path, byte_range))

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()

    def fault_for(self, path: str) -> str | None:
        """The fault of this request (deterministic in ``(seed, path, n)``)."""
        with self._lock:
            n = self._seen[path]
            self._seen[path] += 1
            if any(s in path for s in self.always_fail):
                self.faults.append((path, "500"))
                return "500"
            if not self.fault_rate or self._faults[path] >= self.max_faults:
                return None
            rng = random.Random(f"{self.seed}:{path}:{n}")
            if rng.random() >= self.fault_rate:
                return None
            kind = rng.choice(self.fault_kinds)
            self._faults[path] += 1
            self.faults.append((path, kind))
            return kind


def main() -> None:
    """``python _zv_http.py ROOT [--latency S] [--index] [--lifetime S]``: serve ``ROOT`` in
    this process (for benchmarks that want the server out of the client's process), print
    the URL on one line, and stop after ``--lifetime`` seconds or when stdin closes."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("root")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--index", action="store_true")
    parser.add_argument("--lifetime", type=float, default=600.0)
    args = parser.parse_args()
    server = ZVHTTPServer(
        args.root, index=args.index, latency=args.latency, max_lifetime=args.lifetime
    )
    with server:
        print(server.url, flush=True)
        watcher = threading.Thread(target=sys.stdin.read, daemon=True)
        watcher.start()
        watcher.join(timeout=args.lifetime)


if __name__ == "__main__":
    main()
