#!/usr/bin/env bash
# The README's migration walk-through and the docs' CLI-verb example, run
# word for word on this host (doc_examples.py says how).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
cd "$(dirname "$0")/../.."
python3 tests/integration/doc_examples.py "$VMM" "$PWD" "$WORK" "$(test_port)" "$(test_port)" \
	"$(test_port)" || fail "a documented command did not do what the docs say (above)"
echo PASS
