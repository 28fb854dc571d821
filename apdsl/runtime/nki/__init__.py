"""The NKI instructions (SPEC section 11) and the engines' state."""
