#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Rewrite two-dimensional packed arrays of generated RTL into flat vectors, for Yosys 0.23.

Yosys 0.23's read_verilog -sv does not parse packed arrays with more than one dimension
(`logic [N-1:0][15:0] x;` -> "syntax error, unexpected '['"), which gen uses for shift
registers and per-column buses. This synthesis-only step turns each such declaration
`[A:0][C:D] name` into `[((A)+1)*(W)-1:0] name` with W = (C)-(D)+1 and rewrites its uses:

    name[e]          -> name[(e)*(W) +: (W)]
    name[e][hi:lo]   -> name[(e)*(W)+(lo) +: ((hi)-(lo)+1)]
    name[e][k]       -> name[(e)*(W)+(k)]
    name[a:b]        -> name[((a)+1)*(W)-1:(b)*(W)]
    name             -> name (the same bits: packed arrays are laid out that way)

A declaration list (`logic [1:0][15:0] a, b;`) flattens every name in it. An unpacked array
that is a variable (`logic [W-1:0] mem_q [Depth];`, not a port, not a wire: tpu_sram's and
tpu_link's storage) is a memory: it stays an unpacked array ([0:Depth-1]), so that Yosys
infers a memory and maps it to block RAM, and every use of it must be one word, `mem_q[e]`.

The bit layout is the one SystemVerilog defines for packed arrays, so the flat design is the
same circuit. Scopes follow begin/end and module/endmodule, so a name declared in two
generate blocks with different widths is handled. Anything else (an outer range not ending at
0, `+:` on the outer dimension, a third dimension) stops with an error rather than guess.
bench/synth/equiv.sh checks the result against the original in Icarus, cycle by cycle.

Usage: flatten_packed.py OUTDIR FILE.sv...   (writes OUTDIR/<basename> for each file)
"""
import os
import re
import sys

DECL = re.compile(
    r"\b(logic|wire|reg)(\s+signed)?\s*\[([^\[\]]+):([^\[\]]+)\]\s*\[([^\[\]]+):([^\[\]]+)\]"
    r"\s*([A-Za-z_][A-Za-z0-9_$]*)")
# An unpacked array with a C-style size, `[C:D] name [S]` (ports too: Yosys 0.23 rejects
# unpacked array ports); element e becomes bits [e*W +: W] of a flat vector.
UDECL = re.compile(
    r"\b(logic|wire|reg)(\s+signed)?\s*\[([^\[\]]+):([^\[\]]+)\]\s*([A-Za-z_][A-Za-z0-9_$]*)"
    r"\s*\[([^\[\]:]+)\]")
# The text just before a declaration that makes it a port.
PORT = re.compile(r"\b(input|output|inout)\s*$")
MEMORY = "memory"  # the scope entry of a memory kept as an unpacked array
FUNC = re.compile(r"\bfunction\b[^;(]*?\b([A-Za-z_][A-Za-z0-9_$]*)\s*\(")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def fail(msg):
    sys.stderr.write("flatten_packed: " + msg + "\n")
    sys.exit(1)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def bracket(text, i):
    """text[i] == '['; return (content, index after the matching ']')."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "[":
            depth += 1
        elif text[j] == "]":
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
    fail("unbalanced '['")


def split_colon(expr):
    """Split a range 'a:b' at its top-level ':' (not '+:'/'-:'); None if there is none."""
    depth = 0
    for k, ch in enumerate(expr):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0:
            if k > 0 and expr[k - 1] in "+-":
                return "indexed"
            return expr[:k], expr[k + 1:]
    return None


def skip_ws(text, i):
    while i < len(text) and text[i] in " \t\n":
        i += 1
    return i


KEYWORDS = {"input", "output", "inout", "logic", "wire", "reg", "parameter", "localparam",
            "signed", "var"}


def more_names(text, i, fname):
    """After a declaration's first name at text[i:]: the further names of the same list
    (`logic [1:0][15:0] a, b;`, also `input logic [..] a, b` in a port list), each followed
    by ',', ';', ')' or '='; a name followed by anything else (an unpacked dimension) stops
    the rewrite. Returns (names, index after the last name)."""
    names = []
    while True:
        k = skip_ws(text, i)
        if k >= len(text) or text[k] != ",":
            return names, i
        m = IDENT.match(text, skip_ws(text, k + 1))
        if not m or m.group(0) in KEYWORDS:
            return names, i
        k2 = skip_ws(text, m.end())
        if k2 >= len(text) or text[k2] not in ",;)=":
            fail(f"{fname}: {m.group(0)}: a declaration list with an unpacked dimension")
        names.append(m.group(0))
        i = m.end()


def rewrite(text, fname):
    text = strip_comments(text)
    out = []
    scopes = [{}]
    func = None  # the function being read
    seen = {}  # every width a name was declared with, for hierarchical references
    i = 0
    n = len(text)
    while i < n:
        at_word = i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_$")
        m = UDECL.match(text, i) if at_word else None
        if m:
            kind, sgn, c, d, name, size = m.groups()
            if more_names(text, m.end(), fname)[0]:
                fail(f"{fname}: {name}: a list of unpacked-array declarations")
            if kind != "wire" and not PORT.search(text, 0, m.start()):
                # A variable (not a port, not a wire): a memory such as tpu_sram's mem_q.
                # Yosys 0.23 reads it as a memory (and maps it to block RAM) only if it
                # stays an unpacked array, so it is kept, with the range spelled [0:S-1];
                # its uses must all be single-word selects name[e] (checked below).
                scopes[-1][name] = MEMORY
                out.append(f"{kind}{sgn or ''} [{c}:{d}] {name} [0:({size})-1]")
                i = m.end()
                continue
            width = f"(({c})-({d})+1)"
            scopes[-1][name] = width
            seen.setdefault(name, set()).add(width)
            out.append(f"{kind}{sgn or ''} [({size})*{width}-1:0] {name}")
            i = m.end()
            continue
        m = FUNC.match(text, i) if at_word else None
        if m:
            func = m.group(1)
        m = DECL.match(text, i) if at_word else None
        if m:
            kind, sgn, a, b, c, d, name = m.groups()
            if b.strip() != "0":
                fail(f"{fname}: {name}: outer range [{a}:{b}] does not end at 0")
            width = f"(({c})-({d})+1)"
            names, end = more_names(text, m.end(), fname)
            for nm in [name] + names:
                scopes[-1][nm] = width
                seen.setdefault(nm, set()).add(width)
            # the list is copied as it is: its names share the flat type
            out.append(f"{kind}{sgn or ''} [(({a})+1)*{width}-1:0] {name}{text[m.end():end]}")
            i = end
            continue
        m = IDENT.match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_$'")):
            word = m.group(0)
            j = m.end()
            if word == "return":
                # `return e;` in a function whose returns all end a branch (what gen writes):
                # Yosys 0.23 has no return statement, an assignment to the name is the same.
                if func is None:
                    fail(f"{fname}: return outside a function")
                out.append(f"{func} =")
                i = j
                continue
            if word == "endfunction":
                func = None
            if word in ("begin", "module"):
                scopes.append({})
            elif word in ("end", "endmodule"):
                if len(scopes) == 1:
                    fail(f"{fname}: unbalanced '{word}'")
                scopes.pop()
            width = None
            prev = text[:i].rstrip()
            if prev.endswith("."):
                p2 = prev[:-1].rstrip()
                # g_row[r].name: a signal of a generate block; .name (x): a port, left alone
                if p2.endswith("]") and word in seen:
                    if len(seen[word]) != 1:
                        fail(f"{fname}: hierarchical {word} declared with several widths")
                    width = next(iter(seen[word]))
            else:
                for s in reversed(scopes):
                    if word in s:
                        width = s[word]
                        break
            if width is None:
                out.append(word)
                i = j
                continue
            k = skip_ws(text, j)
            if width == MEMORY:
                # only name[e], one word, is recognised (no whole-array use, no part or
                # bit select of a word, no range of words)
                if k >= n or text[k] != "[":
                    fail(f"{fname}: memory {word} used without a word index")
                first, k2 = bracket(text, k)
                if split_colon(first) is not None:
                    fail(f"{fname}: memory {word}[{first}]: a range of words")
                k3 = skip_ws(text, k2)
                if k3 < n and text[k3] == "[":
                    fail(f"{fname}: memory {word}[{first}]: a select inside a word")
                out.append(text[i:k2])
                i = k2
                continue
            if k >= n or text[k] != "[":
                out.append(word)
                i = j
                continue
            first, k2 = bracket(text, k)
            rng = split_colon(first)
            if rng == "indexed":
                fail(f"{fname}: {word}[{first}]: indexed part select on the outer dimension")
            if rng is not None:
                hi, lo = rng
                out.append(f"{word}[(({hi})+1)*{width}-1:({lo})*{width}]")
                i = k2
                continue
            e = first
            k3 = skip_ws(text, k2)
            if k3 < n and text[k3] == "[":
                second, k4 = bracket(text, k3)
                rng2 = split_colon(second)
                if rng2 == "indexed":
                    fail(f"{fname}: {word}[{first}][{second}]: indexed part select")
                if rng2 is None:
                    out.append(f"{word}[({e})*{width}+({second})]")
                else:
                    hi, lo = rng2
                    out.append(f"{word}[({e})*{width}+({lo}) +: (({hi})-({lo})+1)]")
                k5 = skip_ws(text, k4)
                if k5 < n and text[k5] == "[":
                    fail(f"{fname}: {word}: a third index")
                i = k4
                continue
            out.append(f"{word}[({e})*{width} +: {width}]")
            i = k2
            continue
        if m:
            out.append(m.group(0))
            i = m.end()
            continue
        out.append(text[i])
        i += 1
    if len(scopes) != 1:
        fail(f"{fname}: unbalanced begin/end")
    return "".join(out)


def main():
    if len(sys.argv) < 3:
        fail("usage: flatten_packed.py OUTDIR FILE.sv...")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for path in sys.argv[2:]:
        with open(path) as f:
            text = f.read()
        res = rewrite(text, path)
        with open(os.path.join(outdir, os.path.basename(path)), "w") as f:
            f.write(f"// {os.path.basename(path)} with packed 2-D arrays flattened for Yosys 0.23\n")
            f.write("// (bench/synth/flatten_packed.py; synthesis only, not a source file)\n")
            f.write(res)


if __name__ == "__main__":
    main()
