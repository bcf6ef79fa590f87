#!/usr/bin/env python3
"""Writes the small IOPDDL problems of test_solvers' anytime tests.

Deterministic (a fixed seed): a ring, a grid and a tree, three strategies
per node, liveness intervals over 20 steps, usages that differ by strategy,
and a usage limit a third of the way from the lightest peak to the
heaviest, so that it binds.  Run from tests/data to regenerate.
"""
import json
import random


def problem(name, n, edges, rnd):
    k = 3
    iv, costs, usages = [], [], []
    for _ in range(n):
        a = rnd.randrange(0, 16)
        iv.append([a, a + rnd.randrange(1, 6)])
        costs.append([rnd.randrange(0, 50) for _ in range(k)])
        usages.append([rnd.randrange(1, 20) for _ in range(k)])
    ecosts = []
    for _ in edges:
        ecosts.append([0 if s == t else rnd.randrange(5, 60)
                       for s in range(k) for t in range(k)])

    def peak(pick):
        load = [0] * 21
        for v in range(n):
            for t in range(iv[v][0], iv[v][1]):
                load[t] += pick(usages[v])
        return max(load)
    lo, hi = peak(min), peak(max)
    return {"problem": {
        "name": name,
        "nodes": {"intervals": iv, "costs": costs, "usages": usages},
        "edges": {"nodes": edges, "costs": ecosts},
        "usage_limit": lo + (hi - lo) // 3}}


def main():
    rnd = random.Random(20251123)
    ring = [[i, (i + 1) % 14] for i in range(14)]
    grid = []
    for r in range(3):
        for c in range(4):
            v = r * 4 + c
            if c < 3:
                grid.append([v, v + 1])
            if r < 2:
                grid.append([v, v + 4])
    tree = [[(i - 1) // 2, i] for i in range(1, 15)]
    for name, n, edges in (("anytime-ring", 14, ring),
                           ("anytime-grid", 12, grid),
                           ("anytime-tree", 15, tree)):
        with open(name + ".json", "w") as f:
            json.dump(problem(name, n, edges, rnd), f)
            f.write("\n")


if __name__ == "__main__":
    main()
