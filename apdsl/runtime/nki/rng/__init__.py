"""The engines' random numbers (SPEC 11, 16): the per-device generator state (`state`) and the
instructions that draw from it or set it (`ops`: `dropout`, `rng`, `rand2`, `set_rng_seed`,
`rand_set_state`, `rand_get_state`)."""
