"""Progress of long work, shown on stderr while it runs (tqdm).

The command line decides whether progress is shown (:func:`wanted`: stderr is a terminal, or
``--progress``; never with ``--quiet``) and installs a reporter for the command's duration with
:func:`reporting`. The layers below it report through :func:`current`, which is a reporter that
does nothing unless one was installed: the reporter travels down the call stack in a context
variable, so that ``place()``, ``plan()`` and the studies need no extra parameter through every
layer, and no layer imports the command line. With nothing installed a report costs one
context-variable read and nothing is printed: the placements are the same either way (the
solver callbacks are attached only when progress is shown, and they never steer the search).

Each piece of work is a *task* (a ``with`` block): a status line that says what runs (the phase),
for how long, and what the work reports as it goes: the best objective found, the bound and the
gap for a solver; the arrivals done out of all and the inflation level reached for a simulation.
A task's line is removed when it ends, so the command's own output is not mixed with it.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, TextIO


class Task:
    """What a piece of work reports while it runs. This base reports nothing (no progress shown)."""

    active = False

    def update_to(self, done: int) -> None:
        """`done` units of the task's total are finished (arrivals, rounds)."""

    def note(self, **fields: Any) -> None:
        """Figures shown after the phase (`level=0.85`, `columns=120`), replacing earlier ones."""

    def solver(self, best: float | None, bound: float | None) -> None:
        """A solver's best objective value found so far and its proven bound (the gap is derived)."""

    def time_limit(self, seconds: float | None) -> None:
        """The task's time limit (wall seconds): the clock is shown against it."""


class Progress:
    """The reporter the layers see through :func:`current`. This base shows nothing."""

    active = False

    @contextmanager
    def task(self, phase: str, *, total: int | None = None, unit: str = "") -> Iterator[Task]:
        yield _SILENT_TASK


_SILENT_TASK = Task()
_SILENT = Progress()  # nothing installed (the default)
_QUIET = Progress()  # installed by a caller that chose no progress (the command line on a pipe)
_CURRENT: contextvars.ContextVar[Progress] = contextvars.ContextVar("draopt_progress", default=_SILENT)


def current() -> Progress:
    """The reporter installed by the caller (the command line), or one that shows nothing."""
    return _CURRENT.get()


@contextmanager
def reporting(progress: Progress | None) -> Iterator[Progress]:
    """Install `progress` (None: nothing shown) for the work done inside the block."""
    token = _CURRENT.set(progress if progress is not None else _QUIET)
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)
        if isinstance(progress, TerminalProgress):
            progress.close()


def wanted(*, force: bool, quiet: bool, stream: TextIO) -> bool:
    """Show progress? `--quiet` never; `--progress` always; otherwise when `stream` is a terminal
    (a pipe or a file gets nothing extra: a log stays free of redraws)."""
    if quiet:
        return False
    if force:
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def gap(best: float | None, bound: float | None) -> float | None:
    """The relative distance between the best value found and the bound (0 when they meet),
    for a maximisation or a minimisation alike."""
    if best is None or bound is None:
        return None
    scale = max(abs(best), abs(bound))
    return abs(bound - best) / scale if scale else 0.0


def solver_callback(solver: Any, task: Task) -> Any:
    """For ``solver.solve(model, solver_callback(solver, task))``: a CP-SAT solution callback that
    reports each solution's objective and bound to `task`, and a bound callback on `solver` for
    bounds proven between solutions. None (no callback: the solve is untouched) when `task`
    shows nothing."""
    if not task.active:
        return None
    from ortools.sat.python import cp_model

    class _Report(cp_model.CpSolverSolutionCallback):
        def __init__(self) -> None:
            super().__init__()
            self.best: float | None = None

        def on_solution_callback(self) -> None:
            self.best = self.objective_value
            task.solver(self.best, self.best_objective_bound)

    report = _Report()
    solver.best_bound_callback = lambda bound: task.solver(report.best, bound)
    return report


# ------------------------------------------------------------------ on a terminal
def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"


def format_gap(g: float | None) -> str:
    """A gap as every text output shows it (the progress line, the tables, the summaries): a
    percentage with two decimals (0.0245 -> "2.45%"); "-" when there is none. Data files (JSON,
    CSV, Parquet) and DataFrames keep the fraction (0..1)."""
    return "-" if g is None else f"{100 * g:.2f}%"


