# Re-typed from aws-neuron/nki-library at d2ad3a5 (NKI Lib 2026-04-13): src/nkilib_src/nkilib/core/utils/kernel_helpers.py
# (Apache-2.0, Copyright Amazon.com, Inc. or its affiliates).  Only div_ceil and reduce, which
# the kernels here use, are kept (the module's other helpers need its common_types module).
from typing import List

from .kernel_assert import kernel_assert


def div_ceil(n, d):
    return (n + d - 1) // d


def reduce(op='mul', input: List = None, initial_value=None):
    kernel_assert(initial_value is not None, f"initial_value need to set")
    kernel_assert(input is not None, f"input need to be set")
    kernel_assert(op in ['mul', 'add', 'max', 'min'], f"only op {op} is supported")
    for value in input:
        if op == 'mul':
            initial_value = initial_value * value
        elif op == 'add':
            initial_value = initial_value + value
        elif op == 'min':
            initial_value = min(initial_value, value)
        elif op == 'max':
            initial_value = max(initial_value, value)
    return initial_value
