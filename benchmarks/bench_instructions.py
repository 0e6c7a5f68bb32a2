"""Instructions one first-fit `place()` call executes on the scheduler_perf workloads.

Wall and CPU time move by 15-35 % from run to run on small shared machines; the number of
instructions the CPU executes does not (valgrind's callgrind counts them; the same input gives
the same count to within about 1 %: addresses still vary, and with them some dictionaries). So a
change that makes `place()` cheaper or dearer shows here when the timings cannot tell it from
noise. Per workload (`schedperf_workloads.py`, at `--scale`, default 0.3: valgrind runs Python
some 50 times slower), two processes under callgrind, `PYTHONHASHSEED=0`: one reads the file and
warms up (`api.warm_up()`), the other does the same and then one `place()` (default profile);
the difference is `place()`'s count. Needs `valgrind` (Debian's package); prints why not when
it is missing. Both processes of a workload run at once (2 cores: about 1.5 min per workload
at scale 0.3).

    python benchmarks/bench_instructions.py                  # all five workloads, scale 0.3
    python benchmarks/bench_instructions.py --only basic --scale 0.1
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import schedperf_workloads as sw  # noqa: E402

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _child(path: str, places: int) -> None:
    from draopt.allocation import allocate as api
    from draopt.kube.features import Features
    from draopt.kube.loader import load_files
    from draopt.placement import place

    api.warm_up()
    objects = load_files([path])
    features = Features.from_gates()
    for _ in range(places):
        place(objects, policy="first-fit", features=features)


def _count(path: str, places: int, out_dir: str) -> subprocess.Popen:
    # The interpreter itself, not a pyenv shim (a shell script, which callgrind would count);
    # a virtual environment's python is kept as it is: its real path would lose the venv's packages.
    python = os.path.realpath(sys.executable) if "/shims/" in sys.executable else sys.executable
    cmd = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_dir}/callgrind.{places}.%p",
        python,
        __file__,
        "--child",
        path,
        str(places),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def _collected(proc: subprocess.Popen) -> int:
    _, err = proc.communicate()
    m = _COLLECTED.search(err or "")
    if proc.returncode != 0 or m is None:
        raise RuntimeError(f"callgrind run failed (exit {proc.returncode}):\n{(err or '')[-2000:]}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help=f"comma-separated workloads (default: all of {', '.join(sw.WORKLOADS)})")
    ap.add_argument("--scale", type=float, default=0.3, help="multiply node / slice / pod counts (default 0.3)")
    ap.add_argument("--child", nargs=2, metavar=("FILE", "PLACES"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind): nothing measured")
        return 2
    names = [n for n in args.only.split(",") if n] or list(sw.WORKLOADS)
    for n in names:
        if n not in sw.WORKLOADS:
            ap.error(f"unknown workload {n!r} (known: {', '.join(sw.WORKLOADS)})")
    print(f"instructions of one first-fit place() (default profile), callgrind, scale {args.scale:g}")
    print(f"{'workload':22s} {'pods':>6s} {'place() instructions':>21s} {'per pod':>10s} {'read + warm-up':>15s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = os.path.join(tmp, f"{name}.yaml")
            sw.write(name, path, scale=args.scale)
            pods = sum(1 for o in sw.objects(name, scale=args.scale) if o["kind"] == "Pod")
            with_place, without = _count(path, 1, tmp), _count(path, 0, tmp)
            total, base = _collected(with_place), _collected(without)
            place_count = total - base
            print(
                f"{name:22s} {pods:6d} {place_count / 1e6:19,.1f} M {place_count / pods / 1e3:8,.0f} k {base / 1e6:13,.0f} M"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
