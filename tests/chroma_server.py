"""Start a real Chroma server (`chroma run`) on 127.0.0.1 for tests and benchmarks."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chroma_executable() -> str | None:
    local = Path(sys.executable).with_name("chroma")
    return str(local) if local.exists() else shutil.which("chroma")


@contextmanager
def chroma_server(path: Path, timeout: float = 60.0) -> Iterator[str]:
    exe = chroma_executable()
    if exe is None:
        raise RuntimeError("the `chroma` executable (from the chromadb package) is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"chroma run did not start on {url}") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
