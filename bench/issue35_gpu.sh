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
set -o pipefail
: "${OUT:?where results go}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PATH=/tmp/site/bin:$PATH
export HACKSCAN_CACHE=${HACKSCAN_CACHE:-/tmp/hcache}
mkdir -p "$HACKSCAN_CACHE"
CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" \
  >> "$OUT/gpu.txt" 2>&1
T0=$(date +%s)
HACKSCAN_TEST_DEVICE=cuda timeout 240 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_issue35_gpu.py tests/test_issue35_worker.py \
  -rA 2>&1 | tail -60 > "$OUT/pytest.log"
echo "pytest: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"
T1=$(date +%s)
timeout 150 python3 bench/auto_cost.py --device cuda --repeat 2 --limit 4 --card "$CARD" --out "$OUT/auto-cost.json" \
  > "$OUT/auto-cost.log" 2>&1
echo "auto_cost: $(( $(date +%s) - T1 )) s" >> "$OUT/gpu.txt"
if test -n "$SET"; then
  B=${RW_BUDGET:-240}
  timeout $((B + 60)) python3 bench/realworld_gpu.py --set "$SET" --out "$OUT" --state /tmp/rwstate --which labelled \
    --mode auto --jobs 10 --budget "$B" --hard $((B + 40)) > "$OUT/realworld.log" 2>&1
  python3 bench/realworld_gpu.py --summarize "$OUT/realworld.jsonl" --set "$SET" > "$OUT/realworld-summary.json" 2>&1
fi
echo "total: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"
