"""Runs a command under a real pseudo-terminal (its controlling terminal) and answers the
approval prompts mcp-sandbox writes there.

usage: tty_answer.py ANSWERS_JSON DELAY_MS -- COMMAND...

ANSWERS_JSON is a list of lines to type, one per prompt ("Approve? ..."), each after DELAY_MS.
Prints one JSON object: {"status": exit status, "tty": everything written to the terminal,
"prompts": how many prompts were seen}. The command's stdout/stderr are not the terminal
(they go to files given by MCP_TTY_STDOUT / MCP_TTY_STDERR) so that the script's stdin and
output stay separate from the questions; either may be "tty" to leave it on the terminal (what a
person at the terminal sees: the progress line on stderr, then the outcome).
"""
import json
import os
import pty
import select
import sys
import time

PROMPT = b"Approve? "


def main():
    answers = json.loads(sys.argv[1])
    delay = int(sys.argv[2]) / 1000.0
    assert sys.argv[3] == "--"
    cmd = sys.argv[4:]
    out_path = os.environ["MCP_TTY_STDOUT"]
    err_path = os.environ["MCP_TTY_STDERR"]
    stdin_path = os.environ.get("MCP_TTY_STDIN", "/dev/null")
    pid, fd = pty.fork()
    if pid == 0:
        # The child: the pty is its controlling terminal; stdin/stdout/stderr are files.
        i = os.open(stdin_path, os.O_RDONLY)
        os.dup2(i, 0)
        for path, target in ((out_path, 1), (err_path, 2)):
            if path != "tty":
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), target)
        os.execvp(cmd[0], cmd)
    seen = b""
    prompts = 0
    answered = 0
    deadline = time.time() + 60
    status = None
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if chunk:
                seen += chunk
        prompts = seen.count(PROMPT)
        while answered < min(prompts, len(answers)):
            time.sleep(delay)
            os.write(fd, answers[answered].encode() + b"\n")
            answered += 1
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(st)
            break
    # What the command wrote just before it exited may still be unread.
    while select.select([fd], [], [], 0.05)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        status = -9
    print(json.dumps({"status": status, "tty": seen.decode("utf-8", "replace"), "prompts": prompts}))


if __name__ == "__main__":
    main()
