"""The list of the project's own files, common/project-files.txt: what a download (which has no
git) knows of itself. Everything else in the folder is the learner's.

    python3 -m common.shipped --write    in a git checkout: write the list from `git ls-files`
    python3 -m common.shipped --check    that the list is `git ls-files` (or, without git,
                                         that every file it lists is there)
"""

import argparse
import os
import subprocess
import sys

from common.cli import OneLineParser, fail, guarded, show
from common.golden import write_or_check
from common.safe_io import HERE, PROJECT_FILES, project_files


def tracked(root=HERE):
    """The list as `git ls-files` gives it for root, one path a line; None without git."""
    if not os.path.isdir(os.path.join(root, ".git")):
        return None
    try:
        done = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                              timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):      # no git, or it failed (CalledProcessError)
        return None
    names = set(os.fsdecode(done.stdout).split("\0")) - {""}
    return "".join(f"{name}\n" for name in sorted(names | {PROJECT_FILES.replace(os.sep, "/")}))


def main(argv=None):
    parser = OneLineParser(description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", action="store_true", help="write the list from git ls-files")
    what.add_argument("--check", action="store_true", help="check the list")
    args = parser.parse_args(argv)

    def run():
        if (text := tracked()) is not None:
            return write_or_check(text, os.path.join(HERE, PROJECT_FILES), args.write, args.check)
        if args.write:
            return fail("--write needs a git checkout: the list is written from git ls-files")
        if missing := sorted(name for name in project_files() if not os.path.isfile(
                os.path.join(HERE, name))):
            return fail(f"{len(missing)} listed files are missing, first {missing[0]}")
        show(f"every file {PROJECT_FILES} lists is here (no git checkout to compare with)\n")
        return 0
    return guarded(run)


if __name__ == "__main__":
    sys.exit(main())
