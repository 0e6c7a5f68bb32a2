"""The ratchet of tests/crosscheck_record.py: differences with kube-scheduler found by
tests/test_crosscheck_scheduler.py that no documented cause explains yet and that are not after an
earlier divergence, each (release, source, pod or claim) -- counted as "untraced" in the summary
and listed in docs/differences.md ("untraced-first-divergences"). Any difference not on this list
and not explained fails its test; an entry comes off when its difference is traced."""

from __future__ import annotations

# (release, source, subject)  # the difference's kind; "(PodGroup)": a PodGroup's pod, claim or
# preemptor (the pod-group-cycle's open cause)
UNTRACED: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("1.36", "seed 126", "ml/pod-8"),  # reason
        ("1.36", "seed 129", "ml/pod-5"),  # reason
        ("1.36", "seed 129", "ml/pod-11"),  # reason (a CEL runtime error, as ml/pod-5)
        ("1.36", "seed 129", "ml/pod-23"),  # reason (a CEL runtime error, as ml/pod-5)
        ("1.36", "seed 129", "ml/pod-4"),  # reason (a CEL runtime error, as ml/pod-5)
        ("1.36", "seed 144", "batch-jobs/cache-2-lhpjxgtbn7-xmjnm"),  # node
        ("1.36", "seed 144", "ml/pod-1"),  # reason
        ("1.36", "seed 174", "ml/pod-7"),  # reason
        ("1.36", "seed 219", "ml/pod-3"),  # node (PodGroup? seen in one CI rehearsal, all three oracle runs
        # steady; not in four other 300-seed passes of the same code)
        ("1.36", "seed 270", "ml/pod-6"),  # reason
        ("1.36", "seed 295", "ml/pod-11"),  # reason
        ("1.36", "seed 82", "ops/pod-15"),  # pending
        ("1.37", "seed 130", "ml/pod-59"),  # reason
        ("1.37", "seed 130", "ml/pod-64"),  # reason
        ("1.37", "seed 181", "ml/pod-2"),  # reason
        ("1.37", "seed 181", "ml/pod-6"),  # reason
    }
)
