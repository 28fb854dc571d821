"""What the semantics asks of the program running it, as named interfaces.

Three hosts run the shared builtins (`builtins.make_builtins`) and the `nl` functions: the
`.apk` interpreter (`semantics.interpreter.Interpreter`), a Python kernel's call
(`apdsl.nki.host.Host`) and a pyasc kernel's call (`apdsl.asc`, which runs on that same NKI
host class).  `Host` is what all of them offer; the others are what one part of the
semantics needs beyond it, and only the interpreter offers them:

- `Files`: `load`/`save` of `.npy` files (`.apk` builtins only: Python code has NumPy);
- `Launcher`: calling a kernel once per program or core of a launch (`semantics.spmd`);
- `Compiler`: what the call-site specialiser (`semantics.callsites`) reads while compiling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import weakref

    from ..errors import Span
    from ..syntax import ast
    from ..tensor.machine import Machine
    from ..tensor.registers import VirtualRegister
    from ..tensor.storage import Storage
    from ..tensor.view import Tensor
    from .frames import Closure
    from .launch import Launch, SharedHbm
    from .limits import Budget
    from .origins import Origins
    from .values import Function

__all__ = ["Host", "Files", "Launcher", "Compiler"]


class Host(Protocol):
    """The services every host gives the builtins: its simulated device (`machine`, in check
    mode for a dry run), the step budget, the launch under way, its builtins table, what
    check mode still knows (`known_values`: storage holding unchanged `-i` input values;
    `loaded_registers`: registers whose value it cannot know), allocation, issuing an
    instruction at the user's call, and printing."""

    machine: Machine
    budget: Budget
    launch: Launch
    builtins: dict[str, Any]
    known_values: weakref.WeakSet[Storage]
    loaded_registers: dict[int, VirtualRegister]

    @property
    def dry(self) -> bool:
        """Check mode: instructions validate and lower, move nothing."""
        ...

    @property
    def call_span(self) -> Span | None:
        """The user's call under way (what a builtin allocates is located there)."""
        ...

    def allocate(self, shape: Any, dtype: Any, buffer: Any, format: str = "ND", name: str = "",
                 span: Span | None = None) -> Tensor: ...

    def instruction(self, name: str, fn: Callable[..., Any], args: tuple,
                    kwargs: dict) -> Any: ...

    def print(self, *values: Any, sep: str = " ") -> None: ...


@runtime_checkable
class Files(Protocol):
    """`.npy` files read and written relative to the program (`load`, `save`)."""

    def load_npy(self, path: str) -> Any: ...

    def save_npy(self, value: Any, path: str) -> None: ...


class Launcher(Host, Protocol):
    """A host that launches kernels itself (`kernel[n](...)`, `--grid`): it keeps the calls
    under way, swaps the launch and the shared HBM outputs per program or core, and calls
    the kernel's function."""

    depth: int
    calls: list[tuple[str, Span]]
    shared_hbm: SharedHbm | None

    @property
    def call_span(self) -> Span | None: ...

    @call_span.setter
    def call_span(self, span: Span | None) -> None: ...

    def call_function(self, fn: Function, args: tuple, kwargs: dict,
                      bound: dict[str, Any] | None = None) -> Any: ...


class Compiler(Protocol):
    """What the call-site specialiser reads of the interpreter compiling a program: the
    builtins a name may be, the run-mode direct instruction calls, where views were made
    (`origins`), the step budget, check mode, and compiling a sub-expression."""

    builtins: dict[str, Any]
    budget: Budget
    direct_instructions: dict[Any, Callable[..., Any]]
    origins: Origins

    @property
    def dry(self) -> bool: ...

    def compile_expr(self, node: ast.Expr) -> Closure: ...
