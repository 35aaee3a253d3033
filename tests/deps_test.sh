#!/bin/sh
# deps_test.sh — the Makefile's package step (mk/deps.sh) against a fake apt-get,
# sudo, id and pkg-config: nothing runs when all is there; as root the missing
# packages are installed (after an apt-get update when the first install fails);
# as a user through a sudo that needs no password; otherwise one line says what to
# install and the step fails. And the Makefile asks for the right packages: the
# demo's build step only for what the build needs, the tests for check too.
# Run from the repository root (make test does).
set -u
root=$(pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fake=$t/bin
mkdir -p "$fake" "$t/fortunes"
touch "$t/fortunes/computers"
failures=0

# The fake machine: $t/installed lists the packages present, $t/log what ran.
cat > "$fake/pkg-config" <<'FAKE'
#!/bin/sh
case "$*" in
    "--exists stb")   grep -qx libstb-dev "$QKV_FAKE/installed" ;;
    "--exists check") grep -qx check "$QKV_FAKE/installed" ;;
    *)                exit 0 ;;
esac
FAKE
cat > "$fake/apt-get" <<'FAKE'
#!/bin/sh
echo "apt-get $* [DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-}]" >> "$QKV_FAKE/log"
[ "$1" = update ] && { touch "$QKV_FAKE/updated"; exit 0; }
[ -e "$QKV_FAKE/needs-update" ] && [ ! -e "$QKV_FAKE/updated" ] && exit 100
shift
for a in "$@"; do case "$a" in -*) ;; *) echo "$a" >> "$QKV_FAKE/installed" ;; esac; done
if grep -qx fortunes "$QKV_FAKE/installed"; then mkdir -p "$QKV_FORTUNES_DIR" && touch "$QKV_FORTUNES_DIR/computers"; fi
FAKE
cat > "$fake/id" <<'FAKE'
#!/bin/sh
cat "$QKV_FAKE/uid"
FAKE
cat > "$fake/sudo" <<'FAKE'
#!/bin/sh
[ -e "$QKV_FAKE/sudo-ok" ] || exit 1
echo "sudo $*" >> "$QKV_FAKE/log"
shift
exec "$@"
FAKE
chmod +x "$fake"/*

# machine INSTALLED UID [sudo-ok] [needs-update]: a fresh fake machine.
machine() {
    rm -f "$t/installed" "$t/log" "$t/updated" "$t/sudo-ok" "$t/needs-update"
    touch "$t/installed" "$t/log"
    for p in $1; do echo "$p" >> "$t/installed"; done
    echo "$2" > "$t/uid"
    shift 2
    for flag in "$@"; do touch "$t/$flag"; done
}
# run EXPECTED_STATUS NAME COMMAND...: runs with the fake tools first on PATH.
run() {
    want=$1 name=$2
    shift 2
    out=$(PATH="$fake:$PATH" QKV_FAKE="$t" QKV_FORTUNES_DIR="$t/fortunes" "$@" 2>&1)
    got=$?
    if [ "$got" != "$want" ]; then
        echo "deps_test: $name: exit $got, wanted $want; output: $out"
        failures=$((failures + 1))
    fi
}
expect() { # expect NAME WHAT TEXT: TEXT is in the output (out) or the log (log)
    if [ "$2" = out ]; then haystack=$out; else haystack=$(cat "$t/log"); fi
    case "$haystack" in
        *"$3"*) ;;
        *) echo "deps_test: $1: '$3' not in the $2: $haystack"; failures=$((failures + 1)) ;;
    esac
}
expect_no_apt() {
    if [ -s "$t/log" ]; then echo "deps_test: $1: ran $(cat "$t/log")"; failures=$((failures + 1)); fi
}

machine "libstb-dev check pkg-config" 1000
run 0 "all present" mk/deps.sh pkg-config libstb-dev check fortunes
expect_no_apt "all present"

machine "check" 0
run 0 "root installs" mk/deps.sh pkg-config libstb-dev check fortunes
expect "root installs" log "apt-get install -y -q libstb-dev [DEBIAN_FRONTEND=noninteractive]"
expect "root installs" out "installing missing system packages: apt-get install -y libstb-dev"

machine "" 0 needs-update
run 0 "fresh lists" mk/deps.sh libstb-dev check
expect "fresh lists" log "apt-get update"
expect "fresh lists" out "updating the package lists"
grep -qx check "$t/installed" || { echo "deps_test: fresh lists: check not installed"; failures=$((failures + 1)); }

machine "libstb-dev" 1000 sudo-ok
run 0 "sudo" mk/deps.sh libstb-dev check
expect "sudo" log "sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -q check"

machine "" 1000
run 1 "no way to install" mk/deps.sh libstb-dev check
expect "no way to install" out "qkv: missing system packages; run as root: apt-get install -y libstb-dev check"
expect_no_apt "no way to install"

# The Makefile: the build step (what make demo needs) never asks for check or
# fortunes; the test step asks for both.
rm "$t/fortunes/computers" # the folder alone, as fortunes-min leaves it
machine "libstb-dev" 0
run 0 "make deps-build" make -s -C "$root" deps-build
expect_no_apt "make deps-build"
run 0 "make deps-test" make -s -C "$root" deps-test
expect "make deps-test" log "apt-get install -y -q check fortunes"

if [ "$failures" -ne 0 ]; then
    echo "deps_test: $failures failures"
    exit 1
fi
echo "deps_test: 7 cases, 0 failures"
