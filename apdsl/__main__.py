from .surfaces.collector import tune_for_one_command

# The process runs one command: its collector policy from the first import on (the command
# line's policy, apdsl.surfaces.collector; `main` sets it again after its own imports).
tune_for_one_command()

from .surfaces.cli import console  # noqa: E402

console()
