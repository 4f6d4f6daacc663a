"""Launcher of the fallback backend: confine this process with Landlock, drop to the
sandbox user, exec the program. Run as a script by path (``python -I landlock_exec.py
WORKDIR UID -- ARGV...``): it imports nothing from loopwright, only ``py_landlock``.

Landlock rules outlive ``execve`` and ``setuid``, and apply to every descendant:

* file system: read and execute under ``/usr`` (and the root symlinks into it), read a few
  ``/etc`` files the C library wants, read/write ``WORKDIR`` and ``/dev/null``; nothing else;
* network: every TCP bind and connect is refused (Landlock does not cover UDP);
* scope: no abstract Unix sockets and no signals to processes outside the sandbox.

The order matters: rules first (``no_new_privs`` is set by ``apply``), then the user switch,
so a program that regains root through a bug still holds the rules.
"""

from __future__ import annotations

import os
import sys

READ_EXEC = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
READ_ONLY = ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/dev/urandom")


def main(argv: list[str]) -> None:
    workdir, uid, sep, *program = argv
    if sep != "--" or not program:
        raise SystemExit("usage: landlock_exec.py WORKDIR UID -- PROGRAM [ARGS...]")
    from py_landlock import AccessFs, Landlock

    rules = Landlock(strict=False)
    dirs = [p for p in READ_EXEC if os.path.isdir(p)]
    rules.allow_read(*dirs).allow_execute(*dirs).allow_read_write(workdir)
    # rules on a file may only carry file rights (the kernel refuses directory rights)
    for path in READ_ONLY:
        if os.path.isdir(path):
            rules.allow_read(path)
        elif os.path.exists(path):
            rules.add_path_rule(path, access=AccessFs.READ_FILE)
    rules.add_path_rule("/dev/null", access=AccessFs.READ_FILE | AccessFs.WRITE_FILE)
    rules.apply()
    target = int(uid)
    if target >= 0 and os.geteuid() == 0:
        os.setgroups([])
        os.setgid(target)
        os.setuid(target)
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
