"""A real kube-apiserver for the live-cluster tests: the `apiserver` oracle (Kubernetes' released
modules on an embedded etcd, draopt/crosscheck/oracles/apiserver) started as a child process,
and the writes that load a bundled example into it as `kubectl create` would.

The writes go through the standard library (not the `kubernetes` client that draopt's reader
uses), so the reader is checked against an independent writer. The server's kubeconfig has two
contexts: `admin` (the current one, group system:masters) and `nobody` (RBAC grants it nothing).
"""

from __future__ import annotations

import base64
import json
import os
import select
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from draopt.crosscheck.gobuild import oracle_binary

# Beta APIs are off by default (scheduling.k8s.io/v1beta1 PodGroup and Workload); feature gates
# stay at the release's defaults, as draopt's own defaults do.
DEFAULT_SERVER_ARGS = ("--runtime-config=api/beta=true",)
START_TIMEOUT = 300.0  # seconds for the server to be ready on a loaded 2-core machine

# Kinds the examples hold, in the order they are created: what an object names exists before
# it (namespaces first, pods before the claims they own).
CREATE_ORDER = (
    "Namespace",
    "PriorityClass",
    "DeviceClass",
    "Node",
    "ResourceSlice",
    "DeviceTaintRule",
    "ResourceClaimTemplate",
    "PodGroup",
    "Workload",
    "CompositePodGroup",
    "Pod",
    "ResourceClaim",
)
NAMESPACED = frozenset({"Pod", "ResourceClaim", "ResourceClaimTemplate", "PodGroup", "Workload", "CompositePodGroup"})
# Metadata the server sets and refuses (resourceVersion) or replaces on create.
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")


@dataclass
class TestServer:
    process: subprocess.Popen
    kubeconfig: str
    server: str
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the server stops when its stdin closes
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(work_dir: Path, minor: str = "1.37", extra_args: Iterable[str] = DEFAULT_SERVER_ARGS) -> TestServer:
    """Build (cached) and start the server; ready when this returns. Raises OracleUnavailable
    where it cannot be built, RuntimeError when it does not start."""
    binary = oracle_binary("apiserver", minor)
    work_dir.mkdir(parents=True, exist_ok=True)
    log = work_dir / "apiserver.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [str(binary), "--dir", str(work_dir / "state"), "--", *extra_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            env=dict(os.environ, GOMAXPROCS="2"),
        )
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        chunk = process.stdout.read1(4096) if ready else b""  # type: ignore[attr-defined]
        if not chunk:
            process.kill()
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the test kube-apiserver did not start (log {log}):\n{tail}")
        line += chunk
    word, kubeconfig, server = line.decode().split()
    assert word == "ready", line
    return TestServer(process, kubeconfig, server, log)


