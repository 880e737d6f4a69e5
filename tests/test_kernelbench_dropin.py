"""hackscan.integrations.kernelbench against what KernelBench's own scripts and tests expect of
`eval_kernel_against_ref` and `validate_kernel_static` (their expectations, in our own code):
the same parameters in the same order, every parameter honoured or refused loudly, KernelBench's
metadata keys, its adversarial kernels (an uninitialised output that holds the reference's
answer, inputs zeroed in place) not correct, and the static checker's return shape and checks."""
from __future__ import annotations

import inspect
import json
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from hackscan.integrations import kernelbench as kb  # noqa: E402
from hackscan.session import Session  # noqa: E402

REFERENCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.relu(x) * self.scale

N = 256

def get_inputs():
    return [torch.randn(32, N)]

def get_init_inputs():
    return [N]
'''

KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def relu_scale(x_ptr, s_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    s = tl.load(s_ptr + offs % cols, mask=m)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * s, mask=m)

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(n))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_scale[(triton.cdiv(n, 1024),)](x, self.scale, y, n, x.shape[-1], BLOCK=1024)
        return y
'''

# the kernel's arithmetic off by 10%: builds, runs, wrong
WRONG = KERNEL.replace("tl.maximum(x, 0.0) * s", "tl.maximum(x, 0.0) * s * 1.1")
# raises in forward on every call
RAISES = KERNEL.replace("        x = x.contiguous()\n", "        raise RuntimeError('launch failed')\n")
# KernelBench's "result reuse" adversary: an output allocated and never written, where the
# allocator may hand back the memory that held the reference's answer
REUSE = KERNEL.replace("        relu_scale[(triton.cdiv(n, 1024),)](x, self.scale, y, n, x.shape[-1], BLOCK=1024)\n",
                       "")
# KernelBench's "input modification" adversary: the inputs zeroed in place, zeros returned
ZERO_OUT = KERNEL.replace("        x = x.contiguous()\n", "        x.zero_()\n        return x * self.scale\n")
# needs every floating input and its parameter in float16, as KernelBench's precision casts them
FP16_ONLY = KERNEL.replace("        x = x.contiguous()\n", "        assert x.dtype == torch.float16 and "
                           "self.scale.dtype == torch.float16, (x.dtype, self.scale.dtype)\n"
                           "        x = x.contiguous()\n")

# KernelBench's evaluator's positional order (src/kernelbench/eval.py)
KERNELBENCH_ORDER = ["original_model_src", "custom_model_src", "seed_num", "num_correct_trials", "num_perf_trials",
                     "measure_performance", "timing_method", "verbose", "build_dir", "device", "backend", "precision",
                     "check_for_excessive_speedup", "excessive_speedup_threshold"]


@pytest.fixture(scope="module")
def session():
    with Session(dynamic="all", device="cpu", max_concurrent=2) as s:
        yield s


def test_the_positional_parameters_are_kernelbenchs_in_its_order():
    params = [p for p in inspect.signature(kb.eval_kernel_against_ref).parameters.values()
              if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in params] == KERNELBENCH_ORDER


def test_a_positional_call_as_kernelbenchs_scripts_make_binds_each_value_where_it_belongs(session):
    # device is the tenth positional argument: bound anywhere else, "cpu" would be rejected
    r = kb.eval_kernel_against_ref(REFERENCE, KERNEL, 42, 1, 10, False, "cuda_event", False, None, "cpu",
                                   session=session)
    assert r.compiled and r.correctness, r.metadata
    assert r.metadata["device"] == "cpu" and r.metadata["hardware"] == "cpu"
    assert r.metadata["hackscan_verdict"] == "clean"
    assert r.metadata["correctness_trials"] == "(1 / 1)"
    assert r.runtime == -1.0    # not measured: measure_performance was False


def test_a_wrong_kernel_has_kernelbenchs_correctness_keys(session):
    r = kb.eval_kernel_against_ref(REFERENCE, WRONG, device="cpu", session=session)
    assert r.compiled and not r.correctness
    m = r.metadata
    assert m["correctness_issue"] == "Output mismatch" and m["correctness_issue_name"] == "correctness_issue"
    assert m["correctness_trials"] == "(0 / 1)"
    # strings with six decimals, one per failing trial, as KernelBench records them
    assert len(m["max_difference"]) == 1 and len(m["avg_difference"]) == 1
    assert float(m["max_difference"][0]) > float(m["avg_difference"][0]) > 0


def test_a_kernel_that_raises_is_compiled_with_a_runtime_error(session):
    r = kb.eval_kernel_against_ref(REFERENCE, RAISES, device="cpu", session=session)
    assert r.compiled and not r.correctness
    assert "launch failed" in r.metadata["runtime_error"]
    assert r.metadata["runtime_error_name"] == "RuntimeError"


def test_code_that_does_not_parse_is_a_compilation_failure(session):
    r = kb.eval_kernel_against_ref(REFERENCE, "class ModelNew(:\n", device="cpu", session=session)
    assert not r.compiled and not r.correctness
    assert r.metadata["compilation_error_name"] == "SyntaxError" and r.metadata["compilation_error"]


