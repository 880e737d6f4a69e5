"""hackscan: catch reward hacks in generated GPU kernels.

The static pass (`scan`) never imports torch; it parses the candidate (Python with
tree-sitter, embedded or raw CUDA/C++ with tree-sitter-cuda), builds shared facts and
a call/data-flow graph, and runs every rule found under the rules folder.
"""
from __future__ import annotations

from hackscan._version import __version__
from hackscan.api import audit, audit_many, scan, scan_paths
from hackscan.session import Session

__all__ = ["Session", "audit", "audit_many", "scan", "scan_paths", "__version__"]
