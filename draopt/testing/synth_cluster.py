"""Random small clusters for placement, one family per DRA feature, as Kubernetes documents.

`random_cluster(rng, family)` returns Nodes, Namespaces, DeviceClasses, ResourceSlices,
ResourceClaimTemplates, ResourceClaims, PodGroups and pending Pods (dicts, `resource.k8s.io/v1`)
that `draopt place` reads. Each family puts one feature in most draws, on several nodes, with
random attribute values, priorities 0/10/100 and gangs:

* ``gpu-nic``: GPUs and NICs (separate drivers) with random ``resource.kubernetes.io/pcieRoot``
  values, NICs on roots without a GPU and GPUs without a NIC, devices shuffled; pods ask a GPU
  and a NIC (or two GPUs and a NIC) with ``matchAttribute`` over the root, sometimes over only
  some of their requests;
* ``distinct``: ``distinctAttribute`` over numa, PCIe root or uuid, on 2-3 devices, sometimes
  together with a ``matchAttribute``;
* ``admin``: claims with ``adminAccess`` requests in a namespace labelled for it, among normal pods;
* ``shared``: ResourceClaims referenced by 2-3 pods each (sometimes one gang, sometimes on a
  network-attached device, its pods then sometimes pinned to different nodes), plus private
  claims from templates;
* ``lists``: claims with two ``firstAvailable`` requests of 2-3 sub-requests each;
* ``mig-gang``: partitionable GPUs (``sharedCounters`` / ``consumesCounters``), MIG-like
  profiles of several sizes, gangs of 2-4 pods;
* ``all``: ``allocationMode: All`` over small node-local pools, among ExactCount pods;
* ``mixed``: two or three of the above together, plus network-attached pools (``allNodes`` or a
  ``nodeSelector`` slice), node and device taints with tolerations, pod node selectors, awkward
  CEL selectors (empty lists, attributes missing on some devices), extended resources and
  device-derived node resources (``nodeAllocatableResources``, read when
  DRANodeAllocatableResources is on).

Everything is drawn from the given `random.Random`: a seed gives the same cluster every time.
draopt.testing.audit places such clusters with both policies and records what the property tests check.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from draopt.testing.synth_devices import ADMIN_LABEL, CXL, FPGA, GPU, NIC, PCIE, V1, ClusterDraw, _attr, _sel

BASE_FAMILIES = ("gpu-nic", "distinct", "admin", "shared", "lists", "mig-gang", "all")
FAMILIES = BASE_FAMILIES + ("mixed",)
MIXED_EXTRAS = ("network", "taints", "node-selectors", "awkward", "extended", "node-resources")


class _Gen(ClusterDraw):
    """One cluster being drawn, with the pending pods of its families."""

    # ------------------------------------------------------------------ pod kinds
    def kinds(self) -> list[tuple[float, Callable[[], list[dict[str, Any]]]]]:
        f = self.features
        out: list[tuple[float, Callable[[], list[dict[str, Any]]]]] = [(1.0, self.k_plain_gpu)]
        if "gpu-nic" in f:
            out += [
                (3.0, self.k_gpu_nic),
                (2.0, self.k_two_gpu_nic),
                (1.5, self.k_gpu_nic_partial),
                (1.0, self.k_plain_gpu),
            ]
        if "distinct" in f:
            out += [
                (2.5, self.k_distinct_count),
                (1.5, self.k_distinct_requests),
                (1.0, self.k_match_distinct),
                (0.5, self.k_plain_gpu),
            ]
        if "admin" in f:
            out += [(2.0, self.k_admin), (1.0, self.k_plain_gpu)]
            if self.admin_mig:
                out += [(2.0, self.k_mig_single)]
        if "shared" in f:
            out += [(3.0, self.k_shared)]
        if "lists" in f:
            out += [(3.0, self.k_two_lists), (1.0, self.k_one_list)]
        if "mig-gang" in f:
            out += [(2.0, self.k_mig_gang), (1.5, self.k_mig_single)]
        if "all" in f:
            out += [(2.5, self.k_all), (2.5, self.k_fpga_one)]
        if "network" in f:
            out += [(1.5, self.k_network)]
        if "extended" in f:
            out += [(0.7, self.k_extended)]
        if "awkward" in f:
            out += [(1.0, self.k_awkward)]
        return out

    def gpu_request(self, name: str, count: int = 1, *, sub: bool = False) -> dict[str, Any]:
        rng = self.rng
        e: dict[str, Any] = {"deviceClassName": self.gpu_class(), "allocationMode": "ExactCount", "count": count}
        if rng.random() < 0.25:
            e["selectors"] = [
                _sel(
                    rng.choice(
                        [
                            f'{_attr(GPU, "model")} != "t4"',
                            f'device.capacity["{GPU}"].memory.compareTo(quantity("40Gi")) >= 0',
                            f'"model" in device.attributes["{GPU}"] && {_attr(GPU, "model")} == "a100"',
                        ]
                    )
                )
            ]
        if "taints" in self.features and rng.random() < 0.4:
            e["tolerations"] = [{"key": "maintenance", "operator": "Exists"}]
        if sub:
            e.pop("allocationMode")
            return dict(e, name=name)
        return {"name": name, "exactly": e}

    def k_plain_gpu(self) -> list[dict[str, Any]]:
        n = self.rng.choice([1, 1, 2])
        t = self.template(f"gpu-{n}", [self.gpu_request("gpu", n)])
        return [self.pod([("gpu", "template", t)])]

    # gpu-nic
    def nic_request(self, name: str = "nic") -> dict[str, Any]:
        e: dict[str, Any] = {"deviceClassName": self.nic_class(), "allocationMode": "ExactCount", "count": 1}
        if self.rng.random() < 0.2:
            e["selectors"] = [_sel(f'{_attr(NIC, "speed")} >= 200')]
        return {"name": name, "exactly": e}

    def k_gpu_nic(self) -> list[dict[str, Any]]:
        t = self.template("gpu-nic", [self.gpu_request("gpu"), self.nic_request()], [{"matchAttribute": PCIE}])
        claims = [("net", "template", t)]
        if self.rng.random() < 0.2:
            claims.append(("scratch", "template", self.template("gpu-1", [self.gpu_request("gpu", 1)])))
        return [self.pod(claims)]

    def k_two_gpu_nic(self) -> list[dict[str, Any]]:
        t = self.template(
            "two-gpu-nic",
            [self.gpu_request("gpu", 2), self.nic_request()],
            [{"matchAttribute": PCIE, "requests": ["gpu", "nic"]}],
        )
        return [self.pod([("net", "template", t)])]

    def k_gpu_nic_partial(self) -> list[dict[str, Any]]:
        """The constraint covers the GPU and the NIC, not the extra GPU."""
        t = self.template(
            "gpu-nic-extra",
            [self.gpu_request("gpu"), self.nic_request(), self.gpu_request("extra")],
            [{"matchAttribute": PCIE, "requests": ["gpu", "nic"]}],
        )
        return [self.pod([("net", "template", t)])]

    # distinct
    def k_distinct_count(self) -> list[dict[str, Any]]:
        attr = self.rng.choice(["numa", "numa", PCIE, "uuid"])
        n = self.rng.choice([2, 2, 3])
        name = f"distinct-{attr.rsplit('/', 1)[-1].lower()}-{n}"
        full = attr if "/" in attr else f"{GPU}/{attr}"
        t = self.template(name, [self.gpu_request("gpu", n)], [{"distinctAttribute": full}])
        return [self.pod([("gpus", "template", t)])]

    def k_distinct_requests(self) -> list[dict[str, Any]]:
        attr = self.rng.choice([f"{GPU}/numa", PCIE])
        t = self.template(
            f"distinct-pair-{attr.rsplit('/', 1)[-1].lower()}",
            [self.gpu_request("a"), self.gpu_request("b", self.rng.choice([1, 2]))],
            [{"distinctAttribute": attr, "requests": ["a", "b"]}],
        )
        return [self.pod([("gpus", "template", t)])]

    def k_match_distinct(self) -> list[dict[str, Any]]:
        """Two constraints in one claim: same model, different NUMA nodes."""
        t = self.template(
            "same-model-distinct-numa",
            [self.gpu_request("gpu", 2)],
            [{"matchAttribute": f"{GPU}/model"}, {"distinctAttribute": f"{GPU}/numa"}],
        )
        return [self.pod([("gpus", "template", t)])]

    # admin
    def k_admin(self) -> list[dict[str, Any]]:
        rng = self.rng
        self.namespaces["ops"] = {ADMIN_LABEL: "true"}
        exact: dict[str, Any] = {"deviceClassName": self.gpu_class(), "adminAccess": True}
        if self.admin_mig and rng.random() < 0.6:
            self.mig_template()  # the class
            prof = rng.choice(["7g", "4g", "1g"])
            exact = {
                "deviceClassName": "mig",
                "adminAccess": True,
                "allocationMode": "ExactCount",
                "count": 1,
                "selectors": [_sel(f'{_attr(GPU, "profile")} == "{prof}"')],
            }
            t = self.template(f"monitor-mig-{prof}", [{"name": "watch", "exactly": exact}], ns="ops")
            return [self.pod([("monitor", "template", t)], ns="ops", small=True)]
        if rng.random() < 0.4:
            exact["allocationMode"] = "All"
            if rng.random() < 0.5:
                exact["selectors"] = [_sel(f'{_attr(GPU, "model")} == "a100"')]
            name = "monitor-all"
        else:
            exact["allocationMode"] = "ExactCount"
            exact["count"] = rng.choice([1, 2])
            name = f"monitor-{exact['count']}"
        requests = [{"name": "watch", "exactly": exact}]
        if rng.random() < 0.3:  # an admin request next to a normal one
            requests.append(self.gpu_request("work"))
            name += "-work"
        t = self.template(name, requests, ns="ops")
        return [self.pod([("monitor", "template", t)], ns="ops", small=True)]

    # shared
    def k_shared(self) -> list[dict[str, Any]]:
        rng = self.rng
        k = len(self.claims)
        requests = [self.gpu_request("gpu", rng.choice([1, 1, 2]))]
        network = "network" in self.features and rng.random() < 0.5
        if network:  # a network-attached device: the pods sharing it may run on different nodes
            requests = [{"name": "mem", "exactly": {"deviceClassName": "cxl", "count": 1}}]
        self.claims.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaim",
                "metadata": {"name": f"shared-{k}", "namespace": "ml", "uid": f"uid-shared-{k}"},
                "spec": {"devices": {"requests": requests}},
            }
        )
        pods = []
        for _ in range(rng.randint(2, 3)):
            claims = [("shared", "claim", f"shared-{k}")]
            if rng.random() < 0.4:
                claims.append(("own", "template", self.template("gpu-1", [self.gpu_request("gpu", 1)])))
            pods.append(self.pod(claims))
            if network and rng.random() < 0.5:
                pods[-1]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": rng.choice(self.node_names)}
        r = rng.random()
        if r < 0.35:
            self.pod_group(pods, rng.randint(2, len(pods)))
        elif r < 0.6:  # some users of the claim in a gang, the others not
            members = rng.sample(pods, rng.randint(1, len(pods) - 1))
            members.append(
                self.pod(
                    [("shared", "claim", f"shared-{k}")]
                    if rng.random() < 0.5
                    else [("own", "template", self.template("gpu-2", [self.gpu_request("gpu", 2)]))]
                )
            )
            pods.append(members[-1])
            self.pod_group(members, len(members))
        return pods

    # lists
    def k_two_lists(self) -> list[dict[str, Any]]:
        rng = self.rng
        subs_gpu = [
            dict(self.gpu_request("h100", 1, sub=True), selectors=[_sel(f'{_attr(GPU, "model")} == "h100"')]),
            dict(self.gpu_request("a100x2", 2, sub=True), selectors=[_sel(f'{_attr(GPU, "model")} == "a100"')]),
            self.gpu_request("any", rng.choice([1, 3]), sub=True),
        ]
        subs_gpu = subs_gpu[: rng.randint(2, 3)]
        if "gpu-nic" in self.features or "lists" in self.features:
            self.nic_class()
            second = [
                {"name": "fast", "deviceClassName": "nic", "selectors": [_sel(f'{_attr(NIC, "speed")} >= 400')]},
                {
                    "name": "mid",
                    "deviceClassName": "nic",
                    "count": 2,
                    "selectors": [_sel(f'{_attr(NIC, "speed")} >= 200')],
                },
                {"name": "any", "deviceClassName": "nic"},
            ]
        else:
            second = [
                dict(self.gpu_request("numa0", 1, sub=True), selectors=[_sel(f'{_attr(GPU, "numa")} == 0')]),
                self.gpu_request("other", 1, sub=True),
            ]
        second = second[: rng.randint(2, len(second))] if len(second) > 2 else second
        t = self.template(
            f"lists-{len(subs_gpu)}-{len(second)}",
            [{"name": "gpu", "firstAvailable": subs_gpu}, {"name": "io", "firstAvailable": second}],
        )
        return [self.pod([("devs", "template", t)])]

    def k_one_list(self) -> list[dict[str, Any]]:
        t = self.template(
            "list-big-or-two",
            [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        dict(
                            self.gpu_request("big", 1, sub=True),
                            selectors=[_sel(f'device.capacity["{GPU}"].memory.compareTo(quantity("80Gi")) >= 0')],
                        ),
                        self.gpu_request("two", 2, sub=True),
                    ],
                }
            ],
        )
        return [self.pod([("gpu", "template", t)])]

    # mig-gang
    def mig_template(self) -> str:
        rng = self.rng
        self.device_class("mig", f'device.driver == "{GPU}" && {_attr(GPU, "type")} == "mig"')
        if rng.random() < 0.6:
            prof = rng.choice(["1g", "1g", "2g", "3g", "4g", "7g"])
            return self.template(
                f"mig-{prof}",
                [
                    {
                        "name": "slice",
                        "exactly": {
                            "deviceClassName": "mig",
                            "selectors": [_sel(f'{_attr(GPU, "profile")} == "{prof}"')],
                        },
                    }
                ],
            )
        size = rng.choice([2, 3])
        return self.template(
            f"mig-ge{size}",
            [
                {
                    "name": "slice",
                    "exactly": {"deviceClassName": "mig", "selectors": [_sel(f'{_attr(GPU, "size")} >= {size}')]},
                }
            ],
        )

    def k_mig_gang(self) -> list[dict[str, Any]]:
        rng = self.rng
        same = rng.random() < 0.6
        t = self.mig_template()
        pods = [self.pod([("slice", "template", t if same else self.mig_template())]) for _ in range(rng.randint(2, 4))]
        self.pod_group(pods, rng.randint(2, len(pods)))
        return pods

    def k_mig_single(self) -> list[dict[str, Any]]:
        return [self.pod([("slice", "template", self.mig_template())])]

    # all
    def k_all(self) -> list[dict[str, Any]]:
        rng = self.rng
        self.device_class("fpga", f'device.driver == "{FPGA}"')
        exact: dict[str, Any] = {"deviceClassName": "fpga", "allocationMode": "All"}
        name = "fpga-all"
        if rng.random() < 0.6:
            m = rng.choice("xy")
            exact["selectors"] = [_sel(f'{_attr(FPGA, "model")} == "{m}"')]
            name += f"-{m}"
        requests = [{"name": "fpgas", "exactly": exact}]
        if rng.random() < 0.3:
            requests.append(self.gpu_request("gpu"))
            name += "-gpu"
        t = self.template(name, requests)
        return [self.pod([("fpgas", "template", t)])]

    def k_fpga_one(self) -> list[dict[str, Any]]:
        self.device_class("fpga", f'device.driver == "{FPGA}"')
        t = self.template("fpga-1", [{"name": "fpga", "exactly": {"deviceClassName": "fpga", "count": 1}}])
        return [self.pod([("fpga", "template", t)])]

    # mixed extras
    def k_network(self) -> list[dict[str, Any]]:
        rng = self.rng
        if rng.random() < 0.6:
            e: dict[str, Any] = {"deviceClassName": "cxl", "count": 1}
            if rng.random() < 0.5:
                e["capacity"] = {"requests": {"size": rng.choice(["16Gi", "20Gi", "48Gi"])}}
            if rng.random() < 0.3:
                e["selectors"] = [_sel(f'{_attr(CXL, "tier")} == "fast"')]
            requests = [{"name": "mem", "exactly": e}]
            if rng.random() < 0.4:
                requests.append(self.gpu_request("gpu"))
            t = self.template(f"cxl-{len(self.templates)}", requests)
        else:
            t = self.template(
                "zone-nic",
                [
                    {
                        "name": "nic",
                        "exactly": {
                            "deviceClassName": "nic",
                            "selectors": [_sel(f'device.attributes["{NIC}"].speed == 100')],
                        },
                    }
                ],
            )
        return [self.pod([("net", "template", t)])]

    def k_extended(self) -> list[dict[str, Any]]:
        """A GPU asked as an extended resource (a claim made by the scheduler)."""
        self.gpu_class()
        pod = self.pod([])
        c = pod["spec"]["containers"][0]["resources"]
        c["requests"]["deviceclass.resource.kubernetes.io/gpu"] = "1"
        c["limits"] = {"deviceclass.resource.kubernetes.io/gpu": "1"}
        return [pod]

    def k_awkward(self) -> list[dict[str, Any]]:
        rng = self.rng
        choice = rng.randrange(3)
        if choice == 0:  # an empty selector list
            e: dict[str, Any] = {"deviceClassName": self.gpu_class(), "selectors": [], "count": 1}
            name = "empty-selectors"
        elif choice == 1:  # guarded: devices without the attribute simply do not match
            e = {
                "deviceClassName": self.gpu_class(),
                "count": 1,
                "selectors": [
                    _sel(f'"numa" in device.attributes["{GPU}"] && {_attr(GPU, "numa")} == {rng.randrange(2)}')
                ],
            }
            name = f"guarded-numa-{e['selectors'][0]['cel']['expression'][-1]}"
        else:  # a string comparison with an awkward value (spaces, unicode)
            e = {
                "deviceClassName": self.gpu_class(),
                "count": 1,
                "selectors": [
                    _sel(f'!("model" in device.attributes["{GPU}"]) || {_attr(GPU, "model")} != "a100 \\u00e9 x"')
                ],
            }
            name = "awkward-value"
        t = self.template(name, [{"name": "gpu", "exactly": e}])
        return [self.pod([("gpu", "template", t)])]

    # ------------------------------------------------------------------ all together
    def run(self) -> list[dict[str, Any]]:
        rng = self.rng
        self.build_nodes()
        if "mixed" in self.features and rng.random() < 0.5:
            for name, value in (("high", 1000), ("low", 5)):
                self.priority_classes.append(
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                    }
                )
        for node in self.node_names:
            self.node_devices(node)
        if "network" in self.features:
            self.network_pools()
        if rng.random() < (0.5 if "mixed" in self.features else 0.25):
            self.in_use()
        if "taints" in self.features and rng.random() < 0.4:
            node = rng.choice(self.node_names)
            self.rules.append(
                {
                    "apiVersion": "resource.k8s.io/v1beta2",
                    "kind": "DeviceTaintRule",
                    "metadata": {"name": f"maintenance-{node}"},
                    "spec": {
                        "deviceSelector": {"driver": GPU, "pool": f"{node}-gpu"},
                        "taint": {
                            "key": "maintenance",
                            "value": "true",
                            "effect": rng.choice(["NoSchedule", "NoExecute"]),
                        },
                    },
                }
            )
        kinds = self.kinds()
        weights = [w for w, _ in kinds]
        makers = [k for _, k in kinds]
        while len(self.pods) < self.n_pods:
            rng.choices(makers, weights)[0]()
        self.add_gangs()
        self.add_scheduling_constraints()
        return self.assemble()

    def add_gangs(self) -> None:
        rng = self.rng
        loose = [p for p in self.pods if "schedulingGroup" not in p["spec"] and p["metadata"]["namespace"] == "ml"]
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            if len(loose) < 2:
                break
            members = rng.sample(loose, rng.randint(2, min(4, len(loose))))
            for p in members:
                loose.remove(p)
            self.pod_group(members, rng.randint(1, len(members)))

    def add_scheduling_constraints(self) -> None:
        rng = self.rng
        for p in self.pods:
            spec = p["spec"]
            if "node-selectors" in self.features and rng.random() < 0.25:
                spec["nodeSelector"] = {"zone": rng.choice("ab")}
            if self.tainted_nodes and rng.random() < 0.5:
                spec["tolerations"] = [
                    rng.choice(
                        [
                            {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
                            {"key": "dedicated", "operator": "Exists"},
                        ]
                    )
                ]

    def assemble(self) -> list[dict[str, Any]]:
        namespaces = [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": dict({"name": ns}, **({"labels": labels} if labels else {})),
            }
            for ns, labels in sorted(self.namespaces.items())
        ]
        return (
            namespaces
            + self.priority_classes
            + [self.classes[k] for k in sorted(self.classes)]
            + self.nodes
            + self.slices
            + self.rules
            + list(self.templates.values())
            + self.claims
            + self.groups
            + self.running
            + self.pods
        )


def random_cluster(
    rng: random.Random,
    family: str,
    *,
    nodes: tuple[int, int] = (1, 4),
    pods: tuple[int, int] = (2, 10),
    valid_groups: bool = True,
) -> list[dict[str, Any]]:
    """Kubernetes documents of one random cluster of `family` (one of FAMILIES); `nodes` and
    `pods` are inclusive ranges for the numbers of Nodes and pending Pods (shared claims and
    gangs may add up to 3 pods past the upper bound). `valid_groups`: a gang's pods share its
    priority (False: each keeps its own, as instances drawn before validatePodGroup were)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r} (known: {', '.join(FAMILIES)})")
    if family == "mixed":
        features = set(rng.sample(BASE_FAMILIES, rng.randint(2, 3)))
        features |= {x for x in MIXED_EXTRAS if rng.random() < 0.5}
        features.add("mixed")
    else:
        features = {family}
        if family == "shared" and rng.random() < 0.5:
            features.add("network")  # claims shared through network-attached devices
    gen = _Gen(rng, features, nodes, pods)
    gen.valid_groups = valid_groups
    return gen.run()


def features_for(seed: int):
    """The feature gates a seed's cluster is placed under: every third seed with every gate on
    (list-type attributes, node-allocatable resources of devices, compatibility groups, ...),
    the others with Kubernetes' defaults."""
    from draopt.kube.features import Features

    return Features.all_enabled() if seed % 3 == 0 else Features.from_gates()


# ---------------------------------------------------------------------- checking both policies
