import torch
import torch.nn as nn


class Model(nn.Module):
    """fp8 (e4m3) operands, products in bf16, a bf16 result: the contract is fp8 inputs, made by a
    cast in get_inputs rather than a dtype= keyword."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return (A.to(torch.bfloat16) @ B.to(torch.bfloat16)).to(torch.bfloat16)


M = 128
K = 256
N = 128


def get_inputs():
    a = (torch.rand(M, K) * 4 - 2).to(torch.float8_e4m3fn)
    b = (torch.rand(K, N) * 4 - 2).to(torch.float8_e4m3fn)
    return [a, b]


def get_init_inputs():
    return []
