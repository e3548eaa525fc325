"""An application served by uvicorn on a free loopback port, in a thread, for tests that need real HTTP;
and a data folder an embedded PostgreSQL of the test's own can live in."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def server_data_dir(prefix: str) -> Iterator[Path]:
    """A fresh folder for an embedded PostgreSQL, removed afterwards. Not pytest's tmp_path: its base
    folder is 0700, and the server runs as another user when the tests run as root."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_in_thread(app) -> Iterator[str]:
    """Serve `app` until the block ends; yields its base URL."""
    import uvicorn

    port = free_port()
    # A connection a test leaves open (a websocket, a streamed export) holds uvicorn's graceful shutdown until its
    # bound: then it is cut and the lifespan still ends, so the app's notifications listener never outlives the
    # test and its database (a leaked one logs "database … does not exist; listening again" for the rest of the run).
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                                           timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=10)
        assert not thread.is_alive(), "the served app did not shut down: its lifespan would outlive the test"
