"""mem0 OSS for ``hindsight bench peers``: its own virtual environment and a runner process.

mem0ai cannot live in hindsight's environment (it pins protobuf<7; chromadb's OpenTelemetry
exporter there needs protobuf 7), so the benchmark keeps a separate virtual environment
with ``MEM0_SPEC`` in it and drives mem0 through ``mem0_runner.py`` (stdlib + mem0 only)
over JSON lines on stdin/stdout.

* ``ensure_venv`` creates the environment once (``python -m venv`` from this interpreter,
  then ``pip install MEM0_SPEC``) and reuses it while its marker file says it was built
  for the same spec and mem0ai reports that version. A directory this module did not make
  is never deleted. Failures raise ``Mem0Unavailable`` with a one-line reason (pip's own
  last words), which becomes the peers table's mem0 row.
* ``Mem0Runner`` starts the runner with the environment's Python in isolated mode (no
  PYTHONPATH, no user site, no hindsight import), sends requests and waits for each reply
  with a time-out; a crash, a time-out or an error reply raises ``RunnerError`` with the
  runner's last stderr lines. Children never see OPENAI_*/OPENROUTER_* variables, and mem0's
  telemetry is off.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..core.embedding.onnx.export import cache_root
from .closing import ClosedOnExit

MEM0_VERSION = "2.2.1"
MEM0_SPEC = f"mem0ai=={MEM0_VERSION}"
MARKER = ".hindsight-mem0-venv.json"
RUNNER = Path(__file__).with_name("mem0_runner.py")
VENV_ENV = "HINDSIGHT_MEM0_VENV"
_PIP_NOISE = "is ignored: it is neither a file nor a directory"  # this machine's pip.conf names absent local indexes


class Mem0Unavailable(Exception):
    """mem0 cannot run here; the message is the reason the peers table shows."""


class RunnerError(Exception):
    """The mem0 runner failed a request, crashed or stopped answering."""


def default_venv() -> Path:
    """``$HINDSIGHT_MEM0_VENV``, else ``mem0-venv`` in hindsight's cache directory."""
    if explicit := os.environ.get(VENV_ENV):
        return Path(explicit).expanduser()
    return cache_root() / "mem0-venv"


