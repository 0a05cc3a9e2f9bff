"""Figures of the free-form vs structured comparison (ai-consilium.txt, Fig. 3a, 4, 5, 6), as PNG."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from consilium.reports.compare import STOPS, CohortData

__all__ = ["write_figures"]


def _save(figure: object, path: Path) -> Path:
    import matplotlib.pyplot as plt

    tmp = path.with_name(f".{path.name}.tmp.png")
    figure.savefig(tmp, dpi=110)  # type: ignore[attr-defined]
    plt.close(figure)  # type: ignore[arg-type]
    tmp.replace(path)
    return path


def write_figures(data: CohortData, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    completed = [a for a in data.arms if a.get("status") == "completed"]
    formats = sorted({a["format"] for a in completed})

    figure, axis = plt.subplots(figsize=(5, 3.5))  # Fig. 3a: cumulative consensus by round
    for fmt in formats:
        arms = [a for a in completed if a["format"] == fmt]
        last = max((int(a["rounds"]) for a in arms), default=1)
        xs = list(range(1, last + 1))
        ys = [100 * sum(a["stop_reason"] == "consensus" and int(a["rounds"]) <= r for a in arms) / len(arms)
              for r in xs]
        axis.plot(xs, ys, marker="o", label=fmt)
    axis.set_xlabel("review round")
    axis.set_ylabel("consensus reached (%)")
    axis.set_title("Cumulative consensus by round")
    axis.legend()
    figure.tight_layout()
    paths.append(_save(figure, out / "fig3a_cumulative_consensus.png"))

    figure, axis = plt.subplots(figsize=(5, 3.5))  # Fig. 4: stop reasons
    width = 0.8 / max(1, len(formats))
    for i, fmt in enumerate(formats):
        counts = Counter(a["stop_reason"] for a in completed if a["format"] == fmt)
        axis.bar([x + i * width for x in range(len(STOPS))], [counts[s] for s in STOPS], width, label=fmt)
    axis.set_xticks([x + width * (len(formats) - 1) / 2 for x in range(len(STOPS))], list(STOPS))
    axis.set_ylabel("arms")
    axis.set_title("Stop reasons")
    axis.legend()
    figure.tight_layout()
    paths.append(_save(figure, out / "fig4_stop_reasons.png"))

    figure, axis = plt.subplots(figsize=(6, 3.5))  # Fig. 5: tokens per case by stage and format
    stages = sorted({k.split(":")[0] for c in data.tokens.values() for k in c if ":" in k})
    per_format: dict[str, Counter[str]] = defaultdict(Counter)
    cases: Counter[str] = Counter()
    for (_, fmt), counter in data.tokens.items():
        per_format[fmt].update(counter)
        cases[fmt] += counter["cases"]
    for i, fmt in enumerate(sorted(per_format)):
        values = [(per_format[fmt][f"{s}:input"] + per_format[fmt][f"{s}:output"]) / max(1, cases[fmt])
                  for s in stages]
        axis.bar([x + i * width for x in range(len(stages))], values, width, label=fmt)
    axis.set_xticks([x + width * (len(per_format) - 1) / 2 for x in range(len(stages))], stages, rotation=20)
    axis.set_ylabel("tokens per case")
    axis.set_title("Tokens by stage and format")
    axis.legend()
    figure.tight_layout()
    paths.append(_save(figure, out / "fig5_tokens_by_stage.png"))

    criteria = sorted({(r["rubric"], r["criterion"]) for r in data.judgements if r["score"]})
    if criteria:  # Fig. 6: score distributions by criterion (none when nothing was scored)
        figure, axis = plt.subplots(figsize=(max(5, 0.6 * len(criteria)), 3.5))
        for i, fmt in enumerate(formats):
            series = [[float(r["score"]) for r in data.judgements if r["score"] and r["format"] == fmt
                       and (r["rubric"], r["criterion"]) == key] or [float("nan")] for key in criteria]
            axis.boxplot(series, positions=[x + i * width for x in range(len(criteria))], widths=width * 0.9)
        axis.set_xticks(range(len(criteria)), [c for _, c in criteria], rotation=45)
        axis.set_ylabel("judge score")
        axis.set_title("Score distributions by criterion (" + " / ".join(formats) + ")")
        figure.tight_layout()
        paths.append(_save(figure, out / "fig6_score_distributions.png"))
    return paths
