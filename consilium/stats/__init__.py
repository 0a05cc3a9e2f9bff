"""The statistics every table, report and calibration of consilium computes its intervals and tests with,
each implemented once:

* :mod:`~consilium.stats.bootstrap`: the percentile bootstrap, plain and case-clustered, and the case
  draws a caller resamples with itself, under one seeding rule (below);
* :mod:`~consilium.stats.intervals`: Wilson's score interval and the exact Clopper–Pearson interval of a
  proportion, and the t interval of a mean;
* :mod:`~consilium.stats.agreement`: Cohen's κ (unweighted or quadratic-weighted), Krippendorff's α and
  percent agreement;
* :mod:`~consilium.stats.paired`: the Wilcoxon signed-rank test, the matched-pairs rank-biserial correlation
  and Holm's step-down adjustment.

**The seeding rule.** Every bootstrap draws from ``numpy.random.default_rng([seed mod 2**64,
crc32(key)])``: ``seed`` is the user's (``--seed``), ``key`` names what the interval is of (a table row:
``"fig3b|free-form|2"``, ``"npcbench|model-a|structured|answer"``; a table whose rows share one set of draws:
its name). An interval is so reproduced from the seed and its own name alone, whatever other rows a table
has or in which order they are computed, and two rows never share their draws by accident.

This package imports numpy, scipy, scikit-learn and krippendorff on use only (the command line's parser
never loads them), and nothing of consilium above :mod:`consilium.errors`.
"""

from __future__ import annotations

from consilium.stats.agreement import cohen_kappa, krippendorff_alpha, percent_agreement
from consilium.stats.bootstrap import bootstrap, case_draws, cluster_bootstrap, generator, percentile_interval
from consilium.stats.intervals import clopper_pearson, t_interval, wilson
from consilium.stats.paired import holm, rank_biserial, wilcoxon

__all__ = ["bootstrap", "case_draws", "clopper_pearson", "cluster_bootstrap", "cohen_kappa", "generator", "holm",
           "krippendorff_alpha", "percent_agreement", "percentile_interval", "rank_biserial", "t_interval", "wilcoxon",
           "wilson"]
