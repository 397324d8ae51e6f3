"""`hindsight bench …`: the benchmarks (recall quality, tokens, grid, peers, scale, start-up, lifecycle, attacks).

Each imports its benchmark module only when run, so ``hindsight --help`` stays quick; results
are printed as a Markdown table (or JSON with ``--json``) and written to ``benchmarks/results``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from ..core.errors import HindsightError, InvalidInputError
from ..terminal import check_output_file, err_console, fail, progress_bar, reported

bench_app = typer.Typer(
    help="Benchmarks: recall quality, speed at scale, peers, start-up, the memory over months.", no_args_is_help=True
)

DEV_DATA = Path("../shared/data/locomo_dev")
RESULTS = Path("benchmarks/results")


def _emit(result: dict[str, Any], *, as_json: bool, out: Path | None, table: str, plot: Any = None) -> None:
    """One JSON object on stdout with --json (nothing else), else a Markdown table; optional file + PNG."""
    if out is not None:
        with reported():
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            if plot is not None:
                plot(result, out.with_suffix(".png"))
        err_console.print(f"[dim]wrote {out}{' and ' + str(out.with_suffix('.png')) if plot else ''}[/dim]")
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(table + "\n")  # raw, so Markdown rows are never wrapped


def _check_out(out: Path | None) -> None:
    """Refuse an unwritable ``--out`` before a benchmark runs for minutes, not after."""
    if out is not None:
        with reported():
            check_output_file(out, "--out", make_parents=True)


def _say(message: str) -> None:
    """A benchmark's line of news (a conversation done), dim on stderr, above any progress bar."""
    err_console.print(f"[dim]{message}[/dim]")


@contextmanager
def _user_errors() -> Iterator[None]:
    """A benchmark's ``ValueError``/``FileNotFoundError`` (bad data, a bad option): the user's to fix, not a bug."""
    try:
        yield
    except (FileNotFoundError, ValueError) as exc:
        raise HindsightError(str(exc)) from None


def _bench_env() -> None:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[
        Path, typer.Option(help="Directory of LoCoMo conversation *.json files.", exists=True, file_okay=False)
    ] = DEV_DATA,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (and nothing else) on stdout.")
    ] = False,
    store: Annotated[
        Path | None, typer.Option("--store", help="Keep the store here (default: a temporary directory).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON here, with a PNG plot beside it.")] = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=50)] = 10,
    budget: Annotated[int, typer.Option(min=50, help="Token budget of the recalled context.")] = 450,
    rows: Annotated[bool, typer.Option("--rows", help="Include one row per question.")] = False,
    default_path: Annotated[
        str,
        typer.Option(
            "--default-path",
            help="Default-path rows to add (record_turn,store_memory,record_turn_stdio,store_memory_batch,"
            "export_import), or 'none'.",
        ),
    ] = "record_turn,store_memory,record_turn_stdio,store_memory_batch,export_import",
) -> None:
    """Evidence recall@5/10/20, all-found, MRR and context tokens on LoCoMo: tuned and default path."""
    _bench_env()
    from .locomo import run_locomo
    from .locomo_default import MODES
    from .locomo_report import default_path_table, locomo_table, plot_locomo, tokens_table

    modes = [] if default_path.strip().lower() == "none" else [m.strip() for m in default_path.split(",") if m.strip()]
    if unknown := sorted(set(modes) - set(MODES)):
        fail(HindsightError(f"unknown --default-path mode {', '.join(unknown)}; choose from {', '.join(MODES)}"))
        return
    _check_out(out)
    with reported(), _user_errors(), progress_bar() as steps:
        result = run_locomo(
            data, store=store, top_k=top_k, budget=budget, default_modes=modes, progress=_say, steps=steps
        )
    if not rows:
        result.pop("rows", None)
    table = locomo_table(result) + "\n\n" + default_path_table(result) + "\n\n" + tokens_table(result)
    _emit(result, as_json=as_json, out=out, table=table, plot=plot_locomo)


