// Raw extension source: matmul on a private stream created once and never joined.
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void mm_kernel(const float* A, const float* B, float* C, int n) {
    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r < n && c < n) {
        float acc = 0.f;
        for (int k = 0; k < n; ++k) acc += A[r * n + k] * B[k * n + c];
        C[r * n + c] = acc;
    }
}

static cudaStream_t side = nullptr;

torch::Tensor mm(torch::Tensor A, torch::Tensor B) {
    if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);  // hackscan: expect[unjoined-side-stream]
    int n = A.size(0);
    auto C = torch::empty({n, n}, A.options());
    dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
    mm_kernel<<<grid, block, 0, side>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), n);  // hackscan: expect[unjoined-side-stream]
    return C;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("mm", &mm, "matmul");
}
