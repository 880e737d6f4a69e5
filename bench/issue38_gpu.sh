#!/usr/bin/env bash
# The corpus's GPU claims (issue 38) and the ghost-replay fix of issue 36, on one lent GPU, every
# result under $OUT as it finishes. Meant to run in the background from a copy of the tree outside
# the checkout (a call lasts 10 minutes at most; later calls collect what is done), e.g.:
#   cp -a . /tmp/w && cd /tmp/w && OUT=/tmp/o setsid nohup bash bench/issue38_gpu.sh > /tmp/o/script.log 2>&1 &
# and collected as one file (a call brings back 8 files at most): tar czf $OUT/all.tgz -C /tmp/o .
# Stages, most wanted first, each under its budget:
# (the issue-36 ghost-replay test that failed on the H100 passed on the H200 on 2026-12-06, run
# first by this script then; it is part of stage 3 now)
# 1. bench/corpus_naive.py: KernelBench's check on the GPU for every pair that runs only there
#    and every pair whose sidecar says the CPU cannot show its mechanism;
# 2. the dynamic audit of the same GPU pairs against their sidecars' verdicts (each row as it comes);
# 3. every test marked gpu (one line per test as it ends).
# The device image lacks tree-sitter, libcst and bubblewrap: their wheels travel in .whl (carry).
. bench/device_env.sh
T0=$(date +%s)
stamp() { echo "$1: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"; }
# NAIVE_ONLY: the pairs to check (relative to corpus/synthetic, space-separated) where a record
# already holds the others, e.g. those added or changed since it
timeout ${NAIVE_BUDGET:-540} python3 bench/corpus_naive.py --out "$OUT/naive" --device cuda --jobs ${NAIVE_JOBS:-12} \
  ${NAIVE_ONLY:+--only $NAIVE_ONLY} > "$OUT/naive.log" 2>&1
stamp naive
GPU_PAIRS=$(python3 - <<'PY'
import re
from pathlib import Path
from hackscan.corpus import corpus_files, parse_marks
print("|".join(re.escape(str(f.relative_to(Path("corpus/synthetic")))) for f in corpus_files(Path("corpus/synthetic"))
               if not parse_marks(f).sidecar.get("cpu")))
PY
)
timeout ${DYN_BUDGET:-480} python3 bench/dynamic_corpus.py --device cuda --jobs ${DYN_JOBS:-12} --timeout 300 \
  --only "$GPU_PAIRS" --out "$OUT/dyn" --rows "$OUT/dyn-rows.jsonl" > "$OUT/dyn.log" 2>&1
stamp dynamic
timeout ${TEST_BUDGET:-420} python3 -m pytest -v -p no:cacheprovider -o addopts="" -m gpu -rA --tb=short tests \
  > "$OUT/pytest-gpu.log" 2>&1
stamp tests
