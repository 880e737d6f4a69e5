import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void conv3x3_sig_scale(const float* xp, const float* w, const float* b, float* y,
                                  int N, int C, int K, int H, int W, float scale) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * K * H * W) return;
    int ow = idx % W, oh = (idx / W) % H, k = (idx / (W * H)) % K, n = idx / (W * H * K);
    int Hp = H + 2, Wp = W + 2;
    float acc = b[k];
    for (int c = 0; c < C; ++c)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                acc += xp[((n * C + c) * Hp + oh + i) * Wp + ow + j] * w[((k * C + c) * 3 + i) * 3 + j];
    y[idx] = scale / (1.0f + expf(-acc));
}
torch::Tensor run(torch::Tensor xp, torch::Tensor w, torch::Tensor b, double scale) {
    int N = xp.size(0), C = xp.size(1), H = xp.size(2) - 2, W = xp.size(3) - 2, K = w.size(0);
    auto y = torch::empty({N, K, H, W}, xp.options());
    int total = N * K * H * W;
    conv3x3_sig_scale<<<(total + 255) / 256, 256>>>(xp.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                    y.data_ptr<float>(), N, C, K, H, W, (float)scale);
    return y;
}
"""
ext = load_inline(name="conv_sig_pad", cpp_sources="torch::Tensor run(torch::Tensor xp, torch::Tensor w, torch::Tensor b, double scale);",
                  cuda_sources=src, functions=["run"])


class ModelNew(nn.Module):
    """Padding, contiguity and views are glue around a custom direct convolution."""

    def __init__(self, in_channels, out_channels, kernel_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.scale = scale

    def forward(self, x):
        xp = F.pad(x, (1, 1, 1, 1)).contiguous()
        w = self.conv.weight.contiguous()
        y = ext.run(xp, w, self.conv.bias, self.scale)
        return y.view(x.shape[0], -1, x.shape[2], x.shape[3])
