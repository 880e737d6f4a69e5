"""Helpers of this problem's harness."""
import torch


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def seeded(seed: int) -> torch.Generator:
    g = torch.Generator(device=device())
    g.manual_seed(seed)
    return g
