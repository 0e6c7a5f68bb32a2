"""Reading a live cluster (`--context`, `--kubeconfig`, `--save-dump`; `kubectl draopt` with no
`-f`), against a real kube-apiserver: the `apiserver` oracle (k8s.io/kubernetes v1.37.2 on an
embedded etcd, draopt/crosscheck/oracles/apiserver), built once and cached, started once for the
module. A bundled example is created through the API; `place` on the cluster must give the
answer `place -f` gives on the example, and `-f` on the saved dump the very same output.

The server tests are skipped where the server cannot be built (no Go, or no module proxy); the
tests of flags and errors that need no server always run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from draopt.cli import kubectl_main, main
from draopt.crosscheck import apiserver, gobuild

ROOT = Path(__file__).resolve().parent.parent
# The examples an API server admits (gang-preemption.yaml's pod `backfill` gives preemptionPolicy
# Never with a PriorityClass whose policy differs: the Priority admission plugin refuses it).
EXAMPLES = ("mig-gangs.yaml", "gang-stranding.yaml")

needs_client = pytest.mark.skipif(
    importlib.util.find_spec("kubernetes") is None, reason="the kubernetes client is not installed (draopt[live])"
)


def run(cli, argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = cli(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ without a server
def test_plain_draopt_without_f_keeps_its_error(capsys):
    code, _, err = run(main, ["place"], capsys)
    assert code == 2
    assert "the following arguments are required: -f/--filename" in err


@needs_client
def test_kubectl_plugin_without_f_reads_the_current_context(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run(kubectl_main, ["place"], capsys)
    assert code == 2
    assert "no kubeconfig" in err and "Traceback" not in err


def test_without_the_client_a_clear_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # import kubernetes -> ImportError
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\n")
    code, _, err = run(main, ["place", "--kubeconfig", str(config)], capsys)
    assert code == 2
    assert "pip install 'draopt[live]'" in err


@needs_client
@pytest.mark.parametrize(
    "text, expected",
    [
        ("garbage: [\n", "cannot read kubeconfig"),
        ("apiVersion: v1\nkind: Config\ncontexts: []\ncurrent-context: ''\n", "no current context"),
    ],
)
def test_bad_kubeconfig(capsys, tmp_path, text, expected):
    config = tmp_path / "config"
    config.write_text(text)
    code, _, err = run(main, ["place", "--kubeconfig", str(config)], capsys)
    assert code == 2 and expected in err and "Traceback" not in err


@needs_client
def test_unreachable_server_names_context_and_server(capsys, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "config"
    config.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: gone, context: {{cluster: c, user: u}}}}]
current-context: gone
"""
    )
    code, _, err = run(main, ["place", "--kubeconfig", str(config)], capsys)
    assert code == 2
    assert f"cannot reach the API server https://127.0.0.1:{port} (context gone)" in err


def test_save_dump_needs_a_cluster(capsys, tmp_path):
    code, _, err = run(main, ["place", "-f", str(ROOT / "examples/cluster.yaml"), "--save-dump", "x.yaml"], capsys)
    assert code == 2 and "--save-dump" in err


# ------------------------------------------------------------------ against kube-apiserver
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if importlib.util.find_spec("kubernetes") is None:
        pytest.skip("the kubernetes client is not installed (draopt[live])")
    if gobuild.go_path() is None:
        pytest.skip("Go is not installed: no test kube-apiserver")
    try:
        started = apiserver.start(tmp_path_factory.mktemp("apiserver"))
    except gobuild.OracleUnavailable as e:
        if e.cause in ("no-go", "go-too-old", "download"):
            pytest.skip(f"the test kube-apiserver cannot be built here: {e}")
        raise
    yield started
    started.stop()


@pytest.fixture(scope="module")
def writer(server):
    return apiserver.Writer(server.kubeconfig)


def without_solve_time(table: str) -> str:
    """`place -o table` without its solve_s column (a wall-clock time)."""
    lines, column = [], None
    for line in table.splitlines():
        words = line.split()
        if words[:1] == ["policy"] and "solve_s" in words:
            column = words.index("solve_s")
        elif column is not None and words[:1] and words[0] in ("first-fit", "optimal"):
            line = " ".join(words[:column] + words[column + 1 :])
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize("example", EXAMPLES)
def test_place_on_the_cluster_is_place_on_the_example(server, writer, example, capsys, tmp_path):
    apiserver.clear(writer)
    apiserver.load_example(writer, apiserver.documents(ROOT / "examples" / example))
    dump = tmp_path / "dump.yaml"
    code, out, err = run(main, ["place", "--kubeconfig", server.kubeconfig, "--save-dump", str(dump)], capsys)
    assert "Traceback" not in err
    assert f"read from context admin ({server.server})" in err
    file_code, file_out, _ = run(main, ["place", "-f", str(ROOT / "examples" / example)], capsys)
    assert (code, without_solve_time(out)) == (file_code, without_solve_time(file_out)), err
    # -f on the dump: the same output, byte for byte (timings aside), in every format
    for output in ("yaml", "json", "table"):
        on_cluster = run(main, ["place", "--kubeconfig", server.kubeconfig, "-o", output], capsys)
        on_dump = run(main, ["place", "-f", str(dump), "-o", output], capsys)
        assert on_cluster[0] == on_dump[0]
        assert without_solve_time(on_cluster[1]) == without_solve_time(on_dump[1])


