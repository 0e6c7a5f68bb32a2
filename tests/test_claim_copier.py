"""draopt.kube.models.clone: claims copied from the first of their kind are what validation makes."""

from __future__ import annotations

import json

from draopt.kube.models import ResourceClaim
from draopt.kube.models.clone import ClaimCopier, same_state

SPEC = ResourceClaim.model_validate(
    {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
).spec


def _meta(name: str, owner: dict, **meta) -> dict:
    metadata = {"name": name, "namespace": "ns", "labels": {"a": "b"}, "annotations": {"x": "y"}, **meta}
    metadata["ownerReferences"] = [owner]
    return metadata


def _doc(name: str, owner: dict, **meta) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": _meta(name, owner, **meta),
        "spec": SPEC,
    }


def _owner(name: str, uid: str | None = None) -> dict:
    ref = {"apiVersion": "v1", "kind": "Pod", "name": name, "controller": True, "blockOwnerDeletion": True}
    if uid:
        ref["uid"] = uid
    return ref


def test_copies_are_what_validation_makes():
    copier = ClaimCopier()
    made = []
    for i in range(5):
        owner = _owner(f"p{i}", f"u{i}" if i % 2 else None)
        made.append(copier.claim("k", f"c{i}", owner, lambda i=i, owner=owner: _meta(f"c{i}", owner), SPEC))
    for i, claim in enumerate(made):
        owner = _owner(f"p{i}", f"u{i}" if i % 2 else None)
        assert same_state(claim, ResourceClaim.model_validate(_doc(f"c{i}", owner)))
        assert claim.to_k8s() == ResourceClaim.model_validate(_doc(f"c{i}", owner)).to_k8s()
        assert claim.spec is SPEC


def test_copies_share_no_containers():
    copier = ClaimCopier()
    claims = [
        copier.claim("k", f"c{i}", _owner(f"p{i}"), lambda i=i: _meta(f"c{i}", _owner(f"p{i}")), SPEC) for i in range(4)
    ]
    claims[3].metadata.labels["new"] = "1"
    claims[3].status.reserved_for.append(None)  # type: ignore[arg-type]
    assert all("new" not in c.metadata.labels and not c.status.reserved_for for c in claims[:3])


def test_nested_metadata_is_validated_not_copied():
    copier = ClaimCopier()
    nested = {"managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]}
    for i in range(4):
        claim = copier.claim("k", f"c{i}", _owner(f"p{i}"), lambda i=i: _meta(f"c{i}", _owner(f"p{i}"), **nested), SPEC)
        assert same_state(claim, ResourceClaim.model_validate(_doc(f"c{i}", _owner(f"p{i}"), **nested)))
    assert copier._first["k"][1] is False


def test_same_state_tells_types_apart():
    a = ResourceClaim.model_validate(_doc("c", _owner("p")))
    b = ResourceClaim.model_validate(_doc("c", _owner("p")))
    assert same_state(a, b)
    b.metadata.annotations["x"] = "z"
    assert not same_state(a, b)
    c = ResourceClaim.model_validate({**_doc("c", _owner("p")), "status": {}})
    assert not same_state(a, c)  # status given: fields set differ


def test_copies_dump_as_pydantic_does():
    copier = ClaimCopier()
    claims = [
        copier.claim("k", f"c{i}", _owner(f"p{i}", "u"), lambda i=i: _meta(f"c{i}", _owner(f"p{i}", "u")), SPEC)
        for i in range(4)
    ]
    assert copier.dump(claims[0]) is None and copier.dump(claims[1]) is None  # validated, not copies
    for c in claims[2:]:
        assert json.dumps(copier.dump(c)) == json.dumps(c.to_k8s())  # key order included
    assert copier.dump(claims[2]) is not copier.dump(claims[2])  # a new dict each time
    claims[3].spec = ResourceClaim().spec
    assert copier.dump(claims[3]) is None
    assert copier.dump(ResourceClaim.model_validate(_doc("c2", _owner("p2", "u")))) is None
