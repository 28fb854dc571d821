"""The Python API explains itself: `dir(apdsl)` lists the public names, and every public function
and Tensor method has a docstring with an example that runs (as a doctest) and prints what it
shows."""

import doctest
import inspect
import pydoc

import numpy as np
import pytest

import apdsl

_DATA_NAMES = set(apdsl._DTYPE_NAMES) | set(apdsl._BUFFER_NAMES)


def _is_error_class(obj: object) -> bool:
    return inspect.isclass(obj) and issubclass(obj, BaseException)


def public_functions() -> list[tuple[str, object]]:
    """The package's public callables (classes included, errors and constants excluded) and the
    public functions of `apdsl.formats`."""
    out = []
    for name in apdsl.__all__:
        if name in _DATA_NAMES or name in apdsl._MODULES:
            continue
        obj = getattr(apdsl, name)
        if callable(obj) and not _is_error_class(obj):
            out.append((f"apdsl.{name}", obj))
    for name in ("convert", "canonical", "c0_for", "block_shape", "logical_shape",
                 "padded_shape", "storage_shape", "dim_modes"):
        out.append((f"apdsl.formats.{name}", getattr(apdsl.formats, name)))
    return out


def tensor_methods() -> list[tuple[str, object]]:
    out = []
    for name, member in vars(apdsl.Tensor).items():
        if (not name.startswith("_") or name == "__getitem__") and callable(member):
            out.append((f"Tensor.{name}", member))
    return out


ALL = public_functions() + tensor_methods()


def test_the_walk_finds_the_api():
    names = {n for n, _ in ALL}
    assert {"apdsl.ndarray", "apdsl.dma_copy", "apdsl.run", "apdsl.make_tensor_like",
            "Tensor.slice", "Tensor.rearrange", "Tensor.ap", "Tensor.__getitem__"} <= names
    assert len(tensor_methods()) >= 20


def test_dir_lists_the_public_names():
    listed = dir(apdsl)
    assert set(apdsl.__all__) <= set(listed)
    for name in ("ndarray", "dma_copy", "float32", "sbuf", "formats",
                 "ApdslError", "run", "check", "make_tensor_like", "options"):
        assert name in listed
    assert not [n for n in listed if n.startswith("_") and n != "__version__"]
    assert "import_module" not in listed and "Any" not in listed
    assert listed == sorted(listed)


@pytest.mark.parametrize("name,obj", ALL, ids=[n for n, _ in ALL])
def test_each_has_a_docstring_with_an_example(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert doc.strip(), f"{name} has no docstring"
    assert len(doc.splitlines()[0]) > 10, f"{name}: the summary line says nothing"
    assert ">>> " in doc, f"{name}: the docstring has no example"


@pytest.mark.parametrize("name,obj", ALL, ids=[n for n, _ in ALL])
def test_each_example_runs_and_prints_what_it_shows(name, obj):
    finder = doctest.DocTestFinder(recurse=False)
    tests = finder.find(obj, name, globs={"apdsl": apdsl, "np": np})
    assert tests and tests[0].examples, name
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t, out=lambda text: pytest.fail(f"{name}:\n{text}", pytrace=False))
    assert runner.summarize(verbose=False).failed == 0


def test_help_of_a_method_shows_its_signature_and_example():
    t = apdsl.ndarray((128, 64), "float32", "sbuf")
    text = pydoc.render_doc(t.slice, renderer=pydoc.plaintext)
    assert list(inspect.signature(t.slice).parameters) == ["dim", "start", "end", "step"]
    assert "slice(dim" in text and "step" in text.split("\n")[2]
    assert "Dimension `dim` cut to indices" in text
    assert ">>> " in text and "get_pattern()" in text


def test_tensor_attributes_say_what_they_are():
    # the attributes live in the view's core class (apdsl.tensor.view.core), the methods on Tensor
    members = {n: m for cls in reversed(apdsl.Tensor.__mro__) for n, m in vars(cls).items()}
    props = [n for n, m in members.items() if isinstance(m, property) and not n.startswith("_")]
    assert {"shape", "strides", "offset", "buffer", "name", "ndim", "size"} <= set(props)
    for name in props:
        doc = inspect.getdoc(getattr(apdsl.Tensor, name)) or ""
        assert len(doc) > 10, f"Tensor.{name} has no docstring"
