"""What every ``consilium simulate`` run shares, with or without a person at the table (simulate_human.py): its
flags' defaults, its settings read from the config file and flags, and its traces written and summarised."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from consilium.agents.labels import with_role_labels
from consilium.cases import Case
from consilium.cli.options import model_spec
from consilium.graphs.registry import AnyProtocol, protocol_of
from consilium.models.pricing import format_usd, stage_costs, trace_cost
from consilium.spec.run_settings import protocol_config
from consilium.traces.config import RunConfig
from consilium.traces.io import trace_path, write_manifest, write_trace
from consilium.traces.schema import TraceBase

__all__ = ["DEFAULTS", "config_of", "finish", "print_summary", "with_defaults"]

#: The flags of simulate whose default is not "not given": the parser leaves them None, so that a flag typed
#: with its default value is told apart from one left out (``--resume`` refuses any flag typed with a value other
#: than the run's own), and :func:`with_defaults` fills them in.
DEFAULTS: dict[str, object] = {"format": "both", "protocol": "consilium", "out": Path("runs")}


def config_of(args: argparse.Namespace, protocol: AnyProtocol) -> RunConfig:
    """The run's settings: the protocol's config file (``--config``) with the flags typed over it; a flag the
    protocol has no setting for is refused."""
    config = protocol_config(protocol.config_model, protocol.name, args.config, args)
    return with_role_labels(config, args.moderator_model or model_spec(args))


def with_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with each flag of :data:`DEFAULTS` that was not given set to its default."""
    return argparse.Namespace(**{**vars(args), **{k: v for k, v in DEFAULTS.items() if getattr(args, k, None) is None}})


def finish(args: argparse.Namespace, protocol: AnyProtocol, run_id: str, case: Case, traces: list[TraceBase],
           config: RunConfig) -> int:
    """Write the traces and the manifest, print each trace's summary; the exit code."""
    paths = [write_trace(trace_path(args.out, run_id, case.id, protocol.arm_variant(protocol.variant(t))), t)
             for t in traces]
    write_manifest(args.out / run_id, run_id=run_id, command=sys.argv,
                   config=traces[0].config.model_dump(mode="json"), traces=paths, seed=config.seed)
    for trace, path in zip(traces, paths, strict=True):
        print_summary(trace, path)
    return 0 if all(t.status == "completed" for t in traces) else 1


def print_summary(trace: TraceBase, path: Path) -> None:
    protocol = protocol_of(trace)
    print(f"== {trace.case_id} · {protocol.arm_variant(protocol.variant(trace))} · {trace.model} · {trace.status}")
    for line in protocol.summary(trace):
        print(f"  {line}")
    print("  tokens by stage (input / output / calls · cost, unknown without prices):")
    costs = stage_costs(trace)
    for stage, usage in trace.usage.by_stage.items():
        print(f"    {stage:<16} {usage.input_tokens:>7} / {usage.output_tokens:>6} / {usage.calls:>3}"
              f" · {format_usd(costs.get(stage))}")
    total = trace.usage.total
    mark = " (estimated)" if total.estimated else ""
    print(f"    {'total':<16} {total.input_tokens:>7} / {total.output_tokens:>6} / {total.calls:>3}"
          f" · {format_usd(trace_cost(trace))}{mark}")
    print(f"  wall time: {trace.wall_s:.1f} s")
    print(f"  trace: {path}")
