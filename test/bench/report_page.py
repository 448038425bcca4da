"""report_page.py OUT_DIR PART... --failed [PART...]

The page half of report.sh: reads OUT_DIR/PART.txt, what each comparison
script printed, and writes OUT_DIR/index.html. Every table a script prints
becomes an HTML table, its ratio column shaded by whether xdev is ahead of
the reference; every table of values against message size (shm, tcp) also
becomes a plot, OUT_DIR/PART-TEST.png, drawn by gnuplot with a log scale
on both axes so 8 B and 4 MiB fit one picture. Text that is not a table
(notes, bars, the VM's summary lines) is kept as it was printed.
"""
import html
import os
import subprocess
import sys

SKIP_COLUMNS = {"size", "best", "best-of", "ratio"}


def blocks(lines):
    """Split a script's output into ("note", [lines]) and ("table", [rows]):
    a table is a run of lines with as many fields as its first line, at
    least two rows, not starting with '#'."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        fields = line.split()
        if not fields or line.startswith("#"):
            out.append(("note", [line]))
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("#") and len(lines[j].split()) == len(fields):
            j += 1
        if j - i >= 2:
            out.append(("table", [l.split() for l in lines[i:j]]))
        else:
            out.append(("note", [line]))
        i = j
    return out


def better(notes):
    """'lower' or 'higher' from the last note that says which is better."""
    for line in reversed(notes):
        for word in ("lower", "higher"):
            if word + " is better" in line:
                return word
    return None


def size_label(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def plot(out, name, title, unit, rows):
    """Values against size, one line per system; returns the PNG's name or None."""
    header = rows[0]
    cols = [k for k, h in enumerate(header) if h not in SKIP_COLUMNS]
    if header[0] != "size" or len(rows) < 3 or not cols:
        return None
    data = os.path.join(out, "data", name + ".dat")
    os.makedirs(os.path.dirname(data), exist_ok=True)
    with open(data, "w") as f:
        f.write(" ".join(["size"] + [header[k] for k in cols]) + "\n")
        for r in rows[1:]:
            f.write(" ".join([r[0]] + [r[k] for k in cols]) + "\n")
    sizes = [int(r[0]) for r in rows[1:]]
    step = max(1, len(sizes) // 12)
    tics = ", ".join(f'"{size_label(s)}" {s}' for s in sizes[::step])
    png = name + ".png"
    script = f"""
set terminal pngcairo size 900,520 font "DejaVu Sans,10"
set output "{os.path.join(out, png)}"
set title "{title}"
set datafile missing "-"
set key autotitle columnhead outside right
set logscale xy
set xtics ({tics})
set xlabel "message size (bytes)"
set ylabel "{unit}"
set grid
plot for [i=2:{len(cols) + 1}] "{data}" using 1:i with linespoints lw 2 pt 7 ps 0.6
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    return png


def table_html(rows, direction):
    head = rows[0]
    ratio = head.index("ratio") if "ratio" in head else -1
    cells = ["<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows[1:]:
        tds = []
        for k, v in enumerate(r):
            cls = ""
            if k == ratio and direction:
                try:
                    x = float(v)
                    ahead = x <= 1.0 if direction == "lower" else x >= 1.0
                    cls = ' class="ahead"' if ahead else ' class="behind"'
                except ValueError:
                    pass
            tds.append(f"<td{cls}>{html.escape(v)}</td>")
        cells.append("<tr>" + "".join(tds) + "</tr>")
    return "<table>\n" + "\n".join(cells) + "\n</table>"


def part_html(out, part, failed):
    path = os.path.join(out, part + ".txt")
    if not os.path.exists(path):
        return f"<h2 id={part}>{part}</h2><p>not run</p>"
    lines = open(path).read().splitlines()
    body = [f'<h2 id="{part}">{part}</h2>']
    if failed:
        body.append(f'<p class="behind">the script exited non-zero: a run failed or a bar it '
                    f'checks was missed; what it printed is below, its runs in raw/{part}</p>')
    notes, pre = [], []

    def flush_pre():
        if pre:
            body.append("<pre>" + html.escape("\n".join(pre)) + "</pre>")
            pre.clear()

    for kind, content in blocks(lines):
        if kind == "note":
            notes.extend(content)
            pre.extend(l for l in content if l.strip())
            continue
        flush_pre()
        title_line = next((l for l in reversed(notes) if l.startswith("# ")), "")
        title = title_line[2:].strip()
        name = f"{part}-{title.split()[0]}" if title else part
        unit = title[title.find("(") + 1:title.find(")")] if "(" in title else ""
        png = plot(out, name, f"{part}: {title}", unit, content) if content[0][0] == "size" else None
        if png:
            body.append(f'<img src="{png}" alt="{html.escape(part + ": " + title)}">')
        body.append(table_html(content, better(notes)))
        notes = []
    flush_pre()
    return "\n".join(body)


def main():
    args = sys.argv[1:]
    split = args.index("--failed") if "--failed" in args else len(args)
    out, parts, failed = args[0], args[1:split], set(args[split + 1:])
    index = " ".join(f'<a href="#{p}">{p}</a>' + (" (failed)" if p in failed else "") for p in parts)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>xdev against its references</title>
<style>
body {{ font-family: sans-serif; max-width: 1000px; margin: 2em auto; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 90%; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; text-align: right; }}
td.ahead {{ background: #d8f0d8; }} td.behind, p.behind {{ background: #f6d6d6; }}
pre {{ background: #f4f4f4; padding: 0.5em; }} img {{ max-width: 100%; }}
</style></head><body>
<h1>xdev against its references</h1>
<p>Each part is one comparison script's interleaved rounds, medians; a ratio
is xdev over the reference it names, shaded green where xdev is ahead.
How each was measured is in the script's own notes under its heading.
Parts: {index}</p>
{"".join(part_html(out, p, p in failed) for p in parts)}
</body></html>
"""
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write(page)


if __name__ == "__main__":
    main()
