"""Local stand-ins for the services alert notifications go to: a real HTTP server on loopback
that checks each request the way the service does, and an alert row to notify about.

``http_service(check)`` starts a ``ThreadingHTTPServer`` on 127.0.0.1 in a thread. Each POST is
recorded (path, headers, raw body, arrival time); ``check(request)`` returns what the service
would refuse in it (``None``: nothing), and a refused request is answered ``400`` with that
text, as Slack, PagerDuty and Alertmanager answer a malformed body. The script decides the
rest: ``answers`` (status, body, headers), the last one repeating, or ``hang`` (accept, never
answer, until the test ends). The ``test_notifier*`` modules use it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from offsetscope.alerts.model import AlertRow

T = 1_700_000_000_000


@dataclass(frozen=True)
class Request:
    """One POST as the server received it."""

    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes
    at: float  # time.monotonic() on arrival

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: str = ""
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class Script:
    """What the server answers, and what it saw."""

    answers: list[Answer] = field(default_factory=lambda: [Answer()])
    hang: bool = False
    requests: list[Request] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # what check() refused, in order
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


Check = Callable[[Request], "str | None"]


@contextmanager
def http_service(check: Check | None = None) -> Iterator[tuple[str, Script]]:
    """``(base URL, script)`` of a server on loopback; stopped (and released) afterwards."""
    script = Script()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = Request(
                self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()
            )
            with lock:
                script.requests.append(request)
                n = len(script.requests)
            script.arrived.set()
            if script.hang:
                script.release.wait(timeout=60)  # until the test tears the server down
                return
            problem = check(request) if check is not None else None
            if problem is not None:
                script.refusals.append(problem)
                answer = Answer(400, problem)
            else:
                answer = script.answers[min(n, len(script.answers)) - 1]
            data = answer.body.encode()
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", script
    finally:
        script.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def alert(
    aid: str = "a" * 32, status: str = "open", severity: str = "critical", **kw: Any
) -> AlertRow:
    """A rebalance-storm alert of group ``payments`` (fields overridable)."""
    fields: dict[str, Any] = {
        "alert_id": aid,
        "rule": "rebalance_storm",
        "subject_kind": "group",
        "subject": "payments",
        "detail": "",
        "group_life": 0,
        "episode_start": T,
        "status": status,
        "severity": severity,
        "value": 7.0,
        "threshold": 5.0,
        "opened_at": T,
        "resolved_at": None if status == "open" else T + 60_000,
        "updated_at": T + 1_000,
        "reason": "group payments: 7 rebalances within 10m (more than 5)",
        "generations": (3, 4, 5),
        "member_ids": ("m-1",),
        "instance_ids": (),
        "transactional_id": None,
        "producer_id": None,
        "producer_epoch": None,
        "evidence": (("window_ms", "600000"),),
        "first_batch_id": 1,
        "last_batch_id": 1,
    }
    fields.update(kw)
    return AlertRow(**fields)
