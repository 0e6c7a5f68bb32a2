"""Shared pydantic base for Kubernetes objects.

Kubernetes JSON uses camelCase; Python code uses snake_case. Unknown fields are
kept (``extra="allow"``) and re-emitted by :func:`to_k8s`, never dropped; `draopt.kube.strict`
finds them. A model's ``k8s_fields`` lists the fields Kubernetes declares that draopt does
not read (they are not unknown).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel


class K8sModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=False,
        protected_namespaces=(),
    )

    def to_k8s(self) -> dict[str, Any]:
        """The object as Kubernetes JSON: the fields that were set (read or assigned), unknown
        ones included; defaults that were never set are not invented."""
        return self.model_dump(**K8S_DUMP)


# model_dump's arguments for Kubernetes JSON (to_k8s; placement's output dumps parts with them)
K8S_DUMP: dict[str, Any] = {"by_alias": True, "exclude_unset": True, "exclude_none": True, "mode": "json"}


class ObjectMeta(K8sModel):
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    generation: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    creation_timestamp: str | None = None

    k8s_fields: ClassVar[tuple[str, ...]] = (
        "generateName",
        "selfLink",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "ownerReferences",
        "finalizers",
        "managedFields",
    )


class TypedObject(K8sModel):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or "default"

    @property
    def ref(self) -> str:
        """`kind namespace/name` or `kind name`, as used in error messages."""
        if self.metadata.namespace is not None or self.kind in NAMESPACED_KINDS:
            return f"{self.kind} {self.namespace}/{self.name}"
        return f"{self.kind} {self.name}"


NAMESPACED_KINDS = {"ResourceClaim", "ResourceClaimTemplate", "Pod", "PodGroup"}


def _to_str(v: Any) -> Any:
    # YAML reads `value: 10` as a number; Kubernetes accepts it as the quantity "10".
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return repr(v) if isinstance(v, float) else str(v)
    return v


_VALID_QUANTITIES: set[str] = set()  # a dump repeats a few quantities thousands of times


def _check_quantity(v: str) -> str:
    if v in _VALID_QUANTITIES:
        return v
    from draopt.kube.quantity import Quantity

    Quantity.parse(v)  # raises QuantityError (a ValueError): pydantic names the field
    if len(_VALID_QUANTITIES) < 100_000:
        _VALID_QUANTITIES.add(v)
    return v


QuantityStr = Annotated[str, BeforeValidator(_to_str), AfterValidator(_check_quantity)]
