"""Reading fast gives exactly what reading slowly gave.

The loader reads a large YAML document through rapidyaml (draopt.kube.fastyaml) when that reads it as
PyYAML does, else through libyaml, else through PyYAML's pure Python reader (the reference, whose
error messages users get). These tests hold the fast readings to the reference: on every YAML
file of the repository, on scalars where YAML 1.1 (PyYAML) and rapidyaml disagree, on random
documents, and end to end on the objects a cluster dump gives (YAML and JSON, Lists,
resource.k8s.io v1, v1beta2 and v1beta1)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from draopt.kube import fastyaml
from draopt.kube import loader
from draopt.errors import InputError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from load_dumps import as_list, cluster_dump  # noqa: E402  (benchmarks/ on the path first)
from test_versions import V1BETA1_DUMP  # noqa: E402


def reference(text: str):
    """PyYAML's pure Python reading, as the loader did it before the fast paths."""
    return list(loader._yaml_documents(loader._YamlLoader, text, "t"))


def fast(text: str):
    ok, docs = fastyaml.load(text, min_chars=0)
    return ok, [d for d in docs if d is not None]


YAML_FILES = sorted({*ROOT.glob("tests/**/*.yaml"), *ROOT.glob("tests/**/*.yml"), *ROOT.glob("examples/**/*.yaml")})


def test_every_yaml_file_of_the_repository_reads_the_same_on_every_path():
    taken = 0
    for path in YAML_FILES:
        text = path.read_text(encoding="utf-8")
        try:
            ref, err = reference(text), None
        except (yaml.YAMLError, InputError) as e:
            ref, err = None, e
        ok, docs = fast(text)
        if ok:
            assert err is None, f"{path}: rapidyaml read a document PyYAML refuses ({err})"
            assert docs == ref, path
        if loader._CYamlLoader is not None:
            try:
                c_docs = list(loader._yaml_documents(loader._CYamlLoader, text, "t"))
            except (yaml.YAMLError, InputError):
                c_docs = None
            if err is None:
                assert c_docs == ref, path
        # Hand-written files use flow collections and several documents, which the fast path
        # leaves to PyYAML; each document written out in block style, as dumps are, is read.
        for doc in ref or []:
            block = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
            ok, docs = fast(block)
            if ok:
                taken += 1
                assert docs == [doc], path
    assert taken >= 200, f"the fast path read only {taken} documents"


# Plain scalars that YAML 1.1 (PyYAML) and rapidyaml's JSON read differently, and some they
# read alike; each in value, key, sequence and flow positions.
TOKENS = [
    "yes",
    "Yes",
    "NO",
    "on",
    "Off",
    "y",
    "n",
    "True",
    "TRUE",
    "False",
    "true",
    "false",
    "null",
    "Null",
    "NULL",
    "~",
    "=",
    "<<",
    "0",
    "-0",
    "+1",
    "1",
    "12",
    "-12",
    "007",
    "0755",
    "09",
    "0x1F",
    "0b101",
    "0o17",
    "1_000",
    "1:20",
    "190:20:30.15",
    "1.5",
    "-2.25",
    "0.10",
    "00.5",
    "3.",
    ".5",
    "-.5",
    "+.5",
    "1e3",
    "1E+3",
    "1.5e+3",
    "1.0e-3",
    ".1e1",
    "0e0",
    ".inf",
    "-.Inf",
    ".NaN",
    "inf",
    "nan",
    "-inf",
    "Infinity",
    "1.0.0",
    "172.18.0.2",
    "10.0.0.0/24",
    "2026-11-30",
    "2026-11-30T10:00:00Z",
    "2001-12-14 21:59:43.10 -5",
    "v1.2",
    "1-2",
    "12e",
    "0b75daec",
    "k:{\"name\":\"x\"}",
    "a b",
    "-",
    ".",
    "'quoted'",
    '"dq"',
    "'yes'",
    '"0x1F"',
    "''",
    "",
    "!!str 5",
    "&a 1",
    "*a",
    "!tag x",
    "? a",
    "@x",
    "`x",
    "[1, yes]",
    "{a: on}",
    "[]",
    "{}",
    "|\n  text\n",
    ">-\n  folded\n  more\n",
]


def _contexts(token: str) -> list[str]:
    return [
        f"key: {token}\nother: 1\n",
        f"{token}: value\n",
        f"list:\n- {token}\n- x\n",
        f"flow: [a, {token}]\n",
        f"m: {{k: {token}}}\n",
        f"nested:\n  deeper:\n    - k: {token}\n",
    ]


