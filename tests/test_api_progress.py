"""Progress of the Python API's long calls (draopt.progress.api_call): quiet in a script unless
asked, tqdm.auto bars with progress=True, and the command line's own reporter kept."""

from __future__ import annotations

import contextlib
import io

import draopt
from draopt import progress


def _stderr_of(**kwargs) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        draopt.place("examples/gang-stranding.yaml", policy="optimal", time_limit=5, **kwargs)
    return err.getvalue()


def test_quiet_in_a_script_by_default():
    assert "phase 1 of 3" not in _stderr_of()
    assert "phase 1 of 3" not in _stderr_of(progress=False)


def test_bars_when_asked():
    assert "optimal: phase 1 of 3" in _stderr_of(progress=True)


def test_the_callers_reporter_stays():
    class Counting(progress.Progress):
        active = True

        def __init__(self):
            self.phases = []

        @contextlib.contextmanager
        def task(self, phase, *, total=None, unit=""):
            self.phases.append(phase)
            yield progress.Task()

    mine = Counting()
    with progress.reporting(mine):
        draopt.place("examples/gang-stranding.yaml", policy="optimal", time_limit=5, progress=True)
    assert any("phase 1 of 3" in p for p in mine.phases)


def test_ipykernel_imported_is_not_a_notebook():
    """A test run or a script may import ipykernel (nbclient does) without running in a kernel:
    the API stays quiet there, and a caller's choice of no progress (the command line on a pipe)
    stands (CI found both)."""
    import ipykernel  # noqa: F401

    assert progress.for_api(None) is None
    assert "phase 1 of 3" not in _stderr_of()
    with progress.reporting(None):
        assert "phase 1 of 3" not in _stderr_of(progress=True)
