#!/usr/bin/env python3
"""Splits the files clang-tidy checks into the units scripts/test --tidy runs.

    git ls-files '*.cpp' | scripts/tidy-units.py BUILD_DIR OUT_DIR

Reads the files from standard input, one per line (all in one call: the
units and their compilation database are written at once). Prints one path
per line: each unit clang-tidy is run on, with
`-p OUT_DIR`. Most of clang-tidy's time on a file is parsing the headers it
includes (Boost.Asio and Beast, prometheus-cpp: 5 to 6 s), so the files of a
folder whose .clang-tidy leaves the static analyzer off are checked
together: OUT_DIR/<config folder>/unit-N.cpp includes up to 16 files of one
folder that one target compiles (the sanitizer build compiles a target's
files 16 at a time too; two files of a folder must not give one file-scope
name two meanings), and clang-tidy reports each finding at its own file and
line (HeaderFilterRegex takes in the folders checked). OUT_DIR
mirrors the repository's .clang-tidy files, so each unit is checked with
its folder's configuration, and gets a compilation database whose command
for a unit is its first file's.

A folder whose .clang-tidy turns the analyzer on (clang-analyzer-*) keeps
one unit per file: the analyzer starts only from the functions of the file
given, and with -analyzer-opt-analyze-headers it would analyze every header
function, the system's too (a unit of exporter/probe/control/ then took
437 s against about 60 for its files one by one).
"""
import json
import os
import re
import shutil
import subprocess
import sys

BATCH = 16


def config_chain(source_dir, folder):
    """The .clang-tidy files that apply to `folder`, nearest first."""
    chain = []
    while True:
        path = os.path.join(source_dir, folder, ".clang-tidy")
        if os.path.exists(path):
            chain.append(path)
        if not folder:
            return chain
        folder = os.path.dirname(folder)


def analyzer_on(chain):
    """Whether the nearest configuration that names clang-analyzer-* turns it on."""
    for path in chain:
        with open(path, encoding="utf-8") as f:
            text = "\n".join(line for line in f if not line.lstrip().startswith("#"))
        for check in reversed(re.findall(r"-?clang-analyzer-\*", text)):
            return not check.startswith("-")
    return False


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: tidy-units.py BUILD_DIR OUT_DIR < FILES")
    build_dir, out_dir = sys.argv[1], sys.argv[2]
    files = sys.stdin.read().split()
    source_dir = os.getcwd()
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        commands = {c["file"]: c for c in json.load(f)}
    groups = {}  # (config folder, target, folder) -> files, in the order given
    units, database = [], []
    for path in files:
        command = commands.get(os.path.join(source_dir, path))
        if command is None:
            sys.exit("tidy-units.py: %s is in no target of %s/compile_commands.json"
                     % (path, build_dir))
        chain = config_chain(source_dir, os.path.dirname(path))
        if analyzer_on(chain):
            units.append(path)
            database.append(dict(command, file=os.path.join(source_dir, path)))
            continue
        target = re.search(r"CMakeFiles/([^ /]+)\.dir/", command["command"])
        config_folder = os.path.relpath(os.path.dirname(chain[0]), source_dir) if chain else "."
        key = (config_folder, target.group(1) if target else "", os.path.dirname(path))
        groups.setdefault(key, []).append(path)
    for (config_folder, _, _), members in sorted(groups.items()):
        for start in range(0, len(members), BATCH):
            batch = members[start:start + BATCH]
            folder = os.path.join(out_dir, config_folder)
            os.makedirs(folder, exist_ok=True)
            unit = os.path.abspath(os.path.join(folder, "unit-%d.cpp" % len(units)))
            with open(unit, "w", encoding="utf-8") as u:
                for path in batch:
                    u.write('#include "%s"  // NOLINT(bugprone-suspicious-include)\n' % path)
            first = commands[os.path.join(source_dir, batch[0])]
            database.append({"directory": first["directory"], "file": unit,
                             "command": first["command"].replace(first["file"], unit)})
            units.append(unit)
    configs = subprocess.run(["git", "ls-files", "*.clang-tidy"], capture_output=True,
                             text=True, check=True).stdout.split()
    for config in configs:
        os.makedirs(os.path.join(out_dir, os.path.dirname(config)), exist_ok=True)
        shutil.copyfile(config, os.path.join(out_dir, config))
    with open(os.path.join(out_dir, "compile_commands.json"), "w", encoding="utf-8") as f:
        json.dump(database, f, indent=1)
    for unit in units:
        print(unit)


if __name__ == "__main__":
    main()