@pytest.mark.parametrize("token", TOKENS)
def test_tricky_scalars_are_refused_or_read_alike(token):
    for text in _contexts(token):
        try:
            ref = reference(text)
        except (yaml.YAMLError, InputError):
            ref = None
        ok, docs = fast(text)
        if ok:
            assert ref is not None, f"{text!r}: PyYAML refuses it, the fast path read {docs}"
            assert docs == ref, text


def test_the_scan_of_distinct_lines_finds_what_the_scan_of_the_text_finds():
    # fastyaml.unsafe scans each distinct line once, and the text only when one is suspect: the
    # scans look at one line at a time (and its end), so the two find a suspect alike.
    texts = [t for token in TOKENS for t in _contexts(token)]
    texts += [t.rstrip("\n") for t in texts]  # the last line without its newline
    texts += [f"a: 1\n{t}a: 1\n{t}" for t in texts[:40]] + ["x:\n  -", "x:\n-\n", "- \n", "-"]
    texts += [p.read_text(encoding="utf-8") for p in YAML_FILES]
    texts += ["a: x || y > z\n" * 6000 + "b: |\n  on\nc: 1\n", "- >\n  on\n", "a: '|' >\nb: on\n"]
    suspects = 0
    for text in texts:
        if fastyaml._CONTROL.search(text):
            continue
        if any(header in text for header in (": |", ": >", "- |", "- >")):
            assert fastyaml._may_have_block_header(text)
        text = fastyaml._without_block_scalars(text)
        distinct = "\n" + "\n".join(set(text.split("\n"))) + "\n"
        assert (fastyaml._suspect(distinct) is None) == (fastyaml._suspect(text) is None), text
        suspects += fastyaml._suspect(text) is not None
    assert suspects > 200


def test_a_kubectl_dump_takes_the_fast_path_and_reads_alike():
    text = yaml.safe_dump(as_list(cluster_dump(nodes=4, pods=12, devices_per_node=2)), sort_keys=False)
    assert fastyaml.unsafe(text) is None
    ok, docs = fast(text)
    assert ok and docs == reference(text)
    # a value PyYAML reads as a boolean and rapidyaml as a string: refused
    risky = text.replace("kubernetes.io/os: linux", "kubernetes.io/os: on", 1)
    assert fastyaml.unsafe(risky) is not None and fast(risky) == (False, [])


_KEYS = st.text(alphabet="abcxyz09.-_:/yesonf", min_size=1, max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=True)
    | st.text(max_size=12)
)
_DOCS = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=25
)


@settings(max_examples=300, deadline=None)
@given(doc=st.dictionaries(_KEYS, _DOCS, min_size=1, max_size=5), flow=st.booleans())
def test_random_documents_are_refused_or_read_alike(doc, flow):
    text = yaml.safe_dump(doc, default_flow_style=flow, allow_unicode=True)
    ref = reference(text)
    ok, docs = fast(text)
    if ok:
        assert docs == ref


# Base-60 shapes: PCI addresses go-yaml writes plain; YAML 1.1 (PyYAML) reads some as numbers,
# Kubernetes' go-yaml never did.
PCI_TOKENS = [
    "0000:68:00.0",
    "0000:8a:00.0",
    "0000:00:1f.6",
    "0000:19:00.0",
    "0000:53:00.1",
    "10:20",
    "1:20.5",
    "60:00",
    "0:00",
    "1:68:00",
    "0_0:68",
    "+0000:68:00.0",
    "0000:68:00.",
    "59:59.9",
]


@pytest.mark.parametrize("token", PCI_TOKENS)
def test_base60_shapes_are_the_strings_written_on_every_path(token):
    """`0000:19:00.0` is 1140.0 and `10:20` is 620 in YAML 1.1, but strings to Kubernetes (sigs.k8s.io/yaml's
    go-yaml: "Does not support base-60 floats"): strings on every path, and the fast path takes them."""
    for text in _contexts(token):
        ok, docs = fast(text)
        ref = reference(text)
        assert token in json.dumps(ref), text
        if ok:
            assert docs == ref, text
    text = f"key: {token}\nlist:\n- {token}\n{token}: 1\n"
    assert reference(text) == [{"key": token, "list": [token], token: 1}]
    assert fast(text) == (True, reference(text))


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.text(alphabet="0123456789abf:._+-", min_size=1, max_size=12), min_size=1, max_size=4))
def test_random_base60_tokens_are_refused_or_read_alike(tokens):
    text = "".join(f"k{i}: {t}\n" for i, t in enumerate(tokens)) + "seq:\n" + "".join(f"- {t}\n" for t in tokens)
    try:
        ref = reference(text)
    except (yaml.YAMLError, InputError):
        ref = None
    ok, docs = fast(text)
    if ok:
        assert ref is not None and docs == ref, text


