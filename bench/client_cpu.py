"""Figure 1c: the whole command as a user runs it, and where its CPU goes per judged row (issue 31).

``ragjudge score ROWS.jsonl -m sufficiency -o OUT.parquet -q`` runs as its own process against
the fake OpenAI-compatible server in another process, answering after L seconds, at
concurrency C, from an empty response cache. Printed per run (median of ``--repeat``):

- the whole process's wall time (start-up, reading and writing included) against the
  physical limit N / (C / L), as a ratio (1.0: as fast as the server allows);
- ragjudge's process CPU time (user + system, every thread, from ``wait4``), in ms per row;
- the fake server's CPU time over the same run;
- the timeline, from the fake server's clock: the first call's arrival, the probe's reply, the
  steady call rate, the last reply and the exit, in seconds from the process's start, and the
  client's turnaround: from a reply to the arrival of the call that takes its slot (issue 51).

With ``--profile`` (needs ``py-spy`` on the PATH or beside this Python) the same command runs
once more under ``py-spy record`` (raw stacks, all threads, idle excluded), and every sample is
given to the stage of its innermost ragjudge-known frame: read, map, injection removal,
render, cache key, cache look-up, cache write, transport (aiohttp), event loop (asyncio), the
chokepoint's own work, the scorer's fan-out, parse, decide, frame, write, summary/gate/report,
imports, other. Each stage's share times the unprofiled CPU per row is its ms per row.

    python bench/client_cpu.py [--runs 64:0.1:12000 256:1:10000] [--repeat 3] [--profile]
    python bench/client_cpu.py --runs 64:0:20 --repeat 7     # the 20-row run (start-up)
    python bench/client_cpu.py --checkout ../ragjudge-old    # another checkout (before/after)
    python bench/client_cpu.py --runs 64:0.1:100000 --repeat 1 --warm   # then from the warm cache
    python bench/client_cpu.py --runs 64:0:100000 --repeat 1 --warm --profile   # and split the warm run's CPU too
    python bench/client_cpu.py --floor    # also the floor: a bare aiohttp client, same server, same C

With ``--floor`` each run is followed by the same number of calls from a bare aiohttp client
(one ``ClientSession``, uvloop, the same request body as a judged row's, ``orjson``-parsed
replies, a semaphore of C) in its own process: its CPU per call is what aiohttp and the event
loop cost with no ragjudge at all, so ragjudge's CPU per row less the floor is ragjudge's own.

Writes its scratch files to bench/_work/client_cpu/.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, machine, synthetic_rows

HERE = WORK / "client_cpu"

# (stage, file pattern, function pattern): the innermost frame that matches names the stage
STAGES: list[tuple[str, str, str]] = [
    ("imports", r"<frozen importlib", r""),
    ("imports", r"", r"^<module>$"),
    ("read", r"ragjudge/io/readers\.py", r""),
    ("injection removal", r"ragjudge/injection\.py", r""),
    ("map", r"ragjudge/records\.py", r""),
    ("map", r"ragjudge/scoring/scorer\.py", r"^Scorer\.(_rows|records)$"),
    ("cache key", r"ragjudge/cache\.py", r"^(cache_key|key_bytes|_plain|_messages_plain|_json_escape)$|genexpr"),
    ("cache key", r"ragjudge/model/chokepoint\.py", r"^Model\.key$"),
    ("cache write", r"ragjudge/cache\.py", r"^ResponseCache\.(set|flush|close)$"),
    ("cache look-up", r"ragjudge/cache\.py", r""),
    ("cache look-up", r"ragjudge/model/chokepoint\.py", r"^Model\.(peek|prefetch)$"),
    ("parse", r"ragjudge/judges/", r"(parse|load_reply|_reply|_json)"),
    ("decide", r"ragjudge/judges/", r"(decide|combine|evidence|_checked)"),
    ("render", r"ragjudge/judges/", r""),
    ("render", r"jinja2/", r""),
    ("transport", r"ragjudge/transports/", r""),
    ("transport", r"(aiohttp|yarl|multidict|aiohappyeyeballs|propcache)/", r""),
    ("frame", r"ragjudge/scoring/schema\.py", r"^(Frames\._scored|_pandas_array)$"),
    ("frame", r"ragjudge/diagnosis\.py", r""),
    ("write", r"ragjudge/io/", r""),
    ("summary, gate, report", r"ragjudge/(gate|reports/|cli|summary|compare)", r""),
    ("chokepoint", r"ragjudge/model/", r""),
    ("event loop", r"ragjudge/_loop\.py", r"run$"),  # uvloop's C code runs inside loop.run_forever()
    ("scorer fan-out", r"ragjudge/(scoring/|(pipeline|plan|_loop)\.py)", r""),
    ("event loop", r"(asyncio/|selectors\.py|concurrent/futures|uvloop)", r""),
]
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>.*?)(?::\d+)?\)$")


def stage_of(frames: list[str]) -> str:
    """The stage of one sampled stack (outermost frame first)."""
    for frame in reversed(frames):
        match = _FRAME.match(frame)
        function, file = (match.group("function"), match.group("file")) if match else (frame, "")
        for stage, file_pattern, function_pattern in STAGES:
            if (not file_pattern or re.search(file_pattern, file)) and (not function_pattern or re.search(function_pattern, function)):
                return stage
    return "other"


def stage_shares(raw: Path) -> tuple[dict[str, float], int]:
    """Share of samples per stage in py-spy's raw (collapsed) output, and the sample count."""
    counts: collections.Counter[str] = collections.Counter()
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith("process ") and not f.startswith("thread ")]
        counts[stage_of(frames)] += int(n)
    total = sum(counts.values())
    return ({stage: n / total for stage, n in counts.most_common()} if total else {}), total


