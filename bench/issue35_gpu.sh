#!/usr/bin/env bash
# Issue 35 on one lent GPU, one call, each result written under $OUT as it finishes:
#   1. the GPU tests of the issue (tests/test_issue35_gpu.py: a Triton launch that always raises
#      inside try/except is the guarded fallback it is, an honest one and a CUDA extension are
#      verified, no reference is unverified) and the worker's launch counting and refills
#      (tests/test_issue35_worker.py), on the GPU;
#   2. bench/auto_cost.py on the GPU: what the default `auto` costs per candidate now that it runs
#      the core probes on every submission, against the old suspects-only `auto` and `all`;
#   3. the labelled real kernels (SET, never in the project) under the default `--dynamic auto`,
#      until RW_BUDGET seconds: are honest kernels `clean [verified]`, and how many `unverified`?
#
#   SET=.rw/realworld OUT=dir [RW_BUDGET=240] bash bench/issue35_gpu.sh
# The device image lacks tree-sitter, libcst and bubblewrap: their wheels travel in .whl (carry).
. bench/device_env.sh
T0=$(date +%s)
HACKSCAN_TEST_DEVICE=cuda timeout 240 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_issue35_gpu.py tests/test_issue35_worker.py \
  -rA 2>&1 | tail -60 > "$OUT/pytest.log"
echo "pytest: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"
T1=$(date +%s)
timeout 150 python3 bench/auto_cost.py --device cuda --repeat 2 --limit 4 --card "$CARD" --out "$OUT/auto-cost.json" \
  > "$OUT/auto-cost.log" 2>&1
echo "auto_cost: $(( $(date +%s) - T1 )) s" >> "$OUT/gpu.txt"
realworld_auto
echo "total: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"
