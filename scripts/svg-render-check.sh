#!/usr/bin/env bash
# Renders SVG files in Chromium (headless; Debian's chromium package) and checks that
# each is well-formed XML with an <svg> root (else Chromium would draw its error page)
# and came out as a picture: a PNG of the page with drawn (non-white) pixels covering
# at least 1% of it, in at least two colours besides white.
#   scripts/svg-render-check.sh [FILE.svg...]     (default: every SVG under docs/)
# Writes the screenshots beside a temporary directory it prints, for a look.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then mapfile -t files < <(find "$here/docs" -name '*.svg' | sort); fi
[[ ${#files[@]} -gt 0 ]] || { echo "no SVG files"; exit 1; }
command -v chromium >/dev/null || { echo "needs chromium (apt-get install chromium)"; exit 1; }
shots=$(mktemp -d)
status=0
for f in "${files[@]}"; do
  png=$shots/$(basename "$f" .svg).png
  # The window is the picture's own size (its width and height attributes), else 900x700.
  size=$(python3 -c 'import re,sys; r=open(sys.argv[1]).read(2000); w=re.search(r"<svg[^>]*\swidth=\"(\d+)", r); h=re.search(r"<svg[^>]*\sheight=\"(\d+)", r); print(f"{w.group(1) if w else 900},{h.group(1) if h else 700}")' "$f" 2>/dev/null || echo 900,700)
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
    --screenshot="$png" "file://$(realpath "$f")" >/dev/null 2>&1 || true
  if ! python3 - "$png" "$f" <<'PY'
import struct, sys, zlib
import xml.etree.ElementTree as ET
png, name = sys.argv[1], sys.argv[2]
try:
    root = ET.parse(name).getroot()
except ET.ParseError as e:
    print(f"FAIL {name}: not well-formed XML ({e})"); sys.exit(1)
if root.tag != "{http://www.w3.org/2000/svg}svg":
    print(f"FAIL {name}: the root is {root.tag}, not an SVG svg element"); sys.exit(1)
try:
    data = open(png, "rb").read()
except OSError:
    print(f"FAIL {name}: no screenshot"); sys.exit(1)
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        channels = {2: 3, 6: 4}[ctype]
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride = zlib.decompress(idat), width * channels
rows, prev, i = [], bytearray(stride), 0
for _ in range(height):  # undo the PNG row filters
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - channels] if x >= channels else 0
        b, c = prev[x], prev[x - channels] if x >= channels else 0
        p = [0, a, b, (a + b) // 2, a + b - c][f] if f < 4 else 0
        if f == 4:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            p = a if pa <= pb and pa <= pc else b if pb <= pc else c
        line[x] = (line[x] + p) & 0xFF
    rows.append(line); prev = line
drawn, colours = 0, set()
for line in rows:
    for x in range(0, stride, channels):
        px = tuple(line[x:x + 3])
        if px != (255, 255, 255):
            drawn += 1
            colours.add(px)
share = drawn / (width * height)
ok = share >= 0.01 and len(colours) >= 2
print(f"{'ok  ' if ok else 'FAIL'} {name}: {100 * share:.1f}% drawn, {len(colours)} colours")
sys.exit(0 if ok else 1)
PY
  then status=1; fi
done
echo "screenshots in $shots"
exit $status
