"""Arms per second of a scripted cohort at concurrency 1 and 32, measured side by side in one run.

    .venv/bin/python benchmarks/cohort_concurrency.py [--cases 20] [--latency-ms 0,50]

Each latency setting runs the same cohort (AgentClinic cases from ../shared/data, both formats)
at concurrency 1 and 32 and prints arms/s and their ratio. With no model latency the ratio shows
the framework's own overhead; with a simulated server latency it shows what concurrency buys.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

from consilium.cli import main as cli
from consilium.models.backends.scripted import Script

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT.parent / "shared" / "data" / "agentclinic_medqa.jsonl"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"


def arms_per_second(folder: Path, cases: int, concurrency: int, latency_ms: float) -> float:
    panel = folder / f"panel-{latency_ms}.json"
    script = Script.load(PANEL).model_copy(update={"latency_ms": latency_ms})
    panel.write_text(script.model_dump_json(by_alias=True, exclude_none=True))
    captured = StringIO()
    with redirect_stdout(captured):
        code = cli(["--log-file", str(folder / "log.jsonl"), "cohort", "--cases", str(CASES), "--limit", str(cases),
                    "--model", f"scripted:{panel}", "--concurrency", str(concurrency),
                    "--out", str(folder / f"runs-{concurrency}-{latency_ms}")])
    if code != 0:
        sys.exit(f"cohort failed (exit {code})")
    match = re.search(r"([0-9.]+) arms/s", captured.getvalue())
    assert match, captured.getvalue()
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--latency-ms", default="0,50")
    args = parser.parse_args()
    if not CASES.is_file():
        sys.exit(f"{CASES} is not present")
    with tempfile.TemporaryDirectory() as tmp:
        for latency in (float(v) for v in args.latency_ms.split(",")):
            one = arms_per_second(Path(tmp), args.cases, 1, latency)
            many = arms_per_second(Path(tmp), args.cases, 32, latency)
            print(f"latency {latency:>5.0f} ms/call: concurrency 1 {one:7.2f} arms/s, concurrency 32 {many:7.2f} "
                  f"arms/s, ratio {many / one:.1f}x ({args.cases} cases x 2 formats)")


if __name__ == "__main__":
    main()
