"""Static checks of the docs' shell blocks, run or not: `bash -n`, and every `leocc ...` command
in them named and spelled the way the built binary parses it.

The parser is not written down here: `leocc cli-tree` (hidden) prints clap's own tree (every
subcommand, its options, how many values each takes, which one is the `-- CMD` tail) and
`check_invocation` walks a command's words through it.

Where a `leocc` command is found: at the start of a command (after `;`, `&&`, `|`, `$(`, a
newline, ...), after `VAR=value` prefixes, after the wrappers `sudo`, `flock FILE`, `timeout`,
`nice`, `env`, `nohup`, `setsid`, `time`, `exec`, `ip netns exec NS`; inside `sh -c '...'` /
`bash -c '...'`; in the `-- CMD` tail of `leocc emu` / `leocc chain`; in the value of an option
whose value is a shell command (value name CMD: `--server-cmd`, `--node-cmd`, `--exec`). The
command word is `leocc`, a path ending in `/leocc`, `$LEOCC`, or a variable the block set to
`$(command -v leocc)` / `$(which leocc)` / a path ending in `/leocc`.

```synopsis blocks (usage lines with [optional] parts, a|b alternatives, placeholders) are not
shell; for them only the subcommand path and every `-x` / `--xy` word is checked.
"""

import difflib
import contextlib
import io
import re
import subprocess

# ---------------------------------------------------------------- shell words

_REDIRS = ["&>>", "<<<", "<<-", "<<", ">>", "&>", ">&", "<&", ">|", "<>", ">", "<"]
_OPS = ["&&", "||", ";;", "|&", "$(", ";", "&", "|", "(", ")", "`"]


def shell_tokens(src, first_line=1):
    """Tokens of a shell script: ("w", word, line) with quotes and escapes removed (`$` kept,
    so `$X` stays visible), ("op", op, line) for control operators and newlines, ("redir", op,
    line) for redirections. Here-document bodies and comments are dropped."""
    toks, i, n, line = [], 0, len(src), first_line
    word, wline = None, line
    heredocs, want_delim = [], None

    def flush():
        nonlocal word, want_delim
        if word is not None:
            toks.append(("w", word, wline))
            if want_delim is not None:
                heredocs.append((word, want_delim))
                want_delim = None
            word = None

    def add(s):
        nonlocal word, wline
        if word is None:
            word, wline = "", line
        word += s

    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n:
            if src[i + 1] == "\n":
                line += 1
            else:
                add(src[i + 1])
            i += 2
            continue
        if c in " \t":
            flush()
            i += 1
            continue
        if c == "\n":
            flush()
            toks.append(("op", "\n", line))
            line += 1
            i += 1
            for delim, strip in heredocs:
                while i < n:
                    j = src.find("\n", i)
                    j = n if j < 0 else j
                    body_line = src[i:j]
                    i = j + 1
                    line += 1
                    if (body_line.lstrip("\t") if strip else body_line) == delim:
                        break
            heredocs = []
            continue
        if c == "#" and word is None:
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "'":
            j = src.find("'", i + 1)
            j = n if j < 0 else j
            add(src[i + 1:j])
            line += src[i + 1:j].count("\n")
            i = j + 1
            continue
        if c == '"':
            j, s = i + 1, ""
            while j < n and src[j] != '"':
                if src[j] == "\\" and j + 1 < n and src[j + 1] in '"\\$`\n':
                    if src[j + 1] != "\n":
                        s += src[j + 1]
                    j += 2
                    continue
                s += src[j]
                j += 1
            add(s)
            line += src[i + 1:j].count("\n")
            i = j + 1
            continue
        if c == "$" and src.startswith("$((", i):
            add("$((")
            i += 3
            continue
        if c in ";&|()<>`" or src.startswith("$(", i):
            if c in "<>" and word is not None and word.isdigit():
                word = None  # 2>&1: the fd belongs to the redirection
            flush()
            for op in _REDIRS:
                if src.startswith(op, i):
                    toks.append(("redir", op, line))
                    if op in ("<<", "<<-"):
                        want_delim = op == "<<-"
                    i += len(op)
                    break
            else:
                for op in _OPS:
                    if src.startswith(op, i):
                        toks.append(("op", op, line))
                        i += len(op)
                        break
            continue
        add(c)
        i += 1
    flush()
    return toks