def py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


CPUS: dict[str, set[int] | None] = {"server": None, "client": None}  # --server-cpus / --client-cpus


def cpus(spec: str | None) -> set[int] | None:
    """``0-7`` or ``8,9`` -> the set of CPU numbers; None for none given."""
    if not spec:
        return None
    out: set[int] = set()
    for part in spec.split(","):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def pinned(role: str) -> Any:
    """A ``preexec_fn`` that pins the child process to the CPUs given for ``role``, or None."""
    chosen = CPUS[role]
    return None if chosen is None else (lambda: os.sched_setaffinity(0, chosen))


def python_path(checkout: Path) -> str:
    """``checkout`` first on the child's import path, then whatever PYTHONPATH already holds
    (packages installed with ``pip --target`` where the machine has no virtual environment)."""
    return os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH", "")) if p)


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "ragjudge.fakeserver", "--port", "0", "--latency", str(latency)], preexec_fn=pinned("server"),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    url = process.stdout.readline().strip()  # type: ignore[union-attr]
    if not url.startswith("http"):
        raise RuntimeError("fake server did not start")
    return process, url


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(source: Path, url: str, concurrency: int, prefix: list[str] | None = None, cache: bool = True,
             checkout: Path = ROOT, fresh: bool = True) -> dict[str, float]:
    """One whole ``ragjudge score`` process; wall seconds and its CPU seconds. ``fresh``: from
    an empty response cache (else from the one the last run left)."""
    cache_dir = HERE / "cache"
    if fresh:
        shutil.rmtree(cache_dir, ignore_errors=True)
    command = [*(prefix or []), sys.executable, "-m", "ragjudge", "score", str(source), "-m", "sufficiency", "--model", "openai/fake-judge",
               "--api-base", url, "--concurrency", str(concurrency), "--min-pass-rate", "0", "-q", "-o", str(HERE / "out.parquet"),
               *(["--cache-dir", str(cache_dir)] if cache else ["--no-cache"])]
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key", "PYTHONPATH": python_path(checkout)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python keeps its compiled modules (see warm_up)
    start, began = time.perf_counter(), time.monotonic()
    process = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pinned("client"))
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    error = process.stderr.read().decode(errors="replace") if process.stderr else ""  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"ragjudge score failed: {error[-2000:]}")
    return {"wall": seconds, "cpu": usage.ru_utime + usage.ru_stime, **timeline(url, began, concurrency)}


