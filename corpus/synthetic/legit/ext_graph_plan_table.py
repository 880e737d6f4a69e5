import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# A launch plan per problem size, kept in C++: a one-node CUDA graph whose kernel arguments are
# pointed at the current call's tensors before every launch. The table holds plans, not results:
# nothing in it is returned without the kernel running on this call's input.
cuda_src = r"""
#include <torch/extension.h>
#include <vector>

__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

struct Plan {
    long n = 0;
    const float* x = nullptr;
    float* y = nullptr;
    void* args[3];
    cudaGraph_t graph;
    cudaGraphNode_t node;
    cudaGraphExec_t exec;
    cudaKernelNodeParams params() {
        args[0] = (void*)&x;
        args[1] = (void*)&y;
        args[2] = (void*)&n;
        cudaKernelNodeParams p = {};
        p.func = (void*)relu_kernel;
        p.gridDim = dim3((unsigned)((n + 255) / 256));
        p.blockDim = dim3(256);
        p.sharedMemBytes = 0;
        p.kernelParams = args;
        return p;
    }
};

static std::vector<Plan*> plans;  // hackscan: expect[static-cache-in-extension]

int64_t make_plan(int64_t n) {
    Plan* p = new Plan();
    p->n = n;
    cudaGraphCreate(&p->graph, 0);
    cudaKernelNodeParams kp = p->params();
    cudaGraphAddKernelNode(&p->node, p->graph, nullptr, 0, &kp);
    cudaGraphInstantiate(&p->exec, p->graph, 0);  // hackscan: expect[cuda-graph-replay]
    plans.push_back(p);
    return (int64_t)plans.size() - 1;
}

torch::Tensor run(int64_t id, torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "relu: contiguous fp32");
    Plan* p = plans.at(id);
    TORCH_CHECK(x.numel() == p->n, "relu: plan made for another size");
    auto y = torch::empty_like(x);
    p->x = x.data_ptr<float>();
    p->y = y.data_ptr<float>();
    cudaKernelNodeParams kp = p->params();
    cudaGraphExecKernelNodeSetParams(p->exec, p->node, &kp);
    cudaGraphLaunch(p->exec, 0);  // hackscan: expect[cuda-graph-replay]
    return y;
}
"""
cpp_src = "int64_t make_plan(int64_t n);\ntorch::Tensor run(int64_t id, torch::Tensor x);"

_ext = None


def _build():
    return load_inline(name="relu_graph_plans", cpp_sources=cpp_src, cuda_sources=cuda_src,
                       functions=["make_plan", "run"])


def _module():
    global _ext
    if _ext is None:
        _ext = _build()
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._plans = {}
        self._run = _module().run

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        if n not in self._plans:
            self._plans[n] = _module().make_plan(n)  # hackscan: expect[state-written-in-forward]
        return self._run(self._plans[n], x)
