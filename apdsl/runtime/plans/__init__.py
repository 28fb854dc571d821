"""Plans: what a call checked once, kept for the next call on the same views."""
