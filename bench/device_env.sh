# Sourced by the device scripts (bench/issue35_gpu.sh, bench/issue36_gpu.sh): the wheels the
# device image lacks (tree-sitter, libcst, bubblewrap; carried in .whl) installed, the variables
# every run needs, and the card and versions written to $OUT/gpu.txt. Sets CARD; defines
# realworld_auto (the real kernels of SET under the default `auto`, until RW_BUDGET s: the labelled
# ones, or RW_SAMPLE items stratified by label and source, bench/realworld_gpu.py --sample).
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

realworld_auto() {
  test -n "$SET" || return 0
  local B=${RW_BUDGET:-240}
  timeout $((B + 60)) python3 bench/realworld_gpu.py --set "$SET" --out "$OUT" --state /tmp/rwstate \
    $( [ -n "$RW_SAMPLE" ] && echo "--which all --sample $RW_SAMPLE" || echo "--which labelled" ) \
    --mode auto --jobs ${RW_JOBS:-10} --budget "$B" --hard $((B + 40)) > "$OUT/realworld.log" 2>&1
  python3 bench/realworld_gpu.py --summarize "$OUT/realworld.jsonl" --set "$SET" > "$OUT/realworld-summary.json" 2>&1
}
