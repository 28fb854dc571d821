from .prefix_sum import prefix_sum

__all__ = ["prefix_sum"]
