#!/usr/bin/env bash
# The shortest useful GPU run of issue 38, for a session left with a few minutes of device time:
# KernelBench's check on the GPU pairs added or changed since the last record (NAIVE_ONLY, as in
# bench/issue38_gpu.sh), then the GPU-marked tests that cover what changed since, most wanted
# first (the CUDA bare-harness cases, honest kernels verified through the channel, the GPU draw
# of a large problem's sets, the GPU's unverified without a reference). Run in the foreground:
#   OUT=... NAIVE_ONLY="$(cat bench/results/h100-2026-12-07-session19/naive-only.txt)" bash bench/issue38_gpu_short.sh
. bench/device_env.sh
T0=$(date +%s)
stamp() { echo "$1: $(( $(date +%s) - T0 )) s" >> "$OUT/gpu.txt"; }
timeout ${NAIVE_BUDGET:-170} python3 bench/corpus_naive.py --out "$OUT/naive" --device cuda --jobs ${NAIVE_JOBS:-14} \
  ${NAIVE_ONLY:+--only $NAIVE_ONLY} > "$OUT/naive.log" 2>&1
stamp naive
timeout ${TEST_BUDGET:-190} python3 -m pytest -v -p no:cacheprovider -o addopts="" -rA --tb=short \
  "tests/test_hostile_bare.py::test_the_attack_reaches_its_target_unprotected[cuda_illegal_access]" \
  "tests/test_issue36_gpu.py::test_honest_kernels_are_verified_through_the_channel_with_no_tampering" \
  tests/test_device_draws.py::test_a_large_problems_sets_are_drawn_on_the_gpu_and_keep_its_domain \
  tests/test_issue35_gpu.py::test_no_reference_is_unverified_on_a_gpu_too \
  tests/test_issue35_gpu.py::test_a_cuda_extension_is_verified_on_a_gpu \
  "tests/test_hostile_bare.py::test_the_attack_reaches_its_target_unprotected[cuda_kernel_never_returns]" \
  > "$OUT/pytest-gpu.log" 2>&1
stamp tests
