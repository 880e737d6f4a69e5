#!/usr/bin/env bash
# One device call of the real-kernel validation, resumable: each call may be the last the
# device gives, so it does a part of both halves and keeps its state under $OUT (copy
# $OUT/rastate and $OUT/mstate back beside the set for the next call: RASTATE, MSTATE).
#
#   SET=path/realworld OUT=dir [RASTATE=dir] [MSTATE=dir] [RA_END=270] [END=585] bash bench/realworld_call.sh
#
# 1. Until RA_END s: the set's candidates whose entry class is `Model` (manifest column
#    candidate_class) re-audited with `--dynamic all` and started workers (HACKSCAN_PRESTART=3),
#    the ones named in FIRST (comma-separated ids) first. RA_END=0 skips it.
# 2. Until END s: the measurement with a torch.compile'd reference as third baseline, three
#    measurements in flight (timings one at a time): first the items whose earlier record
#    (PREV, a realworld_measure.py output) carries a flag that voids its speedup, and the
#    clean items it lacks; then every other item.
# The audits measured over: AUDITS, else the recorded 254-item run with its KernelBench-Hard
# re-audit laid over it (bench/results).
set -o pipefail
: "${SET:?the folder holding manifest.tsv and items/}" "${OUT:?where results go}"
HERE=$(cd "$(dirname "$0")" && pwd)
RES=$HERE/results
RA_END=${RA_END:-270}
END=${END:-585}
PREV=${PREV:-$RES/realworld-measure-2026-12-05.jsonl}
export HACKSCAN_CACHE=${HACKSCAN_CACHE:-/tmp/hcache}
mkdir -p "$HACKSCAN_CACHE" "$OUT/rastate" "$OUT/mstate" "$OUT/tmp-ra" "$OUT/tmp-m"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/gpu.txt" 2>&1
test -n "$RASTATE" && test -d "$RASTATE" && cp -r "$RASTATE/." "$OUT/rastate/"
test -n "$MSTATE" && test -d "$MSTATE" && cp -r "$MSTATE/." "$OUT/mstate/"
if test -z "$AUDITS"; then
  AUDITS=$OUT/audits.jsonl
  python3 - "$RES/realworld-2026-12-04-e.jsonl" "$RES/h200-2026-12-05-session9/kbhard-reaudit.jsonl" "$AUDITS" <<'PY'
import json, sys
recs = {}
for f in sys.argv[1:3]:
    for line in open(f):
        r = json.loads(line)
        if "id" in r:
            recs[r["id"]] = r
with open(sys.argv[3], "w") as fh:
    fh.writelines(json.dumps(r) + "\n" for r in recs.values())
PY
fi
MODEL_IDS=$(python3 - "$SET/manifest.tsv" <<'PY'
import csv, sys
print(",".join(r["id"] for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r.get("candidate_class") == "Model"))
PY
)
FIRST_M=$(python3 - "$PREV" "$AUDITS" <<'PY'
import json, sys
from hackscan.measure.assess import VOIDING_FLAGS
prev, voided = set(), []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "id" not in r:
        continue
    prev.add(r["id"])
    flags = [f.get("flag") if isinstance(f, dict) else f for f in (r.get("measure") or {}).get("flags") or []]
    if any(f in VOIDING_FLAGS for f in flags):
        voided.append(r["id"])
clean = [r["id"] for r in map(json.loads, open(sys.argv[2])) if r.get("verdict") == "clean"
         and r.get("label") != "hack" and r["id"] not in prev]
print(",".join(voided + clean))
PY
) || { echo "the ids to measure first could not be read (hackscan importable?)" >> "$OUT/gpu.txt"; exit 1; }
echo "model-class items: $(echo "$MODEL_IDS" | tr , "\n" | grep -c .); measured first: $FIRST_M" >> "$OUT/gpu.txt"
T=$((RA_END - SECONDS))
if test "$RA_END" -gt 0 && test $T -gt 60; then
  FIRST_ARG=""
  test -n "$FIRST" && FIRST_ARG="--first $FIRST"
  HACKSCAN_PRESTART=3 timeout $T python3 "$HERE/realworld_gpu.py" --set "$SET" --which all --only "$MODEL_IDS" $FIRST_ARG \
    --out "$OUT/tmp-ra" --state "$OUT/rastate" --jobs 10 --budget $((T-75)) --hard $((T-8)) >> "$OUT/reaudit-log.txt" 2>&1
fi
echo "reaudit done $SECONDS s" >> "$OUT/gpu.txt"
for pass in 1 2; do
  T=$((END - SECONDS))
  test $T -gt 90 || break
  ONLY=""
  test -f "$OUT/mstate/first-done" || ONLY="--only $FIRST_M"
  timeout $T python3 "$HERE/realworld_measure.py" --set "$SET" --audits "$AUDITS" --out "$OUT/tmp-m" --state "$OUT/mstate" $ONLY \
    --jobs 10 --concurrent 3 --measure-budget 1 --prestart 3 --compile --budget $((T-60)) --hard $((T-8)) \
    >> "$OUT/measure-log.txt" 2>&1
  touch "$OUT/mstate/first-done"
done
rm -rf "$OUT/tmp-ra" "$OUT/tmp-m"
echo "total $SECONDS s" >> "$OUT/gpu.txt"
