"""Adapters for the tools hackscan's users already run: KernelBench's evaluator
(`hackscan.integrations.kernelbench`) and RL reward functions (`hackscan.integrations.rl`)."""