class Writer:
    """Create, replace and delete objects as the kubeconfig's current user (stdlib HTTPS)."""

    def __init__(self, kubeconfig: str, context: str = "admin"):
        config = yaml.safe_load(Path(kubeconfig).read_text())
        ctx = next(c["context"] for c in config["contexts"] if c["name"] == context)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == ctx["user"])
        self.server = cluster["server"]
        self.token = user["token"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.tls = ssl.create_default_context(cadata=ca)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.tls, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def must(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.request(method, path, body)
        if not 200 <= status <= 299:
            raise RuntimeError(f"{method} {path}: {status} {(answer or {}).get('message')}")
        return answer


def collection_path(api_version: str, kind: str, namespace: str | None) -> str:
    prefix = "/api/" if "/" not in api_version else "/apis/"
    where = f"/namespaces/{namespace}" if namespace and kind in NAMESPACED else ""
    return f"{prefix}{api_version}{where}/{kind.lower()}s"


def documents(path: str | Path) -> list[dict[str, Any]]:
    """The objects of a YAML file, Lists flattened."""
    out: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(Path(path).read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "List":
            out.extend(doc.get("items") or [])
        elif isinstance(doc, dict):
            out.append(doc)
    return out


def load_example(writer: Writer, objects: list[dict[str, Any]]) -> None:
    """Create the objects (kinds in CREATE_ORDER, file order within a kind), their status put
    through the status subresource; references to the objects' UIDs (owners, reservedFor) are
    rewritten to the UIDs the server gives."""
    by_kind = {kind: [o for o in objects if o.get("kind") == kind] for kind in CREATE_ORDER}
    unknown = {o.get("kind") for o in objects} - set(CREATE_ORDER)
    if unknown:
        raise ValueError(f"kinds the loader does not create: {sorted(map(str, unknown))}")
    namespaces = {o["metadata"].get("namespace") or "default" for o in objects if o["kind"] in NAMESPACED}
    named = {o["metadata"]["name"] for o in by_kind["Namespace"]}
    for ns in sorted(namespaces - named - {"default"}):
        by_kind["Namespace"].append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    uids: dict[str, str] = {}
    for kind in CREATE_ORDER:
        for obj in by_kind[kind]:
            _create(writer, _with_uids(obj, uids), uids)


def _create(writer: Writer, obj: dict[str, Any], uids: dict[str, str]) -> None:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ("default" if obj["kind"] in NAMESPACED else None)
    body = {k: v for k, v in obj.items() if k != "status"}
    body["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
    path = collection_path(obj["apiVersion"], obj["kind"], namespace)
    status, created = writer.request("POST", path, body)
    if status == 409 and obj["kind"] == "Namespace":  # "default" and the like exist: take its labels
        current = writer.must("GET", f"{path}/{meta['name']}")
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        created = writer.must("PUT", f"{path}/{meta['name']}", body)
    elif not 200 <= status <= 299:
        raise RuntimeError(f"create {obj['kind']} {meta.get('name')}: {status} {(created or {}).get('message')}")
    if meta.get("uid"):
        uids[meta["uid"]] = created["metadata"]["uid"]
    if obj.get("status"):
        created["status"] = obj["status"]
        writer.must("PUT", f"{path}/{meta['name']}/status", created)


def _with_uids(value: Any, uids: dict[str, str]) -> Any:
    """A copy with every `uid:` that names a created object's old UID given its new one."""
    if isinstance(value, dict):
        return {
            k: (uids.get(v, v) if k == "uid" and isinstance(v, str) else _with_uids(v, uids)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_with_uids(v, uids) for v in value]
    return value


def clear(writer: Writer) -> None:
    """Delete every object of the kinds an example creates (namespaces stay: without the
    controller manager their deletion would never finish), at once (grace period 0)."""
    for kind in reversed(CREATE_ORDER[1:]):
        api_version = _API_VERSIONS[kind]
        for_namespaces = [None]
        if kind in NAMESPACED:
            listed = writer.must("GET", "/api/v1/namespaces")
            for_namespaces = [n["metadata"]["name"] for n in listed["items"]]
        for ns in for_namespaces:
            path = collection_path(api_version, kind, ns)
            status, answer = writer.request("DELETE", path + "?gracePeriodSeconds=0")
            if status not in (200, 404):
                raise RuntimeError(f"delete {kind} in {ns}: {status} {(answer or {}).get('message')}")


_API_VERSIONS = {
    "PriorityClass": "scheduling.k8s.io/v1",
    "DeviceClass": "resource.k8s.io/v1",
    "Node": "v1",
    "ResourceSlice": "resource.k8s.io/v1",
    "DeviceTaintRule": "resource.k8s.io/v1",
    "ResourceClaimTemplate": "resource.k8s.io/v1",
    "PodGroup": "scheduling.k8s.io/v1beta1",
    "Workload": "scheduling.k8s.io/v1beta1",
    "CompositePodGroup": "scheduling.k8s.io/v1alpha3",
    "Pod": "v1",
    "ResourceClaim": "resource.k8s.io/v1",
}

__all__ = ["TestServer", "Writer", "clear", "documents", "load_example", "start"]
