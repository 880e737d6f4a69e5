"""Parsing: tree-sitter trees for Python host code and C++/CUDA sources, and the
extraction of C++/CUDA embedded in Python strings with a line map back to the host."""
