"""Ray vs local: the same scripted cohort run by `cohort` and by `cohort --ray`, side by side in one run.

    .venv/bin/python benchmarks/ray_vs_local.py [--cases 48] [--cpus 2] [--latency-ms 0]

An instant scripted model (``--latency-ms 0``) leaves only the orchestrator's own CPU work, which is
what Ray spreads over cores and machines: the local cohort runs it on one core, the Ray cohort on one
task per CPU of a local Ray instance (``--cpus``; loopback only, no dashboard). The Ray figure is
timed twice: with cold workers (each imports consilium on its first task) and warm; the instance's
start is reported apart. Both runs must produce the same arms (checked); the ratio is Ray's wall time
over the local one (below 1: Ray is faster). Needs the extra: pip install consilium[ray].
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from workload import PANEL, cases  # noqa: E402  (a script beside workload.py, run from anywhere)

from consilium.cli import main as cli  # noqa: E402
from consilium.models.backends.scripted import Script  # noqa: E402

__all__ = ["ray_section", "ray_vs_local"]


def _cohort(folder: Path, name: str, cases_dir: Path, panel: Path, *flags: str) -> tuple[float, list[dict[str, str]]]:
    out = folder / name
    started = time.perf_counter()
    with redirect_stdout(StringIO()), redirect_stderr(StringIO()):
        code = cli(["--log-file", str(folder / f"{name}.log.jsonl"), "cohort", "--cases", str(cases_dir),
                    "--model", f"scripted:{panel}", "--out", str(out), "--no-cache", *flags])
    wall = time.perf_counter() - started
    if code != 0:
        sys.exit(f"cohort {name} failed (exit {code})")
    (run_dir,) = list(out.iterdir())
    with (run_dir / "arms.csv").open(newline="") as handle:
        rows = [{k: v for k, v in row.items() if k != "wall_s"} for row in csv.DictReader(handle)]
    return wall, rows


def ray_vs_local(n_cases: int, cpus: int = 2, latency_ms: float = 0.0) -> dict[str, Any]:
    import os

    import ray

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases_dir = folder / "cases"
        cases_dir.mkdir()
        for case in cases(n_cases):
            (cases_dir / f"{case.id}.json").write_text(case.model_dump_json(exclude_none=True))
        panel = folder / "panel.json"
        panel.write_text(Script.load(PANEL).model_copy(update={"latency_ms": latency_ms})
                         .model_dump_json(by_alias=True, exclude_none=True))
        local_s, local_rows = _cohort(folder, "local", cases_dir, panel)
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        started = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 configure_logging=False)
        init_s = time.perf_counter() - started
        try:
            cold_s, cold_rows = _cohort(folder, "ray-cold", cases_dir, panel, "--ray")
            warm_s, warm_rows = _cohort(folder, "ray-warm", cases_dir, panel, "--ray")
        finally:
            ray.shutdown()
    strip = [{k: v for k, v in row.items() if k != "trace"} for row in local_rows]
    if [{k: v for k, v in r.items() if k != "trace"} for r in cold_rows] != strip or \
            [{k: v for k, v in r.items() if k != "trace"} for r in warm_rows] != strip:
        sys.exit("the Ray cohort's arms differ from the local cohort's")
    return {"cases": n_cases, "arms": len(local_rows), "cpus": cpus, "latency_ms": latency_ms, "local_s": local_s,
            "init_s": init_s, "cold_s": cold_s, "warm_s": warm_s, "cold_ratio": cold_s / local_s,
            "warm_ratio": warm_s / local_s}


def ray_section(n_cases: int, cpus: int = 2) -> list[str]:
    """The suite's section: one line of figures, or why it was not run."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return ["## 8. Ray vs local", "", "Not run: Ray is not installed (pip install consilium[ray]).", ""]
    r = ray_vs_local(n_cases, cpus)
    return ["## 8. Ray vs local (benchmarks/ray_vs_local.py: the same scripted cohort, instant model)", "",
            f"{r['arms']} arms: local {r['local_s']:.2f} s · Ray on {r['cpus']} CPUs {r['cold_s']:.2f} s cold "
            f"(ratio {r['cold_ratio']:.2f}), {r['warm_s']:.2f} s warm (**ratio {r['warm_ratio']:.2f}**); "
            f"the Ray instance took {r['init_s']:.1f} s to start.", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=48)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    r = ray_vs_local(args.cases, args.cpus, args.latency_ms)
    print(f"{r['arms']} arms ({r['cases']} cases x 2 formats, scripted model {r['latency_ms']:.0f} ms/call): "
          f"local {r['local_s']:.2f} s; Ray on {r['cpus']} CPUs {r['cold_s']:.2f} s cold workers, "
          f"{r['warm_s']:.2f} s warm; ratio Ray/local {r['cold_ratio']:.2f} cold, {r['warm_ratio']:.2f} warm "
          f"(Ray instance start {r['init_s']:.1f} s, not counted)")


if __name__ == "__main__":
    main()
