"""A real kube-apiserver for the live-cluster tests: the `apiserver` oracle (Kubernetes' released
modules on an embedded etcd, draopt/crosscheck/oracles/apiserver) started as a child process,
and the writes that load a bundled example into it as `kubectl create` would.

The writes go through the standard library (not the `kubernetes` client that draopt's reader
uses), so the reader is checked against an independent writer. The server's kubeconfig has two
contexts: `admin` (the current one, group system:masters) and `nobody` (RBAC grants it nothing).
"""

from __future__ import annotations

import base64
import datetime
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

# Beta APIs are off by default, and so is GenericWorkload (beta in 1.37), which serves
# scheduling.k8s.io/v1beta1 PodGroups and Workloads; the other gates keep the release's defaults.
DEFAULT_SERVER_ARGS = ("--runtime-config=api/beta=true", "--feature-gates=GenericWorkload=true")
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
                self.process.wait(timeout=3)  # etcd's graceful stop can take longer: no need
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

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", content_type)
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.tls, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def must(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        status, answer = self.request(method, path, body, content_type)
        if not 200 <= status <= 299:
            raise RuntimeError(f"{method} {path}: {status} {(answer or {}).get('message')}")
        return answer


def collection_path(api_version: str, kind: str, namespace: str | None) -> str:
    prefix = "/api/" if "/" not in api_version else "/apis/"
    where = f"/namespaces/{namespace}" if namespace and kind in NAMESPACED else ""
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    return f"{prefix}{api_version}{where}/{plural}"


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
    by_kind["Pod"] = _pods_in_queue_time_order(by_kind["Pod"])
    uids: dict[str, str] = {}
    previous: tuple[str, float] | None = None  # the last pending pod: (its timestamp, the server's)
    for kind in CREATE_ORDER:
        for obj in by_kind[kind]:
            stamp = _pending_stamp(obj)
            if stamp is not None and previous is not None and stamp != previous[0]:
                # the server stamps creation to the second: a later pod gets a later second
                time.sleep(max(0.0, previous[1] + 1.0 - time.time()))
            created = _create(writer, _with_uids(obj, uids), uids)
            if stamp is not None:
                previous = (stamp, _epoch(created["metadata"]["creationTimestamp"]))


def _pending_stamp(obj: dict[str, Any]) -> str | None:
    """A pending pod's creationTimestamp ("" without one); None for any other object."""
    if obj["kind"] != "Pod" or (obj.get("spec") or {}).get("nodeName"):
        return None
    return str((obj.get("metadata") or {}).get("creationTimestamp") or "")


def _pods_in_queue_time_order(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Running pods first, then the pending ones by creationTimestamp (the queue's order after
    priority; ties keep the file's order, and the server breaks them by name as draopt does)."""
    running = [p for p in pods if _pending_stamp(p) is None]
    pending = [p for p in pods if _pending_stamp(p) is not None]
    return running + sorted(pending, key=lambda p: _pending_stamp(p) or "")


def _epoch(stamp: str) -> float:
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def _create(writer: Writer, obj: dict[str, Any], uids: dict[str, str]) -> dict[str, Any]:
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
    if obj["kind"] == "Node" and created["spec"].get("taints") != (obj.get("spec") or {}).get("taints"):
        # TaintNodesByCondition gives a new Node the not-ready taint, which the node lifecycle
        # controller takes off once the kubelet reports Ready: the example's nodes are ready ones.
        created["spec"]["taints"] = (obj.get("spec") or {}).get("taints")
        created = writer.must("PUT", f"{path}/{meta['name']}", created)
    if obj.get("status"):
        created["status"] = obj["status"]
        created = writer.must("PUT", f"{path}/{meta['name']}/status", created)
    return created


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
    """Delete every object of the kinds an example creates, at once (grace period 0; the
    finalizers that controllers would take off, PodGroupProtection's, taken off here). Namespaces
    stay: without the controller manager their deletion would never finish."""
    for kind in reversed(CREATE_ORDER[1:]):
        path = collection_path(_API_VERSIONS[kind], kind, None)  # every namespace
        status, listed = writer.request("GET", path)
        if status == 404:  # not served
            continue
        for item in (listed or {}).get("items") or []:
            meta = item["metadata"]
            if kind == "PriorityClass" and meta["name"].startswith("system-"):
                continue  # the server's own (system-cluster-critical, system-node-critical)
            own = collection_path(_API_VERSIONS[kind], kind, meta.get("namespace")) + "/" + meta["name"]
            if meta.get("finalizers"):
                patch = {"metadata": {"finalizers": None}}
                writer.must("PATCH", own, patch, content_type="application/merge-patch+json")
            status, answer = writer.request("DELETE", own + "?gracePeriodSeconds=0")
            if status not in (200, 202, 404):
                raise RuntimeError(f"delete {kind} {meta['name']}: {status} {(answer or {}).get('message')}")


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
