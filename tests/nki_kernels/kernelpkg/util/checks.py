"""Argument checks of the library's kernels: a failure is the library's own exception."""


class KernelArgumentError(ValueError):
    pass


def require(condition, message):
    if not condition:
        raise KernelArgumentError(message)
