"""Free-form vs structured, as ai-consilium.txt reports it: every table, per model and pooled, of one
protocol's arms; and the consilium against the single-specialist baseline on the same cases.

The work is in :mod:`consilium.reports.consilium`; this module keeps the names other callers import
(``compare``, ``report``, the figures). Which function gives which table:

- :func:`table3` Table 3 (outcomes), :func:`table4` Table 4 (vote transitions),
  :func:`role_categories`, :func:`panel_sizes`, :func:`role_label_mapping` Fig. 2b/2c;
- :func:`table6` Table 6, :func:`table7` Table 7, :func:`table8` / :func:`scores_table` Tables 8 and
  13–20, :func:`table9` Table 9, :func:`table10`, :func:`table11`, :func:`table12` Tables 10–12;
- :func:`paired_differences`: structured − free-form per (model, case) with case-clustered
  bootstrap intervals; :func:`protocol_differences`: consilium − single per (model, format, case);
- :func:`cost_table`, :func:`cost_by_stage`, :func:`cost_by_case`: the panel's and the judges' tokens and dollars
  side by side, and their sum (per model and format, per stage and judge, per case);
- :func:`replicate_sd`, :func:`replicate_case_sd`: in a cohort run in replicates, the between-replicate SD
  and the score means with case-clustered intervals (:func:`has_replicates` tells such a cohort).

Each takes a :class:`CohortData` of one protocol (``load_cohort_data(run_dir, protocol=...)``), so no
number mixes protocols; :func:`protocols_in` names those of a folder's arms.
"""

from __future__ import annotations

from consilium.graphs.arms import arm_format, arm_protocol, deliberates, protocols_in
from consilium.reports.consilium.baseline import protocol_differences
from consilium.reports.consilium.cost import cost_by_case, cost_by_stage, cost_table
from consilium.reports.consilium.coverage import table10, table11, table12
from consilium.reports.consilium.data import (
    CONSILIUM_RUBRIC,
    STOPS,
    CohortData,
    RoleRow,
    judgement_coverage,
    load_cohort_data,
)
from consilium.reports.consilium.files import protocols_of, read_arms
from consilium.reports.consilium.judged import COMPONENT_FORMATS
from consilium.reports.consilium.outcomes import (
    models_of,
    panel_sizes,
    role_categories,
    role_label_mapping,
    table3,
    table4,
)
from consilium.reports.consilium.paired import MEAN_CRITERION, paired_differences
from consilium.reports.consilium.replicates import has_replicates, replicate_case_sd, replicate_sd
from consilium.reports.consilium.scores import output_means, scores_table, table6, table7, table8, table9
from consilium.reports.consilium.stats import POOLED

__all__ = [
    "COMPONENT_FORMATS",
    "CONSILIUM_RUBRIC",
    "MEAN_CRITERION",
    "POOLED",
    "STOPS",
    "CohortData",
    "RoleRow",
    "arm_format",
    "arm_protocol",
    "cost_by_case",
    "cost_by_stage",
    "cost_table",
    "deliberates",
    "has_replicates",
    "judgement_coverage",
    "load_cohort_data",
    "models_of",
    "output_means",
    "paired_differences",
    "panel_sizes",
    "protocol_differences",
    "protocols_in",
    "protocols_of",
    "read_arms",
    "replicate_case_sd",
    "replicate_sd",
    "role_categories",
    "role_label_mapping",
    "scores_table",
    "table3",
    "table4",
    "table6",
    "table7",
    "table8",
    "table9",
    "table10",
    "table11",
    "table12",
]
