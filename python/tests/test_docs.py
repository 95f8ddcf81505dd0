"""The docs run as written.

docs/python.md: every ```python block, in order, in one namespace, with the freshly built `leocc`
command first on PATH (the examples call `leocc eval`).

README.md and docs/*.md: every fenced block carries a language tag (so no shell block hides
untagged), and every ```sh / ```bash / ```shell / ```console block either runs or is marked.
Usage lines (`leocc emu --trace T [--queue Q] -- CMD...`) are not shell: they are tagged
```synopsis and never run.
A runnable block is executed with `bash -euo pipefail` in a fresh temporary directory that looks
like the checkout for reading only (`traces` there is a symlink to the checkout's bundled
traces; the docs' commands run from the checkout), with the built `leocc` first on PATH
($CARGO_TARGET_DIR/release, else target/release) and a timeout; it must exit 0. (For
```console blocks only the lines starting with `$ ` run.) A block that cannot run here says
why on the line right before its fence (other HTML comments may sit in between):

    <!-- docs-test: skip (needs a Starlink dish and loads BPF into the kernel) -->

A block that runs the emulator (network namespaces it creates itself) says so, and runs only as
root with /dev/net/tun (as `make test` does); elsewhere it is reported as skipped:

    <!-- docs-test: root (leocc emu makes network namespaces and TUN devices) -->

Every shell block, run or skipped, and every ```synopsis block (usage lines) is also checked
statically against the built binary (python/tests/doccmds.py): `bash -n`, and each `leocc ...`
command in it names a real subcommand and only options that subcommand accepts (failures name
file:line and the bad word).

LEOCC_DOCS_ONLY=docs/quic.md:148 (substrings, comma-separated) runs only matching blocks;
LEOCC_DOCS_KEEP=1 keeps the temporary directories and prints them.
"""

import contextlib
import glob
import io
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import doccmds

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXE_DIR = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release")
SHELL_LANGS = {"sh", "bash", "shell", "console"}
SYNOPSIS_LANG = "synopsis"
MARKER = re.compile(r"<!--\s*docs-test:\s*(skip|root)\s*\((.+)\)\s*-->")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
BLOCK_TIMEOUT_S = 150