def _solver_fields(best: float | None, bound: float | None) -> dict[str, Any]:
    """The gap first: on a narrow terminal the end of the line is cut, and the gap says most."""
    fields: dict[str, Any] = {}
    g = gap(best, bound)
    if g is not None:
        fields["gap"] = format_gap(g)
    if best is not None:
        fields["best"] = _number(best)
    if bound is not None:
        fields["bound"] = _number(bound)
    return fields


class _TerminalTask(Task):
    active = True

    def __init__(self, owner: TerminalProgress | NotebookProgress, bar: Any, phase: str = "", width: int = 0):
        self._owner = owner
        self._bar = bar
        self._phase = phase  # a line without a total shows its phase and figures in the description
        self._width = width  # the terminal's columns (0: unknown)
        self._limit = ""
        self._fields: dict[str, Any] = {}
        self._best: float | None = None
        self._drawn_at = 0.0

    def update_to(self, done: int) -> None:
        bar = self._bar
        if done != bar.n:
            with self._owner.lock:
                bar.update(done - bar.n)

    def note(self, **fields: Any) -> None:
        self._fields = dict(fields)
        self._show()

    def solver(self, best: float | None, bound: float | None) -> None:
        # A bound proven before the solver's first solution: the best known stays (a warm start's).
        best = self._best = best if best is not None else self._best
        self.note(**_solver_fields(best, bound))

    def time_limit(self, seconds: float | None) -> None:
        if seconds is None or self._bar.total is not None:  # (a bar with a total shows its own clock)
            return
        from tqdm import tqdm

        self._limit = "/" + tqdm.format_interval(seconds)
        self._show()

    def _show(self) -> None:
        text = "  ".join(f"{k} {v}" for k, v in self._fields.items())
        # Drawn at once at most every 0.1 s (a solver may prove bounds faster than a terminal
        # redraws); the owner's ticker draws the latest twice a second in any case.
        now = time.monotonic()
        draw = now - self._drawn_at >= 0.1
        if draw:
            self._drawn_at = now
        with self._owner.lock:
            if self._bar.total is None and self._phase:
                self._bar.set_description_str(self._limit + "  " + _fit(self._phase, text, self._width), refresh=draw)
            else:
                self._bar.set_postfix_str(text, refresh=draw)


_CLOCK = 8  # "1:02:05" and the space after it: the most an elapsed time takes before the limit


def _fit(phase: str, figures: str, width: int) -> str:
    """The phase and then its figures (the gap first), the phase shortened with "…" so that the
    figures fit a terminal of `width` columns after the clock and its limit (80 columns: a
    phase of up to about 40 characters stays whole beside a gap, a best value and a bound)."""
    if not figures:
        return phase
    room = width - 2 * _CLOCK - 2 - len(figures) if width else len(phase)
    if len(phase) > room:
        phase = phase[: max(room - 1, 12)].rstrip(" ,:") + "…"
    return f"{phase}  {figures}"


