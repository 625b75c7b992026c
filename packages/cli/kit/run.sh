#!/bin/sh
# intab device kit: runs intab's GPU checks and benchmarks on this machine with nothing installed but a Linux, an
# NVIDIA driver and this folder (written by `intab device-kit --out DIR`; README.md says what is in it). It unpacks
# the carried Node and Dawn, finds the Vulkan driver (ICD) and loader, and runs the kit's driver (intab-node.mjs
# kit-run): every kernel against its CPU twin, `bench kernels`, then `make-model` and `bench decode` per model shape
# and weight type. JSON lines go to stdout and to results.jsonl beside this script; what went to stderr goes to run.log.
# POSIX sh on purpose: a bare Linux has /bin/sh, not always bash.
set -eu

KIT=$(cd "$(dirname "$0")" && pwd)
RESULTS="$KIT/results.jsonl"
LOG="$KIT/run.log"

usage() {
  cat <<'USAGE'
usage: run.sh [--quick] [--dawn-backend auto|vulkan|opengl] [--work DIR] [--filter TEXT]
              [--shapes smollm2-135m,qwen3-0.6b,llama-3.2-1b] [--dtypes q4_0,q8_0,f16]
  --quick          small shapes (2 layers of SmolLM2-135M), 8-token prompts and decodes, the kernel bench's
                   quick cases: minutes, for a smoke run. Without it: every shape and type at its real size.
  --dawn-backend   auto (the default): vulkan when an NVIDIA Vulkan driver (ICD) is found here, else opengl
                   (Mesa's EGL: a machine without an NVIDIA GPU, as the repository's tests run it).
  --work DIR       where the carried binaries are unpacked and the models written (default: $TMPDIR or /tmp,
                   intab-kit-<kit id>, or work/ in the kit where that is noexec; the full run writes about
                   7 GiB of models, kept for the next run).
  --filter TEXT    only the kernel bench cases whose label holds TEXT (the checks always all run).
  --shapes, --dtypes  a subset of the models (f16 runs only where the adapter has shader-f16).
Lines go to stdout and to results.jsonl in the kit; stderr also goes to run.log. Exit 0 when every check passed
and every step ran.
USAGE
}

QUICK=""
BACKEND="${INTAB_DAWN_BACKEND:-auto}"
WORK="${INTAB_KIT_WORK:-}"
FILTER=""
SHAPES=""
DTYPES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK="--quick" ;;
    --dawn-backend|--work|--filter|--shapes|--dtypes)
      if [ $# -lt 2 ]; then echo "run.sh: $1 needs a value (run.sh --help)" >&2; exit 2; fi
      case "$1" in
        --dawn-backend) BACKEND="$2" ;;
        --work) WORK="$2" ;;
        --filter) FILTER="$2" ;;
        --shapes) SHAPES="$2" ;;
        --dtypes) DTYPES="$2" ;;
      esac
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (run.sh --help lists them)" >&2; exit 2 ;;
  esac
  shift
done
case "$BACKEND" in
  auto|vulkan|opengl) ;;
  *) echo "run.sh: --dawn-backend takes auto, vulkan or opengl, e.g. --dawn-backend vulkan" >&2; exit 2 ;;
esac

: > "$LOG" 2>/dev/null || { echo "run.sh: cannot write $LOG: copy the kit to a folder you can write to" >&2; exit 1; }
say() { echo "[kit] $*" >&2; echo "[kit] $*" >> "$LOG"; }
die() { say "error: $*"; exit 1; }

# ---- the machine ----
[ "$(uname -s)" = Linux ] || die "this kit runs on Linux (this is $(uname -s))"
case "$(uname -m)" in x86_64|amd64) ;; *) die "this kit carries x86-64 binaries; this machine is $(uname -m)" ;; esac
GLIBC=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p' || true)
if [ -n "$GLIBC" ]; then
  major=${GLIBC%%.*}; minor=${GLIBC#*.}; minor=${minor%%.*}
  if [ "$major" -lt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -lt 34 ]; }; then
    die "glibc $GLIBC is too old: Dawn's dawn.node (webgpu 0.6.2) needs glibc 2.34 and libstdc++ GLIBCXX_3.4.30 (Ubuntu 22.04, Debian 12 or later)"
  fi