def fenced_blocks(path):
    """(line of the opening fence, language tag, body with the fence's indent removed,
    the HTML comment lines right before the fence)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        comments, k = [], i - 1
        while k >= 0 and lines[k].strip().startswith("<!--"):
            comments.append(lines[k].strip())
            k -= 1
        blocks.append((i + 1, lang, "\n".join(body) + "\n", comments))
        i = j + 1
    return blocks


def doc_files():
    return [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
class DocsTest(unittest.TestCase):
    def test_python_md_runs(self):
        with open(os.path.join(REPO, "docs", "python.md"), encoding="utf-8") as f:
            text = f.read()
        blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
        self.assertGreaterEqual(len(blocks), 4)
        exe_dir = EXE_DIR
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


def shell_text(lang, body):
    """The shell a block holds; for ```console blocks only its `$ ` lines, the others left
    empty so that line numbers stay those of the file."""
    if lang != "console":
        return body
    return "\n".join(l[2:] if l.startswith("$ ") else "" for l in body.split("\n"))


def block_problems(path, tree):
    """"file:line: 'word': what is wrong" for every shell and synopsis block of `path`."""
    rel = os.path.relpath(path, REPO)
    out = []
    for line, lang, body, _ in fenced_blocks(path):
        first = line + 1
        if lang in SHELL_LANGS:
            text = shell_text(lang, body)
            found = doccmds.bash_syntax(text, first) + doccmds.find_problems(text, tree, first)
        elif lang == SYNOPSIS_LANG:
            found = doccmds.synopsis_problems(body, tree, first)
        else:
            continue
        out += [f"{rel}:{l}: {tok!r}: {msg}" for l, tok, msg in found]
    return out


class DocCommandsTest(unittest.TestCase):
    def test_every_block_parses_and_its_leocc_commands_exist(self):
        exe = os.path.join(EXE_DIR, "leocc")
        if not os.path.exists(exe):
            self.fail(f"{exe} is not built: run `cargo build --release` (make test does)")
        tree = doccmds.cli_tree(exe)
        self.assertIn("emu", [s["name"] for s in tree["subcommands"]])
        bad = [p for path in doc_files() for p in block_problems(path, tree)]
        self.assertEqual(bad, [], "docs blocks that do not parse, or whose leocc commands name a "
                         "subcommand or option the binary does not have:\n" + "\n".join(bad))


class ShellBlocksTest(unittest.TestCase):
    def test_every_fenced_block_is_tagged(self):
        untagged = [f"{os.path.relpath(path, REPO)}:{line}" for path in doc_files()
                    for line, lang, _, _ in fenced_blocks(path) if not lang]
        self.assertEqual(untagged, [], "fenced blocks without a language: tag commands sh "
                         "(they then run or carry a docs-test: skip marker), output and diagrams text")

    def test_shell_blocks_run_or_say_why_not(self):
        if not os.path.exists(os.path.join(EXE_DIR, "leocc")):
            self.fail(f"{EXE_DIR}/leocc is not built: run `cargo build --release` (make test does)")
        only = [s for s in os.environ.get("LEOCC_DOCS_ONLY", "").split(",") if s]
        keep = os.environ.get("LEOCC_DOCS_KEEP") == "1"
        env = dict(os.environ, PATH=EXE_DIR + os.pathsep + os.environ["PATH"])
        ran, skipped, total_s = 0, 0, 0.0
        can_emulate = os.geteuid() == 0 and os.path.exists("/dev/net/tun")
        for path in doc_files():
            rel = os.path.relpath(path, REPO)
            for line, lang, body, comments in fenced_blocks(path):
                if lang not in SHELL_LANGS:
                    continue
                name = f"{rel}:{line}"
                if only and not any(o in name for o in only):
                    continue
                marks = {m.group(1): m.group(2) for c in comments for m in [MARKER.search(c)] if m}
                if "skip" in marks:
                    skipped += 1
                    continue
                if "root" in marks and not can_emulate:
                    print(f"SKIP docs block {name}: needs root and /dev/net/tun ({marks['root']})")
                    skipped += 1
                    continue
                if lang == "console":
                    body = "".join(l[2:] + "\n" for l in body.split("\n") if l.startswith("$ "))
                with self.subTest(block=name):
                    tmp = tempfile.mkdtemp(prefix="leocc-docs-")
                    os.symlink(os.path.join(REPO, "traces"), os.path.join(tmp, "traces"))
                    with open(os.path.join(tmp, ".block.sh"), "w", encoding="utf-8") as f:
                        f.write(body)
                    t0 = time.monotonic()
                    p = subprocess.Popen(["bash", "-euo", "pipefail", ".block.sh"], cwd=tmp, env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         start_new_session=True)
                    try:
                        out, _ = p.communicate(timeout=BLOCK_TIMEOUT_S)
                        timed_out = False
                    except subprocess.TimeoutExpired:
                        os.killpg(p.pid, signal.SIGTERM)
                        out, _ = p.communicate()
                        timed_out = True
                    # What the block left in the background (a server it started) goes too.
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGTERM)
                    dt = time.monotonic() - t0
                    total_s += dt
                    ran += 1
                    print(f"docs block {name}: exit {p.returncode}, {dt:.1f} s", flush=True)
                    tail_out = "\n".join(out.decode(errors="replace").splitlines()[-30:])
                    if keep:
                        print(f"  kept {tmp}")
                    else:
                        shutil.rmtree(tmp, ignore_errors=True)
                    self.assertFalse(timed_out, f"{name} ran over {BLOCK_TIMEOUT_S} s; output:\n{tail_out}")
                    self.assertEqual(p.returncode, 0, f"{name} exited {p.returncode}; output:\n{tail_out}\n"
                                     "fix the block, or mark it <!-- docs-test: skip (why) --> if it cannot run here")
        print(f"docs shell blocks: {ran} ran ({total_s:.0f} s), {skipped} skipped (marked)", flush=True)


if __name__ == "__main__":
    unittest.main()
