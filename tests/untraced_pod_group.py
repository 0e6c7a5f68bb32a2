"""Writes tests/data/crosscheck/pod-group-untraced.txt: the PodGroup members' differences with
kube-scheduler that no traced rule of tests/crosscheck_record.py explains (docs/differences.md,
pod-group-untraced), over the seeds test_random_clusters_of_every_family runs. Needs Go (the
scheduler oracle). Run after a fix, from the repository root:

    PYTHONPATH=. python tests/untraced_pod_group.py [SEEDS] > tests/data/crosscheck/pod-group-untraced.txt
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import crosscheck_record as cr  # noqa: E402
from helpers import scenario_objects  # noqa: E402
from test_crosscheck_scheduler import VERSIONS, _served  # noqa: E402

from draopt.crosscheck.run import crosscheck  # noqa: E402
from draopt.kube.features import Features  # noqa: E402
from draopt.testing.scheduler_scenarios import random_scheduler_scenario  # noqa: E402

# rules that explain whatever differs once the clusters parted: not a cause of a member's difference
CATCH_ALL = {
    "pod-group-cycle",
    "after-a-placement-difference",
    "node-state-divergence",
    "score-and-placement-divergence",
}


def _specific_cause(d, report) -> str | None:
    for name, rule in cr.EXPLAINED.items():
        if name in CATCH_ALL:
            continue
        got = rule(d, report)
        if got:
            return got if isinstance(got, str) else name
    return None


def untraced(minor: str, seed: int) -> list[str]:
    """The keys of seed's PodGroups with untraced differences on `minor`, the seed in a comment."""
    size = {} if seed % 10 == 0 else {"nodes": (1, 12), "pods": (1, 40)}
    s = random_scheduler_scenario(random.Random(seed), **size)
    with tempfile.TemporaryDirectory() as tmp:
        config = None
        if s.scheduler_config:
            config = str(Path(tmp) / "sched.yaml")
            Path(config).write_text(s.scheduler_config)
        try:
            report = crosscheck(
                scenario_objects(_served(s.documents, minor)),
                kubernetes_version=minor,
                features=Features.from_gates(s.gates),
                scheduler_config_path=config,
                timeout=120,
            )
        except Exception:  # (refused or not settled: the test counts it so)
            return []
    out: list[str] = []
    for d in report.differences:
        row = cr._row(report, d.subject)
        if row is None or not row.group:
            continue
        traced = cr._pod_group(d, report)
        if traced and traced != "pod-group-untraced":
            continue
        cause = _specific_cause(d, report)
        line = f"{cr.untraced_key(row.group, report)}  # seed {seed}"
        if (cause is None or cause in CATCH_ALL) and line not in out:
            out.append(line)
    return out


def main(argv: list[str]) -> None:
    seeds = range(int(argv[0])) if argv else range(300)
    print("# release fingerprint group  # seed: written by tests/untraced_pod_group.py")
    for minor in VERSIONS:
        for seed in seeds:
            for line in untraced(minor, seed):
                print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
