"""`import asc.X` of a pyasc module apdsl does not provide stops at APK660 naming it (still a
ModuleNotFoundError, so a `try: import ... except ImportError:` fallback keeps working); the
modules apdsl provides import as before.  Run in a child process: install() changes the
interpreter's module table."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_missing_asc_module_is_apk660_naming_it():
    code = textwrap.dedent("""
        import sys
        import apdsl.asc
        assert apdsl.asc.install()
        import asc.language, asc.lib.host, asc.runtime.launcher
        try:
            import asc.codegen
        except ImportError as e:
            assert isinstance(e, ModuleNotFoundError) and e.name == "asc.codegen", e
            assert e.code == "APK660" and "asc.codegen" in e.message, e
        else:
            raise AssertionError("asc.codegen imported")
        try:
            import asc.codegen
        except ImportError:
            fallback = True  # the usual fallback still works
        assert fallback
        try:  # a submodule of a module apdsl maps as a plain one
            from asc.language.core.dtype import KnownTypes
        except ImportError as e:
            assert e.code == "APK660" and e.name == "asc.language.core.dtype", e
        apdsl.asc.uninstall()
        assert not hasattr(sys.modules["apdsl.asc.language"], "__path__")
        try:
            import asc.codegen
        except ImportError as e:
            assert getattr(e, "code", None) is None, e  # no apdsl finder once uninstalled
        print("ok")
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