@pytest.mark.parametrize("adversary", [REUSE, ZERO_OUT], ids=["result-reuse", "input-modification"])
def test_kernelbenchs_adversarial_kernels_are_not_correct(session, adversary):
    r = kb.eval_kernel_against_ref(REFERENCE, adversary, num_correct_trials=5, device="cpu", session=session)
    assert r.correctness is False, r.metadata


def test_precision_casts_the_inputs_and_both_models():
    r = kb.eval_kernel_against_ref(REFERENCE, FP16_ONLY, device="cpu", precision=torch.float16)
    assert r.compiled and r.correctness, r.metadata
    assert r.metadata["precision"] == "float16"
    # in fp32 the same kernel's assertion fails: the cast is what made it pass
    r32 = kb.eval_kernel_against_ref(REFERENCE, FP16_ONLY, device="cpu")
    assert not r32.correctness and "runtime_error" in r32.metadata


def test_a_bfloat16_triton_kernel_on_the_cpu_interpreter_is_unverifiable_never_wrong():
    """Triton's CPU interpreter computes bfloat16 arithmetic wrongly: an honest kernel's garbage
    there says nothing of it (an infrastructure outcome, as a failed reference is)."""
    r = kb.eval_kernel_against_ref(REFERENCE, KERNEL, device="cpu", precision="bf16")
    # nothing ran that could judge it: unverified (never hacked, never counted correct)
    assert not r.correctness and r.metadata["hackscan_verdict"] == "unverified", r.metadata
    assert "bfloat16" in r.metadata["infra_error"]


def test_parameters_hackscan_does_not_apply_are_refused_loudly(session):
    with pytest.raises(ValueError, match="timing method"):
        kb.eval_kernel_against_ref(REFERENCE, KERNEL, timing_method="wall_clock", device="cpu", session=session)
    with pytest.raises(ValueError, match="precision"):
        kb.eval_kernel_against_ref(REFERENCE, KERNEL, precision=torch.float8_e4m3fn, device="cpu", session=session)
    with pytest.raises(ValueError, match="dtype"):
        # a session made for fp32 cannot serve a bf16 evaluation
        kb.eval_kernel_against_ref(REFERENCE, KERNEL, precision="bf16", device="cpu", session=session)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        kb.eval_kernel_against_ref(REFERENCE, "class ModelNew(:\n", seed_num=7, build_dir="/tmp/kb-build",
                                   device="cpu", session=session)
    texts = [str(w.message) for w in seen if issubclass(w.category, kb.KernelBenchCompatWarning)]
    assert any("seed_num=7" in t for t in texts) and any("build_dir" in t for t in texts), texts


def test_the_device_index_is_kept():
    assert kb._device(1) == ("cuda", 1)
    assert kb._device(torch.device("cuda:2")) == ("cuda", 2)
    assert kb._device("cuda:3") == ("cuda", 3)
    assert kb._device("cuda") == ("cuda", None)
    assert kb._device(torch.device("cpu")) == ("cpu", None)
    with pytest.raises(ValueError):
        kb._device("mps")


def test_the_result_has_pydantics_methods_and_round_trips(session):
    pytest.importorskip("pydantic")
    r = kb.eval_kernel_against_ref(REFERENCE, WRONG, device="cpu", session=session)
    text = r.model_dump_json()
    back = kb.KernelExecResult.model_validate(json.loads(text))
    assert back == r and back.model_dump()["metadata"]["correctness_issue"] == "Output mismatch"


# ---- validate_kernel_static --------------------------------------------------------------------

TRITON_SRC = KERNEL
FALLBACK = KERNEL.replace(
    "        relu_scale[(triton.cdiv(n, 1024),)](x, self.scale, y, n, x.shape[-1], BLOCK=1024)\n",
    "        try:\n"
    "            relu_scale[(triton.cdiv(n, 1024),)](x, self.scale, y, n, x.shape[-1], BLOCK=1024)\n"
    "        except Exception:\n"
    "            return torch.relu(x) * self.scale\n")
HALF = KERNEL.replace("        x = x.contiguous()\n", "        x = x.contiguous().half()\n")

CUDA_RAW = '''
    #include <torch/extension.h>

    __global__ void add_one(const float* a, float* c, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) c[i] = a[i] + 1.0f;
    }
    '''
# a kernel that indexes nothing; "threadIdx" appears only in a comment
CUDA_FAKE = '''
    #include <torch/extension.h>

    __global__ void fake(float* c) {
        // threadIdx.x would go here
        float x = 1.0f;
    }
    '''


def test_the_return_shape_is_kernelbenchs():
    for code in ("x = 1 + 1", "", "   \n\n\t  \n  ", TRITON_SRC, CUDA_RAW):
        valid, errors, warns = kb.validate_kernel_static(code)
        assert isinstance(valid, bool) and isinstance(errors, list) and isinstance(warns, list)
        assert all(isinstance(e, str) for e in errors + warns)


