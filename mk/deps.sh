#!/bin/sh
# mk/deps.sh — make sure the system packages a build step needs are installed.
#
#     mk/deps.sh PACKAGE...        (Debian package names; the Makefile passes them)
#
# Each package has a probe below that says whether what qkv uses from it is
# present (a pkg-config module, a command, a file). For the packages that fail
# their probe:
#   - as root with apt-get: runs `apt-get install -y PACKAGES` (apt-get update
#     first if that install fails, as on a fresh machine with no package lists);
#   - otherwise, with apt-get and a sudo that needs no password: the same
#     through `sudo -n`;
#   - otherwise prints one line naming what to install and exits 1.
# The command is printed before it runs. Nothing is installed when every probe
# passes, so a build on a set-up machine runs no package manager at all.
set -u

probe() {
    case "$1" in
        pkg-config) command -v pkg-config >/dev/null 2>&1 ;;
        libstb-dev) pkg-config --exists stb 2>/dev/null ;;
        check)      pkg-config --exists check 2>/dev/null ;;
        # fortunes-min has the folder too, with three files; the full set has these
        emscripten) command -v emcc >/dev/null 2>&1 ;;
        nodejs)     command -v node >/dev/null 2>&1 ;;
        npm)        command -v npm >/dev/null 2>&1 ;;
        chromium)   command -v chromium >/dev/null 2>&1 ;;
        fortunes)   [ -e "${QKV_FORTUNES_DIR:-/usr/share/games/fortunes}/computers" ] ;;
        *)          dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed' ;;
    esac
}

missing=""
for pkg in "$@"; do
    probe "$pkg" || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
missing=${missing# }

if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        run=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
        run="sudo -n"
    else
        run="none"
    fi
    if [ "$run" != none ]; then
        echo "qkv: installing missing system packages: ${run:+$run }apt-get install -y $missing"
        # shellcheck disable=SC2086
        if ! $run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing; then
            echo "qkv: apt-get install failed; updating the package lists: ${run:+$run }apt-get update"
            $run env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
                $run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing || {
                echo "qkv: could not install $missing; install them and run make again" >&2
                exit 1
            }
        fi
        for pkg in $missing; do
            probe "$pkg" || { echo "qkv: $pkg is installed but its probe still fails" >&2; exit 1; }
        done
        exit 0
    fi
    echo "qkv: missing system packages; run as root: apt-get install -y $missing" >&2
else
    echo "qkv: missing system packages (Debian names): $missing; see docs/install.md" >&2
fi
exit 1
