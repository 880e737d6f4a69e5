#!/usr/bin/env bash
# The one short GPU check, for the minutes a device machine is lent: what every CPU test cannot
# decide, run on the card, each part's result written under $OUT as it ends (a machine taken back
# mid-run still returns the parts done).
#
#   1. the pairs kernel attribution decides (ATTR_ONLY), their GPU facts recorded under $OUT/facts
#      (the profiled call and the reference's op work: tests/test_gpu_facts.py replays them), then
#      the corpus pairs against their sidecars under --dynamic all --device cuda (ONLY: a regular
#      expression on the candidate's or the reference's path choosing pairs; ONLY=. for every pair,
#      which does not fit the budget; default the problems resized for the CPU suite on 2026-12-07,
#      whose GPU pairs were last run at the old sizes), bench/dynamic_corpus.py;
#   2. KernelBench's own check of the same pairs on the GPU (bench/corpus_naive.py, NAIVE_ONLY);
#   3. beside 1 and 2, a stratified sample of the real kernels of SET (never in the project; about
#      RW_SAMPLE=40 items by label and source, bench/realworld_gpu.py --sample) under the default
#      `--dynamic auto`, until RW_BUDGET (300) s;
#   4. the GPU-marked tests (`pytest -m gpu`);
#   5. a summary (summary.txt): mismatches, failures, the card and versions.
#
# Start it in the background from a copy, so that the next call's carried folders cannot change
# it mid-run, writing into a fixed folder (each device call has an $OUT of its own, and only the
# calling one's comes back), then collect that folder in calls of about 9 minutes:
#   mkdir -p /tmp/gpucheck /tmp/hs && cp -r . /tmp/hs && cd /tmp/hs && \
#     (SET=.rw/realworld OUT=/tmp/gpucheck nohup bash bench/gpu_check.sh > /tmp/gpucheck/run.log 2>&1 &)
#   later calls: cp -r /tmp/gpucheck/. $OUT/
# (.rw/realworld: a copy of the set in a folder .git/info/exclude ignores, carried.)
# Budgets (seconds, each part's own): ATTR_BUDGET 150 then CORPUS_BUDGET 200, RW_BUDGET 330 beside
# them, NAIVE_BUDGET 120, TEST_BUDGET 200; JOBS 6 and RW_JOBS 4 (16 cores), in all about 9 minutes.
. bench/device_env.sh
T0=$(date +%s)
stamp() { echo "$1: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"; }
mkdir -p "$OUT/corpus"
( RW_SAMPLE=${RW_SAMPLE:-40} RW_BUDGET=${RW_BUDGET:-330} RW_JOBS=${RW_JOBS:-4} realworld_auto; stamp realworld ) &
RW_PID=$!
# first the pairs whose verdict kernel attribution decides, their GPU facts recorded for CI
# (HACKSCAN_RECORD_FACTS: copy $OUT/facts into tests/fixtures/gpu_facts), then the rest of ONLY
HACKSCAN_RECORD_FACTS=$OUT/facts timeout ${ATTR_BUDGET:-150} python3 bench/dynamic_corpus.py --device cuda \
  --jobs ${JOBS:-6} --timeout 240 --out "$OUT/corpus-attr" --rows "$OUT/corpus/rows.jsonl" \
  --only "${ATTR_ONLY:-partial-fallback/|torch-fallback/|legit/.*(epilogue|gemv|torch_mean|cublas)}" > "$OUT/corpus-attr.log" 2>&1
stamp attribution
timeout ${CORPUS_BUDGET:-200} python3 bench/dynamic_corpus.py --device cuda --jobs ${JOBS:-6} --timeout 240 \
  --out "$OUT/corpus" --rows "$OUT/corpus/rows.jsonl" --only "${ONLY:-/(relu|gelu|softmax|scale_bias)\.py\$}" > "$OUT/corpus.log" 2>&1
stamp corpus
wait $RW_PID
if [ -n "$NAIVE_ONLY" ]; then
  timeout ${NAIVE_BUDGET:-120} python3 bench/corpus_naive.py --out "$OUT/naive" --device cuda --jobs ${NAIVE_JOBS:-8} \
    --only $NAIVE_ONLY > "$OUT/naive.log" 2>&1
  stamp naive
fi
timeout ${TEST_BUDGET:-200} python3 -m pytest -q -p no:cacheprovider -o addopts="" -rA --tb=short -m gpu tests \
  > "$OUT/pytest-gpu.log" 2>&1
stamp tests
{
  cat "$OUT/gpu.txt"
  echo "== corpus rows that differ from their sidecars"
  python3 - "$OUT/corpus/rows.jsonl" <<'EOF'
import json, sys
rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()] if __import__("os").path.exists(sys.argv[1]) else []
bad = [r for r in rows if not r.get("match")]
print(f"{len(rows)} pairs audited, {len(bad)} differ")
for r in bad:
    print(" ", r["file"], "expected", r["expected"], "got", r["got"], r.get("confirmed"), str(r.get("dynamic", {}).get("reason", ""))[:200])
EOF
  echo "== realworld sample (default mode)"; cat "$OUT/realworld-summary.json" 2>/dev/null
  echo "== naive"; tail -5 "$OUT/naive.log" 2>/dev/null
  echo "== pytest -m gpu"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest-gpu.log" | tail -30
} > "$OUT/summary.txt" 2>&1
stamp done
