"""docs/python.md is executed as written: every ```python block, in order, in one namespace,
with the freshly built `leocc` command first on PATH (the examples call `leocc eval`)."""

import contextlib
import io
import os
import re
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class DocsTest(unittest.TestCase):
    def test_python_md_runs(self):
        with open(os.path.join(REPO, "docs", "python.md"), encoding="utf-8") as f:
            text = f.read()
        blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
        self.assertGreaterEqual(len(blocks), 4)
        exe_dir = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release")
        if not os.path.exists(os.path.join(exe_dir, "leocc")):
            self.fail(f"{exe_dir}/leocc is not built: run `cargo build --release` (make test does)")
        old_path = os.environ["PATH"]
        os.environ["PATH"] = exe_dir + os.pathsep + old_path
        namespace = {}
        try:
            for i, block in enumerate(blocks, 1):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(block, f"docs/python.md block {i}", "exec"), namespace)
                self.assertTrue(out.getvalue().strip(), f"block {i} printed nothing")
        finally:
            os.environ["PATH"] = old_path


if __name__ == "__main__":
    unittest.main()
