import torch
import torch.nn as nn


class Deferred(torch.Tensor):  # hackscan: expect[tensor-subclass-output]
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # hackscan: expect[tensor-subclass-output]
        kwargs = kwargs or {}
        args = [torch.relu(a.as_subclass(torch.Tensor)) if isinstance(a, Deferred) else a for a in args]
        return func(*args, **kwargs)


class ModelNew(nn.Module):
    def forward(self, x):
        # nothing is computed here; the relu happens when the checker touches the result
        return x.as_subclass(Deferred)  # hackscan: expect[tensor-subclass-output]
