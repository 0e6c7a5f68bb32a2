"""The ratchet of tests/crosscheck_record.py: differences with kube-scheduler found by
tests/test_crosscheck_scheduler.py that no documented cause explains yet and that are not after an
earlier divergence, each (release, source, pod or claim) -- counted as "untraced" in the summary
and listed in docs/differences.md ("untraced-first-divergences"). Any difference not on this list
and not explained fails its test; an entry comes off when its difference is traced."""

from __future__ import annotations

UNTRACED: frozenset[tuple[str, str, str]] = frozenset()
