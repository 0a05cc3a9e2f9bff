"""The library's checks of a judge against physician ratings (docs/calibration.md): agreement statistics with
case-clustered bootstrap intervals (``agreement``) and a per-criterion isotonic calibration fitted on a training
split (``isotonic``), what ``consilium calibrate agreement|isotonic`` write, returned for the command to print."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.api.options import as_path, options_of
from consilium.api.sync import off_loop, sync_twin
from consilium.errors import UserError

__all__ = ["Agreement", "AgreementOptions", "Isotonic", "IsotonicOptions", "aagreement", "agreement", "aisotonic",
           "isotonic"]


def _source(ratings: Path | str) -> Path | str:
    """``--ratings`` as a path, but a ``postgresql://`` URL (a rating study's database) kept as it is."""
    return ratings if isinstance(ratings, str) and ratings.startswith(("postgresql://", "postgres://")) \
        else Path(ratings)


@dataclass(frozen=True)
class AgreementOptions:
    """The physician ratings (.csv or .jsonl), the rubric, the bootstrap's draws and seed, the report folder
    (default ``JUDGEMENTS/calibration``), and, with jury judgements, the judge whose scores to use instead of the
    jury's verdicts."""

    ratings: Path | str = Path()  # a ratings file, a run folder with a study, its database file or URL
    rubric: str = ""
    seed: int = 0
    out: Path | None = None
    judge: str | None = None
    bootstrap: int = 1000

    def __post_init__(self) -> None:
        object.__setattr__(self, "ratings", _source(self.ratings))
        object.__setattr__(self, "out", as_path(self.out))


@dataclass(frozen=True)
class IsotonicOptions:
    """As :class:`AgreementOptions`, with the share of cases to fit on in place of the bootstrap."""

    ratings: Path | str = Path()
    rubric: str = ""
    seed: int = 0
    out: Path | None = None
    judge: str | None = None
    train_fraction: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "ratings", _source(self.ratings))
        object.__setattr__(self, "out", as_path(self.out))
        if not 0 < self.train_fraction < 1:
            raise UserError("--train-fraction: must be between 0 and 1")


@dataclass(frozen=True)
class Agreement:
    """The rubric, each criterion's statistics row, scope agreement rows, the notes (the first: what was paired),
    the files written, and the cohort's completeness when it is partial."""

    rubric: Any
    rows: list[Any]
    scope: list[dict[str, Any]]
    notes: list[str]
    files: list[Path]
    done: Any = None


@dataclass(frozen=True)
class Isotonic:
    """The fitted calibration, its file, its report (held-out MAE before and after per criterion) and the
    cohort's completeness when it is partial."""

    calibration: Any
    path: Path
    report: Path
    done: Any = None


def _pairs(judgements: Path, options: AgreementOptions | IsotonicOptions):  # type: ignore[no-untyped-def]
    from consilium.calibration.pairs import load_judgements, pair_ratings
    from consilium.judges.rubric import load_rubric
    from consilium.models.refs import parse_model_ref

    rubric = load_rubric(options.rubric)
    ratings = _ratings(options.ratings, judgements, rubric)
    # A judge named as --judge-model named it (SPEC@BASE_URL#KEY_VAR, a model config file) is found by its name
    # on the jury: its spec, and its server if it has one (consilium/models/refs.py).
    judge = parse_model_ref(options.judge, flag="--judge").name if options.judge is not None else None
    pairs, unmatched = pair_ratings(ratings, load_judgements(judgements, rubric.name, judge), options.ratings)
    if not pairs:
        raise UserError(f"{options.ratings}: no rating matches a judge score in {judgements}")
    return rubric, ratings, pairs, unmatched


def _ratings(source: Path | str, judgements: Path, rubric: Any) -> list[Any]:
    """A ratings file's ratings, or a rating study's (a run folder with one, its database file or URL)."""
    from consilium.calibration.ratings import load_ratings
    from consilium.study.source import names_a_study, ratings_of_study

    return ratings_of_study(source, judgements, rubric) if names_a_study(source) else load_ratings(source, rubric)


async def aagreement(judgements: str | Path, options: AgreementOptions | None = None, **changes: Any) -> Agreement:
    """``consilium calibrate agreement``: the judge's scores in ``judgements`` (a run folder) against the
    physicians' ratings, per criterion, with 95% case-clustered bootstrap intervals."""
    return await off_loop(_agreement, Path(judgements), options_of(AgreementOptions, options, changes))


