"""The claim constraints as Kubernetes' search keeps them while it runs (draopt.dra.reference):
matchAttribute and distinctAttribute, each device added as it is taken and removed on backtrack,
with the release's defects (the module docstring of draopt.dra.reference lists them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from draopt.dra.constraints import AttrValue, constraint_applies

if TYPE_CHECKING:
    from draopt.dra.inventory import DeviceEntry
    from draopt.dra.problem import RequestSpec


class SearchConstraint:
    """One claim constraint during a search (MatchConstraint, DistinctConstraint)."""

    def __init__(self, names: list[str], attribute: str, list_types: bool, defects: bool, values):
        self.names, self.attribute, self.list_types, self.defects = names, attribute, list_types, defects
        # callable (RequestSpec, DeviceEntry) -> the attribute normalised (list_types), or NO_ATTRIBUTE
        self.values = values
        self._applies: dict[tuple[int, int, int], bool] = {}

    def applies(self, req: RequestSpec) -> bool:
        got = self._applies.get(req.key)
        if got is None:
            got = self._applies[req.key] = constraint_applies(self.names, req.request_name, req.sub_name)
        return got

    def add(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        """Whether `dev`, taken for `req`, keeps the constraint (then it is held until remove)."""
        if self.names and not self.applies(req):
            return True
        v = self.values(req, dev)
        if v is NO_ATTRIBUTE:
            return False
        return self._take(req, v)

    def remove(self, req: RequestSpec, dev: DeviceEntry) -> None:
        """Undo the add of `dev` (backtracking, in reverse order)."""
        if self.names and not self.applies(req):
            return
        self._release(req)

    def _take(self, req: RequestSpec, v: AttrValue | None) -> bool:
        raise NotImplementedError  # MatchConstraint, DistinctConstraint

    def _release(self, req: RequestSpec) -> None:
        raise NotImplementedError


NO_ATTRIBUTE: Any = object()  # the device has no such attribute (unlike None: a value of unknown type)
UNSET: Any = object()  # (a cache's answer not worked out yet)


class MatchConstraint(SearchConstraint):
    def __init__(self, *a):
        super().__init__(*a)
        self.num = 0
        self.first: AttrValue | None = None  # scalar mode: first device's value
        self.intersection: AttrValue | None = None
        self.stack: list[AttrValue | None] = []

    def _take(self, req: RequestSpec, v: AttrValue | None) -> bool:
        if self.num == 0:
            if self.list_types:
                if v is None:
                    return False
                self.stack.append(self.intersection)
                self.intersection = v
            else:
                self.first = v  # may be None: unknown type still gets picked
            self.num = 1
            return True
        if self.list_types:
            s = v
            if (
                s is None
                or self.intersection is None
                or s[0] != self.intersection[0]
                or not (s[1] & self.intersection[1])
            ):
                return False
            self.stack.append(self.intersection)
            self.intersection = (s[0], s[1] & self.intersection[1])
        elif v is None or self.first is None or v != self.first:
            return False
        self.num += 1
        return True

    def _release(self, req: RequestSpec) -> None:
        self.num -= 1
        if self.list_types and not self.defects and self.stack:
            self.intersection = self.stack.pop()


class DistinctConstraint(SearchConstraint):
    def __init__(self, *a):
        super().__init__(*a)
        self.num = 0
        self.by_request: dict[str, AttrValue | None] = {}  # Kubernetes: one value per request name
        self.all: list[AttrValue | None] = []  # documented semantics: every device

    def _clashes(self, new: AttrValue | None, existing: list[AttrValue | None]) -> bool:
        for old in existing:
            if new is None:
                return True  # (a value of unknown type clashes, list types or not)
            if old is None:
                continue
            if new[0] == old[0] and (new[1] & old[1]):
                return True
        return False

    def _take(self, req: RequestSpec, v: AttrValue | None) -> bool:
        if self.num > 0:
            existing = list(self.by_request.values()) if self.defects else self.all
            if self._clashes(v, existing):
                return False
        self.by_request[req.request_name] = v
        self.all.append(v)
        self.num += 1
        return True

    def _release(self, req: RequestSpec) -> None:
        self.by_request.pop(req.request_name, None)
        self.all.pop()
        self.num -= 1