def _width(stream: TextIO) -> int:
    """The terminal's columns; 0 when unknown (a pipe, or a pseudo-terminal given no size, where
    tqdm would draw nothing: it hides lines below a screen of 0 rows)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class TerminalProgress(Progress):
    """Tasks as tqdm status lines on `stream`, one line per open task (nested tasks below their
    parent), redrawn twice a second so that the clock moves while a solver is silent."""

    active = True

    def __init__(self, stream: TextIO, *, interval: float = 0.5):
        self.stream = stream
        self.lock = threading.RLock()
        self._bars: list[Any] = []
        self._interval = interval
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @contextmanager
    def task(self, phase: str, *, total: int | None = None, unit: str = "") -> Iterator[Task]:
        from tqdm import tqdm

        with self.lock:
            if total is None:  # the clock first (and its limit: _TerminalTask.time_limit), then the
                fmt = "{elapsed}{desc}"  # phase and its figures, fitted to the width (_fit)
            else:
                fmt = (
                    "{desc}  {percentage:3.0f}%|{bar:20}| {n_fmt}/{total_fmt} "
                    + (unit or "")
                    + "  {elapsed}<{remaining}{postfix}"
                )
            width = _width(self.stream)
            bar = tqdm(
                total=total,
                desc=phase if total is not None else "  " + phase,
                file=self.stream,
                leave=False,
                position=len(self._bars),
                bar_format=fmt,
                dynamic_ncols=width > 0,
                ncols=None if width > 0 else 120,
                nrows=None if width > 0 else 24,
                mininterval=0.2,
            )
            self._bars.append(bar)
            self._start_ticker()
        try:
            yield _TerminalTask(self, bar, phase if total is None else "", width)
        finally:
            with self.lock:
                self._bars.remove(bar)
                bar.close()

    def _start_ticker(self) -> None:
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="draopt-progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            with self.lock:
                for bar in self._bars:
                    bar.refresh()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2 * self._interval)
        with self.lock:
            for bar in reversed(self._bars):
                bar.close()
            self._bars.clear()


# ------------------------------------------------------------------ into a log
class _LineTask(Task):
    active = True

    def __init__(self, owner: LineProgress, phase: str, total: int | None, unit: str):
        self._owner = owner
        self._phase = phase
        self._total = total
        self._unit = unit
        self._done: int | None = None
        self._fields: dict[str, Any] = {}
        self._best: float | None = None
        self._limit: float | None = None
        self._started = self._written = time.monotonic()

    def update_to(self, done: int) -> None:
        self._done = done
        self._maybe_write()

    def note(self, **fields: Any) -> None:
        self._fields = dict(fields)
        self._maybe_write()

    def solver(self, best: float | None, bound: float | None) -> None:
        best = self._best = best if best is not None else self._best
        self.note(**_solver_fields(best, bound))

    def time_limit(self, seconds: float | None) -> None:
        self._limit = seconds

    def _maybe_write(self) -> None:
        now = time.monotonic()
        if now - self._written >= self._owner.interval:
            self._written = now
            self.write("")

    def write(self, state: str) -> None:
        elapsed = "" if state == "started" else f"{time.monotonic() - self._started:.1f}s"
        if elapsed and self._limit is not None:
            elapsed += f" of {self._limit:g}s"
        parts = [self._phase, state, elapsed]
        if self._total is not None:
            parts.append(f"{self._done or 0}/{self._total} {self._unit}".rstrip())
        parts += [f"{k} {v}" for k, v in self._fields.items()]
        self._owner.write("  ".join(p for p in parts if p))


class LineProgress(Progress):
    """Tasks as plain lines on `stream`, for a log, a pipe or a file (`--progress` where stderr is
    not a terminal): no carriage returns and no cursor moves. A line when a task starts, at most
    one every `interval` seconds while it runs, and one when it ends, with its last figures."""

    active = True

    def __init__(self, stream: TextIO, *, interval: float = 10.0):
        self.stream = stream
        self.interval = interval
        self.lock = threading.Lock()

    @contextmanager
    def task(self, phase: str, *, total: int | None = None, unit: str = "") -> Iterator[Task]:
        line = _LineTask(self, phase, total, unit)
        line.write("started")
        try:
            yield line
        finally:
            line.write("done")

    def write(self, text: str) -> None:
        with self.lock:
            self.stream.write(text + "\n")
            self.stream.flush()


class NotebookProgress(Progress):
    """Tasks as tqdm.auto bars: widgets in a Jupyter notebook, text elsewhere (the Python API's
    reporter; the command line has its own)."""

    active = True

    def __init__(self) -> None:
        self.lock = threading.RLock()

    @contextmanager
    def task(self, phase: str, *, total: int | None = None, unit: str = "") -> Iterator[Task]:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=phase, unit=unit or "it", leave=False)
        try:
            yield _TerminalTask(self, bar)  # (it reads only the owner's lock and the bar)
        finally:
            bar.close()


def for_api(show: bool | None) -> Progress | None:
    """The Python API's reporter: `show` None shows bars inside a Jupyter kernel only (a script's
    call stays quiet), True or False forces them on or off."""
    on = _in_notebook() if show is None else show
    return NotebookProgress() if on else None


def _in_notebook() -> bool:
    """Running inside a Jupyter kernel (IPython's ZMQ shell), not merely with ipykernel imported."""
    import sys

    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - an IPython without a shell: not a notebook
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


@contextmanager
def api_call(show: bool | None) -> Iterator[Progress]:
    """Around one Python API call: the reporter the caller installed stays (the command line's,
    also when it chose none); otherwise `for_api(show)` for the call's duration."""
    if current() is not _SILENT:
        yield current()
        return
    with reporting(for_api(show)) as progress:
        yield progress
