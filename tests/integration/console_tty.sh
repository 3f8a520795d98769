#!/usr/bin/env bash
# Console input from a terminal: raw mode, the Ctrl-A escapes, the exit
# status of Ctrl-A x, detach, and the terminal restored (console_tty.py).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
python3 "$(dirname "$0")/console_tty.py" "$VMM" "$EXAMPLES/demo.cfg" "$WORK" ||
	fail "console_tty.py"
echo PASS
