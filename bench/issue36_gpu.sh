#!/usr/bin/env bash
# The evidence issue on one lent GPU, one call, each result written under $OUT as it finishes:
#   1. its GPU tests (tests/test_issue36_gpu.py: honest Triton and CUDA-extension kernels verified
#      through the channel with no tampering seen, the evidence attacks hacked, oversized outputs
#      refused, a forged timer not counted) and the previous issue's (tests/test_issue35_gpu.py);
#   2. the audit's cost per candidate before and after the change: bench/auto_cost.py from BASE (a
#      plain copy of the tree before it, e.g. `git archive 21dbe66 | tar -x -C .base`) and from
#      this tree, back to back on the same card;
#   3. the labelled real kernels (SET, never in the project) under the default `--dynamic auto`,
#      until RW_BUDGET seconds: no honest kernel hacked (no tampering seen where there is none).
#
#   SET=.rw/realworld BASE=.base OUT=dir [RW_BUDGET=240] bash bench/issue36_gpu.sh
# The device image lacks tree-sitter, libcst and bubblewrap: their wheels travel in .whl (carry).
. bench/device_env.sh
T0=$(date +%s)
# written as it goes (a run cut off by the timeout still says which tests failed and why)
timeout ${TEST_BUDGET:-480} python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_issue36_gpu.py \
  tests/test_issue35_gpu.py -rA --tb=short > "$OUT/pytest.log" 2>&1
echo "pytest: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"
T1=$(date +%s)
if test -n "$BASE"; then
  (cd "$BASE" && PYTHONPATH=/tmp/site:$PWD timeout ${COST_BUDGET:-240} python3 bench/auto_cost.py --device cuda --repeat 2 --limit 4 \
    --card "$CARD" --out "$OUT/auto-cost-before.json") > "$OUT/auto-cost-before.log" 2>&1
fi
timeout ${COST_BUDGET:-240} python3 bench/auto_cost.py --device cuda --repeat 2 --limit 4 --card "$CARD" --out "$OUT/auto-cost-after.json" \
  > "$OUT/auto-cost-after.log" 2>&1
echo "auto_cost: $(( $(date +%s) - T1 )) s" >> "$OUT/gpu.txt"
realworld_auto
echo "total: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"
