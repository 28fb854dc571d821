"""The REPL's input highlighting is readable on dark and light terminals: every colour the
prompt draws a token of `.apk` source in has a WCAG contrast of at least 3 against black and
against white, also after a 256-colour terminal rounds it to its palette."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from apdsl.surfaces import repl
from apdsl.surfaces.lexer import ApkLexer
from apdsl.surfaces.session import Session

ROOT = Path(__file__).resolve().parent.parent
MIN_CONTRAST = 3.0  # WCAG's minimum for large text and UI components


def _luminance(rgb: tuple[int, int, int]) -> float:
    def channel(c: int) -> float:
        x = c / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
    r, g, b = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def xterm_256(index: int) -> tuple[int, int, int]:
    """The RGB of an xterm 256-colour palette entry (16-255; the cube and the grey ramp)."""
    if index >= 232:
        v = 8 + 10 * (index - 232)
        return (v, v, v)
    i = index - 16
    steps = (0, 95, 135, 175, 215, 255)
    return (steps[i // 36], steps[i // 6 % 6], steps[i % 6])


def test_contrast_formula_matches_wcag_reference_values() -> None:
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((0x77, 0x77, 0x77), (255, 255, 255)) == pytest.approx(4.48, abs=0.01)
    assert xterm_256(16) == (0, 0, 0) and xterm_256(231) == (255, 255, 255)
    assert xterm_256(18) == (0, 0, 0x87)  # #000087: what the old name colour became


def _token_classes() -> set[str]:
    """Every token type the lexer gives the shipped examples and stdlib, as the style class
    prompt_toolkit's PygmentsLexer looks up."""
    lexer = ApkLexer()
    seen: set[str] = set()
    files = [*(ROOT / "examples").glob("*.apk"), *(ROOT / "stdlib").glob("*.apk")]
    assert files
    for path in files:
        for token, _ in lexer.get_tokens(path.read_text(encoding="utf-8")):
            seen.add("pygments." + ".".join(token).lower() if tuple(token) else "pygments")
    return seen


def _prompt_style():
    from prompt_toolkit.history import InMemoryHistory
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    session = Session(io.StringIO(), io.StringIO())
    with create_pipe_input() as pipe:
        prompt = repl.make_prompt(session, input=pipe, output=DummyOutput(),
                                  history=InMemoryHistory())
        return prompt.app._merged_style  # what the application really draws with


def test_every_highlighted_token_is_readable_on_black_and_white() -> None:
    from prompt_toolkit.output.vt100 import _256_colors
    style = _prompt_style()
    classes = _token_classes()
    assert {"pygments.keyword", "pygments.name.variable", "pygments.name.builtin",
            "pygments.keyword.type", "pygments.name.constant"} <= classes
    coloured = 0
    for cls in sorted(classes):
        attrs = style.get_attrs_for_style_str(f"class:{cls}")
        assert not attrs.bgcolor, f"{cls} sets a background ({attrs.bgcolor})"
        if not attrs.color or attrs.color == "default":
            continue  # the terminal's own foreground: readable on its own background
        assert not attrs.color.startswith("ansi"), (cls, attrs.color)
        rgb = tuple(int(attrs.color[i:i + 2], 16) for i in (0, 2, 4))
        rounded = xterm_256(_256_colors[rgb])
        for shown in (rgb, rounded):
            for page in ((0, 0, 0), (255, 255, 255)):
                assert contrast(shown, page) >= MIN_CONTRAST, \
                    f"{cls}: #{attrs.color} (as {shown}) on {page}"
        coloured += 1
    assert coloured >= 6  # highlighting still highlights


def test_declared_names_are_not_dark_blue() -> None:
    attrs = _prompt_style().get_attrs_for_style_str("class:pygments.name.variable")
    assert attrs.color in ("", None, "default") and attrs.bold
