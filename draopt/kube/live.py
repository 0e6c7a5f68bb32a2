"""Reading a live cluster: the kinds kube-scheduler sees, through the official `kubernetes`
Python client (the optional extra `draopt[live]`), with read-only calls only (discovery and
paginated lists), into one `kind: List` that draopt reads as it reads a dump.

The kinds are those draopt reads as objects (draopt.kube.loader.KINDS), each in the newest
apiVersion draopt accepts that the server serves; a kind the server does not serve (an API group
or version off, a feature gate off) is skipped with a note. Workload controllers are not read:
the pods they made are. Every failure (no client library, a bad kubeconfig, an unknown context,
an unreachable server, a refusal) is an InputError that names the context and the server.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from draopt.errors import InputError
from draopt.kube.loader import KINDS

# The order of the dump: the recipe's in docs/cluster-dump.md.
READ_ORDER = (
    "Node",
    "Namespace",
    "Pod",
    "PriorityClass",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceTaintRule",
    "PodGroup",
    "Workload",
    "CompositePodGroup",
)
PAGE_SIZE = 500  # objects per list call, as kubectl asks for (`--chunk-size`)
CONNECT_TIMEOUT = 10.0  # seconds to open a connection
READ_TIMEOUT = 120.0  # seconds for one page of a list
INSTALL_HINT = "reading a cluster needs the kubernetes Python client: pip install 'draopt[live]'"


class LiveReadError(InputError):
    """The cluster could not be read (exit 2)."""


@dataclass
class ClusterRead:
    """What was read: the objects (each with its apiVersion and kind) in READ_ORDER, the notes
    (kinds skipped), and where from."""

    context: str
    server: str
    items: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_list(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "List", "items": self.items}

    def summary(self) -> str:
        read = ", ".join(f"{n} {kind}" for kind, n in self.counts.items() if n)
        return f"read from context {self.context} ({self.server}): {read or 'no objects'}"


@dataclass(frozen=True)
class _Resource:
    kind: str
    api_version: str  # "v1", "resource.k8s.io/v1"
    plural: str

    def path(self) -> str:
        prefix = "/api/" if "/" not in self.api_version else "/apis/"
        return f"{prefix}{self.api_version}/{self.plural}"


def read_cluster(kubeconfig: str | None = None, context: str | None = None) -> ClusterRead:
    """Read every kind kube-scheduler sees from the cluster of `context` (default: the current
    context) in `kubeconfig` (default: $KUBECONFIG, else ~/.kube/config)."""
    api, name, server = _client(kubeconfig, context)
    reader = _Reader(api, name, server)
    out = ClusterRead(name, server)
    for kind in READ_ORDER:
        resource = reader.resource(kind)
        if resource is None:
            versions = ", ".join(KINDS[kind][1])
            out.notes.append(f"{kind} not served by the API server ({versions}): skipped")
            continue
        items = reader.objects(resource)
        out.items.extend(items)
        out.counts[kind] = len(items)
    return out


def dump_text(read: ClusterRead, fmt: str = "yaml") -> str:
    """The objects read as one List document: `-f` on it gives the same answer."""
    if fmt == "json":
        return json.dumps(read.as_list(), indent=1) + "\n"
    return yaml.safe_dump(read.as_list(), sort_keys=False)


def _client(kubeconfig: str | None, context: str | None) -> tuple[Any, str, str]:
    """(ApiClient, context name, server URL) from the kubeconfig, or LiveReadError."""
    try:
        from kubernetes import client, config
    except ImportError:
        raise LiveReadError(INSTALL_HINT) from None
    where = f"kubeconfig {kubeconfig}" if kubeconfig else "the kubeconfig ($KUBECONFIG or ~/.kube/config)"
    files = _kubeconfig_files(kubeconfig)
    names, current = _contexts(files)
    name = context or current
    if not name:
        raise LiveReadError(f"{where}: no current context; name one with --context ({', '.join(names)})")
    if name not in names:
        raise LiveReadError(f"{where}: no context {name!r} (contexts: {', '.join(names) or 'none'})")
    configuration = client.Configuration()
    try:
        config.load_kube_config(
            config_file=os.pathsep.join(files), context=name, client_configuration=configuration, persist_config=False
        )
    except _CONFIG_ERRORS + (config.ConfigException,) as e:
        raise LiveReadError(f"{where}, context {name}: {_first_line(e)}") from None
    configuration.retries = 1
    return client.ApiClient(configuration), name, str(configuration.host)


# What a malformed kubeconfig raises from the client's loader besides its ConfigException.
_CONFIG_ERRORS: tuple[type[BaseException], ...] = (
    yaml.YAMLError,
    OSError,
    ValueError,
    TypeError,
    AttributeError,
    KeyError,
)


def _kubeconfig_files(kubeconfig: str | None) -> list[str]:
    """kubectl's lookup: --kubeconfig, else the files of $KUBECONFIG (a path list) that exist,
    else ~/.kube/config."""
    if kubeconfig:
        if not os.path.isfile(kubeconfig):
            raise LiveReadError(f"kubeconfig {kubeconfig}: no such file")
        return [kubeconfig]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    found = [p for p in listed or [os.path.expanduser("~/.kube/config")] if os.path.isfile(p)]
    if not found:
        raise LiveReadError(
            "no kubeconfig: $KUBECONFIG names no file and ~/.kube/config does not exist (--kubeconfig FILE)"
        )
    return found


def _contexts(paths: list[str]) -> tuple[list[str], str | None]:
    """The context names of the kubeconfig files and the current context, merged as kubectl
    merges them (the first file to name a context or a current context wins)."""
    names: list[str] = []
    current = None
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f) or {}
        except (yaml.YAMLError, OSError, UnicodeDecodeError) as e:
            raise LiveReadError(f"cannot read kubeconfig {path}: {_first_line(e)}") from None
        if not isinstance(doc, dict):
            raise LiveReadError(f"kubeconfig {path}: not a kubeconfig (a mapping)")
        for entry in doc.get("contexts") or []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
        current = current or doc.get("current-context") or None
    return names, current


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


class _Reader:
    """Discovery and list calls, errors turned into LiveReadError naming the context and server."""

    def __init__(self, api: Any, context: str, server: str):
        self.api, self.context, self.server = api, context, server
        self.discovered: dict[str, dict[str, str] | None] = {}  # apiVersion -> kind -> plural

    def resource(self, kind: str) -> _Resource | None:
        """The kind in the first apiVersion draopt accepts that the server serves it in."""
        for api_version in KINDS[kind][1]:
            plural = (self._kinds(api_version) or {}).get(kind)
            if plural:
                return _Resource(kind, api_version, plural)
        return None

    def _kinds(self, api_version: str) -> dict[str, str] | None:
        if api_version not in self.discovered:
            path = ("/api/" if "/" not in api_version else "/apis/") + api_version
            found = self._get(path, missing_ok=True)
            resources = (found or {}).get("resources") or []
            self.discovered[api_version] = (
                None
                if found is None
                else {
                    r["kind"]: r["name"]
                    for r in resources
                    if "/" not in r.get("name", "/") and "list" in r.get("verbs", [])
                }
            )
        return self.discovered[api_version]

    def objects(self, resource: _Resource) -> list[dict[str, Any]]:
        """Every object of the resource, page by page, each with its apiVersion and kind (a list
        call leaves them out of its items)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = [("limit", PAGE_SIZE)] + ([("continue", token)] if token else [])
            page = self._get(resource.path(), query=query) or {}
            for item in page.get("items") or []:
                items.append({"apiVersion": resource.api_version, "kind": resource.kind, **item})
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return items

    def _get(self, path: str, query: list[tuple[str, Any]] | None = None, missing_ok: bool = False) -> Any:
        from urllib3.exceptions import HTTPError

        try:
            status, reason, body = _request(self.api, path, query or [])
        except (HTTPError, OSError) as e:
            raise LiveReadError(
                f"cannot reach the API server {self.server} (context {self.context}): {_reason(e)}"
            ) from None
        if missing_ok and status == 404:
            return None
        if not 200 <= status <= 299:
            raise LiveReadError(self._refused(path, status, reason, body))
        try:
            return json.loads(body)
        except ValueError:
            raise LiveReadError(f"GET {path} on {self.server} (context {self.context}): not JSON") from None

    def _refused(self, path: str, status: int, reason: str, body: Any) -> str:
        message = _status_message(body) or reason
        where = f"{self.server} (context {self.context})"
        if status == 401:
            return f"the API server {where} refused the credentials (401 Unauthorized): {message}"
        if status == 403:
            return (
                f"GET {path}: forbidden by the API server {where}: {message} (draopt needs list on the kinds it reads)"
            )
        return f"GET {path} on {where}: {status} {reason}: {message}"


