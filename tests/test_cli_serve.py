"""`fuselens serve` accepts the options editors pass (vscode-languageclient adds `--stdio`)."""
import json
import subprocess
import sys


def _frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_serve_with_stdio_option_answers_initialize():
    messages = _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}}) + \
        _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + _frame({"jsonrpc": "2.0", "method": "exit"})
    proc = subprocess.run([sys.executable, "-m", "fuselens.cli", "serve", "--stdio", "--log-level", "ERROR"],
                          input=messages, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b'"id": 1' in proc.stdout or b'"id":1' in proc.stdout
    assert b"fuselens" in proc.stdout.lower()  # serverInfo / capabilities came back


def test_serve_rejects_unknown_options_clearly():
    proc = subprocess.run([sys.executable, "-m", "fuselens.cli", "serve", "--no-such-option"],
                          capture_output=True, timeout=60)
    assert proc.returncode == 2 and b"unrecognized arguments: --no-such-option" in proc.stderr