fi

# ---- unpack the carried binaries (once per kit) ----
ID=$(cat "$KIT/kit-id")
can_exec() { # whether programs written into folder $1 can run (not a noexec mount)
  printf '#!/bin/sh\nexit 0\n' > "$1/.exec-test" 2>/dev/null && chmod +x "$1/.exec-test" && "$1/.exec-test" 2>/dev/null && rm -f "$1/.exec-test"
}
if [ -z "$WORK" ]; then
  WORK="${TMPDIR:-/tmp}/intab-kit-$ID"
  mkdir -p "$WORK" 2>/dev/null && can_exec "$WORK" || { say "$WORK cannot hold programs (noexec?): using $KIT/work"; WORK="$KIT/work"; }
fi
mkdir -p "$WORK/bin/lib" 2>/dev/null || die "cannot create $WORK/bin: pass --work DIR on a writable disk"
WORK=$(cd "$WORK" && pwd)
BIN="$WORK/bin"
can_exec "$BIN" || die "programs cannot run from $BIN (a noexec mount?): pass --work DIR on another disk"
unpack() { # unpack SRC DEST: a .gz or .xz file into DEST, with whatever decompressor this machine has
  case "$1" in
    *.gz)
      if command -v gzip >/dev/null 2>&1; then gzip -dc "$1" > "$2"
      elif command -v python3 >/dev/null 2>&1; then python3 -c 'import gzip,shutil,sys; shutil.copyfileobj(gzip.open(sys.argv[1]), sys.stdout.buffer)' "$1" > "$2"
      elif command -v busybox >/dev/null 2>&1; then busybox gzip -dc "$1" > "$2"
      else die "no gzip, python3 or busybox to unpack $1: install gzip (apt-get install gzip), or unpack the kit's .gz files on another machine (gzip -dk) and copy them back"
      fi ;;
    *.xz)
      if command -v xz >/dev/null 2>&1; then xz -dc "$1" > "$2"
      elif command -v python3 >/dev/null 2>&1; then python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1" > "$2"
      elif command -v busybox >/dev/null 2>&1; then busybox xz -dc "$1" > "$2"
      else die "no xz, python3 or busybox to unpack $1: install xz-utils, or build the kit with --compress gzip"
      fi ;;
  esac
}
if [ "$(cat "$BIN/kit-id" 2>/dev/null || true)" != "$ID" ]; then
  say "unpacking node and dawn.node into $BIN"
  for f in "$KIT"/node.* "$KIT"/dawn.node.* "$KIT"/lib/*.gz "$KIT"/lib/*.xz; do
    [ -f "$f" ] || continue
    case "$f" in "$KIT"/lib/*) dest="$BIN/lib/$(basename "${f%.*}")" ;; *) dest="$BIN/$(basename "${f%.*}")" ;; esac
    unpack "$f" "$dest.part" && mv "$dest.part" "$dest" || die "could not unpack $f (disk full?)"
  done
  chmod +x "$BIN/node"
  echo "$ID" > "$BIN/kit-id"
fi
NODE="$BIN/node"
"$NODE" -e 'process.exit(0)' 2>>"$LOG" || die "the carried Node does not start here (run.log has its error): it needs glibc 2.28 and libstdc++ 6 (GLIBCXX_3.4.21)"
"$NODE" -e 'require(process.argv[1])' "$BIN/dawn.node" 2>>"$LOG" \
  || die "Dawn's dawn.node does not load here (run.log has the loader's error): it needs glibc 2.34 and libstdc++ with GLIBCXX_3.4.30 (GCC 12's; Ubuntu 22.04, Debian 12 or later)"

# ---- Dawn's backend: Vulkan on an NVIDIA driver, else OpenGL ----
find_icd() { # the NVIDIA ICD file, where the Vulkan loader looks for drivers (or one written for the driver's library)
  for dir in $(echo "${XDG_CONFIG_DIRS:-/etc/xdg}:/etc:/usr/local/etc:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}:/usr/local/share:/usr/share" | tr ':' ' '); do
    for f in "$dir"/vulkan/icd.d/nvidia*.json; do [ -f "$f" ] && { echo "$f"; return 0; }; done
  done
  # A driver installed without its ICD file (some containers): the Vulkan driver is libGLX_nvidia.so.0.
  lib=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) | sed -n 's/.*libGLX_nvidia\.so\.0 (libc6,x86-64) => //p' | head -n 1)
  if [ -z "$lib" ]; then
    for f in /usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 /usr/lib64/libGLX_nvidia.so.0 /usr/lib/libGLX_nvidia.so.0; do [ -f "$f" ] && { lib=$f; break; }; done
  fi
  if [ -n "$lib" ]; then
    printf '{"file_format_version":"1.0.0","ICD":{"library_path":"%s","api_version":"1.3.0"}}\n' "$lib" > "$WORK/nvidia_icd.json"
    echo "$WORK/nvidia_icd.json"
    return 0
  fi
  return 1
}
has_vulkan_loader() {
  (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) | grep -q 'libvulkan\.so\.1 (libc6,x86-64)' && return 0
  for f in /usr/lib/x86_64-linux-gnu/libvulkan.so.1 /usr/lib64/libvulkan.so.1 /usr/lib/libvulkan.so.1 /usr/local/lib/libvulkan.so.1; do [ -f "$f" ] && return 0; done
  return 1
}
if [ "$BACKEND" != opengl ]; then
  ICD="${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}}"
  [ -n "$ICD" ] || ICD=$(find_icd || true)
  if [ -n "$ICD" ]; then
    export VK_DRIVER_FILES="$ICD" VK_ICD_FILENAMES="$ICD"
    say "Vulkan driver: $ICD"
    if has_vulkan_loader; then say "Vulkan loader: this system's libvulkan.so.1"
    elif [ -f "$KIT/lib/libvulkan.so.1" ]; then export LD_LIBRARY_PATH="$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; say "Vulkan loader: $KIT/lib/libvulkan.so.1"
    elif [ -f "$BIN/lib/libvulkan.so.1" ]; then export LD_LIBRARY_PATH="$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; say "Vulkan loader: the kit's libvulkan.so.1"
    else die "no Vulkan loader (libvulkan.so.1) here and none in the kit: install it (apt-get install libvulkan1, dnf install vulkan-loader) or copy a libvulkan.so.1 into $KIT/lib/ (README.md)"
    fi
    BACKEND=vulkan
  elif [ "$BACKEND" = vulkan ]; then
    die "no NVIDIA Vulkan driver found (no vulkan/icd.d/nvidia*.json under /etc, /usr/share or /usr/local/share, no libGLX_nvidia.so.0): install the driver's Vulkan part, or set VK_DRIVER_FILES=/path/to/icd.json"
  else
    say "no NVIDIA Vulkan driver found: using Dawn's OpenGL backend (EGL, surfaceless)"
    BACKEND=opengl
  fi
fi
[ "$BACKEND" = opengl ] && export EGL_PLATFORM="${EGL_PLATFORM:-surfaceless}"

# ---- run ----
say "running intab-node.mjs kit-run on Dawn's $BACKEND backend${QUICK:+ (quick)}: lines in $RESULTS"
exec "$NODE" "$KIT/intab-node.mjs" kit-run $QUICK --dawn "$BIN/dawn.node" --dawn-backend "$BACKEND" --work "$WORK" \
  --results "$RESULTS" --log "$LOG" --kit-id "$ID" ${FILTER:+--filter "$FILTER"} ${SHAPES:+--shapes "$SHAPES"} ${DTYPES:+--dtypes "$DTYPES"}
