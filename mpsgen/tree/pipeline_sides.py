"""Both sides of every custom kernel's pipeline names, read once per run from the tree's index:
what host code asks the shader library for, and what the .metal files register (``check``'s
MPS017/MPS018/MPS019 read them through :meth:`Facts.table`)."""

from __future__ import annotations

from bisect import bisect_left
from typing import NamedTuple

from mpsgen.tree.facts import Facts
from mpsgen.tree.index import Index
from mpsgen.tree.pipelines import host_name_sites, may_match, pipeline_requests


class PipelineSides:
    """Both sides of every custom kernel, read once per run: the requests of each host file
    (None for a file with inline shaders) and the registration sites of every .metal file (the
    bundled library holds them all, so a host may use any file's), looked up by literal head
    and expanded into names only where a request could name them: linear in the tree."""

    def __init__(self, index: Index):
        self.requests = {h.path: pipeline_requests(h.path, h.text) for h in index.host_files if h.path.endswith(".mm")}
        # (a tree whose host code asks for no pipeline by name has nothing to match: no site is read)
        asked = any(found for found in self.requests.values())
        self.sites_by_path = {m.path: host_name_sites(m.path, m.text) for m in index.metal_files} if asked else {}
        self._by_head: dict[str, list] = {}
        for sites in self.sites_by_path.values():
            for site in sites:
                if not site.head and site.params is not None:
                    # a macro's name pasted from its arguments ("PREFIX "reduction_" #T"): looked up
                    # by the names its instantiations make, when all of them start with a literal
                    names = site.names()
                    if names and all(n.parts[0] is not None for n in names):
                        for n in names:
                            self._by_head.setdefault(n.parts[0], []).append(OneName(n))
                        continue
                self._by_head.setdefault(site.head, []).append(site)
        self._heads = sorted(self._by_head)
        # requests by their literal head ("" when they start with a hole or are not read)
        self._heads_of_requests: dict[str, list] = {}
        for found in self.requests.values():
            for r in found or ():
                self._heads_of_requests.setdefault(r.parts[0] or "", []).append(r)

    def registered(self, parts) -> bool:
        """Whether some .metal registers a name ``parts`` (a request) may be."""
        head = parts[0] or ""
        candidates = [s for k in range(len(head)) for s in self._by_head.get(head[:k], ())]  # heads it begins with
        for k in range(bisect_left(self._heads, head), len(self._heads)):  # heads that begin with it
            if not self._heads[k].startswith(head):
                break
            candidates += self._by_head[self._heads[k]]
        return any(may_match(parts, n.parts) for site in candidates for n in site.names())

    def names_in(self, path: str) -> list:
        return [n for site in self.sites_by_path.get(path, ()) for n in site.names()]

    def requests_of(self, name, own_host: str | None) -> list:
        """The requests that may ask for ``name``: those whose literal head begins it; one
        starting with a hole, or not read, counts only in ``name``'s own host file."""
        text = "".join(p or "" for p in name.parts) if name.parts[0] is not None else ""
        candidates = []
        for length in range(len(text) + 1):
            candidates += self._heads_of_requests.get(text[:length], [])
        if name.parts[0] is None:  # a pattern starting with a hole: any request may be it
            candidates = [r for rs in self._heads_of_requests.values() for r in rs]
        return [
            r for r in candidates
            if may_match(r.parts, name.parts) and (r.parts[0] is not None or r.path == own_host)
        ]


class OneName(NamedTuple):
    """One registered name, looked up as a site of its own."""

    name: object  # a mpsgen.tree.pipelines.HostName

    def names(self) -> list:
        return [self.name]


def pipeline_sides(f: Facts) -> PipelineSides:
    return f.table("pipelines", PipelineSides)  # (one reading for both rules)
