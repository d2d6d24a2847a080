#!/usr/bin/env python3
"""SDDMM v10's costs with and without a neighbour correction made from the 2026-11-28 and
2026-12-01 (call 4) patterns alone, judged on call A's 70 patterns; the two patterns call A shares
with call 4 are left out of the training. Run from the repository root, with numpy and the CLI
built (its explain gives each candidate's cost terms):

    python3 bench/results/2026-12-02-h200-sddmm-model-v11/unseen_judge_offline.py MODEL_V10.json
"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, "bench")
import refit_costs as rc  # noqa: E402

TRAINING = ["bench/results/2026-11-28-h200-model-alone/sddmm_f32.jsonl",
            "bench/results/2026-12-01-h200-spmm-model-v12/call4/sddmm_before.jsonl"]
JUDGED = "bench/results/2026-12-02-h200-sddmm-model-v11/callA/sddmm_train.jsonl"


def cases_of(path):
    records = rc.read_records(path)
    inputs = [(rc.matrix_input(r["matrix"], "../shared/matrices"), r["k"]) for r in records]
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        decisions = list(pool.map(lambda mk: rc.explain("build/sparsejit", "sddmm", *mk), inputs))
    return [rc.case_of(r, d, "cusparse") for r, d in zip(records, decisions)]


model = rc.read_model(sys.argv[1])
test = cases_of(JUDGED)
names = {c["matrix"] for c in test}
train = [c for path in TRAINING for c in cases_of(path) if c["matrix"] not in names]
print(f"training: {len({c['matrix'] for c in train})} patterns, judged: {len(names)} patterns")
print(rc.report("v10 alone (the cheapest under its costs)", test, [rc.cheapest(model["cost"], c) for c in test]))
for features in (rc.NEIGHBOUR_FEATURES, rc.neighbour_features("sddmm")):
    section = rc.neighbour_section(model["cost"], train, 9, 0.5, features)
    print(rc.report(f"v10 with the correction of 9, regret weight 0.5, by {', '.join(features)}", test,
                    [rc.cheapest(model["cost"], c, section) for c in test]))
