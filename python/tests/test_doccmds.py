"""The docs' command checker (doccmds.py) catches what it is for: a block that does not parse, a
renamed subcommand, a misspelt option, in every place a `leocc` command can hide. On a small
tree written here, and (when the binary is built) on the real one with a deliberately broken
docs file."""

import os
import tempfile
import unittest

import doccmds
import test_docs


def arg(id, long=None, short=None, values=0, lo=None, positional=False, last=False, names=()):
    return {"id": id, "long": long, "long_aliases": [], "short": short, "short_aliases": [],
            "positional": positional, "last": last, "min_values": values if lo is None else lo,
            "max_values": values, "allow_hyphen_values": False, "required": False,
            "value_names": list(names)}


def cmd(name, args=(), subs=(), required=False, hidden=False):
    return {"name": name, "aliases": [], "hidden": hidden, "subcommand_required": required,
            "args": [arg("help", "help", "h")] + list(args), "subcommands": list(subs)}


TREE = cmd("leocc", [arg("version", "version", "V")], [
    cmd("emu", [arg("trace", "trace", "t", 1), arg("server_cmd", "server-cmd", None, 1, names=["CMD"]),
                arg("quiet", "quiet", "q"), arg("cmd", None, None, None, 1, True, True, ["CMD"])]),
    cmd("sim", [arg("trace", "trace", None, None, 1), arg("cc", "cc", None, 1), arg("json", "json")]),
    cmd("kernel", [], [cmd("load", [arg("role", "role", None, 1)]), cmd("stats", [arg("json", "json")])],
        required=True),
    cmd("trace", [], [cmd("stat", [arg("file", None, None, 1, positional=True), arg("json", "json")])],
        required=True),
])


def problems(src):
    return doccmds.find_problems(src, TREE, first_line=10)


class FindProblemsTest(unittest.TestCase):
    def test_good_commands_pass(self):
        src = """leocc sim --trace a.trace b.trace --cc leocc --json
sudo leocc kernel load --role sender
flock /tmp/leocc-emu.lock leocc emu -t x.trace --server-cmd 'iperf3 -s' -- sh -c 'leocc sim --trace $T'
L=$(command -v leocc)
"$L" trace stat f.trace --json > out.txt 2>&1 &
leocc kernel stats --json | head
cat <<EOF
leocc kernel frobnicate   # a here-document's body is not a command
EOF
echo leocc --nonsense   # not a leocc command
leocc emu -qt x.trace -- true
leocc --help
"""
        self.assertEqual(problems(src), [])

    def test_renamed_subcommand(self):
        self.assertEqual(problems("true\nleocc kernel stat --json\n"),
                         [(11, "stat", "`leocc kernel` has no subcommand 'stat' (did you mean stats?); it has: load, stats")])

    def test_misspelt_option_in_every_hiding_place(self):
        cases = {
            "leocc sim --trace a --jsn": "--jsn",
            "sudo -E leocc kernel load --rol sender": "--rol",
            "flock /tmp/l leocc sim --cx leocc": "--cx",
            "$LEOCC sim --cc a --seed 1": "--seed",
            "L=/x/target/release/leocc; $L sim --bad": "--bad",
            "leocc emu -t t -- leocc sim --bogus": "--bogus",
            "leocc emu -t t --server-cmd 'leocc sim --srv' -- true": "--srv",
            "leocc emu -t t -- sh -c 'sleep 1; leocc kernel stats --jason'": "--jason",
            "x=$(leocc sim --trace a --oops)": "--oops",
            "timeout 5 nice -n 10 env A=1 leocc sim -z": "-z",
            "leocc emu -t t -x -- true": "-x",
            "leocc sim --json=1": "--json=1",
        }
        for src, token in cases.items():
            with self.subTest(src=src):
                found = problems(src)
                self.assertEqual([t for _, t, _ in found], [token], found)
                self.assertEqual(found[0][0], 10)

    def test_missing_value_subcommand_and_extra_positional(self):
        self.assertEqual([m for _, _, m in problems("leocc sim --cc")], ["`leocc sim` --cc needs a value"])
        self.assertEqual([m for _, _, m in problems("leocc kernel")], ["`leocc kernel` needs a subcommand: load, stats"])
        self.assertEqual([t for _, t, _ in problems("leocc trace stat a b")], ["b"])
        self.assertEqual([t for _, t, _ in problems("leocc kernel stats [--json]")], ["[--json]"])
        self.assertEqual([t for _, t, _ in problems("leocc sim -- true")], ["--"])

    def test_line_numbers_follow_continuations_and_quotes(self):
        src = "leocc sim \\\n  --trace a \\\n  --cc 'x\ny' \\\n  --nope\n"
        self.assertEqual(problems(src), [(14, "--nope", "`leocc sim` has no option --nope")])

    def test_bash_syntax(self):
        self.assertEqual(doccmds.bash_syntax("echo ok\n", 5), [])
        found = doccmds.bash_syntax("true\nif true; then\n  echo\n", 5)
        self.assertTrue(found and found[0][2].startswith("bash -n: "), found)
        self.assertGreaterEqual(found[0][0], 5)

    def test_synopsis(self):
        good = """leocc kernel load|stats [--role R] [--json]   # either
leocc emu --trace T [--server-cmd CMD] -- CMD...
leocc trace stat FILE [--json]
    [--help]
"""
        self.assertEqual(doccmds.synopsis_problems(good, TREE, 1), [])
        bad = "leocc kernel load|stat [--role R]\nleocc emu --trace T\n    [--servr-cmd CMD]\n"
        self.assertEqual([(l, t) for l, t, _ in doccmds.synopsis_problems(bad, TREE, 1)],
                         [(1, "stat"), (2, "--servr-cmd")])


@unittest.skipUnless(os.path.exists(os.path.join(test_docs.EXE_DIR, "leocc")), "leocc is not built")
class RealTreeTest(unittest.TestCase):
    def test_a_broken_docs_file_is_reported_with_file_and_line(self):
        tree = doccmds.cli_tree(os.path.join(test_docs.EXE_DIR, "leocc"))
        doc = """# A page

<!-- docs-test: skip (even a skipped block is checked) -->
```sh
leocc emu --trace t.trace --queue 500 -- true
leocc emu --trace t.trace --servr-cmd 'iperf3 -s' -- true
sudo leocc kernel stat
```

```synopsis
leocc quic get ADDR [--cert F] [--frobnicate]
```

```sh
if true; then
```
"""
        with tempfile.NamedTemporaryFile("w", suffix=".md", dir=test_docs.REPO, delete=False) as f:
            f.write(doc)
        try:
            found = test_docs.block_problems(f.name, tree)
        finally:
            os.unlink(f.name)
        name = os.path.basename(f.name)
        self.assertEqual(len(found), 4, found)
        self.assertTrue(found[0].startswith(f"{name}:6: '--servr-cmd': `leocc emu` has no option --servr-cmd (did you mean server-cmd?)"), found)
        self.assertTrue(found[1].startswith(f"{name}:7: 'stat': `leocc kernel` has no subcommand 'stat'"), found)
        self.assertTrue(found[2].startswith(f"{name}:11: '--frobnicate'"), found)
        self.assertIn("bash -n", found[3])


if __name__ == "__main__":
    unittest.main()
