"""`draopt place --expect FORECAST` (and `--policy lp-guided`, which needs it): today's pending pods
placed, and how much of a forecast workload fits after each policy (draopt.studies.forecast).

Output: `-o table` the pods of the chosen policy, the forecast table and the notes; `-o json|yaml`
the Pods and ResourceClaims on stdout as `place` writes them (they read back), the forecast report
on stderr in the same format, after the policies' summary lines."""

from __future__ import annotations

import json
import sys
import time

import yaml


def add_flags(p) -> None:
    p.add_argument(
        "--expect",
        action="append",
        metavar="FORECAST",
        help="the workload expected next: an openb trace CSV (one pod per row) or manifests (Pods, "
        "Deployments, Jobs, JobSets, ...; counts from replicas and parallelism) (repeatable); the "
        "report says how many forecast pods fit after today's pods with each policy; lp-guided needs it",
    )


def wanted(args) -> bool:
    return bool(args.expect) or args.policy == "lp-guided"


def cmd_place_expecting(args, objects, features, scheduler_config, load_s: float) -> int:
    """`place` with a forecast; the exit code as `place`'s: 0 when the chosen policy places every
    pending pod of today."""
    from draopt import progress, public
    from draopt.errors import InputError
    from draopt.kube.loader import dump_objects
    from draopt.placement import pod_table, summary_table

    if not args.expect:
        raise InputError("--policy lp-guided: give the forecast to keep room for with --expect FORECAST")
    if args.compare:
        raise InputError("--expect: every policy is compared already; leave out --compare")
    t0 = time.perf_counter()
    with progress.current().task(f"place: {args.policy} --expect"):
        outcome = public.place(
            objects,
            policy=args.policy,
            features=features,
            time_limit=args.time_limit,
            scheduler_config=scheduler_config,
            seed=args.seed,
            tie_break=args.tie_break,
            settle=not args.no_settle,
            expect=args.expect,
        )
    report = outcome.forecast
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.stats:
        _print_stats(args, outcome, report, load_s, time.perf_counter() - t0)
    if args.output == "table":
        print(pod_table(outcome.result, len(outcome.cluster.nodes)))
        print()
        print(summary_table([outcome.result]))
        print()
        print(
            f"forecast: {report.forecast_pods} pods; how many fit after today's pods (each count solved, with its bound):"
        )
        print(report.table())
        if outcome.result.stats.get("summary"):
            print(f"{outcome.result.policy}: {outcome.result.stats['summary']}")
    else:
        sys.stdout.write(dump_objects(outcome.objects, args.output))
        print(json.dumps(outcome.result.summary().to_dict(), sort_keys=True, default=str), file=sys.stderr)
        doc = {"forecast": report.to_json()}
        text = json.dumps(doc, sort_keys=True) + "\n" if args.output == "json" else yaml.safe_dump(doc, sort_keys=True)
        sys.stderr.write(text)
    return 0 if all(p.placed for p in outcome.result.pods) else 1


def _print_stats(args, outcome, report, load_s: float, elapsed: float) -> None:
    import resource

    line = {
        "policy": args.policy,
        "load_s": round(load_s, 3),
        "place_s": round(elapsed, 3),
        "pods": len(outcome.result.pods),
        "placed": len(outcome.result.placed_pods()),
        "forecast_pods": report.forecast_pods,
        "forecast_solve_s": {f.policy: f.solve_s for f in report.fits},
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    line.update({k: v for k, v in outcome.result.stats.items() if k not in line})
    print(json.dumps(line, sort_keys=True, default=str), file=sys.stderr)
