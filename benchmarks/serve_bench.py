"""The studio's time to first page and memory, on an 80-arm and a 1,000-arm scripted cohort, side by side.

    .venv/bin/python benchmarks/serve_bench.py [--runs 3] [--sizes 80,1000] [--profile]

The cohorts are real `consilium cohort` output (benchmarks/serve_cohorts.py; made once, then cached in
benchmarks/.cache/). For each size in turn, RUNS times (the sizes alternate, so the machine's load falls on both
alike), ``python -m consilium serve RUN_DIR --port 0`` starts as a process, as users start it, and the script
times from the process's start to

- the printed URL line (the server is listening);
- the first 200 of the cohort index (``/runs/0/``), asked for after the administrator's login link (a 303 that
  sets the session cookie, kept in a cookie jar; the redirect is not followed, so the index is asked for once);
- an arm page, a case page and the summary page, found among the index's links, then the index and the summary
  again (both kept by the server until a file they read changes);

and reads the server's peak RSS (``VmHWM``) from /proc after the first index and after every page, and its RSS
(``VmRSS``) at the end. Beside it,
in the same run, ``python -c "import consilium"`` and ``python -m consilium --help`` (with the bytecode compiled
first, as an installed package's is; benchmarks/startup.py). It prints medians, and the 1,000-arm / 80-arm ratio
of each figure: ratios measured side by side are the figures to trust, absolute times on a shared machine are not.
A page that is not served (404) is reported as such, not timed.

``--profile`` then asks the studio's application (``make_app``, in this process) for the largest cohort's index
(cold, then warm) and its summary page, each under its own cProfile, and prints where each page's time went: the
functions with the most own time, and consilium's functions by cumulative time, as shares of the page's time.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serve_cohorts import cohort
from startup import ENV  # bytecode written once to a folder of this process's, read after

PYTHON = sys.executable
_LINE = re.compile(r"^consilium serve: (?P<url>http://\S+/) \(administrator: (?P<admin>\S+)\)$")
INDEX = "runs/0/"
#: The pages after the index, each the first of the index's links that matches (consilium/web/browse.py's routes).
LINKS = {"arm": re.compile(r'href="(/runs/0/arm/[^"]+)"'), "case": re.compile(r'href="(/runs/0/case/[^"]+)"'),
         "summary": re.compile(r'href="(/runs/0/summary)"')}


@dataclass
class Page:
    status: int
    since_start: float  # seconds from the process's start to the whole response read
    latency: float  # seconds of this request alone
    size: int


@dataclass
class Start:
    """One start of the server over one cohort."""

    url_s: float
    pages: dict[str, Page] = field(default_factory=dict)
    index_peak_rss_kb: int = 0  # after the first index, before the other pages
    peak_rss_kb: int = 0
    rss_kb: int = 0


def _get(opener: urllib.request.OpenerDirector, url: str, started: float) -> tuple[Page, str]:
    began = time.perf_counter()
    try:
        with opener.open(url, timeout=300) as response:
            body, status = response.read(), response.status
    except urllib.error.HTTPError as error:
        body, status = error.read(), error.code
    now = time.perf_counter()
    return Page(status, now - started, now - began, len(body)), body.decode("utf-8", "replace")


def _memory(pid: int) -> tuple[int, int]:
    """The process's peak resident set and its resident set now, in KiB (/proc/PID/status)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmHWM"].split()[0]), int(fields["VmRSS"].split()[0])


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start(run_dir: Path, log: Path) -> tuple[subprocess.Popen[str], float, str, str]:
    """``consilium serve`` over ``run_dir`` on a free port: the process, its start time, its URL, the admin link."""
    argv = [PYTHON, "-m", "consilium", "serve", str(run_dir), "--port", "0"]
    with log.open("a") as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True,
                                   env={**ENV, "PYTHONUNBUFFERED": "1"})
    assert process.stdout is not None
    found = _LINE.match(process.stdout.readline().strip())
    if found is None:
        _stop(process)
        raise SystemExit(f"consilium serve did not start: {log.read_text()[-2000:]}")
    return process, started, found["url"], found["admin"]