def venv_python(venv: Path) -> Path:
    """The interpreter of the virtual environment at ``venv``."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment minus what would leak hindsight or an API key into a child."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        and not k.startswith(("OPENAI_", "OPENROUTER_", "MEM0_"))
    }
    env.update(extra)
    return env


def installed_version(python: Path, distribution: str = "mem0ai") -> str | None:
    """The version of ``distribution`` that ``python`` sees (no import of it), or None."""
    try:
        proc = subprocess.run(
            [
                str(python),
                "-I",
                "-c",
                f"import importlib.metadata as m; print(m.version({distribution!r}))",
            ],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def _read_marker(venv: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((venv / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def _write_marker(venv: Path, **fields: Any) -> None:
    marker = {"spec": MEM0_SPEC, "made_by": "hindsight bench peers", **fields}
    (venv / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def is_ready(venv: Path) -> bool:
    """Whether ``venv`` is a finished environment for ``MEM0_SPEC`` whose mem0ai is that version."""
    marker = _read_marker(venv)
    if not marker or marker.get("spec") != MEM0_SPEC or not marker.get("complete"):
        return False
    python = venv_python(venv)
    return python.exists() and installed_version(python) == MEM0_VERSION


@contextlib.contextmanager
def _locked(venv: Path) -> Iterator[None]:
    """One builder at a time for ``venv`` (two benchmark runs starting together wait for each other)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as before
        yield
        return
    with open(venv.with_name(venv.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(text: str, lines: int = 3, chars: int = 600) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip() and _PIP_NOISE not in line]
    return " | ".join(kept[-lines:])[-chars:]


def _run(command: list[str], what: str, venv: Path, timeout: float) -> None:
    """Run one build step; any failure becomes ``Mem0Unavailable`` naming the step and its last output."""
    prefix = f"could not create mem0's virtual environment at {venv}: {what}"
    try:
        proc = subprocess.run(
            command,
            env=child_env(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1"),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise Mem0Unavailable(f"{prefix} took longer than {timeout:.0f} s") from None
    except OSError as exc:
        raise Mem0Unavailable(f"{prefix} could not start: {exc}") from None
    if proc.returncode != 0:
        detail = _tail(proc.stderr) or _tail(proc.stdout) or "no output"
        raise Mem0Unavailable(f"{prefix} failed (exit {proc.returncode}): {detail}")


def ensure_venv(
    venv: Path | None = None, *, progress: Callable[[str], None] | None = None, timeout: float = 1800
) -> Path:
    """The Python of mem0's environment at ``venv`` (default ``default_venv()``), built first if needed.

    Reused when ready (``is_ready``); rebuilt when it is one of ours but unfinished, for
    another spec, or broken (its base interpreter gone); refused when the directory is not
    empty and not ours. ``timeout`` bounds each build step (pip waits on the network).
    """
    venv = Path(venv or default_venv()).expanduser().absolute()
    say = progress or (lambda _msg: None)
    try:
        venv.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Mem0Unavailable(f"could not create mem0's virtual environment at {venv}: {exc}") from None
    with _locked(venv):
        if is_ready(venv):
            return venv_python(venv)
        if venv.exists():
            if not venv.is_dir() or (any(venv.iterdir()) and _read_marker(venv) is None):
                raise Mem0Unavailable(
                    f"{venv} exists and is not a virtual environment this benchmark made; remove it or "
                    f"choose another path (--mem0-venv or {VENV_ENV})"
                )
            shutil.rmtree(venv)
        say(f"creating mem0's virtual environment at {venv} ({MEM0_SPEC}; once, reused afterwards)…")
        venv.mkdir(parents=True)
        _write_marker(venv, complete=False)
        _run([sys.executable, "-m", "venv", str(venv)], "python -m venv", venv, timeout)
        python = venv_python(venv)
        _run(
            [str(python), "-m", "pip", "install", "--progress-bar", "off", MEM0_SPEC],
            f"pip install {MEM0_SPEC}",
            venv,
            timeout,
        )
        found = installed_version(python)
        if found != MEM0_VERSION:
            raise Mem0Unavailable(f"pip installed mem0ai {found} at {venv}, not {MEM0_VERSION}")
        _write_marker(
            venv, complete=True, python=sys.version.split()[0], created=datetime.now(UTC).isoformat(timespec="seconds")
        )
    return python


class Mem0Runner(ClosedOnExit):
    """``mem0_runner.py`` in mem0's environment: ``request(op, **fields)`` → the reply dict."""

    def __init__(self, python: Path, *, workdir: Path, timeout: float = 600) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.timeout = timeout
        self.log_path = workdir / "mem0-runner.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - kept open for the child's lifetime
        home = workdir / "mem0-home"  # mem0 writes ~/.mem0 (config, user id) at import: keep it here
        try:
            self.proc = subprocess.Popen(
                [str(python), "-I", str(RUNNER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                cwd=workdir,
                env=child_env(MEM0_DIR=str(home), MEM0_TELEMETRY="False", HF_HUB_OFFLINE="1"),
                text=True,
                encoding="utf-8",
            )
        except OSError as exc:
            self._log.close()
            raise RunnerError(f"could not start mem0's runner with {python}: {exc}") from None
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str] | None) -> None:
        if stream is not None:
            for line in stream:
                self._replies.put(line)
        self._replies.put(None)

    def log_tail(self) -> str:
        """The runner's last stderr lines, for an error message."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return _tail(text, lines=4, chars=800)

    def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its reply; ``RunnerError`` unless the reply is ``ok``."""
        wait = self.timeout if timeout is None else timeout
        if self.proc.poll() is not None:
            raise RunnerError(f"mem0's runner has exited (code {self.proc.returncode}): {self.log_tail()}")
        if self.proc.stdin is None:
            raise RunnerError("mem0's runner has no stdin")
        try:
            self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise RunnerError(f"could not send {op!r} to mem0's runner ({exc}): {self.log_tail()}") from None
        try:
            line = self._replies.get(timeout=wait)
        except queue.Empty:
            self._stop()
            raise RunnerError(f"mem0's runner gave no reply to {op!r} within {wait:.0f} s; stopped it") from None
        if line is None:
            code = self.proc.wait()
            raise RunnerError(f"mem0's runner exited (code {code}) during {op!r}: {self.log_tail()}")
        try:
            reply = json.loads(line)
        except ValueError:
            raise RunnerError(f"mem0's runner replied to {op!r} with a line that is not JSON: {line[:200]!r}") from None
        if not isinstance(reply, dict) or reply.get("ok") is not True:
            error = reply.get("error") if isinstance(reply, dict) else reply
            raise RunnerError(f"mem0 failed on {op!r}: {error}")
        return reply

    def _stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """Ask the runner to exit (kill it if it does not), then release its pipes and log."""
        if self.proc.poll() is None:
            with contextlib.suppress(RunnerError):
                self.request("exit", timeout=30)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._stop()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._reader.join(timeout=5)
        self._log.close()
