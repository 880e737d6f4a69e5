// A raw extension source with its own binding: ReLU, vectorised, tail handled.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        y[i] = make_float4(fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f));
    }
}

__global__ void relu_tail(const float* x, float* y, long start, long n) {  // hackscan: ok[kernel-never-launched]
    long i = start + (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
    auto y = torch::empty_like(x);  // hackscan: ok[unwritten-empty-output]
    long n = x.numel();
    long n4 = n / 4;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0)
        relu_vec4<<<(n4 + 255) / 256, 256, 0, stream>>>((const float4*)x.data_ptr<float>(), (float4*)y.data_ptr<float>(), n4);  // hackscan: ok[unjoined-side-stream]
    if (n % 4)
        relu_tail<<<1, 4, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n);
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("relu", &relu, "ReLU (CUDA)");
}