class _Stay(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: the login's 303 is timed alone (its cookie is kept), the index asked for next."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _Stay())


def measure(run_dir: Path, log: Path) -> Start:
    """One start: the URL line, the login (303), the index, an arm, a case and the summary page, the index again,
    then the server's memory."""
    process, started, url, admin = start(run_dir, log)
    try:
        result = Start(url_s=time.perf_counter() - started)
        opener = _opener()
        result.pages["login"], _ = _get(opener, admin, started)
        result.pages["index"], html = _get(opener, url + INDEX, started)
        result.index_peak_rss_kb = _memory(process.pid)[0]
        if result.pages["index"].status == 200:
            for name, pattern in LINKS.items():
                link = pattern.search(html)
                if link:
                    result.pages[name], _ = _get(opener, url.rstrip("/") + link.group(1).replace("&amp;", "&"),
                                                 started)
            result.pages["index again"], _ = _get(opener, url + INDEX, started)
            if "summary" in result.pages:
                result.pages["summary again"], _ = _get(opener, url + "runs/0/summary", started)
        result.peak_rss_kb, result.rss_kb = _memory(process.pid)
        return result
    finally:
        _stop(process)


def wall(argv: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, env=ENV)
    return time.perf_counter() - began


def _median(values: list[float]) -> float:
    return statistics.median(values)


def report(sizes: list[int], starts: dict[int, list[Start]], baselines: dict[str, float], made: dict[int, float],
           runs: int) -> list[str]:
    small, large = sizes[0], sizes[-1]
    lines = [f"`benchmarks/serve_bench.py` on {os.cpu_count()} CPUs, medians of {runs} starts per cohort, the "
             "cohorts alternating; every figure measured side by side in one run.", "",
             "Baselines (same run, medians of 3): " + ", ".join(f"`{k}` {v:.3f} s" for k, v in baselines.items()),
             "", "| figure | " + " | ".join(f"{n} arms" for n in sizes) + f" | {large} / {small} |",
             "|---|" + "---|" * (len(sizes) + 1)]

    def row(label: str, values: dict[int, float | None], unit: str, fmt: str = "{:.3f}") -> None:
        cells = [("—" if values[n] is None else fmt.format(values[n]) + unit) for n in sizes]
        a, b = values[small], values[large]
        ratio = f"**{b / a:.2f}×**" if a and b else "—"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")

    row("URL printed (from process start)", {n: _median([s.url_s for s in starts[n]]) for n in sizes}, " s")
    names = [name for name in ("index", *LINKS, "index again", "summary again")
             if any(name in s.pages for s in starts[large])]
    for name in names:
        statuses = {n: sorted({s.pages[name].status for s in starts[n] if name in s.pages}) for n in sizes}
        ok = {n: [s.pages[name] for s in starts[n] if name in s.pages and s.pages[name].status == 200] for n in sizes}
        if not all(ok[n] for n in sizes):
            lines.append(f"| {name} | " + " | ".join(f"HTTP {statuses[n]}" for n in sizes) + " | not served |")
            continue
        if name == "index":
            row("first 200 of the index (from process start)",
                {n: _median([p.since_start for p in ok[n]]) for n in sizes}, " s")
        shown = {"index": "index (first, cold)", "index again": "index again (warm)",
                 "summary": "summary (first, cold)", "summary again": "summary again (kept)"}.get(name, name)
        row(f"{shown}: the request alone", {n: _median([p.latency for p in ok[n]]) for n in sizes}, " s")
        row(f"{shown}: size", {n: _median([p.size / 1024 for p in ok[n]]) for n in sizes}, " KiB", "{:.0f}")
    row("peak RSS (VmHWM) after the first index",
        {n: _median([s.index_peak_rss_kb / 1024 for s in starts[n]]) for n in sizes}, " MiB", "{:.0f}")
    row("peak RSS (VmHWM) after every page", {n: _median([s.peak_rss_kb / 1024 for s in starts[n]]) for n in sizes},
        " MiB", "{:.0f}")
    row("RSS at the end", {n: _median([s.rss_kb / 1024 for s in starts[n]]) for n in sizes}, " MiB", "{:.0f}")
    url = {n: _median([s.url_s for s in starts[n]]) for n in sizes}
    help_s = baselines["python -m consilium --help"]
    lines += ["", f"URL printed / `consilium --help`: {url[small] / help_s:.2f}× ({small} arms), "
              f"{url[large] / help_s:.2f}× ({large} arms).",
              "Making the cohorts with `consilium cohort` took " +
              ", ".join(f"{made[n]:.0f} s ({n} arms)" for n in sizes) + " (cached in benchmarks/.cache/)."]
    return lines


def profile(run_dir: Path) -> list[str]:
    """The studio's own application (``make_app``) in this process, over ``run_dir``, asked for the index (cold,
    then twice warm) and the summary page (then again), each under a cProfile of its own (on only while it is asked):
    where each page's time goes (the work the pages hand to worker threads included)."""
    import asyncio
    import cProfile
    import secrets

    from aiohttp.test_utils import TestClient, TestServer

    from consilium.web.app import make_app

    token = secrets.token_urlsafe(32)
    asks = [("index, first (cold)", "/" + INDEX), ("index, warm (×2)", "/" + INDEX), ("index, warm (×2)", "/" + INDEX),
            ("summary", "/runs/0/summary"), ("summary again", "/runs/0/summary")]
    profiles: dict[str, tuple[cProfile.Profile, list[tuple[int, float]]]] = {}

    async def ask() -> None:
        async with TestClient(TestServer(make_app([run_dir], admin_token=token))) as client:
            await (await client.get(f"/login/{token}", allow_redirects=False)).read()
            for label, path in asks:
                profiler, took = profiles.setdefault(label, (cProfile.Profile(), []))
                began = time.perf_counter()
                profiler.enable()
                response = await client.get(path)
                await response.read()
                profiler.disable()
                took.append((response.status, time.perf_counter() - began))

    async def inline(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    # The pages read folders in worker threads (asyncio.to_thread), which a cProfile does not follow: here, one
    # request at a time, the same calls run on the loop's thread instead, so the profile sees them.
    threaded, asyncio.to_thread = asyncio.to_thread, inline  # type: ignore[assignment]
    try:
        asyncio.run(ask())
    finally:
        asyncio.to_thread = threaded  # type: ignore[assignment]
    lines = [f"Profiles of {run_dir.name}, in this process (shares are of the page's own time):"]
    for label, (profiler, took) in profiles.items():
        total = sum(seconds for _, seconds in took)
        lines += ["", f"### {label}: " + ", ".join(f"HTTP {status} in {seconds:.2f} s" for status, seconds in took)]
        table = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        lines += ["own time:"]
        for (path, line, name), (_, calls, own, _, _) in sorted(table.items(), key=lambda kv: kv[1][2],
                                                                reverse=True)[:15]:
            lines.append(f"  {own:7.3f} s {own / total:6.1%}  {calls:>9} calls  {name}  {_short(path)}:{line}")
        ours = [kv for kv in table.items() if "consilium" in kv[0][0]]
        lines += ["consilium's functions by cumulative time:"]
        for (path, line, name), (_, calls, _, cumulative, _) in sorted(ours, key=lambda kv: kv[1][3],
                                                                       reverse=True)[:20]:
            share = cumulative / total
            lines.append(f"  {cumulative:7.3f} s {share:6.1%}  {calls:>9} calls  {name}  {_short(path)}:{line}")
    return lines


def _short(path: str) -> str:
    return path.split("site-packages/")[-1].split("/work/main/")[-1]


def measure_all(sizes: list[int], runs: int) -> list[str]:
    """Every figure, the cohorts made first where they are not cached; the report's lines."""
    cohorts = {n: cohort(n) for n in sizes}
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as tmp:
        log = Path(tmp) / "serve.log"
        for n in sizes:  # unmeasured: compiles the bytecode the server imports
            measure(cohorts[n][0], log)
        wall([PYTHON, "-m", "consilium", "--help"])  # and what --help imports
        starts: dict[int, list[Start]] = {n: [] for n in sizes}
        imports, helps = [], []
        for _ in range(runs):
            for n in sizes:
                starts[n].append(measure(cohorts[n][0], log))
            imports.append(wall([PYTHON, "-c", "import consilium"]))
            helps.append(wall([PYTHON, "-m", "consilium", "--help"]))
    baselines = {'python -c "import consilium"': _median(imports), "python -m consilium --help": _median(helps)}
    return report(sizes, starts, baselines, {n: cohorts[n][1] for n in sizes}, runs)


def serve_section(quick: bool) -> list[str]:
    """A section for make bench (benchmarks/suite.py): the studio's first page and memory, 80 vs 1,000 arms."""
    return ["## Studio (`consilium serve`): time to first page and memory, 80 vs 1,000 arms", "",
            *measure_all([80, 1000], 1 if quick else 3), ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="starts per cohort (default 3)")
    parser.add_argument("--sizes", default="80,1000", help="cohort sizes in arms (default 80,1000)")
    parser.add_argument("--profile", action="store_true", help="also profile the largest cohort's index")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    print("\n".join(measure_all(sizes, args.runs)), flush=True)
    if args.profile:
        print("\n".join(["", *profile(cohort(sizes[-1])[0])]))


if __name__ == "__main__":
    main()