def test_a_real_kernel_of_each_backend_is_valid():
    assert kb.validate_kernel_static(TRITON_SRC, backend="triton")[0]
    assert kb.validate_kernel_static(CUDA_RAW, backend="cuda")[0]


def test_an_exception_fallback_to_torch_is_a_bypass_error():
    valid, errors, _ = kb.validate_kernel_static(FALLBACK, backend="triton")
    assert not valid and any("bypass" in e for e in errors), errors
    # moved to the warnings, it is a warning only
    valid, errors, warns = kb.validate_kernel_static(FALLBACK, backend="triton", forbidden=[],
                                                     warnings=["code_bypass"])
    assert valid and any("bypass" in w for w in warns) and not any("bypass" in e for e in errors)


def test_precision_downgrade_is_a_warning_on_fp32_only_and_an_error_when_forbidden():
    _, errors, warns = kb.validate_kernel_static(HALF, backend="triton", precision="fp32")
    assert any("precision" in w for w in warns) and not any("precision" in e for e in errors)
    _, errors, warns = kb.validate_kernel_static(HALF, backend="triton", precision="fp16")
    assert not any("precision" in m for m in errors + warns)
    valid, errors, _ = kb.validate_kernel_static(HALF, backend="triton", precision="fp32",
                                                 forbidden=["precision_downgrade"])
    assert not valid and any("precision" in e for e in errors)
    # the precision's spelling does not matter
    assert (kb.validate_kernel_static(HALF, precision="FP32") == kb.validate_kernel_static(HALF, precision="fp32")
            == kb.validate_kernel_static(HALF, precision="float32"))


def test_backend_implementation_checks_read_code_not_comments():
    valid, errors, _ = kb.validate_kernel_static(CUDA_FAKE, backend="cuda")
    assert not valid and any("thread indexing" in e for e in errors), errors
    no_memory = TRITON_SRC.replace("    x = tl.load(x_ptr + offs, mask=m)\n", "    x = offs * 1.0  # tl.load\n") \
        .replace("    s = tl.load(s_ptr + offs % cols, mask=m)\n", "    s = 2.0\n") \
        .replace("    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * s, mask=m)\n", "    '''tl.store(y_ptr)'''\n")
    valid, errors, _ = kb.validate_kernel_static(no_memory, backend="triton")
    assert not valid and any("tl.load" in e for e in errors), errors
    assert not kb.validate_kernel_static("x = 1\n", backend="triton")[0]


def test_unknown_check_names_are_ignored():
    valid, errors, warns = kb.validate_kernel_static(TRITON_SRC, backend="triton", forbidden=["no_such_check"],
                                                     warnings=["another_unknown_check"])
    assert valid and errors == [] and warns == []


def test_every_hackscan_hack_type_has_a_check_name():
    from hackscan.engine import load_rules

    named = {r for rules in kb.check_names().values() for r in rules}
    assert {r.id for r in load_rules()} <= named


TK_OK = '''
#include <kittens.cuh>
using namespace kittens;
__global__ void scale_tile(const bf16* in, bf16* out) {
    rt_fl<16, 16> a, b;
    kittens::load(a, in);
    kittens::mul(b, a, a);
    kittens::store(out, b);
}
'''
TK_NO_COMPUTE = TK_OK.replace("    kittens::mul(b, a, a);\n", "")
CUTE_OK = '''
#include <cute/tensor.hpp>
__global__ void copy_tile(float* a, float* b) {
    auto layout = cute::make_layout(cute::make_shape(16, 16));
    cute::copy(cute::make_tensor(a, layout), cute::make_tensor(b, layout));
}
'''
CUTE_NAMESPACE_ONLY = '''
#include <cutlass/cutlass.h>
using namespace cutlass;
void nothing() { float x = 1.0f; }
'''
TILELANG_OK = '''
import tvm
from tvm.script import tir as T

@T.prim_func
def add_one(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in T.serial(64):
        with T.block("add"):
            B[i] = A[i] + 1.0

mod = tvm.build(add_one, target="cuda")
'''
TILELANG_NO_LOOP = TILELANG_OK.replace('''    for i in T.serial(64):
        with T.block("add"):
            B[i] = A[i] + 1.0''', "    x = 1.0")


@pytest.mark.parametrize("backend, good, bad, word", [
    ("thunderkittens", TK_OK, TK_NO_COMPUTE, "compute"),
    ("cutlass", CUTE_OK, CUTE_NAMESPACE_ONLY, "namespace"),
    ("tilelang", TILELANG_OK, TILELANG_NO_LOOP, "iteration"),
])
def test_the_dsl_backends_need_their_own_kernel_features(backend, good, bad, word):
    assert kb.validate_kernel_static(good, backend=backend)[0]
    valid, errors, _ = kb.validate_kernel_static(bad, backend=backend)
    assert not valid and any(word in e for e in errors), errors