def _agreement(judgements: Path, options: AgreementOptions) -> Agreement:
    from consilium.calibration.agreement import agreement as statistics
    from consilium.calibration.agreement import agreement_groups, scope_rows
    from consilium.calibration.report import write_agreement
    from consilium.cohort.progress import ItemProgress
    from consilium.judges.scope import out_of_scope_score, scale_points
    from consilium.reports.partial import partial_line, partial_of, titled

    rubric, ratings, pairs, unmatched = _pairs(judgements, options)
    binary = sorted(rubric.scale) == [0, 1]
    outside = out_of_scope_score(rubric)
    with ItemProgress("bootstrap", len(agreement_groups(pairs))) as progress:
        rows = statistics(pairs, binary=binary, labels=scale_points(rubric), bootstrap=options.bootstrap,
                         seed=options.seed, out_of_scope=outside,
                         on_row=lambda row: progress.advance(row.criterion, f"{options.bootstrap} draws, n={row.n}"))
    scope = scope_rows(pairs, outside)
    out = options.out or judgements / "calibration"
    outputs = {p.output for p in pairs}
    notes = [f"rubric {rubric.name} v{rubric.version}; ratings {options.ratings} ({len(ratings)} ratings, "
             f"{len({r.rater for r in ratings})} raters); {len(pairs)} paired with judge scores, {unmatched} without; "
             f"{len(outputs)} rated outputs of {len({o[0] for o in outputs})} cases",
             f"95% intervals: {options.bootstrap} case-clustered bootstrap draws (cases with replacement, a case drawn "
             f"twice counted twice, each with all its rated outputs), seed {options.seed}, the same draws for every "
             "statistic",
             "statistics: scikit-learn cohen_kappa_score (quadratic weights for ordinal scales), scipy spearmanr/"
             "pearsonr, krippendorff.alpha (physicians and judge as raters; a unit is one output's component and "
             "criterion); binary rates per npcbench.txt Eq. A9",
             *([f"out of scope ({outside}) is no point of the scale: the statistics read in-scope scores only "
                "(n: pairs both scored in scope); agreement on scope is reported apart"] if scope else [])]
    done = partial_of(judgements)  # a stopped or running cohort: the judge's scores of its finished arms
    notes = [*([f"{partial_line(done)}: ratings of its missing arms pair with no judge score"] if done else []),
             *notes]
    paths = write_agreement(out, rows, pairs, binary=binary, scale=rubric.scale,
                            title=titled(done, f"Judge vs physicians: {rubric.name}"), notes=notes, scope=scope)
    return Agreement(rubric=rubric, rows=rows, scope=scope, notes=notes, files=list(paths), done=done)


agreement = sync_twin(aagreement)


async def aisotonic(judgements: str | Path, options: IsotonicOptions | None = None, **changes: Any) -> Isotonic:
    """``consilium calibrate isotonic``: a per-criterion isotonic map from the judge's scores to the
    physicians', fitted on a share of the cases, its held-out MAE before and after reported."""
    return await off_loop(_isotonic, Path(judgements), options_of(IsotonicOptions, options, changes))


def _isotonic(judgements: Path, options: IsotonicOptions) -> Isotonic:
    from consilium.calibration.isotonic import fit_isotonic
    from consilium.fileio import write_text_atomic
    from consilium.judges.scope import out_of_scope_score, scale_points
    from consilium.reports.partial import partial_line, partial_of, titled

    rubric, _, pairs, _ = _pairs(judgements, options)
    calibration = fit_isotonic(pairs, rubric=rubric.name, rubric_version=rubric.version, scale=scale_points(rubric),
                               out_of_scope=out_of_scope_score(rubric), train_fraction=options.train_fraction,
                               seed=options.seed, ratings=str(options.ratings))
    out = options.out or judgements / "calibration"
    path = calibration.save(out / f"isotonic.{rubric.name}.json")
    done = partial_of(judgements)
    lines = [f"# {titled(done, f'Isotonic calibration: {rubric.name}')}", "",
             *([f"{partial_line(done)}: fitted on the judge's scores of its finished arms.", ""] if done else []),
             f"Fitted per component and criterion on {options.train_fraction:.0%} of cases (seed {options.seed}); "
             "MAE on the held-out cases before and after.", "",
             "| component/criterion | train n | test n | MAE before | MAE after |",
             "|---|---|---|---|---|"]
    for name, m in calibration.criteria.items():
        before = f"{m.mae_before:.3f}" if m.mae_before is not None else "–"
        after = f"{m.mae_after:.3f}" if m.mae_after is not None else "–"
        lines.append(f"| {name} | {m.train_n} | {m.test_n} | {before} | {after} |")
    report = write_text_atomic(out / f"isotonic.{rubric.name}.md", "\n".join(lines) + "\n")
    return Isotonic(calibration=calibration, path=path, report=report, done=done)


isotonic = sync_twin(aisotonic)