def _request(api: Any, path: str, query: list[tuple[str, Any]]) -> tuple[int, str, str | bytes]:
    """One authenticated GET: (status, reason, body). Newer releases of the client build the
    request with param_serialize and return every status; the older ones raise ApiException."""
    headers = {"Accept": "application/json", **_token_header(api.configuration)}
    timeout = (CONNECT_TIMEOUT, READ_TIMEOUT)
    if hasattr(api, "param_serialize"):
        method, url, headers, body, post = api.param_serialize(
            "GET", path, query_params=query, header_params=headers, auth_settings=["BearerToken"]
        )
        response = api.call_api(
            method, url, header_params=headers, body=body, post_params=post, _request_timeout=timeout
        )
        return int(response.status), str(response.reason), response.read()
    from kubernetes.client.exceptions import ApiException

    try:
        response = api.call_api(
            path,
            "GET",
            query_params=query,
            header_params=headers,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )
    except ApiException as e:
        return int(e.status or 0), str(e.reason), e.body or b""
    return int(response.status), str(response.reason), response.data


def _token_header(configuration: Any) -> dict[str, str]:
    """The bearer token as a header where the client would not send it itself: some releases
    (36.0.0) keep a kubeconfig's token under api_key["authorization"] but send only
    api_key["BearerToken"], so their requests go out anonymous."""
    if configuration.auth_settings():
        return {}  # the client adds it (auth_settings=["BearerToken"])
    if configuration.refresh_api_key_hook is not None:  # an exec plugin's or an expired token
        configuration.refresh_api_key_hook(configuration)
    token = (configuration.api_key or {}).get("authorization")
    return {"Authorization": token} if token else {}


def _status_message(body: Any) -> str:
    """The message of the API server's Status, if the body is one."""
    try:
        return str(json.loads(body).get("message") or "")
    except (TypeError, ValueError, AttributeError):
        return ""


def _reason(error: BaseException) -> str:
    """The innermost cause of a connection failure (urllib3 wraps it in MaxRetryError)."""
    reason = getattr(error, "reason", None)
    return _first_line(reason if isinstance(reason, BaseException) else error)


__all__ = ["ClusterRead", "LiveReadError", "READ_ORDER", "dump_text", "read_cluster"]
