#!/usr/bin/env python3
"""Writes a deterministic `git fast-import` stream to stdout (tests/programs, bench/programs.sh).

    python3 git_history.py [SCALE]      (default 1: 300 commits over 48 files, two branches merged)

Each commit edits a few text files (inserts, deletes and rewrites lines), so the imported history
has deltas of every size for gc/repack, log -p, blame and diff to chew on. Author and committer
dates are fixed, so the commit ids are the same on every run.
"""
import random
import sys


def main() -> int:
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rnd = random.Random(3)
    vocab = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rnd.randint(2, 10))) for _ in range(500)]
    nfiles = 48
    files = {}
    for f in range(nfiles):
        path = f"src/mod{f % 6}/file{f:02d}.{'c' if f % 3 else 'txt'}"
        files[path] = [" ".join(rnd.choice(vocab) for _ in range(rnd.randint(1, 12))) for _ in range(rnd.randint(10, 120))]
    out = sys.stdout.buffer
    t = 1_600_000_000
    mark = 0

    def emit_commit(branch, parent_marks, message, changed):
        nonlocal mark, t
        mark += 1
        t += 3600
        body = []
        body.append(f"commit refs/heads/{branch}\nmark :{mark}\n".encode())
        body.append(f"author Ada Lovelace <ada@example.org> {t} +0000\n".encode())
        body.append(f"committer Ada Lovelace <ada@example.org> {t} +0000\n".encode())
        msg = message.encode()
        body.append(b"data %d\n%s\n" % (len(msg), msg))
        for i, p in enumerate(parent_marks):
            body.append(f"{'from' if i == 0 else 'merge'} :{p}\n".encode())
        for path in changed:
            data = ("\n".join(files[path]) + "\n").encode()
            body.append(f"M 100644 inline {path}\n".encode())
            body.append(b"data %d\n%s\n" % (len(data), data))
        out.write(b"".join(body))
        return mark

    def edit(path):
        lines = files[path]
        for _ in range(rnd.randint(1, 6)):
            op = rnd.random()
            pos = rnd.randrange(len(lines) + 1)
            if op < 0.5 or len(lines) < 5:
                lines.insert(pos, " ".join(rnd.choice(vocab) for _ in range(rnd.randint(1, 12))))
            elif op < 0.8:
                del lines[min(pos, len(lines) - 1)]
            else:
                lines[min(pos, len(lines) - 1)] = lines[min(pos, len(lines) - 1)].upper()

    head = emit_commit("main", [], "initial import", sorted(files))
    side = None
    for i in range(300 * scale):
        changed = sorted(set(rnd.choice(sorted(files)) for _ in range(rnd.randint(1, 4))))
        for path in changed:
            edit(path)
        if i == 100 * scale:
            side = head
        if side is not None and i % 5 == 0 and i < 200 * scale:
            side = emit_commit("topic", [side], f"topic change {i}: {' '.join(changed)}", changed)
            continue
        parents = [head]
        if i == 200 * scale and side is not None:
            parents.append(side)
        head = emit_commit("main", parents, f"change {i}\n\nTouches {len(changed)} files.", changed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