@settings(max_examples=400, deadline=None)
@given(
    tokens=st.lists(
        st.text(alphabet="019.-+_:eExXbo~yYnNtTfFsSlLa iI#&*!,[]{}'\"", min_size=0, max_size=7), min_size=1, max_size=4
    )
)
def test_random_plain_tokens_are_refused_or_read_alike(tokens):
    text = "".join(f"k{i}: {t}\n" for i, t in enumerate(tokens))
    text += "seq:\n" + "".join(f"- {t}\n" for t in tokens)
    try:
        ref = reference(text)
    except (yaml.YAMLError, InputError):
        ref = None
    ok, docs = fast(text)
    if ok:
        assert ref is not None and docs == ref, text


# ------------------------------------------------------------------ objects, end to end
def _v1beta2(objs):
    out = copy.deepcopy(objs)
    for o in out:
        if o["apiVersion"] == "resource.k8s.io/v1":
            o["apiVersion"] = "resource.k8s.io/v1beta2"
    return out


def _objects(text: str, source: str, path: str) -> loader.ObjectSet:
    saved = (fastyaml.MIN_CHARS, fastyaml._ryml, loader._CYamlLoader)
    try:
        if path == "fast":
            fastyaml.MIN_CHARS = 0
        elif path == "libyaml":
            fastyaml._ryml = None
        elif path == "pure":
            fastyaml._ryml, loader._CYamlLoader = None, None
        return loader.load_text(text, source, notes=__import__("io").StringIO())
    finally:
        fastyaml.MIN_CHARS, fastyaml._ryml, loader._CYamlLoader = saved


def _dumped(objects: loader.ObjectSet) -> dict:
    return {attr: [o.to_k8s() for o in getattr(objects, attr)] for attr in loader.ObjectSet._BY_KIND.values()}


@pytest.mark.parametrize("name", ["v1", "v1beta2", "v1beta1", "example"])
def test_every_path_gives_equal_objects(name):
    if name == "example":
        text = (ROOT / "examples" / "cluster.yaml").read_text()
        docs = reference(text)
    else:
        objs = cluster_dump(nodes=6, pods=40, devices_per_node=4)
        if name == "v1beta2":
            objs = _v1beta2(objs)
        elif name == "v1beta1":
            objs = objs + copy.deepcopy(V1BETA1_DUMP["items"])
        docs = [json.loads(json.dumps(as_list(objs)))]  # no shared parts: no YAML aliases
        text = yaml.safe_dump(docs[0], sort_keys=False)
    if name != "example":
        assert fastyaml.unsafe(text) is None  # the fast path is really taken
    pure = _objects(text, "in.yaml", "pure")
    assert sum(len(getattr(pure, a)) for a in loader.ObjectSet._BY_KIND.values()) > 0
    for path in ("fast", "libyaml"):
        got = _objects(text, "in.yaml", path)
        for attr in loader.ObjectSet._BY_KIND.values():
            assert getattr(got, attr) == getattr(pure, attr), (path, attr)
    as_json = json.dumps(docs[0]) if len(docs) == 1 else json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    assert _dumped(_objects(as_json, "in.json", "pure")) == _dumped(pure)


def test_a_large_yaml_dump_with_a_risky_scalar_still_reads_correctly():
    objs = cluster_dump(nodes=4, pods=8, devices_per_node=2)
    objs[2]["metadata"]["labels"]["gpu"] = True  # written `gpu: true`: both read a boolean...
    text = yaml.safe_dump(as_list(objs), sort_keys=False).replace("gpu: true", "gpu: yes")  # ...PyYAML only
    assert fastyaml.unsafe(text) is not None
    with pytest.raises(InputError, match="labels.gpu"):  # a label must be a string, as before
        _objects(text, "in.yaml", "fast")
    with pytest.raises(InputError, match="labels.gpu"):
        _objects(text, "in.yaml", "pure")


def test_yaml_errors_keep_pyyaml_messages_on_every_path():
    bad = "items:\n- a: 1\n  b: [unclosed\n"
    messages = set()
    for path in ("fast", "libyaml", "pure"):
        with pytest.raises(InputError) as e:
            _objects(bad, "in.yaml", path)
        messages.add(str(e.value))
    assert len(messages) == 1 and "invalid YAML at line" in messages.pop()


