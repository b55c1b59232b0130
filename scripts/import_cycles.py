"""Fail when ragjudge's modules import each other in a cycle, lazy imports inside functions
included (``make lint``). import-linter's contracts check the layers and the cycles between the
modules of one package; this checks every pair too, a package and its own modules among them.

    python scripts/import_cycles.py      # exit 0, or 1 listing each cycle and the imports in it
"""

from __future__ import annotations

import sys

import grimp


def cycles(package: str = "ragjudge") -> list[list[str]]:
    """The groups of modules of ``package`` that import each other in a cycle (strongly
    connected components of grimp's import graph, more than one module each), sorted."""
    graph = grimp.build_graph(package, include_external_packages=False)
    edges = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(edges):  # Tarjan's algorithm, iterative
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(edges[child])))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def main() -> int:
    found = cycles()
    if not found:
        print("import cycles: none")
        return 0
    graph = grimp.build_graph("ragjudge", include_external_packages=False)
    for group in found:
        print("import cycle: " + ", ".join(group))
        for importer in group:
            for imported in group:
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    print(f"  {importer}:{detail['line_number']}: {detail['line_contents']}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
