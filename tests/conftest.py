"""The differential tests' counts (tests/crosscheck_record.py) at the end of every run."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    from crosscheck_record import RECORD

    lines = RECORD.lines()
    if lines:
        terminalreporter.section("crosscheck against Kubernetes' own code")
        for line in lines:
            terminalreporter.write_line(line)
