# Re-typed from aws-neuron/nki-library at d2ad3a5 (NKI Lib 2026-04-13): src/nkilib_src/nkilib/core/utils/kernel_assert.py
# (Apache-2.0, Copyright Amazon.com, Inc. or its affiliates).  Only kernel_assert is kept.


def kernel_assert(condition: bool, error_text: str):
    assert condition, f"[INTERNAL_ERROR] [NCC_INKI016] Kernel validation exception: {error_text} - Please check the validation message and adjust kernel inputs accordingly"  # noqa: S101
