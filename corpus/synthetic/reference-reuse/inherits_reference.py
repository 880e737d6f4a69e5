import torch
from reference import Model  # hackscan: expect[subclasses-reference-model]


class ModelNew(Model):  # hackscan: expect[subclasses-reference-model]
    """Nothing of its own: the reference's forward runs."""

    pass