def test_allocate_on_the_cluster_is_allocate_on_the_example(server, writer, capsys, tmp_path):
    """Claims already allocated (status put through the status subresource) and pending ones."""
    apiserver.clear(writer)
    apiserver.load_example(writer, apiserver.documents(ROOT / "examples/cluster.yaml"))
    argv = ["allocate", "--node", "gpu-node-1", "--deterministic-share-ids", "-o", "json"]
    live = run(main, argv + ["--kubeconfig", server.kubeconfig, "--save-dump", str(tmp_path / "d.json")], capsys)
    from_file = run(main, argv + ["-f", str(ROOT / "examples/cluster.yaml")], capsys)
    on_dump = run(main, argv + ["-f", str(tmp_path / "d.json")], capsys)
    assert live[0] == from_file[0] == 0
    assert live[1] == on_dump[1]  # the same objects, metadata and all

    def allocations(text):
        return {(c["metadata"]["namespace"], c["metadata"]["name"]): c["status"] for c in json.loads(text)["items"]}

    assert allocations(live[1]) == allocations(from_file[1])


def test_kubectl_plugin_reads_the_current_context(server, capsys, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", server.kubeconfig)
    plugin = run(kubectl_main, ["place", "-o", "yaml"], capsys)
    named = run(main, ["place", "--context", "admin", "-o", "yaml"], capsys)
    assert plugin[:2] == named[:2]
    assert "read from context admin" in plugin[2]


def test_kinds_not_served_are_notes(server, capsys):
    code, _, err = run(main, ["validate", "--kubeconfig", server.kubeconfig], capsys)
    assert code == 0, err
    # CompositePodGroup is alpha (scheduling.k8s.io/v1alpha3): not served with beta APIs only
    assert "note: CompositePodGroup not served by the API server" in err


def test_forbidden_names_context_and_server(server, capsys):
    code, _, err = run(main, ["place", "--kubeconfig", server.kubeconfig, "--context", "nobody"], capsys)
    assert code == 2
    assert "forbidden" in err and f"{server.server} (context nobody)" in err
    assert "Traceback" not in err


def test_unknown_context(server, capsys):
    code, _, err = run(main, ["place", "--kubeconfig", server.kubeconfig, "--context", "prod"], capsys)
    assert code == 2
    assert "no context 'prod' (contexts: admin, nobody)" in err


def test_cluster_and_files_together(server, writer, capsys, tmp_path):
    """`--kubeconfig K -f manifests`: the cluster first, the files after it, as the recipe's
    `-f cluster.yaml -f manifests/`."""
    apiserver.clear(writer)
    docs = apiserver.documents(ROOT / "examples/gang-stranding.yaml")
    pods = [d for d in docs if d["kind"] in ("Pod", "PodGroup")]
    apiserver.load_example(writer, [d for d in docs if d not in pods])
    manifests = tmp_path / "pods.yaml"
    manifests.write_text(yaml.safe_dump_all(pods))
    both = run(main, ["place", "--kubeconfig", server.kubeconfig, "-f", str(manifests)], capsys)
    whole = run(main, ["place", "-f", str(ROOT / "examples/gang-stranding.yaml")], capsys)
    assert both[0] == whole[0]
    assert without_solve_time(both[1]) == without_solve_time(whole[1]), both[2]


def test_lists_read_page_by_page(server, writer, capsys, tmp_path, monkeypatch):
    """One object a page (the server's `continue` tokens followed): the same dump as in one page."""
    from draopt.kube import live

    apiserver.clear(writer)
    apiserver.load_example(writer, apiserver.documents(ROOT / "examples/gang-stranding.yaml"))
    whole, paged = tmp_path / "whole.yaml", tmp_path / "paged.yaml"
    run(main, ["validate", "--kubeconfig", server.kubeconfig, "--save-dump", str(whole)], capsys)
    monkeypatch.setattr(live, "PAGE_SIZE", 1)
    continued = []
    request = live._request

    def counting(api, path, query):
        continued.extend(value for key, value in query if key == "continue")
        return request(api, path, query)

    monkeypatch.setattr(live, "_request", counting)
    run(main, ["validate", "--kubeconfig", server.kubeconfig, "--save-dump", str(paged)], capsys)
    assert paged.read_text() == whole.read_text()
    kinds = Counter(item["kind"] for item in yaml.safe_load(whole.read_text())["items"])
    assert len(continued) == sum(n - 1 for n in kinds.values()) > 5  # each object after a kind's first