def test_conversion_copies_what_it_changes_and_leaves_the_document_alone():
    from draopt.kube.convert import to_v1

    for item in V1BETA1_DUMP["items"]:
        before = copy.deepcopy(item)
        out = to_v1(item)
        assert item == before  # the document read is not changed
        if item["apiVersion"] == "resource.k8s.io/v1beta1":
            assert out["apiVersion"] == "resource.k8s.io/v1" and out is not item
            if item["kind"] == "ResourceSlice":
                assert all("basic" not in d for d in out["spec"]["devices"])
                assert out["spec"]["devices"][0]["attributes"] == item["spec"]["devices"][0]["basic"]["attributes"]


def _unknown_reference(data, schema, path=""):
    """The strict check's rule, walked field by field in document order."""
    from draopt.kube.strict import ListOf, MapOf, Obj

    out = []
    if isinstance(schema, Obj) and isinstance(data, dict):
        for k, v in data.items():
            p = f"{path}.{k}" if path else str(k)
            out += [p] if k not in schema else _unknown_reference(v, schema[k], p)
    elif isinstance(schema, ListOf) and isinstance(data, list):
        for i, v in enumerate(data):
            out += _unknown_reference(v, schema.item, f"{path}[{i}]")
    elif isinstance(schema, MapOf) and isinstance(data, dict):
        for k, v in data.items():
            out += _unknown_reference(v, schema.value, f"{path}[{k}]")
    return out


def test_the_strict_check_finds_unknown_fields_in_document_order():
    import random

    from draopt.kube.convert import schema_for
    from draopt.kube.strict import unknown_fields

    rnd = random.Random(11)
    docs = [
        d
        for d in cluster_dump(nodes=2, pods=6, devices_per_node=2) + V1BETA1_DUMP["items"]
        if d["kind"] in loader.KINDS
    ]
    checked = with_unknown = 0
    for doc in docs:
        for _ in range(30):
            m = copy.deepcopy(doc)
            for _ in range(rnd.randint(0, 4)):  # unknown fields at random depths
                node = m
                for _ in range(rnd.randint(0, 6)):
                    if isinstance(node, dict) and node:
                        node = node[rnd.choice(sorted(node))]
                    elif isinstance(node, list) and node:
                        node = rnd.choice(node)
                if isinstance(node, dict):
                    node[f"zz{rnd.randint(0, 9)}"] = 1
            schema = schema_for(loader.KINDS[m["kind"]][0], m["apiVersion"])
            got = unknown_fields(m, schema)
            assert got == _unknown_reference(m, schema), m["kind"]
            checked += 1
            with_unknown += len(got) > 1
    assert with_unknown > 20, "too few documents with several unknown fields to test the order"


