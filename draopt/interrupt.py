"""Ctrl-C on the command line: stop at once, keep the best answer found so far, exit 130.

CP-SAT catches SIGINT itself by default: it ends the solve under way, and the next phase starts as
if nothing happened; after its solve SIGINT's disposition is the default one, so a second Ctrl-C
kills the process without a word. Under :func:`installed` (the command line's `main`) draopt takes
SIGINT instead:

* a solver made by :func:`watch` leaves SIGINT alone; a thread woken by the signal (through
  `signal.set_wakeup_fd`, which works while the main thread waits inside a solve) stops every
  watched solver's search, which returns the best solution it has;
* inside :func:`deferred` (a computation that has an answer at every moment: the optimal
  placement, whose floor is first-fit's) Ctrl-C only sets :func:`requested`: every later solve
  of a watched solver gets no time, so the computation ends at once with what it has, and the
  command prints it and exits 130;
* inside :func:`refining` (work that only checks or refines an answer made already: plan's
  first-fit check of its mix) Ctrl-C ends the block at once and sets :func:`requested`;
* elsewhere Ctrl-C raises KeyboardInterrupt, as Python's own handler does (exit 130, no answer).

Outside :func:`installed` (the Python API, a notebook) nothing changes: CP-SAT keeps its own
handling."""

from __future__ import annotations

import signal
import socket
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _State:
    def __init__(self) -> None:
        self.installed = False
        self.requested = False
        self.deferred = 0
        self.solvers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.lock = threading.Lock()


_STATE = _State()


def requested() -> bool:
    """Whether Ctrl-C came while an answer was being improved (under :func:`deferred`)."""
    return _STATE.requested


def watch(solver: Any) -> Any:
    """A CP-SAT solver that Ctrl-C stops (under :func:`installed`); after Ctrl-C, one that
    returns at once with what its hint or the caller already has."""
    if not _STATE.installed:
        return solver
    solver.parameters.catch_sigint_signal = False
    if threading.current_thread() is threading.main_thread():
        # a solver not watched (CP-SAT's own SIGINT handling) leaves SIGINT at its default when done
        signal.signal(signal.SIGINT, _on_sigint)
    with _STATE.lock:
        _STATE.solvers.add(solver)
    if _STATE.requested:
        solver.parameters.max_time_in_seconds = 0.001
    return solver


@contextmanager
def deferred() -> Iterator[None]:
    """Ctrl-C inside the block ends the work with the answer it has rather than raising."""
    _STATE.deferred += 1
    try:
        yield
    finally:
        _STATE.deferred -= 1


@contextmanager
def refining() -> Iterator[None]:
    """Under :func:`installed`, Ctrl-C inside the block ends it at once, the work under way
    dropped, and sets :func:`requested`: the answer made before the block stands. Elsewhere (the
    Python API) KeyboardInterrupt goes on as usual."""
    try:
        yield
    except KeyboardInterrupt:
        if not _STATE.installed:
            raise
        _STATE.requested = True


def _stop_solvers() -> None:
    with _STATE.lock:
        solvers = list(_STATE.solvers)
    for solver in solvers:
        solver.stop_search()  # thread-safe; a solver not solving ignores it


def _on_sigint(signum: int, frame: Any) -> None:
    _stop_solvers()
    if not _STATE.deferred:
        raise KeyboardInterrupt
    _STATE.requested = True


def _read_wakeups(reader: socket.socket) -> None:
    """Woken by every signal Python receives, while the main thread may be inside a solve."""
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data:
            if _STATE.deferred:
                _STATE.requested = True
            _stop_solvers()


@contextmanager
def installed() -> Iterator[None]:
    """draopt's handling of Ctrl-C for the block (the main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    previous = signal.signal(signal.SIGINT, _on_sigint)
    thread = threading.Thread(target=_read_wakeups, args=(reader,), name="draopt-sigint", daemon=True)
    thread.start()
    _STATE.installed, _STATE.requested = True, False
    try:
        yield
    finally:
        _STATE.installed = False
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(previous_fd)
        writer.close()  # the thread's recv returns b"": it ends
        thread.join(timeout=1.0)
        reader.close()
