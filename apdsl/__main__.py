from .surfaces.cli import console

console()