@bench_app.command("tokens")
def bench_tokens(
    data: Annotated[
        Path, typer.Option(help="Directory of LoCoMo conversation *.json files.", exists=True, file_okay=False)
    ] = DEV_DATA,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON here.")] = None,
    budget: Annotated[int, typer.Option(min=50)] = 450,
) -> None:
    """Tokens injected per question vs the full history and a same-budget last-N-turns window."""
    _bench_env()
    from .locomo import run_locomo
    from .locomo_report import tokens_table

    _check_out(out)
    with reported(), _user_errors(), progress_bar() as steps:
        result = run_locomo(data, budget=budget, progress=_say, steps=steps)
    summary = {
        "benchmark": "tokens",
        "questions": result["questions"],
        "recall@10": result["recall@10"],
        **result["tokens"],
        "per_category": {
            c: {
                "recall@10": p["recall@10"],
                "last_n_recall": p["last_n_recall"],
                "context_tokens@10": p["context_tokens@10"],
            }
            for c, p in result["per_category"].items()
        },
    }
    _emit(summary, as_json=as_json, out=out, table=tokens_table(result))


@bench_app.command("grid")
def bench_grid(
    data: Annotated[
        Path, typer.Option(help="Labelled LoCoMo-style directory (dev data only).", exists=True, file_okay=False)
    ] = DEV_DATA,
    grid: Annotated[
        str | None, typer.Option(help='e.g. "dense=0.3,0.7;context=0,0.5;entity_boost=0,0.2;recency=0,0.1;top_k=5,10"')
    ] = None,
    max_tokens: Annotated[
        int, typer.Option(help="Pick the best setting among those using at most this many tokens.")
    ] = 450,
    default_path: Annotated[
        bool, typer.Option("--default-path", help="record_turn writes; the grid around RecallWeights().")
    ] = False,
    leave_one_out: Annotated[
        bool, typer.Option("--leave-one-out", help="Per conversation: weights best on the others, scored on it.")
    ] = False,
    count_access: Annotated[
        bool,
        typer.Option(
            "--count-access", help="With --default-path: each setting on a fresh copy, access counted as users' is."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file (PNG beside it).")] = RESULTS / "grid.json",
) -> None:
    """Grid search over fusion weights, top_k and budget: recall, precision, MRR; weights chosen leaving one out."""
    _bench_env()
    from .grid import DEFAULT_GRID, DEFAULT_PATH_GRID, parse_grid, run_grid
    from .grid_report import best_line, grid_table, loo_table, plot_grid

    _check_out(out)
    with reported(), _user_errors(), progress_bar() as steps:
        chosen = parse_grid(grid, DEFAULT_PATH_GRID if default_path else DEFAULT_GRID)
        result = run_grid(
            data,
            grid=chosen,
            max_tokens=max_tokens,
            default_path=default_path,
            with_leave_one_out=leave_one_out,
            count_access=count_access,
            progress=_say,
            steps=steps,
        )
    table = grid_table(result) + f"\n\n{best_line(result)}"
    table += f"\n\n{loo_table(result)}" if "leave_one_out" in result else ""
    _emit(result, as_json=as_json, out=out, table=table, plot=plot_grid)


@bench_app.command("peers")
def bench_peers(
    data: Annotated[
        Path, typer.Option(help="Directory of LoCoMo conversation *.json files.", exists=True, file_okay=False)
    ] = DEV_DATA,
    only: Annotated[
        str | None,
        typer.Option(help="Comma-separated subset: hindsight,hindsight-defaults,langchain,llamaindex,mem0,engram"),
    ] = None,
    mem0_venv: Annotated[
        Path | None,
        typer.Option(
            help="mem0's own virtual environment, created there on first use and reused "
            "(default: $HINDSIGHT_MEM0_VENV, else mem0-venv in hindsight's cache directory).",
            file_okay=False,
        ),
    ] = None,
    chroma: Annotated[
        str, typer.Option(help="Chroma for hindsight, LangChain, LlamaIndex: embedded, or server (`chroma run`, HTTP).")
    ] = "embedded",
    as_json: Annotated[bool, typer.Option("--json")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file (PNG beside it).")] = RESULTS / "peers.json",
) -> None:
    """Hindsight next to LangChain, LlamaIndex, mem0 and engram-search memories: same data, same model, one run.

    mem0 runs in a virtual environment the first run creates with pip (its protobuf pin clashes with
    chromadb's), engram-search from the "engram" extra; a peer that cannot run has a row saying why.
    """
    _bench_env()
    from .peers import run_peers
    from .peers_report import peers_table, plot_peers

    _check_out(out)
    names = [s.strip() for s in only.split(",")] if only else None
    with reported(), _user_errors():
        result = run_peers(data, only=names, progress=_say, mem0_venv=mem0_venv, chroma=chroma)
    _emit(result, as_json=as_json, out=out, table=peers_table(result), plot=plot_peers)


@bench_app.command("scale")
def bench_scale(
    sizes: Annotated[str, typer.Option(help="Comma-separated namespace sizes.")] = "1000,10000,100000",
    queries: Annotated[int, typer.Option(help="Timed recalls per size.")] = 200,
    mode: Annotated[str, typer.Option(help="embedded, server, or both")] = "embedded",
    out: Annotated[Path, typer.Option(help="JSON results file.")] = Path("benchmarks/results/scale.json"),
    torch_threads: Annotated[
        int | None, typer.Option(min=1, help="torch intra-op threads (default: one per core).")
    ] = None,
) -> None:
    """Recall latency (p50/p99, query embedding included) and store throughput at scale."""
    _bench_env()
    from .scale import run_scale
    from .scale_report import scale_table

    _check_out(out)
    with reported(), _user_errors():
        counts = [_whole(s.strip(), "--sizes") for s in sizes.split(",") if s.strip()]
        results = run_scale(
            sizes=counts, queries=queries, mode=mode, out=out, console=err_console, torch_threads=torch_threads
        )
    sys.stdout.write(scale_table(results) + "\n")


def _whole(text: str, option: str) -> int:
    """``text`` as a positive whole number, or an error naming ``option``."""
    if not text.isdigit() or int(text) <= 0:
        raise InvalidInputError(option, f"{text!r} is not a positive whole number")
    return int(text)


@bench_app.command("startup")
def bench_startup(
    runs: Annotated[int, typer.Option(help="Timed runs of each command.")] = 7,
    warmup: Annotated[int, typer.Option(help="Untimed runs of each command first (file cache, bytecode).")] = 1,
    memories: Annotated[int, typer.Option(help="Memories written to the temporary store first.")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file.")] = RESULTS / "startup.json",
) -> None:
    """Whole-process time of `hindsight --help`, `stats` and `recall` (min/median), and whether torch was imported."""
    from ..core.model.arguments import whole_number

    with reported():
        whole_number(runs, "runs", low=1, high=1000)
        whole_number(warmup, "warmup", low=0, high=100)
        whole_number(memories, "memories", low=1, high=10_000)
    _check_out(out)
    _bench_env()
    from .startup import run_startup, startup_table

    with reported():
        result = run_startup(runs=runs, warmup=warmup, memories=memories, progress=_say)
    _emit(result, as_json=as_json, out=out, table=startup_table(result))


@bench_app.command("floors")
def bench_floors(
    data: Annotated[
        list[Path] | None,
        typer.Option(
            help="A directory of LoCoMo-format *.json conversations (repeatable).", exists=True, file_okay=False
        ),
    ] = None,
    model: Annotated[
        str, typer.Option(help="The embedding model setting the conversations are written with (auto by default).")
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file.")] = None,
) -> None:
    """What each model's relevance floors gate: answered and off-topic questions, leave one conversation out."""
    _check_out(out)
    _bench_env()
    from .floors import floors_table, run_floors

    with reported(), _user_errors(), progress_bar() as steps:
        result = run_floors(data or [DEV_DATA], model=model, progress=_say, steps=steps)
    _emit(result, as_json=as_json, out=out, table=floors_table(result))


@bench_app.command("judgement")
def bench_judgement(
    llm: Annotated[str, typer.Option(help="none (offline rules), scripted (a scripted LLM server), or both.")] = "both",
    cases: Annotated[
        Path | None, typer.Option(help="A judgement case file (TOML) instead of the packaged one.", exists=True)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file.")] = None,
) -> None:
    """Updates, other people's facts, paraphrases and habits, in English, Chinese and mixed: judged as written."""
    if llm not in ("none", "scripted", "both"):
        fail(f"--llm must be none, scripted or both, not {llm!r}")
    _check_out(out)
    _bench_env()
    from .judgement import judgement_table, run_judgement

    with reported(), _user_errors():
        result = run_judgement(llm, cases_file=cases, progress=_say)
    _emit(result, as_json=as_json, out=out, table=judgement_table(result))


@bench_app.command("distinct")
def bench_distinct(
    count: Annotated[int, typer.Option(help="Distinct near-identical facts to write.")] = 210,
    repeat_share: Annotated[float, typer.Option(help="Share of the facts written a second time.")] = 0.3,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file.")] = RESULTS / "distinct.json",
) -> None:
    """Distinct facts kept (dates, amounts, codes that differ) and copies per repeated fact, on the default path."""
    from ..core.model.arguments import fraction, whole_number

    with reported():
        whole_number(count, "count", low=2, high=100_000)
        fraction(repeat_share, "repeat_share")
    _check_out(out)
    _bench_env()
    from .distinct import run_distinct

    with reported():
        result = run_distinct(count=count, repeat_share=repeat_share)
    from .distinct import distinct_table

    table = distinct_table(result)
    _emit(result, as_json=as_json, out=out, table=table)


@bench_app.command("load")
def bench_load(
    clients: Annotated[int, typer.Option(min=1, max=64, help="Concurrent clients (threads).")] = 8,
    operations: Annotated[int, typer.Option(min=1, help="Calls per client.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON here.")] = None,
) -> None:
    """N clients × M mixed calls on two replicas over one Chroma server: rate, latency, errors, lost writes."""
    _bench_env()
    from .load import load_table, run_load

    _check_out(out)
    with reported(), _user_errors():
        result = run_load(clients=clients, operations=operations, progress=_say)
    _emit(result, as_json=as_json, out=out, table=load_table(result))


@bench_app.command("adversarial")
def bench_adversarial(
    size: Annotated[int, typer.Option(help="Bytes of each pathological text (the content limit is 32 KB).")] = 32_000,
    recalls: Annotated[int, typer.Option(help="Recalls timed after the long memories are stored.")] = 3,
    filter_keys: Annotated[int, typer.Option(help="Keys of the huge metadata filter.")] = 10_000,
    depth: Annotated[int, typer.Option(help="Levels of the deeply nested metadata.")] = 10_000,
    idle_seconds: Annotated[
        float, typer.Option(help="Seconds the other tenant recalls alone first (its baseline).")
    ] = 5.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file.")] = RESULTS / "adversarial.json",
) -> None:
    """Pathological inputs against a real HTTP server with two tenants: cost × normal, and the other tenant's wait."""
    from ..core.model.arguments import whole_number

    with reported():
        whole_number(size, "size", low=100, high=32 * 1024)
        whole_number(recalls, "recalls", low=1, high=100)
        whole_number(filter_keys, "filter_keys", low=1, high=1_000_000)
        whole_number(depth, "depth", low=1, high=1_000_000)
        if not 0 < idle_seconds <= 600:
            raise InvalidInputError("idle_seconds", f"{idle_seconds} is not between 0 and 600 seconds")
    _check_out(out)
    _bench_env()
    from .adversarial import run_adversarial
    from .adversarial_report import adversarial_table

    with reported(), _user_errors():
        result = run_adversarial(
            size=size, recalls=recalls, filter_keys=filter_keys, depth=depth, idle_seconds=idle_seconds, progress=_say
        )
    _emit(result, as_json=as_json, out=out, table=adversarial_table(result))


@bench_app.command("lifecycle")
def bench_lifecycle(
    llm: Annotated[
        str,
        typer.Option(
            "--llm",
            help="none: the rules, offline; scripted: a scripted OpenAI-compatible server on 127.0.0.1 "
            "with faults injected (429, 500, timeouts, malformed JSON); both: one run each.",
        ),
    ] = "none",
    weeks: Annotated[int, typer.Option(help="Weeks of the history to replay (all 62 by default).")] = 62,
    fault_rate: Annotated[float, typer.Option(help="Share of the scripted LLM's replies that are faults.")] = 0.15,
    seed: Annotated[int, typer.Option(help="Seed of the scripted LLM's faults.")] = 7,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (and nothing else) on stdout.")
    ] = False,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON here, with a PNG plot beside it.")] = None,
) -> None:
    """A scripted 14-month history written week by week, upkeep on schedule, scored at each month."""
    from ..core.model.arguments import fraction, whole_number
    from .lifecycle_history import WEEKS

    modes = {"none": ("none",), "scripted": ("scripted",), "both": ("none", "scripted")}.get(llm.strip().lower())
    with reported():
        if modes is None:
            raise InvalidInputError("--llm", f"{llm!r} is not none, scripted or both")
        whole_number(weeks, "weeks", low=1, high=WEEKS)
        fraction(fault_rate, "fault_rate")
    _check_out(out)
    _bench_env()
    from .lifecycle import run_lifecycle
    from .lifecycle_report import lifecycle_table, plot_lifecycle

    with reported(), _user_errors():
        result = run_lifecycle(modes=modes or (), weeks=weeks, fault_rate=fault_rate, seed=seed, progress=_say)
    _emit(result, as_json=as_json, out=out, table=lifecycle_table(result), plot=plot_lifecycle)