def test_controllers_see_the_pods_they_read_as_to_k8s_writes_them():
    pods = _objects(yaml.safe_dump(as_list(cluster_dump(nodes=3, pods=9, devices_per_node=2))), "in.yaml", "pure").pods
    pods += loader.load_text(
        (ROOT / "examples" / "cluster.yaml").read_text(), "ex", notes=__import__("io").StringIO()
    ).pods
    pods[0].spec.affinity = loader.Pod.model_validate(
        {
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
                            ]
                        }
                    }
                }
            }
        }
    ).spec.affinity
    assert any(p.status.phase for p in pods) and any(p.spec.node_name for p in pods)
    for pod in pods:
        full = pod.to_k8s()
        want = {
            "metadata": {
                k: v
                for k, v in full["metadata"].items()
                if k in ("name", "namespace", "labels", "annotations", "ownerReferences") and v
            },
            "spec": {k: v for k, v in full.get("spec", {}).items() if k in ("nodeName", "affinity")},
            "status": {k: v for k, v in full.get("status", {}).items() if k == "phase"},
        }
        assert loader._controller_view(pod) == want, pod.name


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as block scalars (`|`, `>`), as kubectl writes last-applied-configuration."""


def _block_str(dumper, value):
    style = ("|" if len(value) % 2 else ">") if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _block_str)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.lists(st.text(alphabet="ab01 :-#[]{}'\"yesno~.|>&*!?,", max_size=10), min_size=1, max_size=4),
        min_size=1,
        max_size=3,
    )
)
def test_block_scalars_are_read_alike_whatever_they_contain(lines):
    doc = {
        "metadata": {"annotations": {f"a{i}": "\n".join(ls) + ("\n" if i % 2 else "") for i, ls in enumerate(lines)}},
        "items": ["\n".join(ls) for ls in lines] + ["after"],
        "after": "ok",
    }
    text = yaml.dump(doc, Dumper=_BlockDumper, sort_keys=False)
    ref = reference(text)
    assert ref == [doc]
    ok, docs = fast(text)
    if ok:
        assert docs == ref, text


def test_last_applied_configuration_does_not_keep_a_dump_off_the_fast_path():
    objs = cluster_dump(nodes=2, pods=4, devices_per_node=2)
    objs[0]["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(objs[0]["spec"]) + "\n"
    }
    text = yaml.dump(as_list(objs), Dumper=_BlockDumper, sort_keys=False)
    assert "last-applied-configuration: |" in text or "last-applied-configuration: >" in text
    assert fastyaml.unsafe(text) is None
    ok, docs = fast(text)
    assert ok and docs == reference(text)


@settings(max_examples=200, deadline=None)
@given(
    docs=st.lists(st.dictionaries(_KEYS, _DOCS, max_size=4), min_size=1, max_size=4),
    separators=st.lists(
        st.sampled_from(
            [
                "---\n",
                "--- \n",
                "---  # next\n",
                "# note\n---\n",
                "---\n\n# x\n",
                "---\n---\n",
                "--- x: 1\n",
                "...\n---\n",
            ]
        ),
        min_size=4,
        max_size=4,
    ),
)
def test_several_documents_are_split_as_pyyaml_splits_them(docs, separators):
    text = "".join(sep + yaml.safe_dump(doc, sort_keys=False) for sep, doc in zip(separators, docs))
    try:
        ref = reference(text)
    except (yaml.YAMLError, InputError):
        ref = None
    ok, got = fast(text)
    if ok:
        assert ref is not None and got == ref, text


def test_a_v1beta1_dump_reads_as_its_v1_form_on_the_fast_path():
    from load_dumps import as_v1beta1

    objs = cluster_dump(nodes=5, pods=20, devices_per_node=3)
    v1 = _objects(yaml.safe_dump(as_list(objs), sort_keys=False), "v1.yaml", "pure")
    text = yaml.safe_dump(json.loads(json.dumps(as_list(as_v1beta1(objs)))), sort_keys=False)
    assert "resource.k8s.io/v1beta1" in text and fastyaml.unsafe(text) is None
    beta = _objects(text, "beta.yaml", "fast")
    for attr in ("resource_slices", "resource_claims", "claim_templates", "device_classes"):
        got, want = [o.to_k8s() for o in getattr(beta, attr)], [o.to_k8s() for o in getattr(v1, attr)]
        assert got and [(o["spec"], o.get("status")) for o in got] == [(o["spec"], o.get("status")) for o in want]


# ---------------------------------------------------------------- YAML 1.1 booleans
@pytest.mark.parametrize(
    "token,value",
    [
        ("yes", True),
        ("On", True),
        ("TRUE", True),
        ("no", False),
        ("OFF", False),
        ("y", "y"),
        ("Y", "Y"),
        ("n", "n"),
        ("N", "N"),
    ],
)
def test_yaml_11_booleans_read_as_pyyaml_reads_them_on_every_path(token, value):
    """PyYAML's YAML 1.1 booleans (yes/no/on/off/true/false) are booleans, the one-letter y/n strings,
    on every path: the fast path refuses the words (rapidyaml reads strings) and reads y/n as PyYAML
    does; as values, keys and items; quoted, they stay strings. (kubectl's go-yaml v2 also reads y/n
    as booleans: docs/inputs.md.)"""
    key = {True: "true", False: "false"}.get(value, token) if isinstance(value, bool) else token
    text = f"v: {token}\n{token}: k\nl:\n- {token}\nq: '{token}'\n"
    want = [{"v": value, key: "k", "l": [value], "q": token}]
    assert reference(text) == want
    assert list(loader._documents(text, "t")) == want
    ok, docs = fast(text)
    assert (ok, docs) == ((False, []) if isinstance(value, bool) else (True, want))
    big = text + "pad: " + "x" * fastyaml.MIN_CHARS + "\n"
    assert list(loader._documents(big, "t"))[0]["v"] == value


@pytest.mark.parametrize("token", ["0b_", "0x_", "0o_", "+0b_"])
def test_int_prefix_without_digits_is_the_string_written(token):
    # Found by test_random_base60_tokens_are_refused_or_read_alike: PyYAML's int resolver matches
    # these and then fails to convert them (ValueError, a traceback from every command); go-yaml
    # (sigs.k8s.io/yaml, what kubectl and the API server read with) keeps them as strings.
    text = f"k0: {token}\nseq:\n- {token}\n"
    assert reference(text) == [{"k0": token, "seq": [token]}]
    ok, docs = fast(text)
    assert not ok or docs == reference(text)