def simple_commands(toks):
    """The simple commands of a token list: lists of (word, line), redirections and their
    targets removed."""
    cmds, cur, skip_next = [], [], False
    for kind, text, line in toks:
        if kind == "op":
            if cur:
                cmds.append(cur)
            cur = []
        elif kind == "redir":
            skip_next = True
        elif skip_next:
            skip_next = False
        else:
            cur.append((text, line))
    if cur:
        cmds.append(cur)
    return cmds


# ---------------------------------------------------------------- finding leocc commands

_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "exec",
             "nohup", "setsid", "builtin"}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# wrapper: options that take a value
_WRAPPERS = {
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group"},
    "flock": {"-w", "-E", "--timeout", "--wait", "--conflict-exit-code"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "env": {"-u", "-C", "--unset", "--chdir"},
    "ionice": {"-c", "-n", "-p", "--class", "--classdata"},
}
_LEOCC_VAR_DEF = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=[\"']?(?:\$\((?:command -v|which) leocc\)|[^\s;&|]*/leocc\b)")


def leocc_vars(src):
    """Variables the script sets to the leocc command ($LEOCC always counts)."""
    return {"LEOCC"} | set(_LEOCC_VAR_DEF.findall(src))


def is_leocc(word, names):
    if word == "leocc" or word.endswith("/leocc"):
        return True
    m = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", word)
    return bool(m and m.group(1) in names)


def _after_wrappers(words):
    """Index of the command word of `words` (a simple command), skipping assignments, keywords
    and wrappers; None when there is none. `sh -c STR` / `flock F -c STR` are returned as
    ("sh", index of STR)."""
    i = 0
    while i < len(words):
        w = words[i]
        if _ASSIGN.match(w) or w in _KEYWORDS:
            i += 1
            continue
        if w in _WRAPPERS:
            takes = _WRAPPERS[w]
            i += 1
            while i < len(words) and (words[i].startswith("-") or (w == "env" and _ASSIGN.match(words[i]))):
                if words[i] == "--":
                    i += 1
                    break
                if w == "flock" and words[i] in ("-c", "--command"):
                    return ("sh", i + 1)
                i += 2 if words[i] in takes else 1
            if w == "timeout" and i < len(words):
                i += 1  # the duration
            if w == "flock" and i < len(words):
                i += 1  # the lock file
                if i < len(words) and words[i] in ("-c", "--command"):
                    return ("sh", i + 1)
            continue
        if w == "ip" and words[i + 1:i + 3] == ["netns", "exec"]:
            i += 4
            continue
        if w in ("sh", "bash") and "-c" in words[i + 1:i + 3]:
            return ("sh", words.index("-c", i + 1) + 1)
        return i
    return None


def find_problems(src, tree, first_line=1):
    """Every problem of the `leocc` commands in shell text `src` whose first line is
    `first_line`: a list of (line, bad token, message)."""
    names = leocc_vars(src)
    problems = []
    for cmd in simple_commands(shell_tokens(src, first_line)):
        _check_command(cmd, tree, names, problems)
    return problems


def _check_command(cmd, tree, names, problems):
    words = [w for w, _ in cmd]
    at = _after_wrappers(words)
    if at is None:
        return
    if isinstance(at, tuple):
        if at[1] < len(cmd):
            text, line = cmd[at[1]]
            problems.extend(find_problems_nested(text, tree, names, line))
        return
    if is_leocc(words[at], names):
        check_invocation(cmd[at + 1:], tree, names, problems)


def find_problems_nested(src, tree, names, line):
    out = []
    for cmd in simple_commands(shell_tokens(src, line)):
        _check_command(cmd, tree, names | leocc_vars(src), out)
    return out


def _subcommands(node):
    subs = {}
    for s in node["subcommands"]:
        for name in [s["name"]] + list(s.get("aliases") or []):
            subs[name] = s
    return subs


def _options(node):
    longs, shorts = {}, {}
    for a in node["args"]:
        if a["positional"]:
            continue
        for name in ([a["long"]] if a["long"] else []) + list(a.get("long_aliases") or []):
            longs[name] = a
        for name in ([a["short"]] if a["short"] else []) + list(a.get("short_aliases") or []):
            shorts[name] = a
    return longs, shorts


def _suggest(bad, known):
    close = difflib.get_close_matches(bad, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _dynamic(word):
    return "$" in word or "`" in word or "*" in word


def _check_testbed(args, problems, path):
    """`leocc testbed ...` hands its words to python/leocc_testbed's argparse parser: check
    them against that parser (when the package is importable, as in .venv)."""
    try:
        from leocc_testbed.cli import parser
    except ImportError:
        return
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser().parse_args([w for w, _ in args])
    except SystemExit as e:
        if e.code:
            why = err.getvalue().strip().splitlines()
            problems.append((args[0][1] if args else 0, " ".join(w for w, _ in args), f"`{path}`: {why[-1] if why else 'refused'}"))


# Subcommands that hand their words to another program's parser, and how to check them.
PASSTHROUGH = {"leocc testbed": _check_testbed}


def check_invocation(args, tree, names, problems, path="leocc"):
    """Walks `args` (the (word, line) pairs after `leocc`) through the clap tree `tree`;
    appends (line, token, message) to `problems` for an unknown subcommand, an option the
    subcommand does not accept, a missing value, a positional argument too many. Commands inside
    (the `-- CMD` tail, CMD-valued options) are checked too."""
    node, i, positionals, started = tree, 0, 0, False
    while i < len(args):
        w, line = args[i]
        subs = _subcommands(node)
        if not w.startswith("-") or w == "-":
            if subs and not started and positionals == 0:
                if w in subs:
                    node, path = subs[w], f"{path} {w}"
                    i += 1
                    if path in PASSTHROUGH:
                        PASSTHROUGH[path](args[i:], problems, path)
                        return
                    continue
                if _dynamic(w):
                    return
                if not any(a["positional"] and not a["last"] for a in node["args"]):
                    known = sorted(s["name"] for s in node["subcommands"] if not s["hidden"])
                    problems.append((line, w, f"`{path}` has no subcommand {w!r}{_suggest(w, known)}; "
                                              f"it has: {', '.join(known)}"))
                    return
            pos = [a for a in node["args"] if a["positional"] and not a["last"]]
            unbounded = any(a["max_values"] is None or a["max_values"] > 1 for a in pos)
            if not unbounded and positionals >= len(pos):
                problems.append((line, w, f"`{path}` takes {len(pos) or 'no'} positional argument"
                                          f"{'' if len(pos) == 1 else 's'}; {w!r} is one too many"))
                return
            positionals += 1
            i += 1
            continue
        started = True
        if w == "--":
            tail = [a for a in node["args"] if a["last"]]
            if not tail:
                problems.append((line, w, f"`{path}` takes no `-- CMD` tail"))
                return
            rest = args[i + 1:]
            if rest and "CMD" in (tail[0].get("value_names") or []):
                _check_command(rest, tree, names, problems)
            return
        longs, shorts = _options(node)
        if w.startswith("--"):
            name, eq, _ = w[2:].partition("=")
            if _dynamic(name):
                i += 1
                continue
            if name not in longs:
                problems.append((line, w, f"`{path}` has no option --{name}"
                                          f"{_suggest(name, longs)}"))
                return  # what follows may be its value: one problem per command
            arg = longs[name]
            if arg["max_values"] == 0:
                if eq:
                    problems.append((line, w, f"`{path}` --{name} takes no value"))
                i += 1
                continue
            if eq:
                _check_value(arg, w.partition("=")[2], line, tree, names, problems)
                i += 1
                continue
            i = _take_values(arg, args, i + 1, path, f"--{name}", w, line, tree, names, problems)
            continue
        # -abc: a cluster of short options, the last may take a value
        j, done = 1, False
        while j < len(w) and not done:
            c = w[j]
            if c not in shorts:
                problems.append((line, w, f"`{path}` has no option -{c}{_suggest(c, shorts)}"))
                return
            elif shorts[c]["max_values"] != 0:
                if j + 1 < len(w):
                    _check_value(shorts[c], w[j + 1:].lstrip("="), line, tree, names, problems)
                    i += 1
                else:
                    i = _take_values(shorts[c], args, i + 1, path, f"-{c}", w, line, tree, names, problems)
                done = True
            j += 1
        if not done:
            i += 1
    helped = any(w in ("-h", "--help", "-V", "--version") for w, _ in args)
    if node["subcommand_required"] and not helped:
        known = sorted(s["name"] for s in node["subcommands"] if not s["hidden"])
        problems.append((args[-1][1] if args else 0, path.split()[-1],
                         f"`{path}` needs a subcommand: {', '.join(known)}"))


def _take_values(arg, args, i, path, opt, w, line, tree, names, problems):
    """Consumes the values of option `opt` from args[i:] (as clap does: up to its maximum, not
    past a word that looks like an option); returns the index after them."""
    lo, hi, got = arg["min_values"], arg["max_values"], 0
    while i < len(args) and (hi is None or got < hi):
        v = args[i][0]
        if v.startswith("-") and len(v) > 1 and not arg["allow_hyphen_values"] \
                and not re.fullmatch(r"-\d[\d.]*", v):
            break
        _check_value(arg, v, args[i][1], tree, names, problems)
        got, i = got + 1, i + 1
    if got < max(lo, 1):
        problems.append((line, w, f"`{path}` {opt} needs a value"))
    return i


def _check_value(arg, value, line, tree, names, problems):
    if "CMD" in (arg.get("value_names") or []):
        problems.extend(find_problems_nested(value, tree, names, line))


# ---------------------------------------------------------------- synopsis blocks

def synopsis_problems(src, tree, first_line=1):
    """Usage lines: `leocc SUB [--opt V] (--a | --b) x|y ...`. Each line that starts with
    (sudo) leocc, indented lines continuing it; `# comments` dropped. The subcommand path (a|b
    alternatives each) and every word starting with - are checked; other words are
    placeholders."""
    problems, logical = [], []
    for k, raw in enumerate(src.split("\n")):
        text = re.sub(r"(^|\s)#.*$", "", raw)
        if logical and raw[:1] in (" ", "\t") and text.strip():
            logical[-1][1].append(text)
        elif text.strip():
            logical.append((first_line + k, [text]))
    for line, parts in logical:
        words = " ".join(parts).split()
        if words and words[0] == "sudo":
            words = words[1:]
        if not words or not is_leocc(words[0], {"LEOCC"}):
            continue
        nodes, path, k = [tree], "leocc", 1
        while k < len(words) and re.fullmatch(r"[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*", words[k]):
            alts = words[k].split("|")
            subs = _subcommands(nodes[0])
            if not subs:
                break
            if not all(a in subs for a in alts):
                if len(alts) == 1 and any(a["positional"] for a in nodes[0]["args"]):
                    break
                bad = [a for a in alts if a not in subs][0]
                problems.append((line, bad, f"`{path}` has no subcommand {bad!r}{_suggest(bad, subs)}"))
                nodes = []
                break
            nodes = [subs[a] for a in alts]
            path += " " + words[k]
            k += 1
        for w in words[k:]:
            for piece in re.split(r"[\[\]()|]", w):
                piece = piece.rstrip(".")
                if not piece.startswith("-") or piece in ("-", "--"):
                    continue
                if not nodes:
                    continue
                opts = [_options(node) for node in nodes]  # an option of any alternative
                longs = {k: v for lo, _ in opts for k, v in lo.items()}
                shorts = {k: v for _, sh in opts for k, v in sh.items()}
                if piece.startswith("--"):
                    name = piece[2:].split("=")[0]
                    if name not in longs:
                        problems.append((line, piece, f"`{path}` has no option --{name}{_suggest(name, longs)}"))
                elif not all(c in shorts for c in piece[1:]):
                    problems.append((line, piece, f"`{path}` has no option {piece}"))
    return problems


# ---------------------------------------------------------------- the whole block

def bash_syntax(body, first_line):
    """`bash -n` of a block: [(line, token, message)] (the token is bash's message)."""
    p = subprocess.run(["bash", "-n"], input=body, text=True, capture_output=True)
    if p.returncode == 0:
        return []
    out = []
    for l in p.stderr.splitlines():
        m = re.search(r"line (\d+): (.*)", l)
        if m:
            out.append((first_line + int(m.group(1)) - 1, m.group(2), "bash -n: " + m.group(2)))
    return out or [(first_line, "", "bash -n: " + p.stderr.strip())]


def cli_tree(exe):
    import json
    p = subprocess.run([exe, "cli-tree"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)
