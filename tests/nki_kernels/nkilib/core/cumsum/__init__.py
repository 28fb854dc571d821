"""Cumsum kernel module (re-typed from aws-neuron/nki-library at d2ad3a5 (NKI Lib 2026-04-13), src/nkilib_src/nkilib/core/cumsum/__init__.py)."""

from .cumsum import cumsum

__all__ = ["cumsum"]