def timeline(url: str, began: float, concurrency: int) -> dict[str, float]:
    """The run's timeline from the fake server's own clock (``GET /v1/stats``; time.monotonic()
    is one clock for every process on Linux), in seconds from the process's start: ``first``
    call's arrival, the ``probe``'s reply (the first call goes alone), the ``second`` call's
    arrival (the others go once the probe's reply is read or ``ragjudge.model.PROBE_GRACE_S`` after
    it left), the ``steady`` rate
    (calls a second between the 10th and the 90th percentile of arrivals, as a share of C/L in
    ``steady_share`` where a latency is known), the ``last`` reply. Empty where the server has none
    (a warm run)."""
    import urllib.request

    with urllib.request.urlopen(url + "/stats", timeout=30) as reply:
        stats = json.loads(reply.read())
    arrivals = sorted(t - began for t in stats["arrivals"] if t >= began)
    replied = sorted(t - began for t in stats["replied"] if t >= began)
    if len(arrivals) < 20:
        return {}
    low, high = arrivals[len(arrivals) // 10], arrivals[9 * len(arrivals) // 10]
    steady = (9 * len(arrivals) // 10 - len(arrivals) // 10) / (high - low) if high > low else float("nan")
    return {"first": arrivals[0], "probe": replied[0], "second": arrivals[1], "steady": steady, "last": replied[-1],
            **turnaround(arrivals, replied, concurrency)}


def turnaround(arrivals: list[float], replied: list[float], concurrency: int) -> dict[str, float]:
    """The client's time from a reply to the call that takes its slot, in ms (``turn_mean``,
    ``turn_median``): the k-th reply against the arrival ``concurrency`` calls later (with every
    slot busy, the reply frees the slot that call takes; exact where calls are answered in the
    order they came, as the fake server's fixed latency does). The probe (k = 0) goes alone and is
    left out. Empty where some call got no reply."""
    if len(replied) != len(arrivals) or len(arrivals) <= concurrency + 1:
        return {}
    turns = sorted(arrivals[k + concurrency] - replied[k] for k in range(1, len(arrivals) - concurrency))
    return {"turn_mean": 1000 * statistics.fmean(turns), "turn_median": 1000 * turns[len(turns) // 2]}


FLOOR_CLIENT = """
import asyncio, resource, sys, time
import aiohttp, orjson
from yarl import URL
url, calls, concurrency = URL(sys.argv[1] + "/chat/completions"), int(sys.argv[2]), int(sys.argv[3])
body = open(sys.argv[4], "rb").read()
headers = {"Authorization": "Bearer sk-bench-not-a-key", "Content-Type": "application/json"}

async def main():
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=30)
    async with aiohttp.ClientSession(connector=connector) as session:
        limit = asyncio.Semaphore(concurrency)
        timeout = aiohttp.ClientTimeout(total=600)

        async def one():
            async with limit:
                async with session.post(url, data=body, headers=headers, timeout=timeout) as response:
                    orjson.loads(await response.read())

        await asyncio.gather(*[one() for _ in range(min(calls, 200))])  # connections opened, untimed
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        await asyncio.gather(*[one() for _ in range(calls)])
        after, seconds = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - start
        print(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, seconds)

try:
    import uvloop
    uvloop.run(main())
except ImportError:
    asyncio.run(main())
"""


def floor(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """(CPU seconds per call, wall seconds for all calls) of a bare aiohttp client (``FLOOR_CLIENT``) making ``calls`` calls at
    ``concurrency`` against ``url``, with a judged row's request body (the first row of the bench
    data, as ragjudge renders it)."""
    from ragjudge.config import read_raw_config as load_config  # the config as read, untyped
    from ragjudge.judges import make_judges
    from ragjudge.scoring import Scorer
    from ragjudge.transports.base import Request, chat_body

    rows = HERE / "floor_rows.jsonl"
    synthetic_rows(rows, 1)
    import pandas as pd

    config = load_config(None, metrics=["sufficiency"], model="openai/fake-judge", api_base=url)
    scorer = Scorer(config)
    frame = pd.DataFrame([json.loads(rows.read_text(encoding="utf-8").splitlines()[0])])
    record = scorer.records(frame, scorer.resolve(frame))[0]
    call = make_judges(config)[0].prepare(record)
    body = HERE / "floor_body.json"
    request = Request(messages=call.messages, temperature=call.temperature, max_tokens=config.judge.max_tokens,
                      response_format=call.response_format, seed=config.judge.seed, logprobs=call.logprobs, timeout=600)
    body.write_bytes(json.dumps(chat_body("fake-judge", request)).encode())
    scorer.close()
    done = subprocess.run([sys.executable, "-c", FLOOR_CLIENT, url, str(calls), str(concurrency), str(body)],
                          capture_output=True, text=True, check=True, preexec_fn=pinned("client"))
    cpu, wall = done.stdout.split()[-2:]
    return float(cpu) / calls, float(wall)


def warm_up(checkout: Path) -> None:
    """Import everything a run imports once, untimed, so that Python's compiled modules are
    written (as on a user's machine after the first run)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = python_path(checkout)
    subprocess.run([sys.executable, "-c", "import ragjudge.cli, ragjudge.run.engine, ragjudge.scoring, ragjudge.io.writers, "
                    "ragjudge.transports.openai_http, ragjudge.judges.sufficiency, ragjudge.reports.outputs, aiohttp, pyarrow.parquet"],
                   cwd=checkout, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=["64:0.1:12000", "256:1:10000"], help="CONCURRENCY:LATENCY_SECONDS:ROWS")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="split the CPU per stage with py-spy (one more run)")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--warm", action="store_true", help="also time the same run again from the warm cache (figure 2, whole process)")
    parser.add_argument("--floor", action="store_true", help="also time a bare aiohttp client making the same calls (the transport's floor)")
    parser.add_argument("--server-cpus", help="pin the fake server to these CPUs (0-7), as issue 51 measured: the server on its own cores")
    parser.add_argument("--client-cpus", help="pin ragjudge (and the --floor client) to these CPUs (8-9)")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the ragjudge checkout to run (default: this one), e.g. an older commit")
    args = parser.parse_args()
    CPUS["server"], CPUS["client"] = cpus(args.server_cpus), cpus(args.client_cpus)
    HERE.mkdir(parents=True, exist_ok=True)
    warm_up(args.checkout.resolve())
    pins = "" if not (args.server_cpus or args.client_cpus) else f"; server on CPUs {args.server_cpus or 'any'}, ragjudge on {args.client_cpus or 'any'}"
    print(f"machine: {machine()}; ragjudge score as a process, fake server in another process, empty cache each run{pins}")
    for spec in args.runs:
        concurrency, latency, rows = int(spec.split(":")[0]), float(spec.split(":")[1]), int(spec.split(":")[2])
        source = synthetic_rows(HERE / f"rows_{rows}.jsonl", rows)
        server, url = start_server(latency)
        try:
            runs = []
            for _ in range(args.repeat):
                before = cpu_of(server.pid)
                result = run_once(source, url, concurrency, checkout=args.checkout.resolve())
                result["server_cpu"] = cpu_of(server.pid) - before
                runs.append(result)
            wall = statistics.median(r["wall"] for r in runs)
            cpu = statistics.median(r["cpu"] for r in runs)
            server_cpu = statistics.median(r["server_cpu"] for r in runs)
            limit = rows / (concurrency / latency) if latency else None
            ratio = f"{limit / wall:.2f} of C/L (limit {limit:.2f} s)" if limit else "no latency: no limit"
            print(f"[1c] C={concurrency}, L={latency * 1000:.0f} ms, {rows} rows: whole process {wall:.2f} s median of {args.repeat} "
                  f"(all: {', '.join(format(r['wall'], '.2f') for r in runs)}) = {ratio}; ragjudge CPU {cpu:.2f} s = "
                  f"{1000 * cpu / rows:.3f} ms per row; fake server CPU {server_cpu:.2f} s", flush=True)
            if runs[0].get("first") is not None:
                def middle(key: str, runs: list[dict[str, float]] = runs) -> float:
                    return statistics.median(r[key] for r in runs)

                steady = middle("steady")
                share = f" = {steady / (concurrency / latency):.2f} of C/L" if latency else ""
                print(f"  timeline (medians, s from the process's start): first call {middle('first'):.2f}, the probe's reply "
                      f"{middle('probe'):.2f}, the second call {middle('second'):.2f}, steady {steady:.0f} calls/s{share} (10th to 90th percentile of arrivals), "
                      f"last reply {middle('last'):.2f}, exit {wall:.2f} ({wall - middle('last'):.2f} after the last reply)", flush=True)
                if all("turn_mean" in run for run in runs):
                    print(f"  from a reply to the call that takes its slot (server clock): mean {middle('turn_mean'):.1f} ms, "
                          f"median {middle('turn_median'):.1f} ms", flush=True)
            if args.floor:
                bare, seconds = floor(url, rows, concurrency)
                reach = f" = {limit / seconds:.2f} of C/L" if limit else ""
                print(f"  floor: a bare aiohttp client, the same {rows} calls at C={concurrency}: {1000 * bare:.3f} ms CPU per call, "
                      f"{seconds:.2f} s{reach}; ragjudge's own: {1000 * (cpu / rows - bare):.3f} ms per row", flush=True)
            if args.warm:
                warm = [run_once(source, url, concurrency, checkout=args.checkout.resolve(), fresh=False) for _ in range(args.repeat)]
                seconds = statistics.median(r["wall"] for r in warm)
                print(f"[2] warm cache, {rows} rows, whole process: {seconds:.2f} s = {rows / seconds:,.0f} rows/s "
                      f"(CPU {statistics.median(r['cpu'] for r in warm):.2f} s)", flush=True)
            if args.profile:
                spy = py_spy()
                if spy is None:
                    print("  (--profile: py-spy not found; pip install py-spy)")
                    continue
                raw = HERE / f"profile_c{concurrency}.txt"
                run_once(source, url, concurrency, [spy, "record", "--format", "raw", "--rate", str(args.rate), "--output", str(raw), "--"],
                         checkout=args.checkout.resolve())
                shares, samples = stage_shares(raw)
                print(f"  CPU per row by stage ({samples} py-spy samples; share x {1000 * cpu / rows:.3f} ms):")
                for stage, share in shares.items():
                    print(f"    {stage:<24} {100 * share:5.1f}%  {1000 * cpu / rows * share:.3f} ms")
                if args.warm:  # the cache that run filled, read back
                    warm_cpu = statistics.median(r["cpu"] for r in warm)
                    raw = HERE / f"profile_c{concurrency}_warm.txt"
                    run_once(source, url, concurrency, [spy, "record", "--format", "raw", "--rate", str(args.rate), "--output", str(raw), "--"],
                             checkout=args.checkout.resolve(), fresh=False)
                    shares, samples = stage_shares(raw)
                    print(f"  warm cache, CPU per row by stage ({samples} py-spy samples; share x {1000 * warm_cpu / rows:.3f} ms):")
                    for stage, share in shares.items():
                        print(f"    {stage:<24} {100 * share:5.1f}%  {1000 * warm_cpu / rows * share:.3f} ms")
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
